#pragma once
// gpu::CommandStream: work submitted in several pieces through a small ring of command buffers.
// A long job (a big image through a slow model) becomes a sequence of bounded submissions, so the
// timeline advances while it runs (Device::wait sees progress), progress can be shown, and no
// single submission runs for minutes; recording piece n+1 overlaps the GPU running piece n, and at
// most `depth` pieces are queued at a time.
//
//   gpu::CommandStream stream(device, QueueRole::Compute);
//   for (size_t i = 0; i < pieces; ++i) {
//       record_piece(stream.cmd(), i);   // cmd() is a recording buffer (begun on first use)
//       stream.submit();                 // ends and submits it; the next cmd() is another buffer
//   }
//   stream.wait();
//
// Submissions go to one queue in order, so a barrier at the start of a piece orders it after the
// previous pieces (Vulkan's submission order spans command buffers and batches of a queue).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"

namespace vkml::gpu {

class CommandStream {
public:
    CommandStream(Device& device, QueueRole role, uint32_t depth = 3);
    ~CommandStream(); // its command buffers retire against their submissions (nothing waits)
    CommandStream(const CommandStream&) = delete;
    CommandStream& operator=(const CommandStream&) = delete;

    // The buffer being recorded. After a submit(), the next call takes a buffer whose work is done
    // (waiting for the oldest when all `depth` are in flight) and begins it.
    CommandBuffer& cmd();
    bool recording() const { return current_ != none; }
    // Ends and submits what cmd() recorded (nothing to do when nothing was recorded) and returns
    // the timeline value that marks it done: the last submission's value.
    uint64_t submit(std::span<const SemaphoreWait> waits = {});
    // The value of the latest submission (0 before any).
    uint64_t last_submitted() const { return last_; }
    // Waits for everything submitted through the stream (Device::wait: no fixed time limit).
    void wait();

    Device& device() const { return device_; }
    QueueRole role() const { return role_; }

private:
    static constexpr size_t none = ~size_t(0);
    struct Entry {
        std::unique_ptr<CommandBuffer> cmd;
        uint64_t value = 0; // its last submission
    };
    Device& device_;
    QueueRole role_;
    uint32_t depth_;
    std::vector<Entry> ring_;
    size_t current_ = none;
    uint64_t last_ = 0;
};

} // namespace vkml::gpu
