#include "gpu/suballocator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

using vkml::gpu::ResourceKind;
using vkml::gpu::SubAllocation;
using vkml::gpu::SubAllocator;

namespace {

constexpr ResourceKind kLinear = ResourceKind::Linear;
constexpr ResourceKind kOptimal = ResourceKind::Optimal;

// Unwraps an allocation the test expects to succeed, failing the test instead of crashing.
SubAllocation must(std::optional<SubAllocation> a) {
    EXPECT_TRUE(a.has_value());
    return a.value_or(SubAllocation{std::numeric_limits<uint64_t>::max(), 0});
}

} // namespace

TEST(SubAllocator, AllocFreeReuse) {
    SubAllocator a(1024, 1);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.capacity(), 1024u);
    EXPECT_EQ(a.largest_free_range(), 1024u);

    const SubAllocation x = must(a.allocate(100, 1, kLinear));
    const SubAllocation y = must(a.allocate(200, 1, kLinear));
    EXPECT_EQ(x.offset, 0u);
    EXPECT_EQ(x.size, 100u);
    EXPECT_EQ(y.offset, 100u);
    EXPECT_EQ(a.used(), 300u);
    EXPECT_EQ(a.allocation_count(), 2u);
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a.largest_free_range(), 724u);
    a.validate();

    a.free(x.offset);
    EXPECT_EQ(a.used(), 200u);
    EXPECT_EQ(a.allocation_count(), 1u);
    // Best fit puts a request that fits the hole left by x into that hole, not into the big tail.
    const SubAllocation z = must(a.allocate(80, 1, kLinear));
    EXPECT_EQ(z.offset, 0u);
    a.validate();

    a.free(y.offset);
    a.free(z.offset);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.used(), 0u);
    EXPECT_EQ(a.free_range_count(), 1u);
    EXPECT_EQ(must(a.allocate(1024, 1, kLinear)).offset, 0u);
    a.validate();
}

TEST(SubAllocator, AlignmentRespectedAndPaddingReturned) {
    SubAllocator a(1 << 16, 1);
    std::vector<uint64_t> live;
    live.push_back(must(a.allocate(3, 1, kLinear)).offset);
    EXPECT_EQ(live.back(), 0u);
    for (uint64_t alignment : {2u, 16u, 256u, 4096u}) {
        const SubAllocation s = must(a.allocate(5, alignment, kLinear));
        EXPECT_EQ(s.offset % alignment, 0u) << "alignment " << alignment;
        EXPECT_EQ(s.size, 5u);
        live.push_back(s.offset);
    }
    EXPECT_EQ(live.back(), 4096u); // the first 4096-aligned address past the others
    EXPECT_EQ(a.used(), 3u + 4 * 5u);
    a.validate();

    // The padding left in front of the 4096-aligned allocation is still usable.
    const SubAllocation small = must(a.allocate(64, 1, kLinear));
    EXPECT_LT(small.offset, 4096u);
    live.push_back(small.offset);
    a.validate();

    // Freeing everything gives all the padding back.
    for (uint64_t offset : live) a.free(offset);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.free_range_count(), 1u);
    EXPECT_EQ(a.largest_free_range(), a.capacity());
    EXPECT_EQ(must(a.allocate(a.capacity(), 1, kOptimal)).offset, 0u);
    a.validate();
}

TEST(SubAllocator, CoalescesFreedNeighbours) {
    SubAllocator a(3000, 1);
    const SubAllocation x = must(a.allocate(1000, 1, kLinear));
    const SubAllocation y = must(a.allocate(1000, 1, kLinear));
    const SubAllocation z = must(a.allocate(1000, 1, kLinear));
    EXPECT_FALSE(a.allocate(1, 1, kLinear).has_value());

    a.free(y.offset);
    EXPECT_EQ(a.largest_free_range(), 1000u);
    a.free(x.offset); // merges with the hole on its right
    EXPECT_EQ(a.largest_free_range(), 2000u);
    EXPECT_EQ(a.free_range_count(), 1u);
    a.free(z.offset); // merges with the hole on its left
    EXPECT_EQ(a.largest_free_range(), 3000u);
    EXPECT_EQ(a.free_range_count(), 1u);
    a.validate();

    EXPECT_EQ(must(a.allocate(3000, 1, kLinear)).offset, 0u);
}

TEST(SubAllocator, CoalescesBothSidesAtOnce) {
    SubAllocator a(300, 1);
    const SubAllocation x = must(a.allocate(100, 1, kLinear));
    const SubAllocation y = must(a.allocate(100, 1, kLinear));
    const SubAllocation z = must(a.allocate(100, 1, kLinear));
    a.free(x.offset);
    a.free(z.offset);
    EXPECT_EQ(a.free_range_count(), 2u);
    a.free(y.offset); // one free range on each side
    EXPECT_EQ(a.free_range_count(), 1u);
    EXPECT_EQ(a.largest_free_range(), 300u);
    a.validate();
}

TEST(SubAllocator, GranularityAfterNeighbourOfOtherKind) {
    SubAllocator a(4096, 256);
    const SubAllocation lin = must(a.allocate(100, 1, kLinear));
    EXPECT_EQ(lin.offset, 0u);
    // Would be at 100 on page 0, shared with the linear buffer: moved to the next page.
    const SubAllocation opt = must(a.allocate(100, 1, kOptimal));
    EXPECT_EQ(opt.offset, 256u);
    // Same kind as its left neighbour: packs tightly.
    const SubAllocation opt2 = must(a.allocate(10, 1, kOptimal));
    EXPECT_EQ(opt2.offset, 356u);
    // The gap [100, 256) sits between Linear and Optimal. A small linear one fits there because
    // it ends on page 0, not on page 1 where the image starts.
    const SubAllocation lin2 = must(a.allocate(10, 1, kLinear));
    EXPECT_EQ(lin2.offset, 100u);
    // Too big for what is left of that gap, so it goes after the Optimal at 356..365, whose page
    // 1 it may not share: the next page.
    const SubAllocation lin3 = must(a.allocate(200, 1, kLinear));
    EXPECT_EQ(lin3.offset, 512u);
    a.validate();
}

TEST(SubAllocator, GranularityBeforeNeighbourOfOtherKind) {
    SubAllocator a(4096, 256);
    // Put an optimal image in the middle of page 1 with free space in front of it.
    const SubAllocation pad = must(a.allocate(300, 1, kOptimal));
    const SubAllocation img = must(a.allocate(100, 1, kOptimal));
    EXPECT_EQ(img.offset, 300u);
    a.free(pad.offset);

    // 280 linear bytes at 0 would end on page 1, where the image starts: not allowed, so it goes
    // past the image and onto a fresh page (the image ends on page 1 too).
    const SubAllocation lin = must(a.allocate(280, 1, kLinear));
    EXPECT_EQ(lin.offset, 512u);
    // 200 linear bytes end on page 0: allowed in front of the image.
    const SubAllocation lin2 = must(a.allocate(200, 1, kLinear));
    EXPECT_EQ(lin2.offset, 0u);
    a.validate();

    // An optimal image may fill the rest of page 1 up to the other image.
    SubAllocator b(4096, 256);
    const SubAllocation pad_b = must(b.allocate(300, 1, kOptimal));
    must(b.allocate(100, 1, kOptimal));
    b.free(pad_b.offset);
    EXPECT_EQ(must(b.allocate(280, 1, kOptimal)).offset, 0u);
    b.validate();
}

TEST(SubAllocator, GranularityOneMeansNoConstraint) {
    SubAllocator a(64, 1);
    EXPECT_EQ(must(a.allocate(1, 1, kLinear)).offset, 0u);
    EXPECT_EQ(must(a.allocate(1, 1, kOptimal)).offset, 1u);
    EXPECT_EQ(must(a.allocate(1, 1, kLinear)).offset, 2u);
    a.validate();
}

TEST(SubAllocator, OutOfSpaceReturnsNullopt) {
    SubAllocator a(1024, 1);
    EXPECT_FALSE(a.allocate(1025, 1, kLinear).has_value());
    EXPECT_FALSE(a.allocate(std::numeric_limits<uint64_t>::max(), 1, kLinear).has_value());
    must(a.allocate(1000, 1, kLinear));
    EXPECT_FALSE(a.allocate(25, 1, kLinear).has_value());
    EXPECT_FALSE(a.allocate(8, 1024, kLinear).has_value()); // 24 bytes left, but not aligned
    EXPECT_EQ(must(a.allocate(24, 8, kLinear)).offset, 1000u);
    EXPECT_FALSE(a.allocate(1, 1, kLinear).has_value());
    a.validate();

    // Granularity can make a request that fits by size alone fail.
    SubAllocator g(512, 256);
    must(g.allocate(1, 1, kLinear));
    EXPECT_FALSE(g.allocate(300, 1, kOptimal).has_value());
    EXPECT_TRUE(g.allocate(256, 1, kOptimal).has_value());
    g.validate();
}

TEST(SubAllocator, HugeAlignmentDoesNotWrapAround) {
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    const uint64_t half = uint64_t{1} << 63;
    SubAllocator a(max, 1);
    EXPECT_EQ(must(a.allocate(half + 1, 1, kLinear)).offset, 0u);
    // The only free range starts at 2^63 + 1; aligning that up to 2^63 overflows and must not
    // wrap to offset 0, which is taken.
    EXPECT_FALSE(a.allocate(1, half, kLinear).has_value());
    EXPECT_EQ(must(a.allocate(1, 1, kLinear)).offset, half + 1);
    a.validate();

    SubAllocator g(max, half);
    must(g.allocate(half + 1, 1, kLinear));
    // The neighbour rule wants the next 2^63 boundary, which does not exist.
    EXPECT_FALSE(g.allocate(1, 1, kOptimal).has_value());
    g.validate();
}

TEST(SubAllocator, RejectsBadArguments) {
    EXPECT_THROW(SubAllocator(0, 1), std::invalid_argument);
    EXPECT_THROW(SubAllocator(1024, 0), std::invalid_argument);
    EXPECT_THROW(SubAllocator(1024, 3), std::invalid_argument);

    SubAllocator a(1024, 1);
    EXPECT_THROW(a.allocate(0, 1, kLinear), std::invalid_argument);
    EXPECT_THROW(a.allocate(16, 0, kLinear), std::invalid_argument);
    EXPECT_THROW(a.allocate(16, 24, kLinear), std::invalid_argument);
    EXPECT_THROW(a.allocate(16, 1, ResourceKind::Free), std::invalid_argument);

    const SubAllocation x = must(a.allocate(16, 16, kLinear));
    const SubAllocation y = must(a.allocate(1, 1, kLinear));
    must(a.allocate(16, 16, kLinear));         // leaves a free padding range starting at y.offset + 1
    EXPECT_THROW(a.free(5), std::logic_error); // inside an allocation
    EXPECT_THROW(a.free(y.offset + 1), std::logic_error); // start of a free range
    EXPECT_THROW(a.free(5000), std::logic_error);         // outside the block
    a.free(x.offset);
    EXPECT_THROW(a.free(x.offset), std::logic_error); // double free
    EXPECT_EQ(a.allocation_count(), 2u);
    a.validate();
}

namespace {

struct ShadowAllocation {
    uint64_t size;
    uint64_t alignment;
    ResourceKind kind;
};
using Shadow = std::map<uint64_t, ShadowAllocation>; // live allocations by offset

bool conflicting(ResourceKind a, ResourceKind b) {
    return a != b;
} // both are Linear or Optimal

// Independent answer to "is there any legal place for this request?": the gaps between live
// allocations are exactly the free space if the allocator never loses padding.
bool fits_somewhere(const Shadow& shadow, uint64_t capacity, uint64_t granularity, uint64_t size,
                    uint64_t alignment, ResourceKind kind) {
    const ShadowAllocation* prev = nullptr;
    uint64_t gap_begin = 0;
    uint64_t prev_end = 0;
    auto try_gap = [&](uint64_t gap_end, const ShadowAllocation* next, uint64_t next_offset) {
        // Lowest legal start: past the gap's start, and past prev's last page when kinds differ.
        uint64_t lowest = gap_begin;
        if (prev && conflicting(prev->kind, kind))
            lowest = std::max(lowest, ((prev_end - 1) / granularity + 1) * granularity);
        const uint64_t start = (lowest + alignment - 1) / alignment * alignment;
        if (start + size > gap_end) return false;
        if (next && conflicting(next->kind, kind) &&
            (start + size - 1) / granularity == next_offset / granularity)
            return false;
        return true;
    };
    for (const auto& [offset, alloc] : shadow) {
        if (try_gap(offset, &alloc, offset)) return true;
        prev = &alloc;
        prev_end = offset + alloc.size;
        gap_begin = prev_end;
    }
    return try_gap(capacity, nullptr, 0);
}

// Checks a new allocation against its nearest live neighbours in the shadow, then records it.
void check_and_insert(Shadow& shadow, uint64_t granularity, const SubAllocation& s, uint64_t alignment,
                      ResourceKind kind) {
    ASSERT_EQ(s.offset % alignment, 0u) << "misaligned offset " << s.offset;
    const auto next = shadow.lower_bound(s.offset);
    if (next != shadow.end()) {
        ASSERT_LE(s.offset + s.size, next->first) << "overlaps the allocation at " << next->first;
        if (conflicting(next->second.kind, kind)) {
            ASSERT_NE((s.offset + s.size - 1) / granularity, next->first / granularity)
                << "shares a page with the next allocation at " << next->first;
        }
    }
    if (next != shadow.begin()) {
        const auto& [prev_offset, prev] = *std::prev(next);
        ASSERT_LE(prev_offset + prev.size, s.offset) << "overlaps the allocation at " << prev_offset;
        if (conflicting(prev.kind, kind)) {
            ASSERT_NE((prev_offset + prev.size - 1) / granularity, s.offset / granularity)
                << "shares a page with the previous allocation at " << prev_offset;
        }
    }
    shadow.emplace(s.offset, ShadowAllocation{s.size, alignment, kind});
}

void run_random_sequence(uint32_t seed, uint64_t capacity, uint64_t granularity, int ops) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", granularity " + std::to_string(granularity));
    std::mt19937 rng(seed);
    SubAllocator a(capacity, granularity);
    Shadow shadow;
    uint64_t shadow_used = 0;
    int nullopts = 0;

    auto random_size = [&] {
        // Mostly small, some large enough to hit fragmentation and out-of-space.
        const uint32_t pick = rng() % 100;
        if (pick < 70) return uint64_t{1} + rng() % 512;
        if (pick < 95) return uint64_t{1} + rng() % 8192;
        return uint64_t{1} + rng() % (capacity / 4);
    };

    for (int op = 0; op < ops; ++op) {
        const bool do_alloc = shadow.empty() || rng() % 100 < 55;
        if (do_alloc) {
            const uint64_t size = random_size();
            const uint64_t alignment = uint64_t{1} << (rng() % 13);
            const ResourceKind kind = rng() % 2 ? kLinear : kOptimal;
            const std::optional<SubAllocation> s = a.allocate(size, alignment, kind);
            const bool possible = fits_somewhere(shadow, capacity, granularity, size, alignment, kind);
            ASSERT_EQ(s.has_value(), possible)
                << "op " << op << ": size " << size << ", alignment " << alignment;
            if (s) {
                ASSERT_EQ(s->size, size);
                check_and_insert(shadow, granularity, *s, alignment, kind);
                if (::testing::Test::HasFatalFailure()) return;
                shadow_used += size;
            } else {
                ++nullopts;
            }
        } else {
            auto victim = shadow.begin();
            std::advance(victim, rng() % shadow.size());
            a.free(victim->first);
            shadow_used -= victim->second.size;
            shadow.erase(victim);
        }
        ASSERT_EQ(a.used(), shadow_used);
        ASSERT_EQ(a.allocation_count(), shadow.size());
        if (op % 97 == 0) {
            ASSERT_NO_THROW(a.validate()) << "op " << op;
        }
    }
    a.validate();
    // The sequence must actually have exercised the out-of-space path.
    EXPECT_GT(nullopts, 0);

    std::vector<uint64_t> offsets;
    for (const auto& [offset, alloc] : shadow) offsets.push_back(offset);
    std::shuffle(offsets.begin(), offsets.end(), rng);
    for (uint64_t offset : offsets) a.free(offset);
    a.validate();
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.used(), 0u);
    EXPECT_EQ(a.free_range_count(), 1u);
    EXPECT_EQ(a.largest_free_range(), capacity);
    const std::optional<SubAllocation> whole = a.allocate(capacity, 1, kOptimal);
    ASSERT_TRUE(whole.has_value());
    EXPECT_EQ(whole->offset, 0u);
}

} // namespace

TEST(SubAllocator, RandomSequenceMatchesShadowModel) {
    for (uint64_t granularity : {1u, 64u, 1024u, 4096u}) {
        run_random_sequence(1234 + static_cast<uint32_t>(granularity), 1 << 20, granularity, 20000);
        if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(SubAllocator, RandomSequenceSmallBlock) {
    // A tight block makes out-of-space and granularity moves the common case.
    run_random_sequence(42, 64 * 1024, 1024, 20000);
}
