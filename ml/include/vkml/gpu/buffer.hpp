#pragma once
// RAII VkBuffer with its memory. Shared between vkml's queue families (concurrent sharing), so a
// buffer written on the transfer queue can be read on the compute queue after a semaphore wait,
// without ownership transfers.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <vulkan/vulkan_core.h>

#include "vkml/gpu/allocator.hpp"

namespace vkml::gpu {

class Device;

struct BufferDesc {
    uint64_t size = 0;
    VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    MemoryUsage memory = MemoryUsage::DeviceLocal;
    std::string name; // debug name, shown by validation messages and capture tools
    // Place the buffer in this existing allocation instead of allocating (aliasing: the caller
    // guarantees the resources sharing it are never live at the same time).
    AllocationPtr alias;
};

// A bindable range of a buffer.
struct BufferRange {
    VkBuffer buffer = VK_NULL_HANDLE;
    uint64_t offset = 0;
    uint64_t size = VK_WHOLE_SIZE;
};

class Buffer {
public:
    Buffer() = default;
    Buffer(Device& device, const BufferDesc& desc);
    ~Buffer();
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    VkBuffer vk() const { return buffer_; }
    uint64_t size() const { return size_; }
    const AllocationPtr& allocation() const { return allocation_; }
    // Host pointer for Upload / Readback buffers, null for device-local ones.
    std::byte* mapped() const { return allocation_ ? allocation_->mapped() : nullptr; }
    BufferRange range(uint64_t offset = 0, uint64_t size = VK_WHOLE_SIZE) const {
        return {buffer_, offset, size};
    }
    explicit operator bool() const { return buffer_ != VK_NULL_HANDLE; }

private:
    void reset();
    Device* device_ = nullptr;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    uint64_t size_ = 0;
    AllocationPtr allocation_;
};

} // namespace vkml::gpu
