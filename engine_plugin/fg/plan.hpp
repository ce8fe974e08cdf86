#pragma once
// What FrameGraph::compile() produces: plain data, no Vulkan objects, so it can be built and
// checked without a device. The executor turns it into command buffers and submissions. Not part
// of the API (the public headers only name fg::Plan): the frame graph's sources and its tests
// (through their include path) read it.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/fg/types.hpp"

namespace vkml::fg {

// One image or buffer barrier (sync2). When src_family != dst_family it is one half of a
// queue-family ownership transfer: the release is recorded on the source queue, the acquire on
// the destination queue, both with the same layouts.
struct Barrier {
    uint32_t resource = no_index; // index into Plan::resources
    VkPipelineStageFlags2 src_stages = VK_PIPELINE_STAGE_2_NONE;
    VkAccessFlags2 src_access = VK_ACCESS_2_NONE;
    VkPipelineStageFlags2 dst_stages = VK_PIPELINE_STAGE_2_NONE;
    VkAccessFlags2 dst_access = VK_ACCESS_2_NONE;
    VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
    VkImageLayout new_layout = VK_IMAGE_LAYOUT_UNDEFINED;
    uint32_t src_family = VK_QUEUE_FAMILY_IGNORED;
    uint32_t dst_family = VK_QUEUE_FAMILY_IGNORED;
    bool operator==(const Barrier&) const = default;
};

// A pass in execution order. Pseudo-passes (no `pass`) carry work that belongs to no declared
// pass: the ownership release or wait for an imported resource's arrival, and its outgoing state.
struct PlannedPass {
    uint32_t pass = no_index; // index of the declared pass; no_index for a pseudo-pass
    std::string name;
    Queue queue = Queue::Graphics;
    uint32_t batch = no_index;   // index into Plan::batches
    std::vector<Barrier> before; // recorded before the pass: transitions and acquires
    std::vector<Barrier> after;  // recorded after it: ownership releases
};

// A wait, at the start of a batch, for an earlier batch on the other queue to finish.
struct BatchWait {
    uint32_t batch = no_index;
    VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_NONE; // the stages that must wait
    bool operator==(const BatchWait&) const = default;
};

// One queue submission: consecutive passes on one queue, signalling that queue's timeline
// semaphore when done. Batches are listed in submission order; waits name earlier batches.
struct Batch {
    Queue queue = Queue::Graphics;
    std::vector<uint32_t> passes; // indices into Plan::passes
    std::vector<BatchWait> waits;
};

// A resource as the plan sees it: lifetime, physical shape and, for transients, where its memory
// comes from.
struct PlannedResource {
    std::string name;
    ResourceKind kind = ResourceKind::Image;
    bool imported = false;
    bool exclusive = false; // ownership transfers between families (imported EXCLUSIVE resources)
    bool used = false;      // false: only culled passes touch it; it is not created
    uint32_t first = no_index, last = no_index; // lifetime: positions in Plan::passes
    uint8_t queues = 0;                         // bit per Queue it is used on
    // Transient images and buffers: what to create.
    VkFormat format = VK_FORMAT_UNDEFINED;
    VkExtent2D extent{};
    uint64_t size = 0;
    VkImageUsageFlags image_usage = 0;
    VkBufferUsageFlags buffer_usage = 0;
    VkMemoryRequirements memory{};
    uint32_t heap = no_index; // index into Plan::heaps when the memory is aliased
};

// Memory shared by transients whose lifetimes never overlap.
struct AliasHeap {
    ResourceKind kind = ResourceKind::Image;
    Queue queue = Queue::Graphics;
    uint64_t size = 0;
    uint64_t alignment = 1;
    uint32_t memory_type_bits = ~0u;
    std::vector<uint32_t> resources; // in lifetime order
};

struct Plan {
    std::vector<PlannedPass> passes; // execution order
    std::vector<Batch> batches;      // submission order
    std::vector<PlannedResource> resources;
    std::vector<AliasHeap> heaps;
    std::vector<std::string> culled; // names of passes removed because nothing used their results
    std::vector<std::string> notes;  // decisions worth knowing (async requests that fell back, ...)
    uint64_t transient_bytes = 0;    // memory the transients would need without aliasing
    uint64_t allocated_bytes = 0;    // memory they need with it
    bool uses_async_compute = false;
    CompileOptions options;

    uint64_t memory_saved() const { return transient_bytes - allocated_bytes; }
    // Position of the planned pass for a declared pass name, or no_index.
    uint32_t position(const std::string& pass_name) const;
    // Human-readable barrier, e.g. "scene: COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE ->
    // FRAGMENT_SHADER/SHADER_SAMPLED_READ, COLOR_ATTACHMENT_OPTIMAL -> SHADER_READ_ONLY_OPTIMAL".
    std::string describe(const Barrier& barrier) const;
    std::vector<std::string> describe(const std::vector<Barrier>& barriers) const;
    // The whole plan as text: batches, waits, passes and their barriers, memory.
    std::string summary() const;
};

// Short names of Vulkan flags and layouts for describe() and dumps ("COMPUTE_SHADER|TRANSFER").
std::string stage_names(VkPipelineStageFlags2 stages);
std::string access_names(VkAccessFlags2 access);
const char* layout_name(VkImageLayout layout);

} // namespace vkml::fg
