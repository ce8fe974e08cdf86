#include "gpu/suballocator.hpp"

#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

namespace vkml::gpu {

namespace {

bool is_power_of_two(uint64_t x) {
    return x != 0 && (x & (x - 1)) == 0;
}

// nullopt on overflow: with a block near 2^64 bytes, wrapping around to 0 would place an
// allocation on top of the first one.
std::optional<uint64_t> align_up(uint64_t x, uint64_t alignment) {
    const uint64_t mask = alignment - 1;
    if (x > std::numeric_limits<uint64_t>::max() - mask) return std::nullopt;
    return (x + mask) & ~mask;
}

// Only a linear and an optimal resource may not share a granularity page; free space conflicts
// with nothing.
bool kinds_conflict(ResourceKind a, ResourceKind b) {
    return a != ResourceKind::Free && b != ResourceKind::Free && a != b;
}

const char* kind_name(ResourceKind kind) {
    switch (kind) {
    case ResourceKind::Free:
        return "Free";
    case ResourceKind::Linear:
        return "Linear";
    case ResourceKind::Optimal:
        return "Optimal";
    }
    return "?";
}

[[noreturn]] void fail(const std::string& what) {
    throw std::logic_error("SubAllocator: " + what);
}

} // namespace

SubAllocator::SubAllocator(uint64_t capacity, uint64_t granularity)
    : capacity_(capacity), granularity_(granularity) {
    if (capacity == 0) throw std::invalid_argument("SubAllocator: capacity must be > 0");
    if (!is_power_of_two(granularity))
        throw std::invalid_argument("SubAllocator: granularity " + std::to_string(granularity) +
                                    " is not a power of two");
    add_free(0, capacity);
}

std::optional<SubAllocation> SubAllocator::allocate(uint64_t size, uint64_t alignment, ResourceKind kind) {
    if (size == 0) throw std::invalid_argument("SubAllocator::allocate: size must be > 0");
    if (!is_power_of_two(alignment))
        throw std::invalid_argument("SubAllocator::allocate: alignment " + std::to_string(alignment) +
                                    " is not a power of two");
    if (kind == ResourceKind::Free)
        throw std::invalid_argument("SubAllocator::allocate: kind must be Linear or Optimal");

    // Smallest free range first (best fit), keeping big ranges whole for big requests. A range that
    // is large enough may still fail on padding or on a neighbour's kind, so keep going.
    for (auto candidate = free_by_size_.lower_bound({size, 0}); candidate != free_by_size_.end();
         ++candidate) {
        const auto it = ranges_.find(candidate->second);
        const std::optional<uint64_t> offset = place_in(it, size, alignment, kind);
        if (!offset) continue;

        const uint64_t free_begin = it->first;
        const uint64_t free_end = it->first + it->second.size;
        remove_free(it); // invalidates candidate; we return below
        // Padding on either side stays free, so a later free() merges it back.
        if (*offset > free_begin) add_free(free_begin, *offset - free_begin);
        ranges_.emplace(*offset, Range{size, kind, alignment});
        if (*offset + size < free_end) add_free(*offset + size, free_end - (*offset + size));
        used_ += size;
        ++allocation_count_;
        return SubAllocation{*offset, size};
    }
    return std::nullopt;
}

std::optional<uint64_t> SubAllocator::place_in(RangeMap::const_iterator free_range, uint64_t size,
                                               uint64_t alignment, ResourceKind kind) const {
    const uint64_t free_begin = free_range->first;
    const uint64_t free_end = free_range->first + free_range->second.size;

    std::optional<uint64_t> offset = align_up(free_begin, alignment);
    if (!offset) return std::nullopt;

    // Free ranges are always merged, so the range before a free one is an allocation.
    if (free_range != ranges_.begin()) {
        const auto& [prev_offset, prev] = *std::prev(free_range);
        if (kinds_conflict(prev.kind, kind) && on_same_page(prev_offset + prev.size - 1, *offset)) {
            // A granularity boundary is also aligned when alignment <= granularity; when alignment
            // is larger, *offset was already on a boundary and cannot share prev's page.
            offset = align_up(*offset, granularity_);
            if (!offset) return std::nullopt;
        }
    }

    if (*offset >= free_end || free_end - *offset < size) return std::nullopt;

    // Moving up would only push the end further into the next page, so a conflict here means this
    // range is unusable for this request.
    const auto next = std::next(free_range);
    if (next != ranges_.end() && kinds_conflict(next->second.kind, kind) &&
        on_same_page(*offset + size - 1, next->first))
        return std::nullopt;

    return offset;
}

void SubAllocator::free(uint64_t offset) {
    auto it = ranges_.find(offset);
    if (it == ranges_.end() || it->second.kind == ResourceKind::Free)
        fail("free of offset " + std::to_string(offset) + ", which is not a live allocation");

    uint64_t begin = it->first;
    uint64_t end = it->first + it->second.size;
    used_ -= it->second.size;
    --allocation_count_;

    // Merging keeps "no two free ranges adjacent", which is what lets a full-size request succeed
    // again once everything is freed.
    if (const auto next = std::next(it); next != ranges_.end() && next->second.kind == ResourceKind::Free) {
        end = next->first + next->second.size;
        remove_free(next);
    }
    if (it != ranges_.begin()) {
        if (const auto prev = std::prev(it); prev->second.kind == ResourceKind::Free) {
            begin = prev->first;
            remove_free(prev);
        }
    }
    ranges_.erase(it);
    add_free(begin, end - begin);
}

uint64_t SubAllocator::largest_free_range() const {
    return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first;
}

void SubAllocator::add_free(uint64_t offset, uint64_t size) {
    ranges_.emplace(offset, Range{size, ResourceKind::Free, 1});
    free_by_size_.emplace(size, offset);
}

void SubAllocator::remove_free(RangeMap::iterator it) {
    free_by_size_.erase({it->second.size, it->first});
    ranges_.erase(it);
}

void SubAllocator::validate() const {
    uint64_t expected_offset = 0;
    uint64_t used = 0;
    size_t allocations = 0;
    size_t free_ranges = 0;
    bool prev_was_free = false;
    // The last allocation seen: a free range between two allocations does not lift the
    // granularity rule, so compare with it rather than with the adjacent range.
    std::optional<std::pair<uint64_t, Range>> last_allocation;

    for (const auto& [offset, range] : ranges_) {
        const std::string at = " at offset " + std::to_string(offset);
        if (offset != expected_offset)
            fail("ranges overlap or leave a gap" + at + " (expected " + std::to_string(expected_offset) +
                 ")");
        if (range.size == 0) fail("empty range" + at);
        if (range.size > capacity_ - offset) fail("range runs past the end of the block" + at);
        expected_offset = offset + range.size;

        if (range.kind == ResourceKind::Free) {
            if (prev_was_free) fail("adjacent free ranges not merged" + at);
            if (!free_by_size_.contains({range.size, offset}))
                fail("free range missing from size index" + at);
            prev_was_free = true;
            ++free_ranges;
            continue;
        }

        prev_was_free = false;
        if (!is_power_of_two(range.alignment) || offset % range.alignment != 0)
            fail("allocation not aligned to " + std::to_string(range.alignment) + at);
        if (last_allocation) {
            const auto& [prev_offset, prev] = *last_allocation;
            if (kinds_conflict(prev.kind, range.kind) && on_same_page(prev_offset + prev.size - 1, offset))
                fail(std::string(kind_name(range.kind)) + " allocation shares a granularity page with the " +
                     kind_name(prev.kind) + " allocation at offset " + std::to_string(prev_offset) + "," +
                     at);
        }
        last_allocation = {offset, range};
        used += range.size;
        ++allocations;
    }

    if (expected_offset != capacity_)
        fail("ranges cover " + std::to_string(expected_offset) + " bytes of " + std::to_string(capacity_));
    if (used != used_)
        fail("used() is " + std::to_string(used_) + " but live sizes sum to " + std::to_string(used));
    if (allocations != allocation_count_) fail("allocation_count() disagrees with the ranges");
    if (free_ranges != free_by_size_.size()) fail("size index holds free ranges that do not exist");
}

} // namespace vkml::gpu
