#pragma once
// Small conveniences for importers that synthesize nodes (TF.js, Anime4K): constants and nodes
// with unique value names, so translation code reads as the operator sequence it emits.
#include <string>
#include <utility>
#include <vector>

#include "vkml/graph/graph.hpp"

namespace vkml::import {

using Attributes = std::vector<std::pair<std::string, graph::Attribute>>;

class GraphBuilder {
public:
    explicit GraphBuilder(graph::Graph& g) : g_(g) {}
    graph::Graph& graph() { return g_; }

    graph::ValueId constant(const std::string& name, graph::TensorData data) {
        return g_.add_constant(g_.unique_name(name), std::move(data));
    }
    graph::ValueId ints(const std::string& name, const std::vector<int64_t>& v) {
        return constant(name, graph::TensorData::from_int64s({static_cast<int64_t>(v.size())}, v));
    }
    graph::ValueId scalar(const std::string& name, float v) {
        return constant(name, graph::TensorData::scalar(v));
    }

    // One node with one output; the output value is named `out` (made unique) and so is the node.
    graph::ValueId node(const std::string& op, std::vector<graph::ValueId> inputs, const std::string& out,
                        Attributes attrs = {}, graph::DType dtype = graph::DType::f32) {
        return nodes(op, std::move(inputs), {out}, std::move(attrs), dtype)[0];
    }
    std::vector<graph::ValueId> nodes(const std::string& op, std::vector<graph::ValueId> inputs,
                                      const std::vector<std::string>& outs, Attributes attrs = {},
                                      graph::DType dtype = graph::DType::f32) {
        std::vector<graph::ValueId> ids;
        for (const std::string& o : outs) ids.push_back(g_.add_value(g_.unique_name(o), dtype));
        graph::Node& n = g_.add_node(op, std::move(inputs), ids, g_.value(ids[0]).name);
        for (auto& [k, v] : attrs) n.attributes.insert_or_assign(k, std::move(v));
        return ids;
    }

private:
    graph::Graph& g_;
};

} // namespace vkml::import
