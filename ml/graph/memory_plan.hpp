#pragma once
// A liveness-based memory plan: transient tensors with known sizes and lifetimes (the steps that
// write and read them) get offsets in one arena so that tensors never live at the same time share
// bytes. Greedy by size (largest first, each at the lowest gap that fits among the tensors whose
// lifetimes overlap its own), which stays close to the peak of live bytes on the chains and
// skip connections of convolutional networks. No GPU involved, so it is tested on its own.
#include <cstdint>
#include <span>
#include <vector>

namespace vkml::graph {

struct MemoryRequest {
    uint64_t bytes = 0;
    uint32_t first = 0; // first step that uses it (writes it)
    uint32_t last = 0;  // last step that uses it (inclusive)
};

struct MemoryPlan {
    std::vector<uint64_t> offsets; // one per request, multiples of the alignment
    uint64_t arena_bytes = 0;      // the arena size the offsets need
    uint64_t peak_live_bytes = 0;  // the most (aligned) bytes live at one step: a lower bound
    uint64_t unshared_bytes = 0;   // the sum of all (aligned) requests: the plan without reuse
};

// `alignment` must be a power of two or 0/1 (none).
MemoryPlan plan_memory(std::span<const MemoryRequest> requests, uint64_t alignment);

} // namespace vkml::graph
