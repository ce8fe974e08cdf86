// Models whose shape arithmetic overflows (issue 14, item 9), through the importer and the
// Session as `vkml run` takes them: each is refused with an error naming the model file and the
// node, where a wrapped size once reached the GPU (UBSan saw the signed overflow in tensor.cpp).
#include <gtest/gtest.h>

#include <string>

#include "session/session_util.hpp"
#include "vkml/import/model.hpp"

using namespace vkml;
using namespace vkml::test;

namespace {

class ShapeOverflowTest : public GpuTest {};

} // namespace

TEST_F(ShapeOverflowTest, HugeScalesPadsRepeatsAndShapesNameTheFileAndNode) {
    const struct {
        const char* file;
        const char* op;
        const char* what;
    } cases[] = {
        {"bad_huge_resize.onnx", "Resize", "scales"},
        {"bad_huge_pad.onnx", "Pad", "pads"},
        {"bad_huge_tile.onnx", "Tile", "repeats"},
        {"bad_huge_constant.onnx", "ConstantOfShape", "vkml computes on the host"},
    };
    for (const auto& c : cases) {
        const auto path = std::filesystem::path(VKML_FIXTURE_DIR) / c.file;
        graph::Graph g = import::load_model(path);
        try {
            Session s(dev(), g, {.fp32 = true});
            ADD_FAILURE() << c.file << " was accepted";
        } catch (const Error& e) {
            const std::string m = e.what();
            // InvalidArgument for the overflows, Unsupported for a constant past the host's cap.
            EXPECT_TRUE(e.code() == ErrorCode::InvalidArgument || e.code() == ErrorCode::Unsupported) << m;
            EXPECT_NE(m.find(path.string()), std::string::npos) << m;
            EXPECT_NE(m.find(std::string("node 'huge' (") + c.op + ")"), std::string::npos) << m;
            EXPECT_NE(m.find(c.what), std::string::npos) << m;
        }
    }
}

// An input declared (or given) with dimensions whose product passes 64 bits: refused naming the
// model and the value, before any size is computed from it.
TEST_F(ShapeOverflowTest, HugeInputShapeNamesTheFileAndValue) {
    graph::Graph g = new_graph("huge_input");
    const graph::ValueId x = input(g, "x", {int64_t{1} << 40, int64_t{1} << 40});
    g.outputs().push_back(node(g, "Relu", {x}, "y"));
    try {
        Session s(dev(), g, {.fp32 = true});
        ADD_FAILURE() << "a 2^80-element input was accepted";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("'huge_input.test'"), std::string::npos) << m;
        EXPECT_NE(m.find("value 'x'"), std::string::npos) << m;
        EXPECT_NE(m.find("more elements than 64 bits"), std::string::npos) << m;
    }
}
