#pragma once
// vkml's device-memory allocator: large VkDeviceMemory blocks per memory type, sub-allocated with
// alignment and bufferImageGranularity respected, freed ranges coalesced. It watches the heap
// budget (VK_EXT_memory_budget when present) and reports running out as a vkml::Error with code
// OutOfDeviceMemory that the caller can act on (smaller tiles, fewer frames in flight).
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include <vulkan/vulkan_core.h>

namespace vkml::gpu {

class Device;

enum class MemoryUsage : uint8_t {
    DeviceLocal, // GPU-only tensors and images
    Upload,      // host writes, GPU reads: staging, constants (host visible, coherent)
    Readback,    // GPU writes, host reads (host visible, coherent, cached when available)
};

// Buffers and linear images are Linear; optimal-tiling images are Optimal. The two may not share a
// bufferImageGranularity page.
enum class ResourceTiling : uint8_t { Linear, Optimal };

struct MemoryStats {
    uint64_t in_use = 0;                // bytes of live allocations
    uint64_t peak_in_use = 0;           // high-water mark of in_use
    uint64_t reserved = 0;              // bytes of VkDeviceMemory held (blocks and dedicated allocations)
    uint64_t blocks = 0;                // VkDeviceMemory objects held
    uint64_t allocations = 0;           // live allocations
    uint64_t device_local_reserved = 0; // the part of `reserved` on device-local heaps
    uint64_t device_local_budget = 0;   // what vkml may still use of device-local memory, all told
};

class MemoryAllocator;

// One sub-allocation. Shared ownership so that aliased resources keep it alive; the memory returns
// to its block when the last owner lets go.
class Allocation {
public:
    // Only the allocator can make the key, so only it creates allocations.
    class Key {
        friend class MemoryAllocator;
        Key() = default;
    };
    explicit Allocation(Key) {}
    ~Allocation();
    Allocation(const Allocation&) = delete;
    Allocation& operator=(const Allocation&) = delete;

    VkDeviceMemory memory() const { return memory_; }
    uint64_t offset() const { return offset_; }
    uint64_t size() const { return size_; }
    uint32_t memory_type() const { return memory_type_; }
    // Persistently mapped pointer at offset() for host-visible memory, else null.
    std::byte* mapped() const { return mapped_; }

private:
    friend class MemoryAllocator;
    MemoryAllocator* owner_ = nullptr;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    uint64_t offset_ = 0, size_ = 0;
    uint32_t memory_type_ = 0;
    uint32_t block_ = 0; // index into the owner's blocks; dedicated allocations have their own
    std::byte* mapped_ = nullptr;
};
using AllocationPtr = std::shared_ptr<Allocation>;

class MemoryAllocator {
public:
    static constexpr uint64_t default_block_size = 64ull << 20;

    MemoryAllocator(Device& device, uint64_t device_local_limit, uint64_t block_size = default_block_size);
    ~MemoryAllocator();
    MemoryAllocator(const MemoryAllocator&) = delete;
    MemoryAllocator& operator=(const MemoryAllocator&) = delete;

    // Throws vkml::Error(OutOfDeviceMemory) when the budget or the driver refuses (after waiting
    // for the memory of resources freed while the GPU still used them, see Device::retire).
    AllocationPtr allocate(const VkMemoryRequirements& req, MemoryUsage usage, ResourceTiling tiling);
    // One allocation that every resource in `reqs` can be bound to, for resources whose lifetimes
    // the caller declares disjoint (transient aliasing): the largest size and alignment, the
    // memory types all of them accept.
    AllocationPtr allocate_aliased(std::span<const VkMemoryRequirements> reqs, MemoryUsage usage);

    MemoryStats stats() const;
    // Frees the empty blocks kept for reuse; true when there were any.
    bool trim();
    // Index of the memory type `usage` would use for `type_bits`, or throws Unsupported.
    uint32_t choose_memory_type(uint32_t type_bits, MemoryUsage usage) const;

    // Fault injection, a test switch: the `nth` allocation request from now on (1: the next one)
    // fails with OutOfDeviceMemory, as a refusal by the driver would after every retry; with
    // `sticky`, every later request fails too. 0 turns it off. The environment variable
    // VKML_FAULT_ALLOC=N (or N+ for sticky) sets it when the device is created, counting from its
    // first allocation. Requests are allocate() and allocate_aliased() calls, from any thread.
    void inject_failure(uint64_t nth, bool sticky = false);
    // Allocation requests so far (served or refused) and failures injected so far.
    uint64_t requests() const { return requests_.load(); }
    uint64_t injected_failures() const { return injected_.load(); }

private:
    friend class Allocation;
    struct Block;
    void release(Allocation& allocation);
    AllocationPtr allocate_now(const VkMemoryRequirements& req, MemoryUsage usage, ResourceTiling tiling);
    VkDeviceMemory allocate_memory(uint64_t size, uint32_t type, std::byte** mapped);
    void check_budget(uint32_t type, uint64_t size) const;

    Device& device_;
    uint64_t block_size_;
    uint64_t device_local_limit_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Block>> blocks_; // null entries are reused slots
    MemoryStats stats_;
    std::vector<uint64_t> heap_reserved_; // bytes vkml holds per heap
    std::atomic<uint64_t> requests_{0}, injected_{0};
    std::atomic<uint64_t> fail_at_{0}; // the request number that fails (0: none)
    std::atomic<bool> fail_sticky_{false};
};

} // namespace vkml::gpu
