#include "vkml/gpu/buffer.hpp"

#include <utility>

#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"

namespace vkml::gpu {

Buffer::Buffer(Device& device, const BufferDesc& desc) : device_(&device), size_(desc.size) {
    if (desc.size == 0) throw Error(ErrorCode::InvalidArgument, "buffer '" + desc.name + "' has size 0");
    VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    ci.size = desc.size;
    ci.usage = desc.usage;
    const auto families = device.shared_queue_families();
    if (families.size() > 1) {
        ci.sharingMode = VK_SHARING_MODE_CONCURRENT;
        ci.queueFamilyIndexCount = uint32_t(families.size());
        ci.pQueueFamilyIndices = families.data();
    }
    check_vk(vkCreateBuffer(device.vk(), &ci, nullptr, &buffer_), "vkCreateBuffer");
    try {
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(device.vk(), buffer_, &req);
        if (desc.alias) {
            if (desc.alias->size() < req.size || desc.alias->offset() % req.alignment ||
                !(req.memoryTypeBits & (1u << desc.alias->memory_type())))
                throw Error(ErrorCode::InvalidArgument,
                            "buffer '" + desc.name + "' does not fit the allocation it should alias");
            allocation_ = desc.alias;
        } else {
            allocation_ = device.allocator().allocate(req, desc.memory, ResourceTiling::Linear);
        }
        check_vk(vkBindBufferMemory(device.vk(), buffer_, allocation_->memory(), allocation_->offset()),
                 "vkBindBufferMemory");
    } catch (...) {
        reset();
        throw;
    }
    device.set_debug_name(VK_OBJECT_TYPE_BUFFER, buffer_, desc.name);
}

Buffer::~Buffer() {
    reset();
}

Buffer::Buffer(Buffer&& o) noexcept
    : device_(o.device_), buffer_(std::exchange(o.buffer_, VK_NULL_HANDLE)), size_(o.size_),
      allocation_(std::move(o.allocation_)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
    if (this != &o) {
        reset();
        device_ = o.device_;
        buffer_ = std::exchange(o.buffer_, VK_NULL_HANDLE);
        size_ = o.size_;
        allocation_ = std::move(o.allocation_);
    }
    return *this;
}

void Buffer::reset() {
    if (!buffer_ && !allocation_) return;
    // The buffer and its memory go once the GPU is done with vkml's work so far (Device::retire):
    // the memory returns to the allocator only then, when the closure is destroyed.
    device_->retire([vk = device_->vk(), buffer = std::exchange(buffer_, VK_NULL_HANDLE),
                     memory = std::move(allocation_)] {
        if (buffer) vkDestroyBuffer(vk, buffer, nullptr);
    });
    allocation_.reset();
}

} // namespace vkml::gpu
