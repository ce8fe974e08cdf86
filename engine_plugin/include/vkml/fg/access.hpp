#pragma once
// How a pass touches a resource, and the barrier needed between two such uses. The frame graph
// derives every barrier from this one rule, so it is kept free of Vulkan objects and tested alone.
#include <cstdint>
#include <optional>

#include <vulkan/vulkan_core.h>

namespace vkml::fg {

struct Access {
    VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_NONE;
    VkAccessFlags2 access = VK_ACCESS_2_NONE;
    VkImageLayout layout = VK_IMAGE_LAYOUT_UNDEFINED; // UNDEFINED for buffers
    uint32_t queue_family = VK_QUEUE_FAMILY_IGNORED;
};

struct Transition {
    VkPipelineStageFlags2 src_stages = VK_PIPELINE_STAGE_2_NONE;
    VkAccessFlags2 src_access = VK_ACCESS_2_NONE;
    VkPipelineStageFlags2 dst_stages = VK_PIPELINE_STAGE_2_NONE;
    VkAccessFlags2 dst_access = VK_ACCESS_2_NONE;
    VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
    VkImageLayout new_layout = VK_IMAGE_LAYOUT_UNDEFINED;
};

// True when `access` contains any write.
bool writes(VkAccessFlags2 access);

// The barrier from `before` to `after` on one queue, or nothing when none is needed: two reads in
// the same layout need none; anything after a write, a write after reads (execution only) or a
// layout change needs one.
std::optional<Transition> transition(const Access& before, const Access& after);

} // namespace vkml::fg
