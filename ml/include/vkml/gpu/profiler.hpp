#pragma once
// GPU timestamps around recorded ops or passes, read back after the work completes and shown as
// a per-op table or as Chrome trace JSON (chrome://tracing, Perfetto) with one track per queue.
#include <array>
#include <cstdint>
#include <optional>
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

// Timestamps around scopes recorded on one or more queues (one query pool per queue role), for
// a Session's per-step profile and the frame graph's per-pass times alike.
class Profiler {
public:
    // Room for `max_scopes` begin/end pairs per queue and frame (reset() can ask for more); the
    // query pools are named `name` (with the queue) for debuggers and the validation layer.
    Profiler(Device& device, uint32_t max_scopes = 256, std::string name = "vkml profiler");
    ~Profiler();
    Profiler(const Profiler&) = delete;
    Profiler& operator=(const Profiler&) = delete;

    // Starts a frame on cmd's queue: forgets the scopes recorded on that queue and resets its
    // query pool (recorded into cmd, before the queue's first scope). With `scopes` the pool grows
    // to hold at least that many pairs (an old pool is retired, not destroyed under the GPU).
    void reset(CommandBuffer& cmd, uint32_t scopes = 0);
    // Brackets the commands recorded between begin and end. Returns false (and records nothing)
    // when the device or the queue has no timestamps or the pool is full; end() still closes it.
    bool begin(CommandBuffer& cmd, std::string_view name);
    void end(CommandBuffer& cmd);
    // After the work has completed: the closed scopes of every queue since its reset(), in
    // recording order, with start times relative to the earliest of them.
    std::vector<TimingRecord> results() const;
    // The same without waiting: nullopt while any of the timestamps is not available yet (the
    // work was not submitted or has not finished).
    std::optional<std::vector<TimingRecord>> poll() const;
    bool supported() const { return supported_; }

private:
    std::optional<std::vector<TimingRecord>> read(bool wait) const;
    Device& device_;
    std::string name_;
    uint32_t min_capacity_ = 0; // queries per pool
    bool supported_ = false;
    struct Pool {
        VkQueryPool pool = VK_NULL_HANDLE;
        uint32_t capacity = 0, used = 0; // queries
    };
    std::array<Pool, queue_role_count> pools_{};
    struct Scope {
        std::string name;
        QueueRole queue;
        uint32_t query;
        bool closed;
    };
    std::vector<Scope> scopes_;
    // Per queue, the scopes begun and not yet ended (no_scope for a begin() that recorded nothing).
    static constexpr size_t no_scope = ~size_t(0);
    std::array<std::vector<size_t>, queue_role_count> open_;
};

} // namespace vkml::gpu
