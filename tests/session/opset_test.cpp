// The attribute changes of ai.onnx opsets 18 to 21 that vkml implements, each through a Session
// on a small graph of that opset: Split's num_outputs and Reduce*'s axes input (18), Resize's
// antialias refused by name (18), Cast's saturate (19, float8 only: accepted, no effect on the
// types vkml has), GridSample's linear/cubic mode names (20), GroupNormalization's per-channel
// scale and bias (21).
#include <gtest/gtest.h>

#include <filesystem>

#include "session_util.hpp"
#include "vkml/import/onnx.hpp"

namespace vkml::test {
namespace {

class OpsetTest : public GpuTest {};

std::vector<float> run1(gpu::Device& dev, const Graph& g, const TensorData& x, size_t output = 0) {
    Session s(dev, g, {.fp32 = true});
    return s.run(std::vector<TensorData>{x}).at(output).to_floats();
}

TEST_F(OpsetTest, Opset18SplitNumOutputsAndReduceAxesInput) {
    Graph g = new_graph("split18", 18);
    const ValueId x = input(g, "x", {2, 7});
    const ValueId a = g.add_value("a"), b = g.add_value("b"), c = g.add_value("c");
    graph::Node& n = g.add_node("Split", {x}, {a, b, c}, "split");
    n.attributes.insert_or_assign("axis", graph::Attribute(int64_t{1}));
    n.attributes.insert_or_assign("num_outputs", graph::Attribute(int64_t{3}));
    g.outputs() = {a, b, c};
    const TensorData xv = rand_tensor({2, 7}, 1);
    Session s(dev(), g, {.fp32 = true});
    const auto out = s.run(std::vector<TensorData>{xv});
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3})); // ceil(7 / 3), the last part smaller
    EXPECT_EQ(out[2].dims(), (std::vector<int64_t>{2, 1}));
    EXPECT_EQ(out[2].to_floats()[1], xv.to_floats()[13]);

    Graph r = new_graph("reduce18", 18);
    const ValueId rx = input(r, "x", {3, 4, 5});
    r.outputs().push_back(node(r, "ReduceMax", {rx, r.add_constant("axes", ints({-1, 0}))}, "y",
                               {{"keepdims", int64_t{0}}}));
    const TensorData rv = rand_tensor({3, 4, 5}, 2);
    const auto y = run1(dev(), r, rv);
    ASSERT_EQ(y.size(), 4u);
    const auto v = rv.to_floats();
    for (size_t j = 0; j < 4; ++j) {
        float m = -INFINITY;
        for (size_t i = 0; i < 3; ++i)
            for (size_t k = 0; k < 5; ++k) m = std::max(m, v[(i * 4 + j) * 5 + k]);
        EXPECT_EQ(y[j], m) << j;
    }
}

TEST_F(OpsetTest, Opset19ResizeAntialiasIsRefusedByName) {
    Graph g = new_graph("resize19", 19);
    const ValueId x = input(g, "x", {1, 1, 8, 8});
    g.outputs().push_back(node(g, "Resize",
                               {x, graph::no_value, g.add_constant("scales", TensorData::from_floats({4}, std::vector<float>{1, 1, 0.5f, 0.5f}))},
                               "y", {{"mode", "linear"}, {"antialias", int64_t{1}}}));
    try {
        Session s(dev(), g, {.fp32 = true});
        FAIL() << "antialias is not implemented";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_NE(std::string(e.what()).find("antialias"), std::string::npos) << e.what();
    }
}

TEST_F(OpsetTest, Opset21CastSaturateAndGroupNormPerChannel) {
    Graph g = new_graph("cast21", 21);
    const ValueId x = input(g, "x", {5});
    g.outputs().push_back(node(g, "Cast", {x}, "y", {{"to", int64_t{10}}, {"saturate", int64_t{1}}}));
    const TensorData xv = TensorData::from_floats({5}, std::vector<float>{1.5f, -2.25f, 70000.f, 0.1f, -3.f});
    Session s(dev(), g, {.fp32 = true});
    const auto y = s.run(std::vector<TensorData>{xv})[0];
    EXPECT_EQ(y.dtype(), DType::f16);
    const auto f = y.to_floats();
    EXPECT_EQ(f[0], 1.5f);
    EXPECT_TRUE(std::isinf(f[2])) << "saturate applies to float8 only: f16 overflows to inf as ONNX says";

    // GroupNormalization-21: scale and bias per channel (C = 4, 2 groups).
    Graph gn = new_graph("groupnorm21", 21);
    const ValueId gx = input(gn, "x", {2, 4, 3});
    const TensorData scale = TensorData::from_floats({4}, std::vector<float>{1.f, 2.f, -1.f, 0.5f});
    const TensorData bias = TensorData::from_floats({4}, std::vector<float>{0.f, 1.f, 2.f, -1.f});
    gn.outputs().push_back(node(gn, "GroupNormalization", {gx, gn.add_constant("s", scale), gn.add_constant("b", bias)},
                                "y", {{"num_groups", int64_t{2}}, {"epsilon", 1e-5f}}));
    const TensorData xg = rand_tensor({2, 4, 3}, 3);
    const auto out = run1(dev(), gn, xg);
    const auto xvv = xg.to_floats();
    const auto sv = scale.to_floats(), bv = bias.to_floats();
    for (size_t n = 0; n < 2; ++n)
        for (size_t grp = 0; grp < 2; ++grp) {
            double mean = 0, var = 0;
            for (size_t k = 0; k < 6; ++k) mean += xvv[n * 12 + grp * 6 + k];
            mean /= 6;
            for (size_t k = 0; k < 6; ++k) var += std::pow(xvv[n * 12 + grp * 6 + k] - mean, 2);
            var /= 6;
            for (size_t k = 0; k < 6; ++k) {
                const size_t ch = grp * 2 + k / 3, at = n * 12 + grp * 6 + k;
                const double want = (xvv[at] - mean) / std::sqrt(var + 1e-5) * sv[ch] + bv[ch];
                EXPECT_NEAR(out[at], want, 1e-4) << at;
            }
        }
}

TEST_F(OpsetTest, Opset20GridSampleModeNames) {
    for (const char* mode : {"linear", "cubic"}) {
        Graph g = new_graph("gridsample20", 20);
        const ValueId x = input(g, "x", {1, 1, 3, 3});
        // The grid's one point is the image's centre: every mode gives the centre pixel.
        g.outputs().push_back(node(g, "GridSample",
                                   {x, g.add_constant("grid", TensorData::from_floats({1, 1, 1, 2}, std::vector<float>{0.f, 0.f}))},
                                   "y", {{"mode", mode}}));
        const TensorData xv = rand_tensor({1, 1, 3, 3}, 4);
        const auto y = run1(dev(), g, xv);
        ASSERT_EQ(y.size(), 1u);
        EXPECT_NEAR(y[0], xv.to_floats()[4], 1e-6) << mode;
    }
}

// An If with a constant condition folds at import (tests/fixtures/if_constant.onnx: else_branch,
// y = Relu(x) * 0.5) and runs.
TEST_F(OpsetTest, IfWithConstantConditionRuns) {
    const Graph g = import::load_onnx(std::filesystem::path(VKML_FIXTURE_DIR) / "if_constant.onnx");
    const TensorData x = TensorData::from_floats({1, 4}, std::vector<float>{-1.5f, 2.f, 0.25f, -3.f});
    EXPECT_EQ(run1(dev(), g, x), (std::vector<float>{0.f, 1.f, 0.125f, 0.f}));
}

} // namespace
} // namespace vkml::test
