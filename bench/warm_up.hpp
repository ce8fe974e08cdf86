#pragma once
// The warm-up of vkml's GPU benchmarks (bench ops, bench model): untimed records worth about
// `seconds` of GPU work, so the timed ones run at working clocks. After a fixed 3 warm-ups a short
// case was timed at idle clocks (an H100: DepthToSpace 342 instead of 61 us, a 1x1 conv 427
// instead of 141).
#include <algorithm>

#include "vkml/gpu/device.hpp"
#include "vkml/gpu/profiler.hpp"

namespace vkml::bench {

// Times one record of `record(cmd)` with GPU timestamps and returns how many records make about
// `seconds` of GPU work, between 3 and `max`.
template <class Record>
int warm_up_records(gpu::Device& device, Record&& record, double seconds, int max) {
    gpu::Profiler probe(device, 2);
    device.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        probe.reset(cmd);
        probe.begin(cmd, "probe");
        record(cmd);
        probe.end(cmd);
    });
    const auto results = probe.results();
    const double us = results.empty() ? 0.0 : results[0].duration_us;
    return int(std::clamp(seconds * 1e6 / std::max(us, 1.0), 3.0, double(max)));
}

} // namespace vkml::bench
