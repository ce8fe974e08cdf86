#include "vkml/gpu/image.hpp"

#include <utility>

#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"

namespace vkml::gpu {

uint32_t format_texel_size(VkFormat format) {
    switch (format) {
    case VK_FORMAT_R8_UNORM:
        return 1;
    case VK_FORMAT_R8G8B8A8_UNORM:
    case VK_FORMAT_R8G8B8A8_SRGB:
    case VK_FORMAT_B8G8R8A8_UNORM:
    case VK_FORMAT_B8G8R8A8_SRGB:
    case VK_FORMAT_A2B10G10R10_UNORM_PACK32:
    case VK_FORMAT_R32_SFLOAT:
        return 4;
    case VK_FORMAT_R16G16B16A16_SFLOAT:
        return 8;
    case VK_FORMAT_R32G32B32A32_SFLOAT:
        return 16;
    default:
        return 0;
    }
}

VkImageAspectFlags image_aspect(VkFormat format) {
    switch (format) {
    case VK_FORMAT_D16_UNORM:
    case VK_FORMAT_X8_D24_UNORM_PACK32:
    case VK_FORMAT_D32_SFLOAT:
        return VK_IMAGE_ASPECT_DEPTH_BIT;
    case VK_FORMAT_D16_UNORM_S8_UINT:
    case VK_FORMAT_D24_UNORM_S8_UINT:
    case VK_FORMAT_D32_SFLOAT_S8_UINT:
        return VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT;
    case VK_FORMAT_S8_UINT:
        return VK_IMAGE_ASPECT_STENCIL_BIT;
    default:
        return VK_IMAGE_ASPECT_COLOR_BIT;
    }
}

Image::Image(Device& device, const ImageDesc& desc)
    : device_(&device), format_(desc.format), width_(desc.width), height_(desc.height) {
    if (desc.width == 0 || desc.height == 0)
        throw Error(ErrorCode::InvalidArgument, "image '" + desc.name + "' has a zero dimension");
    VkImageCreateInfo ci{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ci.imageType = VK_IMAGE_TYPE_2D;
    ci.format = desc.format;
    ci.extent = {desc.width, desc.height, 1};
    ci.mipLevels = desc.mip_levels;
    ci.arrayLayers = 1;
    ci.samples = VK_SAMPLE_COUNT_1_BIT;
    ci.tiling = VK_IMAGE_TILING_OPTIMAL;
    ci.usage = desc.usage;
    ci.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    const auto families = device.shared_queue_families();
    if (families.size() > 1) {
        ci.sharingMode = VK_SHARING_MODE_CONCURRENT;
        ci.queueFamilyIndexCount = uint32_t(families.size());
        ci.pQueueFamilyIndices = families.data();
    }
    const VkResult r = vkCreateImage(device.vk(), &ci, nullptr, &image_);
    if (r == VK_ERROR_FORMAT_NOT_SUPPORTED)
        throw Error(ErrorCode::Unsupported, "image '" + desc.name + "': format not supported for this usage");
    check_vk(r, "vkCreateImage");
    try {
        VkMemoryRequirements req;
        vkGetImageMemoryRequirements(device.vk(), image_, &req);
        if (desc.alias) {
            if (desc.alias->size() < req.size || desc.alias->offset() % req.alignment ||
                !(req.memoryTypeBits & (1u << desc.alias->memory_type())))
                throw Error(ErrorCode::InvalidArgument,
                            "image '" + desc.name + "' does not fit the allocation it should alias");
            allocation_ = desc.alias;
        } else {
            allocation_ = device.allocator().allocate(req, MemoryUsage::DeviceLocal, ResourceTiling::Optimal);
        }
        check_vk(vkBindImageMemory(device.vk(), image_, allocation_->memory(), allocation_->offset()),
                 "vkBindImageMemory");
        constexpr VkImageUsageFlags view_usage = VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_STORAGE_BIT |
                                                 VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT |
                                                 VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT |
                                                 VK_IMAGE_USAGE_INPUT_ATTACHMENT_BIT;
        if (desc.usage & view_usage) {
            VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
            vi.image = image_;
            vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
            vi.format = desc.format;
            vi.subresourceRange = {image_aspect(desc.format), 0, desc.mip_levels, 0, 1};
            check_vk(vkCreateImageView(device.vk(), &vi, nullptr, &view_), "vkCreateImageView");
        }
    } catch (...) {
        reset();
        throw;
    }
    device.set_debug_name(VK_OBJECT_TYPE_IMAGE, image_, desc.name);
    if (view_) device.set_debug_name(VK_OBJECT_TYPE_IMAGE_VIEW, view_, desc.name);
}

Image::~Image() {
    reset();
}

Image::Image(Image&& o) noexcept
    : device_(o.device_), image_(std::exchange(o.image_, VK_NULL_HANDLE)),
      view_(std::exchange(o.view_, VK_NULL_HANDLE)), format_(o.format_), width_(o.width_), height_(o.height_),
      allocation_(std::move(o.allocation_)) {}

Image& Image::operator=(Image&& o) noexcept {
    if (this != &o) {
        reset();
        device_ = o.device_;
        image_ = std::exchange(o.image_, VK_NULL_HANDLE);
        view_ = std::exchange(o.view_, VK_NULL_HANDLE);
        format_ = o.format_;
        width_ = o.width_;
        height_ = o.height_;
        allocation_ = std::move(o.allocation_);
    }
    return *this;
}

void Image::reset() {
    if (!image_ && !view_ && !allocation_) return;
    // Retired like a Buffer: destroyed, and its memory released, once the GPU is done with it.
    device_->retire([vk = device_->vk(), view = std::exchange(view_, VK_NULL_HANDLE),
                     image = std::exchange(image_, VK_NULL_HANDLE), memory = std::move(allocation_)] {
        if (view) vkDestroyImageView(vk, view, nullptr);
        if (image) vkDestroyImage(vk, image, nullptr);
    });
    allocation_.reset();
}

} // namespace vkml::gpu
