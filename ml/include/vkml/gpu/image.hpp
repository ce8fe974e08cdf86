#pragma once
// RAII 2-D VkImage with one view, for render targets, depth buffers and textures that ML passes
// read and write (and the frame graph's transient images). Images whose usage is only transfer
// have no view (Vulkan allows none for them).
#include <cstdint>
#include <string>

#include <vulkan/vulkan_core.h>

#include "vkml/gpu/allocator.hpp"

namespace vkml::gpu {

class Device;

struct ImageDesc {
    uint32_t width = 0, height = 0;
    VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
    VkImageUsageFlags usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_SAMPLED_BIT |
                              VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    uint32_t mip_levels = 1;
    std::string name;
    AllocationPtr alias; // as BufferDesc::alias
};

class Image {
public:
    Image() = default;
    Image(Device& device, const ImageDesc& desc);
    ~Image();
    Image(Image&& other) noexcept;
    Image& operator=(Image&& other) noexcept;
    Image(const Image&) = delete;
    Image& operator=(const Image&) = delete;

    VkImage vk() const { return image_; }
    VkImageView view() const { return view_; }
    VkFormat format() const { return format_; }
    uint32_t width() const { return width_; }
    uint32_t height() const { return height_; }
    const AllocationPtr& allocation() const { return allocation_; }
    explicit operator bool() const { return image_ != VK_NULL_HANDLE; }

private:
    void reset();
    Device* device_ = nullptr;
    VkImage image_ = VK_NULL_HANDLE;
    VkImageView view_ = VK_NULL_HANDLE;
    VkFormat format_ = VK_FORMAT_UNDEFINED;
    uint32_t width_ = 0, height_ = 0;
    AllocationPtr allocation_;
};

// Bytes per texel of the colour formats vkml converts between images and tensors.
uint32_t format_texel_size(VkFormat format);
// The aspects of a format: colour, depth, depth and stencil, or stencil.
VkImageAspectFlags image_aspect(VkFormat format);

} // namespace vkml::gpu
