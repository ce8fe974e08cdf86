#pragma once
// Helpers for the session tests: small graphs built in code, random host tensors, comparisons,
// and where the model cache lives (and what to do when it is absent).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "vkml/graph/graph.hpp"
#include "vkml/graph/session.hpp"

namespace vkml::test {

using graph::DType;
using graph::Graph;
using graph::TensorData;
using graph::ValueId;

inline TensorData rand_tensor(std::vector<int64_t> dims, uint32_t seed, float lo = -1.f, float hi = 1.f) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return TensorData::from_floats(std::move(dims), random_floats(static_cast<size_t>(n), seed, lo, hi));
}

inline TensorData ints(std::vector<int64_t> v) {
    return TensorData::from_int64s({static_cast<int64_t>(v.size())}, v);
}

// A graph with opset 13 and a source name, ready for add_value/add_node.
inline Graph new_graph(const std::string& name, int64_t opset = 13) {
    Graph g;
    g.name = name;
    g.source = name + ".test";
    g.format = "test";
    g.opsets.push_back({"", opset});
    return g;
}

inline ValueId input(Graph& g, const std::string& name, std::vector<int64_t> dims, DType dtype = DType::f32) {
    const ValueId v = g.add_value(name, dtype, graph::Shape(dims));
    g.inputs().push_back(v);
    return v;
}

inline ValueId node(Graph& g, const std::string& op, std::vector<ValueId> in, const std::string& out,
                    std::vector<std::pair<std::string, graph::Attribute>> attrs = {}) {
    const ValueId v = g.add_value(out);
    graph::Node& n = g.add_node(op, std::move(in), {v}, out);
    for (auto& [k, a] : attrs) n.attributes.insert_or_assign(k, std::move(a));
    return v;
}

// Largest |a - b| relative to the largest |b| (1 when b is all zeros).
inline double max_rel_diff(const TensorData& a, const TensorData& b) {
    const auto x = a.to_floats(), y = b.to_floats();
    if (x.size() != y.size()) return INFINITY;
    double worst = 0, scale = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::fabs(x[i] - y[i])));
        scale = std::max(scale, static_cast<double>(std::fabs(y[i])));
    }
    return worst / (scale > 0 ? scale : 1.0);
}

// ${VKML_MODELS:-$HOME/.cache/vkml/models}, as tools/fetch-models fills it.
inline std::filesystem::path model_cache() {
    if (const char* d = std::getenv("VKML_MODELS"); d && *d) return d;
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home ? home : "/nonexistent") / ".cache/vkml/models";
}

// CI installs the models and data (.ci/install-deps), so there a missing file is a failure; on a
// developer's machine without them the test is skipped with the way to get them.
#define VKML_REQUIRE_FILE(path, how)                                                                         \
    do {                                                                                                     \
        if (!std::filesystem::exists(path)) {                                                                \
            if (std::getenv("CI")) FAIL() << (path).string() << " is absent in CI: " << (how);               \
            GTEST_SKIP() << (path).string() << " is absent: " << (how);                                      \
        }                                                                                                    \
    } while (0)

} // namespace vkml::test
