#include "vkml/gpu/stream.hpp"

#include <algorithm>

namespace vkml::gpu {

CommandStream::CommandStream(Device& device, QueueRole role, uint32_t depth)
    : device_(device), role_(role), depth_(std::max<uint32_t>(depth, 1)) {}

CommandStream::~CommandStream() = default;

CommandBuffer& CommandStream::cmd() {
    if (current_ != none) return *ring_[current_].cmd;
    // A buffer whose work is done, else a new one while the ring has room, else the oldest (its
    // begin() waits for it).
    size_t pick = none;
    for (size_t i = 0; i < ring_.size() && pick == none; ++i)
        if (!ring_[i].value || device_.is_complete(role_, ring_[i].value)) pick = i;
    if (pick == none && ring_.size() < depth_) {
        ring_.push_back({std::make_unique<CommandBuffer>(device_, role_), 0});
        pick = ring_.size() - 1;
    }
    if (pick == none)
        pick = size_t(std::min_element(ring_.begin(), ring_.end(),
                                       [](const Entry& a, const Entry& b) { return a.value < b.value; }) -
                      ring_.begin());
    ring_[pick].cmd->begin();
    ring_[pick].value = 0;
    current_ = pick;
    return *ring_[pick].cmd;
}

uint64_t CommandStream::submit(std::span<const SemaphoreWait> waits) {
    if (current_ == none) return last_;
    Entry& e = ring_[current_];
    current_ = none; // a failed end or submit leaves the buffer to be re-begun, never resubmitted
    e.cmd->end();
    e.value = device_.submit(role_, *e.cmd, waits);
    last_ = e.value;
    return last_;
}

void CommandStream::wait() {
    if (last_) device_.wait(role_, last_);
}

} // namespace vkml::gpu
