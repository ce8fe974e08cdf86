// Text forms of a plan and a graph: barrier descriptions (what the unit tests compare against),
// the plan summary and the Graphviz dump.
#include <cstdio>
#include <string>

#include "graph_impl.hpp"

namespace vkml::fg {
namespace {

template <class Flags, size_t N>
std::string flag_names(Flags flags, const std::pair<Flags, const char*> (&names)[N]) {
    if (!flags) return "NONE";
    std::string out;
    for (const auto& [bit, name] : names) {
        if ((flags & bit) != bit) continue;
        flags &= ~bit;
        if (!out.empty()) out += "|";
        out += name;
    }
    if (flags) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(flags));
        out += (out.empty() ? "" : "|") + std::string(buf);
    }
    return out;
}

std::string mib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / (1024.0 * 1024.0));
    return buf;
}

} // namespace

std::string stage_names(VkPipelineStageFlags2 stages) {
    static const std::pair<VkPipelineStageFlags2, const char*> names[] = {
        {VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, "ALL_COMMANDS"},
        {VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, "TOP_OF_PIPE"},
        {VK_PIPELINE_STAGE_2_DRAW_INDIRECT_BIT, "DRAW_INDIRECT"},
        {VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT, "INDEX_INPUT"},
        {VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT, "VERTEX_ATTRIBUTE_INPUT"},
        {VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT, "VERTEX_SHADER"},
        {VK_PIPELINE_STAGE_2_EARLY_FRAGMENT_TESTS_BIT, "EARLY_FRAGMENT_TESTS"},
        {VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT, "FRAGMENT_SHADER"},
        {VK_PIPELINE_STAGE_2_LATE_FRAGMENT_TESTS_BIT, "LATE_FRAGMENT_TESTS"},
        {VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT, "COLOR_ATTACHMENT_OUTPUT"},
        {VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, "COMPUTE_SHADER"},
        {VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT, "TRANSFER"},
        {VK_PIPELINE_STAGE_2_COPY_BIT, "COPY"},
        {VK_PIPELINE_STAGE_2_BLIT_BIT, "BLIT"},
        {VK_PIPELINE_STAGE_2_CLEAR_BIT, "CLEAR"},
        {VK_PIPELINE_STAGE_2_BOTTOM_OF_PIPE_BIT, "BOTTOM_OF_PIPE"},
        {VK_PIPELINE_STAGE_2_HOST_BIT, "HOST"},
    };
    return flag_names(stages, names);
}

std::string access_names(VkAccessFlags2 access) {
    static const std::pair<VkAccessFlags2, const char*> names[] = {
        {VK_ACCESS_2_MEMORY_READ_BIT, "MEMORY_READ"},
        {VK_ACCESS_2_MEMORY_WRITE_BIT, "MEMORY_WRITE"},
        {VK_ACCESS_2_INDIRECT_COMMAND_READ_BIT, "INDIRECT_COMMAND_READ"},
        {VK_ACCESS_2_INDEX_READ_BIT, "INDEX_READ"},
        {VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT, "VERTEX_ATTRIBUTE_READ"},
        {VK_ACCESS_2_UNIFORM_READ_BIT, "UNIFORM_READ"},
        {VK_ACCESS_2_SHADER_SAMPLED_READ_BIT, "SHADER_SAMPLED_READ"},
        {VK_ACCESS_2_SHADER_STORAGE_READ_BIT, "SHADER_STORAGE_READ"},
        {VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT, "SHADER_STORAGE_WRITE"},
        {VK_ACCESS_2_SHADER_READ_BIT, "SHADER_READ"},
        {VK_ACCESS_2_SHADER_WRITE_BIT, "SHADER_WRITE"},
        {VK_ACCESS_2_COLOR_ATTACHMENT_READ_BIT, "COLOR_ATTACHMENT_READ"},
        {VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT, "COLOR_ATTACHMENT_WRITE"},
        {VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_READ_BIT, "DEPTH_STENCIL_ATTACHMENT_READ"},
        {VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT, "DEPTH_STENCIL_ATTACHMENT_WRITE"},
        {VK_ACCESS_2_TRANSFER_READ_BIT, "TRANSFER_READ"},
        {VK_ACCESS_2_TRANSFER_WRITE_BIT, "TRANSFER_WRITE"},
        {VK_ACCESS_2_HOST_READ_BIT, "HOST_READ"},
        {VK_ACCESS_2_HOST_WRITE_BIT, "HOST_WRITE"},
    };
    return flag_names(access, names);
}

const char* layout_name(VkImageLayout layout) {
    switch (layout) {
    case VK_IMAGE_LAYOUT_UNDEFINED:
        return "UNDEFINED";
    case VK_IMAGE_LAYOUT_GENERAL:
        return "GENERAL";
    case VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL:
        return "COLOR_ATTACHMENT_OPTIMAL";
    case VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL:
        return "DEPTH_STENCIL_ATTACHMENT_OPTIMAL";
    case VK_IMAGE_LAYOUT_DEPTH_STENCIL_READ_ONLY_OPTIMAL:
        return "DEPTH_STENCIL_READ_ONLY_OPTIMAL";
    case VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL:
        return "SHADER_READ_ONLY_OPTIMAL";
    case VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL:
        return "TRANSFER_SRC_OPTIMAL";
    case VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL:
        return "TRANSFER_DST_OPTIMAL";
    case VK_IMAGE_LAYOUT_READ_ONLY_OPTIMAL:
        return "READ_ONLY_OPTIMAL";
    case VK_IMAGE_LAYOUT_ATTACHMENT_OPTIMAL:
        return "ATTACHMENT_OPTIMAL";
    case VK_IMAGE_LAYOUT_PRESENT_SRC_KHR:
        return "PRESENT_SRC";
    default:
        return "OTHER_LAYOUT";
    }
}

std::string Plan::describe(const Barrier& b) const {
    const PlannedResource& r = resources[b.resource];
    std::string s = r.name + ": " + stage_names(b.src_stages) + "/" + access_names(b.src_access) + " -> " +
                    stage_names(b.dst_stages) + "/" + access_names(b.dst_access);
    if (r.kind == ResourceKind::Image) {
        s += ", ";
        s += layout_name(b.old_layout);
        if (b.new_layout != b.old_layout) s += std::string(" -> ") + layout_name(b.new_layout);
    }
    if (b.src_family != b.dst_family)
        s += ", family " + std::to_string(b.src_family) + " -> " + std::to_string(b.dst_family);
    return s;
}

std::vector<std::string> Plan::describe(const std::vector<Barrier>& barriers) const {
    std::vector<std::string> out;
    for (const Barrier& b : barriers) out.push_back(describe(b));
    return out;
}

std::string Plan::summary() const {
    std::string s =
        std::to_string(passes.size()) + " passes in " + std::to_string(batches.size()) + " submissions";
    if (!culled.empty()) {
        s += "; culled:";
        for (const std::string& c : culled) s += " " + c;
    }
    s += "\n";
    for (const std::string& n : notes) s += "note: " + n + "\n";
    for (uint32_t i = 0; i < batches.size(); ++i) {
        const Batch& b = batches[i];
        s += "batch " + std::to_string(i) + " on " + queue_name(b.queue);
        for (const BatchWait& w : b.waits)
            s += ", waits for batch " + std::to_string(w.batch) + " at " + stage_names(w.stages);
        s += "\n";
        for (uint32_t pos : b.passes) {
            const PlannedPass& p = passes[pos];
            s += "  " + p.name + "\n";
            for (const Barrier& x : p.before) s += "    before: " + describe(x) + "\n";
            for (const Barrier& x : p.after) s += "    after:  " + describe(x) + "\n";
        }
    }
    uint32_t transients = 0;
    for (const PlannedResource& r : resources) transients += r.used && !r.imported;
    s += "memory: " + std::to_string(transients) + " transients need " + mib(transient_bytes) +
         ", aliased into " + mib(allocated_bytes) + " (" + mib(memory_saved()) + " saved, " +
         std::to_string(heaps.size()) + " heaps)\n";
    for (uint32_t h = 0; h < heaps.size(); ++h) {
        s += "  heap " + std::to_string(h) + " (" + mib(heaps[h].size) + "):";
        for (uint32_t r : heaps[h].resources)
            s += " " + resources[r].name + "[" + std::to_string(resources[r].first) + "," +
                 std::to_string(resources[r].last) + "]";
        s += "\n";
    }
    return s;
}

namespace {
std::string dot_escape(const std::string& in) {
    std::string out;
    for (char c : in) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}
} // namespace

std::string FrameGraph::dump_graphviz() const {
    const Impl& g = *impl_;
    const Plan* plan = g.plan ? &*g.plan : nullptr;
    std::string s =
        "digraph \"" + dot_escape(g.desc.name) + "\" {\n  rankdir=LR;\n  node [fontname=\"sans\"];\n";
    for (uint32_t p = 0; p < g.passes.size(); ++p) {
        const PassDecl& pass = g.passes[p];
        uint32_t pos = no_index;
        if (plan)
            for (uint32_t i = 0; i < plan->passes.size(); ++i)
                if (plan->passes[i].pass == p) pos = i;
        const bool culled = plan && pos == no_index;
        const Queue q = pos != no_index ? plan->passes[pos].queue : pass.queue;
        std::string label = dot_escape(pass.name) + "\\n" + pass_kind_name(pass.kind) + ", " + queue_name(q);
        if (pos != no_index)
            label += "\\n#" + std::to_string(pos) + " in batch " + std::to_string(plan->passes[pos].batch) +
                     ", barriers: " + std::to_string(plan->passes[pos].before.size());
        s += "  p" + std::to_string(p) + " [shape=box, style=\"" + (culled ? "dashed" : "filled") +
             "\", fillcolor=\"" + (q == Queue::Graphics ? "lightblue" : "orange") + "\"" +
             (pass.kind == PassKind::Ml ? ", peripheries=2" : "") + ", label=\"" + label + "\"];\n";
    }
    for (uint32_t r = 0; r < g.resources.size(); ++r) {
        const ResourceDecl& res = g.resources[r];
        for (uint32_t v = 0; v <= res.version(); ++v) {
            std::string label = dot_escape(res.name) + " v" + std::to_string(v);
            if (plan && plan->resources[r].heap != no_index)
                label += "\\nheap " + std::to_string(plan->resources[r].heap);
            s += "  r" + std::to_string(r) + "_" + std::to_string(v) +
                 " [shape=" + (res.kind == ResourceKind::Image ? "ellipse" : "note") +
                 ", style=filled, fillcolor=\"" + (res.imported ? "palegreen" : "lightyellow") +
                 "\", label=\"" + label + "\"];\n";
        }
    }
    for (uint32_t p = 0; p < g.passes.size(); ++p)
        for (const Use& u : g.passes[p].uses) {
            const std::string node = "r" + std::to_string(u.resource) + "_";
            if (u.reads_contents || u.version_out == no_index)
                s += "  " + node + std::to_string(u.version_in) + " -> p" + std::to_string(p) + ";\n";
            if (u.version_out != no_index)
                s += "  p" + std::to_string(p) + " -> " + node + std::to_string(u.version_out) + ";\n";
        }
    s += "}\n";
    return s;
}

} // namespace vkml::fg
