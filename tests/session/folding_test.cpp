// Host constant folding against the device: the same node evaluated once with constant inputs
// (folded by the host evaluator in double / int64) and once with graph inputs (lowered to GPU ops)
// must agree. Plus the ops only the host evaluates (Shape, Range, ConstantOfShape, ScatterND).
#include <gtest/gtest.h>

#include "session/session_util.hpp"
#include "graph/passes.hpp"

using namespace vkml;
using namespace vkml::test;
using Attrs = std::vector<std::pair<std::string, graph::Attribute>>;

namespace {

class FoldingTest : public GpuTest {
protected:
    // Runs `op` on `inputs` twice: every input a constant (the host folds it; no GPU step runs)
    // and every input that is not a parameter a graph input (the GPU computes it). The results
    // must be equal (floats within f32 rounding).
    void check(const std::string& op, const std::vector<TensorData>& inputs, const Attrs& attrs = {},
               std::vector<bool> parameter = {}) {
        parameter.resize(inputs.size(), false);
        Graph folded = new_graph("folded"), device = new_graph("device");
        std::vector<ValueId> fin, din;
        std::vector<TensorData> feed;
        for (size_t i = 0; i < inputs.size(); ++i) {
            const std::string name = "in" + std::to_string(i);
            fin.push_back(folded.add_constant(name, inputs[i]));
            if (parameter[i]) {
                din.push_back(device.add_constant(name, inputs[i]));
            } else {
                din.push_back(input(device, name, inputs[i].dims(), inputs[i].dtype()));
                feed.push_back(inputs[i]);
            }
        }
        folded.outputs().push_back(node(folded, op, fin, "y", attrs));
        device.outputs().push_back(node(device, op, din, "y", attrs));
        Session host(dev(), folded, {.fp32 = true});
        Session gpu(dev(), device, {.fp32 = true});
        for (const auto& st : host.steps())
            EXPECT_EQ(st.op_type, "Cast") << op << ": only the output copy runs";
        const auto a = host.run(std::vector<TensorData>{}), b = gpu.run(feed);
        ASSERT_EQ(a[0].dims(), b[0].dims()) << op;
        ASSERT_EQ(a[0].dtype(), b[0].dtype()) << op;
        if (a[0].dtype() == DType::f32)
            EXPECT_LE(max_rel_diff(a[0], b[0]), 1e-6) << op;
        else
            EXPECT_EQ(a[0].to_int64s(), b[0].to_int64s()) << op;
    }
};

TensorData i64s(std::vector<int64_t> dims, std::vector<int64_t> v) {
    return TensorData::from_int64s(std::move(dims), v);
}

} // namespace

TEST_F(FoldingTest, HostAndDeviceAgree) {
    const TensorData x = rand_tensor({2, 3, 4}, 1), y = rand_tensor({3, 1}, 2);
    const TensorData a = i64s({2, 3}, {1, -2, 3, 40, 5, -6}), b = i64s({3}, {7, 2, -3});
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
        check(op, {x, y});
        check(op, {a, b});
    }
    for (const char* op : {"Equal", "Less", "Greater"}) check(op, {a, b});
    for (const char* op : {"Neg", "Abs", "Floor", "Ceil", "Sqrt", "Exp", "Sigmoid", "Relu"})
        check(op, {op == std::string("Sqrt") ? rand_tensor({5, 2}, 3, 0.1f, 4.f) : rand_tensor({5, 2}, 3)});
    check("Max", {x, y, rand_tensor({4}, 4)});
    check("Concat", {x, rand_tensor({2, 1, 4}, 5)}, {{"axis", int64_t{-2}}});
    check("Concat", {a, i64s({1, 3}, {9, 9, 9})}, {{"axis", int64_t{0}}});
    check("Transpose", {x}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
    check("Gather", {x, i64s({2, 2}, {-1, 0, 2, 1})}, {{"axis", int64_t{1}}});
    check("Gather", {a, i64s({}, {1})}, {{"axis", int64_t{0}}});
    check("Slice", {x, i64s({2}, {3, -1}), i64s({2}, {-100, 0}), i64s({2}, {2, 1}), i64s({2}, {-2, -1})}, {},
          {false, true, true, true, true});
    check("Expand", {y, i64s({3}, {2, 3, 5})}, {}, {false, true});
    check("Tile", {a, i64s({2}, {2, 3})}, {}, {false, true});
    check("Reshape", {x, i64s({3}, {0, -1, 2})}, {}, {false, true});
    check("Unsqueeze", {a, i64s({2}, {0, -1})}, {}, {false, true});
    check("Cast", {x}, {{"to", int64_t{7}}}); // f32 -> i64 truncates
    check("Cast", {a}, {{"to", int64_t{1}}});
    check("Where", {TensorData(DType::boolean, {3}, {std::byte{1}, std::byte{0}, std::byte{1}}), a, b});
    check("ReduceSum", {x}, {{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t{0}}});
    check("ReduceMean", {x}, {{"axes", std::vector<int64_t>{1}}});
    check("ReduceMax", {x}, {});
}

TEST_F(FoldingTest, HostOnlyOperators) {
    Graph g = new_graph("host_only", 17);
    const ValueId x = input(g, "x", {2, 5, 7});
    const ValueId shape = node(g, "Shape", {x}, "shape", {{"start", int64_t{1}}});
    const ValueId range =
        node(g, "Range",
             {g.add_constant("start", i64s({}, {10})), g.add_constant("limit", i64s({}, {3})),
              g.add_constant("delta", i64s({}, {-3}))},
             "range");
    graph::TensorData seven = TensorData::from_floats({1}, std::vector<float>{7.f});
    const ValueId filled = node(g, "ConstantOfShape", {shape}, "filled", {{"value", seven}});
    const ValueId scattered =
        node(g, "ScatterND",
             {g.add_constant("data", i64s({2, 3}, {0, 0, 0, 0, 0, 0})),
              g.add_constant("idx", i64s({2, 2}, {1, 2, 0, 0})), g.add_constant("upd", i64s({2}, {5, 6}))},
             "scattered");
    g.outputs() = {shape, range, filled, scattered};
    Session s(dev(), g);
    EXPECT_EQ(graph::op_histogram(s.graph()).size(), 0u) << graph::dump(s.graph());
    const auto out = s.run(std::vector<TensorData>{rand_tensor({2, 5, 7}, 1)});
    EXPECT_EQ(out[0].to_int64s(), (std::vector<int64_t>{5, 7}));
    EXPECT_EQ(out[1].to_int64s(), (std::vector<int64_t>{10, 7, 4}));
    EXPECT_EQ(out[2].dims(), (std::vector<int64_t>{5, 7}));
    EXPECT_EQ(out[2].to_floats(), std::vector<float>(35, 7.f));
    EXPECT_EQ(out[3].to_int64s(), (std::vector<int64_t>{6, 0, 0, 0, 0, 5}));
}

TEST_F(FoldingTest, HostOnlyOperatorOnDeviceDataIsAnError) {
    Graph g = new_graph("range_on_device");
    const ValueId n = input(g, "n", {}, DType::i64);
    g.outputs().push_back(
        node(g, "Range", {g.add_constant("s", i64s({}, {0})), n, g.add_constant("d", i64s({}, {1}))}, "r"));
    try {
        Session s(dev(), g);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'r' (Range)"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("constant inputs"), std::string::npos) << e.what();
    }
    // Given as a constant input, the same model runs.
    Session s(dev(), g, {.constant_inputs = {{"n", i64s({}, {4})}}});
    EXPECT_TRUE(s.inputs().empty());
    EXPECT_EQ(s.run(std::vector<TensorData>{})[0].to_int64s(), (std::vector<int64_t>{0, 1, 2, 3}));
}
