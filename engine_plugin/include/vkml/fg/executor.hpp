#pragma once
// fg::Executor runs compiled frame graphs on a gpu::Device: it creates (and aliases) the
// transient resources, one set per frame in flight, records every pass with the plan's barriers,
// and submits the batches to the graphics and async compute queues with timeline-semaphore waits.
// Or it records the whole frame into a command buffer the host hands over.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/fg/frame_graph.hpp"
#include "vkml/gpu/profiler.hpp"

namespace vkml::gpu {
class Device;
}

namespace vkml::fg {

struct Barrier; // of a compiled Plan (internal)
struct Batch;

struct ExecutorDesc {
    // Frames the CPU may record ahead of the GPU; each has its own transients and command buffers.
    uint32_t frames_in_flight = 2;
    // Per-pass GPU timestamps (when the device's queues support them).
    bool timestamps = true;
    // Honour passes' async compute requests when the device has a separate compute queue.
    bool async_compute = true;
    bool alias_memory = true;
    std::string name = "fg"; // prefix of every debug name
};

// What run() submitted: the timeline value each queue reaches when the frame's work on it is done
// (0 when the frame put nothing on that queue). Wait on them with Device::wait, or pass them to the
// host's own submissions as timeline-semaphore waits (Device::timeline).
struct FrameSubmission {
    uint64_t frame = 0;
    std::array<uint64_t, queue_count> values{};
};

class Executor {
public:
    explicit Executor(gpu::Device& device, ExecutorDesc desc = {});
    ~Executor(); // waits for the frames it submitted
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    // The device's queues and real memory requirements, for FrameGraph::compile().
    CompileOptions compile_options(bool async_compute) const;

    // Runs one frame: compiles the graph if it changed, waits until this frame slot's previous
    // frame is done, records and submits.
    FrameSubmission run(FrameGraph& graph);
    // Records the whole frame into the host's command buffer (recording, outside a render pass,
    // from the graphics queue's family). Everything runs on that queue, so the graph is compiled
    // without async compute. The host submits it whenever it likes, and must know that the frame
    // recorded frames_in_flight calls earlier has completed (its own fences tell it) before
    // calling again: that frame's transients, timestamps and descriptor sets are reused then.
    // Returns the frame's number, for frame_finished().
    uint64_t record(FrameGraph& graph, VkCommandBuffer host_cmd);
    // The same, with a timeline semaphore of the host's that reaches `value` once the host's
    // submission of `host_cmd` is done: before the frame slot is reused, vkml waits for it instead
    // of relying on the rule above. The semaphore must stay valid until then, or until the host
    // reports the frame with frame_finished().
    uint64_t record(FrameGraph& graph, VkCommandBuffer host_cmd, VkSemaphore host_timeline, uint64_t value);
    // The host tells vkml that the GPU finished the frame record() returned `frame` for (a fence
    // or semaphore of its own said so): its descriptor sets may be reused before the frame slot
    // comes round again. Optional; unknown or older frames are ignored.
    void frame_finished(uint64_t frame);
    void wait_idle();

    // Per-pass GPU times of the latest frame known to be complete, on a common time base, so
    // overlapping queues show as overlapping rows.
    const std::vector<gpu::TimingRecord>& timings();
    std::string timing_table();
    std::string chrome_trace();

    uint32_t frames_in_flight() const { return desc_.frames_in_flight; }
    uint64_t frames_recorded() const { return frame_; }
    uint64_t resource_sets_created() const { return sets_created_; } // physical resources built

private:
    struct Slot;
    Slot& begin_frame(FrameGraph& graph, bool host);
    uint64_t record_host(FrameGraph& graph, VkCommandBuffer host_cmd, VkSemaphore host_timeline, uint64_t value);
    void ensure_resources(Slot& slot, uint32_t index, const FrameGraph& graph);
    void record_batch(Slot& slot, uint32_t slot_index, const FrameGraph& graph, const Batch& batch,
                      gpu::CommandBuffer& cmd);
    void record_barriers(gpu::CommandBuffer& cmd, const Slot& slot, const Plan& plan,
                         const std::vector<Barrier>& barriers);
    void collect_timings(Slot& slot, bool wait);
    gpu::Profiler& profiler(Slot& slot, uint32_t slot_index);

    gpu::Device& device_;
    ExecutorDesc desc_;
    std::vector<std::unique_ptr<Slot>> slots_;
    uint64_t frame_ = 0;
    uint64_t sets_created_ = 0;
    std::vector<gpu::TimingRecord> timings_;
    // Serials of the plans this executor compiled (FrameGraph::Impl::serial), so a graph compiled
    // elsewhere, for other options, is recompiled for this device.
    std::array<uint64_t, 8> serials_{};
    uint64_t serial_next_ = 0;
    // Imported objects' last use in earlier frames (queue, timeline value), keyed by handle, so a
    // frame that first uses one on the other queue waits for it.
    struct LastUse {
        uint64_t handle;
        Queue queue;
        uint64_t value;
    };
    std::vector<LastUse> imports_;
};

} // namespace vkml::fg
