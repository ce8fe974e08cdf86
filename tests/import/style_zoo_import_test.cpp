// The ONNX model zoo's fast-neural-style layout through the importer (no GPU): fixtures exported
// like the zoo's "-9" (Pad-2 attributes, Upsample-9 fed by a Constant) and "-8" (Upsample-7 with a
// scales attribute) files, and opset 11 (Pad-11, Resize-11), made by tests/style/make_fixtures.py.
// Then the input-shape override that runs a model declared for 224x224 at other sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "test_paths.hpp"
#include "graph/passes.hpp"
#include "vkml/import/model.hpp"

using namespace vkml;
using graph::Graph;

namespace {

std::filesystem::path zoo_fixture(const std::string& name) {
    return test::fixture("../style/fixtures/" + name);
}

std::map<std::string, int> op_counts(const Graph& g) {
    std::map<std::string, int> m;
    for (const auto& n : g.nodes()) ++m[n.op_type];
    return m;
}

const graph::Node* first(const Graph& g, const std::string& op) {
    for (const auto& n : g.nodes())
        if (n.op_type == op) return &n;
    return nullptr;
}

void expect_zoo_io(const Graph& g) {
    ASSERT_EQ(g.inputs().size(), 1u);
    ASSERT_EQ(g.outputs().size(), 1u);
    const graph::Value& in = g.value(g.inputs()[0]);
    EXPECT_EQ(in.name, "input1");
    EXPECT_EQ(in.dtype, graph::DType::f32);
    ASSERT_TRUE(in.shape);
    EXPECT_EQ(in.shape->sizes(), (std::vector<int64_t>{1, 3, 224, 224}));
    EXPECT_EQ(g.value(g.outputs()[0]).name, "output1");
}

} // namespace

TEST(OnnxImportStyleZoo, Opset9PadAttributesAndUpsampleConstant) {
    const Graph g = import::load_model(zoo_fixture("style_tiny_9.onnx"));
    EXPECT_EQ(g.opset_version(""), 9);
    expect_zoo_io(g);
    const auto ops = op_counts(g);
    EXPECT_EQ(ops.at("Pad"), 16);
    EXPECT_EQ(ops.at("Conv"), 16);
    EXPECT_EQ(ops.at("InstanceNormalization"), 15);
    EXPECT_EQ(ops.at("Upsample"), 2);
    EXPECT_EQ(ops.at("Add"), 5);
    EXPECT_EQ(ops.count("Constant"), 0u) << "Constant nodes become constants";
    const graph::Node* pad = first(g, "Pad");
    ASSERT_NE(pad, nullptr);
    EXPECT_EQ(pad->get_string("mode", ""), "reflect");
    EXPECT_EQ(pad->get_ints("pads"), (std::vector<int64_t>{0, 0, 4, 4, 0, 0, 4, 4}));
    EXPECT_EQ(pad->inputs.size(), 1u);
    const graph::Node* up = first(g, "Upsample");
    ASSERT_NE(up, nullptr);
    ASSERT_EQ(up->inputs.size(), 2u);
    const graph::Value& scales = g.value(up->inputs[1]);
    ASSERT_TRUE(scales.is_constant());
    EXPECT_EQ(scales.data->to_floats(), (std::vector<float>{1, 1, 2, 2}));
}

TEST(OnnxImportStyleZoo, Opset8UpsampleScalesAttribute) {
    const Graph g = import::load_model(zoo_fixture("style_tiny_8.onnx"));
    EXPECT_EQ(g.opset_version(""), 8);
    expect_zoo_io(g);
    const graph::Node* up = first(g, "Upsample");
    ASSERT_NE(up, nullptr);
    EXPECT_EQ(up->inputs.size(), 1u);
    EXPECT_EQ(up->get_floats("scales"), (std::vector<float>{1, 1, 2, 2}));
    EXPECT_EQ(up->get_string("mode", ""), "nearest");
}

TEST(OnnxImportStyleZoo, Opset11PadAndResizeInputs) {
    const Graph g = import::load_model(zoo_fixture("style_tiny_11.onnx"));
    EXPECT_EQ(g.opset_version(""), 11);
    expect_zoo_io(g);
    const auto ops = op_counts(g);
    EXPECT_EQ(ops.at("Resize"), 2);
    EXPECT_EQ(ops.at("Pad"), 16);
    EXPECT_EQ(first(g, "Pad")->inputs.size(), 2u) << "Pad-11 takes its pads as an input";
}

// The zoo's files declare 1x3x224x224 and the output for it; an explicit input shape re-declares
// the input and forgets the declared shapes computed from the old one.
TEST(OnnxImportStyleZoo, InputShapeOverridesTheDeclaredSize) {
    Graph g = import::load_model(zoo_fixture("style_tiny_9.onnx"));
    const graph::Value& out = g.value(g.outputs()[0]);
    ASSERT_TRUE(out.shape && out.shape->is_static()) << "the fixture declares its output's shape";
    graph::fix_input_shapes(g, {}, {{"input1", {1, 3, 29, 37}}});
    EXPECT_EQ(g.value(g.inputs()[0]).shape->sizes(), (std::vector<int64_t>{1, 3, 29, 37}));
    EXPECT_FALSE(g.value(g.outputs()[0]).shape) << "the declared 224x224 output shape is stale";
    for (const auto& n : g.nodes()) {
        if (n.op_type == "Upsample") {
            EXPECT_TRUE(g.value(n.inputs[1]).is_constant()) << "constants keep their data";
        }
    }

    // The declared size itself changes nothing.
    Graph same = import::load_model(zoo_fixture("style_tiny_9.onnx"));
    graph::fix_input_shapes(same, {}, {{"input1", {1, 3, 224, 224}}});
    EXPECT_TRUE(same.value(same.outputs()[0]).shape) << "nothing re-declared, declarations kept";
}

TEST(OnnxImportStyleZoo, InputShapeOverrideErrors) {
    auto expect_error = [](const std::vector<int64_t>& dims, const std::string& needle) {
        Graph g = import::load_model(zoo_fixture("style_tiny_9.onnx"));
        try {
            graph::fix_input_shapes(g, {}, {{"input1", dims}});
            ADD_FAILURE() << "expected an error containing '" << needle << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("style_tiny_9.onnx"), std::string::npos) << e.what();
        }
    };
    expect_error({1, 3, 224}, "does not fit"); // rank
    expect_error({1, 3, -2, 64}, "must not be negative"); // (empty inputs are legal ONNX: axes [0])
    Graph g = import::load_model(zoo_fixture("style_tiny_9.onnx"));
    EXPECT_THROW(graph::fix_input_shapes(g, {}, {{"image", {1, 3, 8, 8}}}), Error); // no such input
}
