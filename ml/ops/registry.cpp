#include "vkml/ops/registry.hpp"

#include <algorithm>

#include "families.hpp"

namespace vkml::ops {

const std::vector<OpInfo>& registry() {
    static const std::vector<OpInfo> ops = [] {
        std::vector<OpInfo> v;
        detail::add_elementwise_ops(v);
        detail::add_conv_ops(v);
        detail::add_reduce_ops(v);
        detail::add_norm_ops(v);
        detail::add_layout_ops(v);
        detail::add_detect_ops(v);
        detail::add_color_ops(v);
        detail::add_loss_ops(v);
        detail::add_rnn_ops(v);
        detail::add_math_ops(v);
        detail::add_train_ops(v);
        detail::add_host_ops(v);
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
