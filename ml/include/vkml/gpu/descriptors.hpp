#pragma once
// DescriptorArena: descriptor sets for recordings that cannot push their descriptors (a device
// without VK_KHR_push_descriptor, or VKML_DISABLE_PUSH_DESCRIPTOR=1). Sets come from descriptor
// pools the arena owns, and what one recording allocated stays valid until the arena learns that
// the GPU has finished that recording, by one of:
//   - close(role, value): vkml submitted it; done when `role`'s timeline reaches `value`
//     (Device::submit does this for a CommandBuffer's own arena);
//   - close(semaphore, value): the host submitted it and its timeline semaphore reaches `value`
//     when the work is done (the semaphore must stay valid until the batch is reused or released
//     with finished_all(); the arena's destruction does not look at it);
//   - close() and later finished(ticket): the host says when (fg::Executor::frame_finished, or
//     Executor::record's frames-in-flight rule).
// Pools whose recordings are done are reset and reused. No pool is freed or reset because a
// CommandBuffer wrapper went away. An arena serves one recording thread at a time (as a
// VkCommandPool); at its destruction pools still in use are handed to Device::retire.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/gpu/device.hpp"

namespace vkml::gpu {

class DescriptorArena {
public:
    explicit DescriptorArena(Device& device, std::string name = "descriptor arena");
    ~DescriptorArena();
    DescriptorArena(const DescriptorArena&) = delete;
    DescriptorArena& operator=(const DescriptorArena&) = delete;

    // A set of `layout` (storage and uniform buffers, storage and sampled images, samplers; no
    // more than a pool holds: see pool_sizes()), valid until the recording it was allocated for
    // is closed and finished.
    VkDescriptorSet allocate(VkDescriptorSetLayout layout);

    // Close the sets allocated since the last close: they belong to one recording (or several
    // recorded back to back) whose end the arena is told here. Nothing open: nothing happens.
    void close(QueueRole role, uint64_t value);
    void close(VkSemaphore host_timeline, uint64_t value);
    // The host will say when with finished(ticket); returns the ticket (0 when nothing was open).
    uint64_t close();
    void finished(uint64_t ticket);
    // Every closed batch the host submitted (tickets and host semaphores) is done.
    void finished_all();
    // Throws away the open sets: their recording will never run (a command buffer reset before
    // it was submitted).
    void discard_open();
    // The open sets' recording will be submitted by someone who never tells the arena: they are
    // kept until the Device goes (Device::retire_at_teardown).
    void abandon_open();

    bool has_open() const { return !open_.empty(); }
    size_t pools() const; // every pool the arena owns, in use or not
    // The descriptors each pool holds, per type, and its set count.
    static constexpr uint32_t sets_per_pool = 256;

private:
    struct Batch {
        std::vector<VkDescriptorPool> pools;
        enum class Kind : uint8_t { Queue, Semaphore, Ticket } kind = Kind::Queue;
        QueueRole role = QueueRole::Compute;
        VkSemaphore semaphore = VK_NULL_HANDLE;
        uint64_t value = 0; // timeline value, or the ticket
        bool released = false;
    };
    VkDescriptorPool take_pool();
    void reclaim();
    bool done(const Batch& b) const;
    void close_as(Batch b);

    Device& device_;
    std::string name_;
    std::vector<VkDescriptorPool> free_;
    std::vector<VkDescriptorPool> open_; // allocated from since the last close; the last is current
    uint32_t open_sets_ = 0;             // sets taken from open_.back()
    std::deque<Batch> closed_;
    uint64_t next_ticket_ = 1;
    size_t created_ = 0;
};

} // namespace vkml::gpu
