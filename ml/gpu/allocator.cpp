#include "vkml/gpu/allocator.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "internal.hpp"
#include "suballocator.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"

namespace vkml::gpu {

struct MemoryAllocator::Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint32_t type = 0;
    uint64_t size = 0;
    std::byte* mapped = nullptr;
    std::optional<SubAllocator> sub; // empty for a dedicated allocation (one resource, whole block)
};

namespace {
std::string mib(uint64_t bytes) {
    return std::to_string((bytes + (1 << 19)) >> 20) + " MiB";
}

// VKML_FAULT_ALLOC=N or N+ (N >= 1): see MemoryAllocator::inject_failure. Anything else is an error,
// so a mistyped switch never passes for a test that injected nothing.
void fault_from_env(MemoryAllocator& allocator) {
    const std::string text = detail::env_string("VKML_FAULT_ALLOC");
    if (text.empty()) return;
    const bool sticky = text.back() == '+';
    const std::string digits = sticky ? text.substr(0, text.size() - 1) : text;
    uint64_t n = 0;
    bool ok = !digits.empty() && digits.size() <= 18;
    for (const char c : digits) {
        if (c < '0' || c > '9')
            ok = false;
        else
            n = n * 10 + uint64_t(c - '0');
    }
    if (!ok || n == 0)
        throw Error(ErrorCode::InvalidArgument,
                    "VKML_FAULT_ALLOC='" + text +
                        "' is not an allocation number (N >= 1 fails the N-th device memory allocation, "
                        "N+ it and every later one)");
    allocator.inject_failure(n, sticky);
}

} // namespace

Allocation::~Allocation() {
    if (owner_) owner_->release(*this);
}

MemoryAllocator::MemoryAllocator(Device& device, uint64_t device_local_limit, uint64_t block_size)
    : device_(device), block_size_(block_size), device_local_limit_(device_local_limit),
      heap_reserved_(device.caps().memory_heaps.size(), 0) {
    fault_from_env(*this);
}

void MemoryAllocator::inject_failure(uint64_t nth, bool sticky) {
    fail_sticky_ = sticky;
    fail_at_ = nth ? requests_.load() + nth : 0;
}

MemoryAllocator::~MemoryAllocator() {
    for (auto& b : blocks_) {
        if (!b) continue;
        if (b->sub && !b->sub->empty())
            device_.message(Severity::Warning,
                            "memory allocator destroyed while " + std::to_string(b->sub->allocation_count()) +
                                " allocations are still alive (destroy resources before the Device)");
        vkFreeMemory(device_.vk(), b->memory, nullptr);
    }
}

uint32_t MemoryAllocator::choose_memory_type(uint32_t type_bits, MemoryUsage usage) const {
    const auto& types = device_.caps().memory_types;
    int best = -1, best_score = -1000;
    for (uint32_t i = 0; i < types.size(); ++i) {
        if (!(type_bits & (1u << i))) continue;
        const VkMemoryPropertyFlags f = types[i].propertyFlags;
        if (f & (VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT)) continue;
        const bool local = f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        const bool visible = f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
        const bool coherent = f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        const bool cached = f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
        int score = 0;
        switch (usage) {
        case MemoryUsage::DeviceLocal:
            score = (local ? 8 : 0) - (visible ? 2 : 0);
            break;
        case MemoryUsage::Upload: // avoid spending the small host-visible VRAM window on staging
            if (!visible || !coherent) continue;
            score = local ? 0 : 1;
            break;
        case MemoryUsage::Readback:
            if (!visible || !coherent) continue;
            score = (cached ? 4 : 0) + (local ? 0 : 1);
            break;
        }
        if (score > best_score) {
            best_score = score;
            best = int(i);
        }
    }
    if (best < 0)
        throw Error(ErrorCode::Unsupported, "no Vulkan memory type suits the request (type bits 0x" +
                                                std::to_string(type_bits) + ")");
    return uint32_t(best);
}

void MemoryAllocator::check_budget(uint32_t type, uint64_t size) const {
    const Capabilities& caps = device_.caps();
    const uint32_t heap = caps.memory_types[type].heapIndex;
    const bool local = caps.memory_types[type].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    if (local && device_local_limit_) {
        uint64_t reserved = 0;
        for (size_t h = 0; h < caps.memory_heaps.size(); ++h)
            if (caps.memory_heaps[h].device_local) reserved += heap_reserved_[h];
        if (reserved + size > device_local_limit_)
            throw Error(ErrorCode::OutOfDeviceMemory, "out of device memory: allocating " + mib(size) +
                                                          " would pass vkml's memory limit (" +
                                                          mib(reserved) + " in use of " +
                                                          mib(device_local_limit_) + ")");
    }
    const auto heaps = detail::query_memory_heaps(device_.physical_device(), caps.memory_budget);
    const MemoryHeapInfo& h = heaps[heap];
    // With VK_EXT_memory_budget the usage counts the whole process (the host renderer too);
    // without it only what vkml holds is known.
    const uint64_t used = caps.memory_budget ? h.usage : heap_reserved_[heap];
    if (used + size > h.budget)
        throw Error(ErrorCode::OutOfDeviceMemory,
                    "out of device memory: allocating " + mib(size) + " on heap " + std::to_string(heap) +
                        " would pass its budget (" + mib(used) + " used of " + mib(h.budget) + ")");
}

VkDeviceMemory MemoryAllocator::allocate_memory(uint64_t size, uint32_t type, std::byte** mapped) {
    check_budget(type, size);
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, nullptr, size, type};
    VkDeviceMemory memory = VK_NULL_HANDLE;
    const VkResult r = vkAllocateMemory(device_.vk(), &ai, nullptr, &memory);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        throw Error(ErrorCode::OutOfDeviceMemory, "out of device memory: the driver refused " + mib(size) +
                                                      " of memory type " + std::to_string(type));
    check_vk(r, "vkAllocateMemory");
    *mapped = nullptr;
    if (device_.caps().memory_types[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        void* p = nullptr;
        const VkResult mr = vkMapMemory(device_.vk(), memory, 0, VK_WHOLE_SIZE, 0, &p);
        if (mr < 0) vkFreeMemory(device_.vk(), memory, nullptr);
        check_vk(mr, "vkMapMemory");
        *mapped = static_cast<std::byte*>(p);
    }
    heap_reserved_[device_.caps().memory_types[type].heapIndex] += size;
    stats_.reserved += size;
    ++stats_.blocks;
    return memory;
}

AllocationPtr MemoryAllocator::allocate(const VkMemoryRequirements& req, MemoryUsage usage,
                                        ResourceTiling tiling) {
    const uint64_t request = ++requests_;
    if (const uint64_t at = fail_at_.load(); at && (request == at || (request > at && fail_sticky_))) {
        ++injected_;
        throw Error(ErrorCode::OutOfDeviceMemory, "out of device memory: allocation " +
                                                      std::to_string(request) + " (" + mib(req.size) +
                                                      ") refused by fault injection (VKML_FAULT_ALLOC)");
    }
    try {
        return allocate_now(req, usage, tiling);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::OutOfDeviceMemory) throw;
        // Resources freed while the GPU still used them are retired, their memory not back here
        // yet: wait for them (a wait, never a free under the GPU). Then give back the empty blocks
        // kept for reuse, and try once more before reporting.
        const bool retired = device_.retired_pending() > 0;
        if (retired) device_.collect(true);
        if (!trim() && !retired) throw;
    }
    return allocate_now(req, usage, tiling);
}

bool MemoryAllocator::trim() {
    std::lock_guard lock(mutex_);
    bool freed = false;
    for (std::unique_ptr<Block>& b : blocks_) {
        if (!b || !b->sub || !b->sub->empty()) continue;
        vkFreeMemory(device_.vk(), b->memory, nullptr);
        heap_reserved_[device_.caps().memory_types[b->type].heapIndex] -= b->size;
        stats_.reserved -= b->size;
        --stats_.blocks;
        b.reset();
        freed = true;
    }
    return freed;
}

AllocationPtr MemoryAllocator::allocate_now(const VkMemoryRequirements& req, MemoryUsage usage,
                                            ResourceTiling tiling) {
    if (req.size == 0) throw Error(ErrorCode::InvalidArgument, "memory allocation of 0 bytes");
    const uint32_t type = choose_memory_type(req.memoryTypeBits, usage);
    const ResourceKind kind = tiling == ResourceTiling::Linear ? ResourceKind::Linear : ResourceKind::Optimal;
    std::lock_guard lock(mutex_);

    auto slot = [&]() -> uint32_t { // reuse a freed slot so indices stay small
        for (uint32_t i = 0; i < blocks_.size(); ++i)
            if (!blocks_[i]) return i;
        blocks_.emplace_back();
        return uint32_t(blocks_.size() - 1);
    };
    auto make = [&](uint32_t block, uint64_t offset) {
        Block& b = *blocks_[block];
        auto a = std::make_shared<Allocation>(Allocation::Key{});
        a->owner_ = this;
        a->memory_ = b.memory;
        a->offset_ = offset;
        a->size_ = req.size;
        a->memory_type_ = type;
        a->block_ = block;
        a->mapped_ = b.mapped ? b.mapped + offset : nullptr;
        stats_.in_use += req.size;
        stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
        ++stats_.allocations;
        return a;
    };

    if (req.size > block_size_ / 2) { // large resources get memory of their own
        auto b = std::make_unique<Block>();
        b->type = type;
        b->size = req.size;
        b->memory = allocate_memory(req.size, type, &b->mapped);
        const uint32_t i = slot();
        blocks_[i] = std::move(b);
        return make(i, 0);
    }
    const uint64_t alignment = std::max<uint64_t>(req.alignment, 1);
    for (uint32_t i = 0; i < blocks_.size(); ++i) {
        Block* b = blocks_[i].get();
        if (!b || b->type != type || !b->sub) continue;
        if (auto s = b->sub->allocate(req.size, alignment, kind)) return make(i, s->offset);
    }
    // A new block: full size when the budget allows, else halved until it fits or is too small
    // for the request, so a tight budget still serves small resources.
    auto b = std::make_unique<Block>();
    b->type = type;
    for (uint64_t size = block_size_;; size /= 2) {
        try {
            b->memory = allocate_memory(size, type, &b->mapped);
            b->size = size;
            break;
        } catch (const Error& e) {
            if (e.code() != ErrorCode::OutOfDeviceMemory || size / 2 < req.size + alignment) throw;
        }
    }
    b->sub.emplace(b->size, std::max<uint64_t>(device_.caps().buffer_image_granularity, 1));
    const auto s = b->sub->allocate(req.size, alignment, kind);
    const uint32_t i = slot();
    blocks_[i] = std::move(b);
    return make(i, s->offset); // a fresh block always fits: size >= request + alignment
}

AllocationPtr MemoryAllocator::allocate_aliased(std::span<const VkMemoryRequirements> reqs,
                                                MemoryUsage usage) {
    if (reqs.empty()) throw Error(ErrorCode::InvalidArgument, "allocate_aliased needs at least one resource");
    VkMemoryRequirements all{0, 1, ~0u};
    for (const auto& r : reqs) {
        all.size = std::max(all.size, r.size);
        all.alignment = std::max(all.alignment, r.alignment);
        all.memoryTypeBits &= r.memoryTypeBits;
    }
    if (!all.memoryTypeBits)
        throw Error(ErrorCode::Unsupported, "the aliased resources accept no common memory type");
    // Optimal: the block's granularity rule then keeps linear neighbours off its pages whichever
    // kind of resource is bound at a time.
    return allocate(all, usage, ResourceTiling::Optimal);
}

void MemoryAllocator::release(Allocation& a) {
    std::lock_guard lock(mutex_);
    std::unique_ptr<Block>& b = blocks_[a.block_];
    stats_.in_use -= a.size_;
    --stats_.allocations;
    bool drop = !b->sub;
    if (b->sub) {
        b->sub->free(a.offset_);
        if (b->sub->empty()) { // keep one empty block per memory type to avoid churn
            drop = std::any_of(blocks_.begin(), blocks_.end(), [&](const std::unique_ptr<Block>& o) {
                return o && o != b && o->type == b->type && o->sub && o->sub->empty();
            });
        }
    }
    if (drop) {
        vkFreeMemory(device_.vk(), b->memory, nullptr);
        heap_reserved_[device_.caps().memory_types[b->type].heapIndex] -= b->size;
        stats_.reserved -= b->size;
        --stats_.blocks;
        b.reset();
    }
}

MemoryStats MemoryAllocator::stats() const {
    std::lock_guard lock(mutex_);
    MemoryStats s = stats_;
    const Capabilities& caps = device_.caps();
    const auto heaps = detail::query_memory_heaps(device_.physical_device(), caps.memory_budget);
    uint64_t budget = 0, used = 0;
    for (size_t h = 0; h < heaps.size(); ++h) {
        if (!heaps[h].device_local) continue;
        budget += heaps[h].budget;
        used += caps.memory_budget ? heaps[h].usage : heap_reserved_[h];
        s.device_local_reserved += heap_reserved_[h];
    }
    if (device_local_limit_) budget = std::min(budget, device_local_limit_);
    s.device_local_budget = budget > used ? budget - used : 0;
    return s;
}

} // namespace vkml::gpu
