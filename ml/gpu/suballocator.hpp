#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

// Bookkeeping for carving one VkDeviceMemory block into resources. It knows nothing about Vulkan,
// so every placement rule can be unit-tested on the CPU; the allocator that owns the blocks and
// the memory types lives above it.
namespace vkml::gpu {

// What kind of resource occupies a range. Vulkan's bufferImageGranularity forbids a linear resource
// (buffer, linear image) and an optimal-tiling image from sharing one "page" of that size.
enum class ResourceKind : uint8_t { Free, Linear, Optimal };

struct SubAllocation {
    uint64_t offset = 0;
    uint64_t size = 0; // the requested size; alignment padding is not included
};

// Best-fit over free ranges. The block is always covered exactly by an offset-ordered sequence of
// ranges, free or allocated, with no two free ranges adjacent. Alignment and granularity padding
// stays in the free ranges around an allocation, so freeing an allocation and merging with its
// neighbours gives every byte back.
class SubAllocator {
public:
    // capacity: bytes in the block (> 0); granularity: bufferImageGranularity (power of two, >= 1).
    // Throws std::invalid_argument otherwise.
    SubAllocator(uint64_t capacity, uint64_t granularity);

    // alignment: power of two; kind: Linear or Optimal. Returns nullopt when no free range fits, so
    // the caller can open a new block. Throws std::invalid_argument on size 0, a bad alignment or
    // kind Free.
    std::optional<SubAllocation> allocate(uint64_t size, uint64_t alignment, ResourceKind kind);

    // offset: as returned by allocate. An offset that is not a live allocation throws
    // std::logic_error: a double free here would silently hand the same memory out twice.
    void free(uint64_t offset);

    uint64_t capacity() const { return capacity_; }
    uint64_t granularity() const { return granularity_; }
    uint64_t used() const { return used_; } // sum of requested sizes of live allocations
    uint64_t largest_free_range() const;
    size_t allocation_count() const { return allocation_count_; }
    size_t free_range_count() const { return free_by_size_.size(); } // a measure of fragmentation
    bool empty() const { return allocation_count_ == 0; }

    // Debug check of every invariant (ranges cover the block in order without overlap, adjacent
    // free ranges merged, alignment kept, granularity rule between neighbours of different kinds,
    // counters and the size index agree). Throws std::logic_error saying which one broke.
    void validate() const;

private:
    struct Range {
        uint64_t size = 0; // for an allocation, the requested size
        ResourceKind kind = ResourceKind::Free;
        uint64_t alignment = 1; // kept only so validate() can check it
    };
    using RangeMap = std::map<uint64_t, Range>;

    // Where an allocation would go inside one free range, or nullopt when it does not fit there.
    std::optional<uint64_t> place_in(RangeMap::const_iterator free_range, uint64_t size, uint64_t alignment,
                                     ResourceKind kind) const;
    bool on_same_page(uint64_t a, uint64_t b) const { return a / granularity_ == b / granularity_; }

    void add_free(uint64_t offset, uint64_t size);
    void remove_free(RangeMap::iterator it);

    uint64_t capacity_;
    uint64_t granularity_;
    uint64_t used_ = 0;
    size_t allocation_count_ = 0;
    RangeMap ranges_;
    // (size, offset) of every free range: best-fit starts at the smallest one that could hold the
    // request instead of scanning the whole block.
    std::set<std::pair<uint64_t, uint64_t>> free_by_size_;
};

} // namespace vkml::gpu
