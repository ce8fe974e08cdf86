#include "memory_plan.hpp"

#include <algorithm>
#include <numeric>

namespace vkml::graph {

MemoryPlan plan_memory(std::span<const MemoryRequest> requests, uint64_t alignment) {
    const uint64_t align = std::max<uint64_t>(alignment, 1);
    auto aligned = [&](uint64_t b) { return (std::max<uint64_t>(b, 1) + align - 1) / align * align; };
    MemoryPlan plan;
    plan.offsets.assign(requests.size(), 0);

    uint32_t steps = 0;
    for (const MemoryRequest& r : requests) {
        plan.unshared_bytes += aligned(r.bytes);
        steps = std::max(steps, r.last + 1);
    }
    std::vector<uint64_t> live(steps, 0);
    for (const MemoryRequest& r : requests)
        for (uint32_t s = r.first; s <= r.last; ++s) live[s] += aligned(r.bytes);
    for (uint64_t l : live) plan.peak_live_bytes = std::max(plan.peak_live_bytes, l);

    // Largest first: big tensors fix the arena's shape, small ones fill the gaps they leave.
    std::vector<size_t> order(requests.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
        return requests[a].first < requests[b].first;
    });
    struct Placed {
        uint64_t begin, end;
    };
    std::vector<size_t> placed;
    std::vector<Placed> busy;
    for (size_t i : order) {
        const MemoryRequest& r = requests[i];
        const uint64_t size = aligned(r.bytes);
        busy.clear();
        for (size_t j : placed) {
            const MemoryRequest& o = requests[j];
            if (o.first <= r.last && r.first <= o.last)
                busy.push_back({plan.offsets[j], plan.offsets[j] + aligned(o.bytes)});
        }
        std::sort(busy.begin(), busy.end(),
                  [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
        // Best fit: the smallest gap between overlapping tensors that holds this one.
        uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
        for (const Placed& p : busy) {
            if (p.begin > cursor && p.begin - cursor >= size && p.begin - cursor < best_gap) {
                best = cursor;
                best_gap = p.begin - cursor;
            }
            cursor = std::max(cursor, p.end);
        }
        plan.offsets[i] = best != UINT64_MAX ? best : cursor;
        plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[i] + size);
        placed.push_back(i);
    }
    return plan;
}

} // namespace vkml::graph
