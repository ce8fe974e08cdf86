#pragma once
// GPU timestamps around recorded ops or passes, read back after the work completes and shown as
// a per-op table or as Chrome trace JSON (chrome://tracing, Perfetto) with one track per queue.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/gpu/device.hpp"

namespace vkml::gpu {

class CommandBuffer;

struct TimingRecord {
    std::string name;
    QueueRole queue = QueueRole::Compute;
    double start_us = 0; // relative to the earliest timestamp of the frame
    double duration_us = 0;
};

// Formatting, independent of the GPU so it can be tested on its own.
std::string timing_table(const std::vector<TimingRecord>& records);
std::string chrome_trace_json(const std::vector<TimingRecord>& records);

class Profiler {
public:
    // Room for `max_scopes` begin/end pairs per frame.
    Profiler(Device& device, uint32_t max_scopes = 256);
    ~Profiler();
    Profiler(const Profiler&) = delete;
    Profiler& operator=(const Profiler&) = delete;

    // Resets the query pool; record before the first scope of a frame.
    void reset(CommandBuffer& cmd);
    // Brackets the commands recorded between begin and end. Returns false (and records nothing)
    // when the device has no timestamps or the pool is full.
    bool begin(CommandBuffer& cmd, std::string_view name);
    void end(CommandBuffer& cmd);
    // After the work has completed: the scopes recorded since reset(), in recording order.
    std::vector<TimingRecord> results() const;
    bool supported() const { return supported_; }

private:
    Device& device_;
    VkQueryPool pool_ = VK_NULL_HANDLE;
    uint32_t capacity_ = 0;
    bool supported_ = false;
    struct Scope {
        std::string name;
        QueueRole queue;
        uint32_t query;
        bool closed;
    };
    std::vector<Scope> scopes_;
    std::vector<size_t> open_;
};

} // namespace vkml::gpu
