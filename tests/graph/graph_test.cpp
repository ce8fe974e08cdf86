// The graph IR on its own: building, validation, ordering, free dimensions and the text dump.
#include "vkml/graph/graph.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace vkml::graph;

namespace {

// x -> Conv(w) -> y -> Relu -> z, with free dimensions N, H, W.
Graph small_graph() {
    Graph g;
    g.name = "small";
    g.source = "small.onnx";
    g.format = "test";
    g.opsets.push_back({"", 13});
    const ValueId x = g.add_value(
        "x", DType::f32, Shape({Dim::symbolic("N"), Dim::known(3), Dim::symbolic("H"), Dim::symbolic("W")}));
    std::vector<float> w(4 * 3 * 3 * 3, 0.5f);
    const ValueId wid = g.add_constant("w", TensorData::from_floats({4, 3, 3, 3}, w));
    const ValueId y = g.add_value("y");
    const ValueId z = g.add_value(
        "z", DType::f32, Shape({Dim::symbolic("N"), Dim::known(4), Dim::symbolic("H"), Dim::symbolic("W")}));
    g.inputs().push_back(x);
    Node& conv = g.add_node("Conv", {x, wid, no_value}, {y}, "conv1");
    conv.attributes.emplace("pads", std::vector<int64_t>{1, 1, 1, 1});
    conv.attributes.emplace("group", int64_t{1});
    conv.attributes.emplace("auto_pad", "NOTSET");
    g.add_node("Relu", {y}, {z});
    g.outputs().push_back(z);
    return g;
}

} // namespace

TEST(Graph, BuildsAndValidates) {
    Graph g = small_graph();
    EXPECT_NO_THROW(g.validate());
    EXPECT_EQ(g.nodes().size(), 2u);
    EXPECT_EQ(g.nodes()[1].name, "Relu_1"); // unnamed nodes get "<op>_<index>"
    EXPECT_EQ(g.constants().size(), 1u);
    EXPECT_EQ(g.value(g.id("w")).shape, Shape({4, 3, 3, 3}));
    EXPECT_EQ(g.opset_version(), 13);
    EXPECT_EQ(g.opset_version("ai.onnx"), 13);
    EXPECT_EQ(g.opset_version("com.microsoft"), 0);
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}}));
}

TEST(Graph, DuplicateValueNameIsAnError) {
    Graph g = small_graph();
    try {
        g.add_value("x");
        FAIL() << "expected an error";
    } catch (const vkml::Error& e) {
        EXPECT_NE(std::string(e.what()).find("small.onnx"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
    }
    EXPECT_EQ(g.unique_name("x"), "x_1");
    EXPECT_EQ(g.unique_name("fresh"), "fresh");
}

TEST(Graph, AttributesAreTyped) {
    Graph g = small_graph();
    const Node& conv = g.nodes()[0];
    EXPECT_EQ(conv.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
    EXPECT_EQ(conv.get_int("group", 7), 1);
    EXPECT_EQ(conv.get_int("absent", 7), 7);
    EXPECT_EQ(conv.get_string("auto_pad", ""), "NOTSET");
    EXPECT_FLOAT_EQ(conv.get_float("alpha", 0.25f), 0.25f);
    try {
        (void)conv.get_float("pads", 0.f);
        FAIL() << "expected an error";
    } catch (const vkml::Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("conv1"), std::string::npos) << m;
        EXPECT_NE(m.find("'pads'"), std::string::npos) << m;
        EXPECT_NE(m.find("ints"), std::string::npos) << m;
    }
    EXPECT_THROW((void)conv.get_tensor("missing"), vkml::Error);
}

TEST(Graph, ValidateRejectsUndefinedInputsOutOfOrderNodesAndTwoProducers) {
    {
        Graph g = small_graph();
        const ValueId ghost = g.add_value("ghost");
        g.nodes()[1].inputs.push_back(ghost);
        try {
            g.validate();
            FAIL();
        } catch (const vkml::Error& e) {
            EXPECT_NE(std::string(e.what()).find("'ghost' is produced by no node"), std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find("small.onnx"), std::string::npos) << e.what();
        }
    }
    {
        Graph g = small_graph();
        std::swap(g.nodes()[0], g.nodes()[1]);
        EXPECT_THROW(g.validate(), vkml::Error);
        g.sort_topologically();
        EXPECT_NO_THROW(g.validate());
        EXPECT_EQ(g.nodes()[0].op_type, "Conv");
    }
    {
        Graph g = small_graph();
        g.nodes()[1].outputs = {g.id("y")};
        EXPECT_THROW(g.validate(), vkml::Error);
    }
    {
        Graph g = small_graph();
        g.nodes()[0].inputs[0] = 999;
        EXPECT_THROW(g.validate(), vkml::Error);
    }
}

TEST(Graph, CycleIsReportedWithANode) {
    Graph g = small_graph();
    // conv reads z, which relu produces from conv's output.
    g.nodes()[0].inputs[0] = g.id("z");
    g.inputs().clear();
    try {
        g.sort_topologically();
        FAIL();
    } catch (const vkml::Error& e) {
        EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
    }
}

TEST(Graph, TopologicalOrderIsStable) {
    Graph g;
    g.source = "t";
    const ValueId a = g.add_value("a", DType::f32, Shape({1}));
    g.inputs().push_back(a);
    // Three independent branches then a join, written in the file with the join first.
    const ValueId b = g.add_value("b"), c = g.add_value("c"), d = g.add_value("d"), e = g.add_value("e");
    g.add_node("Sum", {b, c, d}, {e}, "join");
    g.add_node("Relu", {a}, {b}, "r1");
    g.add_node("Relu", {a}, {c}, "r2");
    g.add_node("Relu", {a}, {d}, "r3");
    g.outputs().push_back(e);
    g.sort_topologically();
    std::vector<std::string> names;
    for (const Node& n : g.nodes()) names.push_back(n.name);
    EXPECT_EQ(names, (std::vector<std::string>{"r1", "r2", "r3", "join"}));
}

TEST(Graph, FreeDimensionOverrides) {
    Graph g = small_graph();
    EXPECT_EQ(g.free_dimensions(), (std::vector<std::string>{"H", "N", "W"}));
    apply_free_dimension_overrides(g, {{"N", 1}, {"H", 540}, {"W", 960}});
    EXPECT_TRUE(g.free_dimensions().empty());
    EXPECT_EQ(*g.value(g.id("x")).shape, Shape({1, 3, 540, 960}));
    EXPECT_EQ(*g.value(g.id("z")).shape, Shape({1, 4, 540, 960}));

    Graph h = small_graph();
    try {
        apply_free_dimension_overrides(h, {{"batch", 1}});
        FAIL();
    } catch (const vkml::Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("'batch'"), std::string::npos) << m;
        EXPECT_NE(m.find("H, N, W"), std::string::npos) << m; // lists what the model has
    }
    EXPECT_THROW(apply_free_dimension_overrides(h, {{"N", 0}}), vkml::Error);
}

TEST(Graph, DumpIsReadableAndStable) {
    const std::string expected =
        "graph 'small' (test) from 'small.onnx'\n"
        "opset ai.onnx 13\n"
        "input x: f32[N,3,H,W]\n"
        "const w: f32[4,3,3,3]\n"
        "node conv1 = Conv(x, w, \"\") -> (y) {auto_pad=\"NOTSET\", group=1, pads=[1,1,1,1]}\n"
        "node Relu_1 = Relu(y) -> (z)\n"
        "output z: f32[N,4,H,W]\n";
    EXPECT_EQ(dump(small_graph()), expected);
}

TEST(TensorData, ChecksSizesAndConverts) {
    EXPECT_THROW(TensorData(DType::f32, {2, 3}, std::vector<std::byte>(20)), vkml::Error);
    EXPECT_THROW(TensorData(DType::f32, {-1}, {}), vkml::Error);
    EXPECT_THROW(TensorData(DType::f32, {int64_t{1} << 62, 8}, {}), vkml::Error); // overflow, not a wrap
    const std::vector<uint16_t> halves = {0x3c00, 0xc000};                        // 1, -2
    const TensorData h = TensorData::from_halves({2}, halves);
    EXPECT_EQ(h.to_floats(), (std::vector<float>{1.f, -2.f}));
    EXPECT_THROW((void)h.to_int64s(), vkml::Error);
    EXPECT_THROW((void)h.floats(), vkml::Error);
    const std::vector<int32_t> ints = {3, -4};
    EXPECT_EQ(TensorData::from_int32s({2}, ints).to_int64s(), (std::vector<int64_t>{3, -4}));
    EXPECT_EQ(describe(TensorData::scalar(1.f)), "f32[]");
    EXPECT_EQ(TensorData::scalar(1.f).elements(), 1);
}

TEST(Graph, RemoveUnusedValuesRenumbers) {
    Graph g = small_graph();
    g.add_constant("orphan", TensorData::scalar(1.f));
    const size_t before = g.value_count();
    g.remove_unused_values();
    EXPECT_EQ(g.value_count(), before - 1);
    EXPECT_EQ(g.find("orphan"), no_value);
    EXPECT_NO_THROW(g.validate());
    EXPECT_EQ(dump(g), dump(small_graph()));
}
