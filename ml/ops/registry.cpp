#include "vkml/ops/registry.hpp"

#include <algorithm>
#include <map>

#include "families.hpp"
#include "graph/op_types.hpp"
#include "vkml/error.hpp"

namespace vkml::ops {

// The types are ml/graph/op_types.inc's listed ones; each family's registry file gives their
// family, dtypes and notes.
const std::vector<OpInfo>& registry() {
    static const std::vector<OpInfo> ops = [] {
        std::vector<OpInfo> notes;
        detail::add_elementwise_ops(notes);
        detail::add_conv_ops(notes);
        detail::add_reduce_ops(notes);
        detail::add_norm_ops(notes);
        detail::add_layout_ops(notes);
        detail::add_detect_ops(notes);
        detail::add_color_ops(notes);
        detail::add_loss_ops(notes);
        detail::add_rnn_ops(notes);
        detail::add_math_ops(notes);
        detail::add_train_ops(notes);
        detail::add_host_ops(notes);
        std::map<std::string, OpInfo, std::less<>> by_type;
        for (OpInfo& op : notes)
            if (!by_type.emplace(op.type, op).second)
                throw Error(ErrorCode::Generic, "internal: ml/ops/*_registry.cpp describe " + op.type + " twice");
        std::vector<OpInfo> v;
        for (const graph::detail::OpType& t : graph::detail::op_types()) {
            if (!t.listed) continue;
            const auto it = by_type.find(t.type);
            if (it == by_type.end())
                throw Error(ErrorCode::Generic, "internal: " + std::string(t.type) +
                                                    " is listed in op_types.inc but no ml/ops/*_registry.cpp "
                                                    "describes it");
            v.push_back(std::move(it->second));
            by_type.erase(it);
        }
        if (!by_type.empty())
            throw Error(ErrorCode::Generic, "internal: ml/ops/*_registry.cpp describe " + by_type.begin()->first +
                                                ", which op_types.inc does not list");
        std::stable_sort(v.begin(), v.end(), [](const OpInfo& a, const OpInfo& b) {
            return a.family != b.family ? a.family < b.family : a.type < b.type;
        });
        return v;
    }();
    return ops;
}
std::string registry_markdown() {
    std::string out =
        "# vkml operators\n\n"
        "Generated from the code's own registry by `vkml ops --markdown`; a test fails when this page\n"
        "and the code disagree. Semantics and attribute names follow ONNX (latest opset).\n";
    std::string family;
    for (const OpInfo& op : registry()) {
        if (op.family != family) {
            family = op.family;
            out += "\n## " + family + "\n\n| op | storage dtypes | notes |\n| --- | --- | --- |\n";
        }
        out += "| " + op.type + " | " + op.dtypes + " | " + op.notes + " |\n";
    }
    return out;
}

} // namespace vkml::ops
