#include "transpose_cleanup.hpp"

#include <optional>
#include <set>

namespace vkml::import {

using graph::Graph;
using graph::Node;
using graph::ValueId;

int cancel_transpose_pairs(Graph& g) {
    std::vector<std::optional<size_t>> producer(g.value_count());
    for (size_t i = 0; i < g.nodes().size(); ++i)
        for (ValueId v : g.nodes()[i].outputs)
            if (v != graph::no_value) producer[v] = i;
    const std::set<ValueId> outputs(g.outputs().begin(), g.outputs().end());
    int cancelled = 0;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        Node& second = g.nodes()[i];
        if (second.op_type != "Transpose" || second.inputs.empty() || !producer[second.inputs[0]]) continue;
        const Node& first = g.nodes()[*producer[second.inputs[0]]];
        if (first.op_type != "Transpose" || outputs.count(second.outputs[0])) continue;
        const auto p1 = first.get_ints("perm"), p2 = second.get_ints("perm");
        if (p1.size() != p2.size() || p1.empty()) continue;
        bool identity = true;
        for (size_t k = 0; k < p2.size(); ++k)
            identity = identity && p1[static_cast<size_t>(p2[k])] == static_cast<int64_t>(k);
        if (!identity) continue;
        // Readers of the second Transpose read the first one's input instead.
        const ValueId from = second.outputs[0], to = first.inputs[0];
        for (Node& n : g.nodes())
            for (ValueId& in : n.inputs)
                if (in == from) in = to;
        ++cancelled;
    }
    remove_unused_nodes(g);
    return cancelled;
}

void remove_unused_nodes(Graph& g) {
    // Repeat from the back: removing a node can leave its producers unused.
    bool changed = true;
    while (changed) {
        changed = false;
        std::vector<int> readers(g.value_count(), 0);
        for (const Node& n : g.nodes())
            for (ValueId v : n.inputs)
                if (v != graph::no_value) ++readers[v];
        for (ValueId v : g.outputs()) ++readers[v];
        std::vector<Node> kept;
        for (Node& n : g.nodes()) {
            bool used = false;
            for (ValueId v : n.outputs) used = used || (v != graph::no_value && readers[v] > 0);
            if (used)
                kept.push_back(std::move(n));
            else
                changed = true;
        }
        g.nodes() = std::move(kept);
    }
}

} // namespace vkml::import
