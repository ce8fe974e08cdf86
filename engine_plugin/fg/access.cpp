#include "vkml/fg/access.hpp"

namespace vkml::fg {

bool writes(VkAccessFlags2 access) {
    constexpr VkAccessFlags2 any_write =
        VK_ACCESS_2_SHADER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT |
        VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT |
        VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_HOST_WRITE_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT;
    return access & any_write;
}

std::optional<Transition> transition(const Access& before, const Access& after) {
    const bool layout_change = before.layout != after.layout;
    const bool was_write = writes(before.access);
    const bool is_write = writes(after.access);
    if (!layout_change && !was_write && !is_write) return std::nullopt; // read after read
    Transition t;
    t.src_stages =
        before.stages == VK_PIPELINE_STAGE_2_NONE ? VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT : before.stages;
    t.dst_stages = after.stages;
    t.old_layout = before.layout;
    t.new_layout = after.layout;
    // A write after reads only needs the reads to finish (execution dependency); a layout change or
    // anything after a write must also make the earlier writes available and visible.
    if (was_write) t.src_access = before.access;
    if (was_write || layout_change) t.dst_access = after.access;
    return t;
}

} // namespace vkml::fg
