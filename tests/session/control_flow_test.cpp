// Sequences, optionals and control flow (ml/graph/control.cpp) through the Session, on graphs
// built in code: each op's results against values computed here, the If/Loop/Scan expansions on
// the device with computed data, and the errors for what vkml cannot resolve when it builds a
// session (computed positions and conditions, out-of-range positions, empty optionals, runaway
// loops), each naming the node.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "session/session_util.hpp"
#include "graph/passes.hpp"

using namespace vkml;
using namespace vkml::test;
using graph::Attribute;
using graph::Node;
using graph::ValueKind;

namespace {

class ControlFlowTest : public GpuTest {};

TensorData scalar_i64(int64_t v) {
    return TensorData::from_int64s({}, std::span<const int64_t>(&v, 1));
}
TensorData scalar_bool(bool b) {
    return TensorData(DType::boolean, {}, {std::byte{static_cast<unsigned char>(b)}});
}
TensorData floats(std::vector<int64_t> dims, std::vector<float> v) {
    return TensorData::from_floats(std::move(dims), v);
}

// A node with several outputs (named), returning their ids.
std::vector<ValueId> multi(Graph& g, const std::string& op, std::vector<ValueId> in, std::vector<std::string> outs,
                           std::vector<std::pair<std::string, Attribute>> attrs = {}) {
    std::vector<ValueId> ids;
    for (const auto& o : outs) ids.push_back(g.add_value(o));
    Node& n = g.add_node(op, std::move(in), ids, outs.empty() ? op : outs[0]);
    for (auto& [k, a] : attrs) n.attributes.insert_or_assign(k, std::move(a));
    return ids;
}

// `body` reads `names` from the outer scope: captured values, as the ONNX importer makes them.
void capture(Graph& body, const std::vector<std::string>& names) {
    for (const auto& n : names) body.captures().push_back(body.add_value(n));
}
// The owner node reads the captured outer values as extra inputs.
void pass_captures(Graph& g, Node& owner, const std::vector<std::string>& names) {
    for (const auto& n : names) owner.inputs.push_back(g.id(n));
    owner.attributes.insert_or_assign("vkml_captures", names);
}

std::string build_error(gpu::Device& device, const Graph& g, const SessionOptions& o = {}) {
    try {
        Session s(device, g, o);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

std::vector<float> values(const TensorData& t) {
    return t.to_floats();
}

} // namespace

// SequenceConstruct -> Insert -> Erase -> At / Length / ConcatFromSequence (plain and new axis).
TEST_F(ControlFlowTest, SequenceOps) {
    Graph g = new_graph("seq", 13);
    const ValueId a = input(g, "a", {2, 3}), b = input(g, "b", {1, 3}), c = input(g, "c", {4, 3});
    const ValueId d = input(g, "d", {2, 3});
    const ValueId s = node(g, "SequenceConstruct", {a, b, c}, "s");
    const ValueId one = g.add_constant("one", scalar_i64(1));
    const ValueId s2 = node(g, "SequenceInsert", {s, d, one}, "s2");   // a d b c
    const ValueId s3 = node(g, "SequenceErase", {s2}, "s3");           // a d b
    const ValueId minus1 = g.add_constant("minus1", scalar_i64(-1));
    const ValueId at = node(g, "SequenceAt", {s3, minus1}, "at");     // b
    const ValueId len = node(g, "SequenceLength", {s3}, "len");
    const ValueId cat = node(g, "ConcatFromSequence", {s3}, "cat", {{"axis", int64_t{0}}});
    const ValueId s4 = node(g, "SequenceErase", {s3, one}, "s4"); // a b... erase d: a b
    const ValueId s5 = node(g, "SequenceInsert", {s4, a}, "s5"); // a b a
    const ValueId s6 = node(g, "SequenceErase", {s5, one}, "s6"); // a a
    const ValueId stacked = node(g, "ConcatFromSequence", {s6}, "stacked", {{"axis", int64_t{-1}}, {"new_axis", int64_t{1}}});
    g.outputs() = {at, len, cat, stacked, s3};
    Session session(device(), g, {.fp32 = true});
    const TensorData ta = rand_tensor({2, 3}, 1), tb = rand_tensor({1, 3}, 2), tc = rand_tensor({4, 3}, 3),
                     td = rand_tensor({2, 3}, 4);
    const auto out = session.run(std::vector<TensorData>{ta, tb, tc, td});
    ASSERT_EQ(session.model_outputs().size(), 5u);
    EXPECT_EQ(session.model_outputs()[4].kind, ValueKind::Sequence);
    EXPECT_EQ(session.model_outputs()[4].count, 3u);
    ASSERT_EQ(out.size(), 4u + 3u);
    EXPECT_EQ(out[0], tb);
    EXPECT_EQ(out[1].to_int64s(), std::vector<int64_t>{3});
    std::vector<float> want = values(ta);
    for (const auto* t : {&td, &tb}) {
        const auto v = values(*t);
        want.insert(want.end(), v.begin(), v.end());
    }
    EXPECT_EQ(out[2].dims(), (std::vector<int64_t>{5, 3}));
    EXPECT_EQ(values(out[2]), want);
    EXPECT_EQ(out[3].dims(), (std::vector<int64_t>{2, 3, 2}));
    const auto va = values(ta), vs = values(out[3]);
    for (size_t i = 0; i < va.size(); ++i) {
        EXPECT_EQ(vs[2 * i], va[i]);
        EXPECT_EQ(vs[2 * i + 1], va[i]);
    }
    EXPECT_EQ(out[4], ta);
    EXPECT_EQ(out[5], td);
    EXPECT_EQ(out[6], tb);
    EXPECT_EQ(session.outputs()[4].name, "s3[0]");
}

// SplitToSequence with a scalar split (last chunk shorter), with sizes, and squeezing.
TEST_F(ControlFlowTest, SplitToSequence) {
    Graph g = new_graph("split", 13);
    const ValueId x = input(g, "x", {5, 3});
    const ValueId two = g.add_constant("two", scalar_i64(2));
    const ValueId sizes = g.add_constant("sizes", ints({1, 2}));
    const ValueId s1 = node(g, "SplitToSequence", {x, two}, "s1");
    const ValueId s2 = node(g, "SplitToSequence", {x, sizes}, "s2", {{"axis", int64_t{1}}});
    const ValueId s3 = node(g, "SplitToSequence", {x}, "s3", {{"keepdims", int64_t{0}}});
    const ValueId n3 = node(g, "SequenceLength", {s3}, "n3");
    const ValueId last = node(g, "SequenceAt", {s3, g.add_constant("four", scalar_i64(4))}, "last");
    g.outputs() = {s1, s2, n3, last};
    Session session(device(), g, {.fp32 = true});
    const TensorData tx = rand_tensor({5, 3}, 7);
    const auto out = session.run(std::vector<TensorData>{tx});
    ASSERT_EQ(out.size(), 3u + 2u + 2u);
    const auto v = values(tx);
    EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(out[2].dims(), (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(values(out[2]), std::vector<float>(v.begin() + 12, v.end()));
    EXPECT_EQ(out[3].dims(), (std::vector<int64_t>{5, 1}));
    EXPECT_EQ(out[4].dims(), (std::vector<int64_t>{5, 2}));
    EXPECT_EQ(values(out[4])[1], v[2]);
    EXPECT_EQ(out[5].to_int64s(), std::vector<int64_t>{5});
    EXPECT_EQ(out[6].dims(), (std::vector<int64_t>{3}));
    EXPECT_EQ(values(out[6]), std::vector<float>(v.begin() + 12, v.end()));
}

TEST_F(ControlFlowTest, SequenceErrorsNameTheNode) {
    {
        Graph g = new_graph("at_range", 13);
        const ValueId a = input(g, "a", {2});
        const ValueId s = node(g, "SequenceConstruct", {a, a, a}, "s");
        g.outputs() = {node(g, "SequenceAt", {s, g.add_constant("p", scalar_i64(3))}, "at")};
        const std::string m = build_error(device(), g);
        EXPECT_TRUE(contains(m, "node 'at' (SequenceAt)")) << m;
        EXPECT_TRUE(contains(m, "position 3 is out of range for a sequence of 3 tensors")) << m;
    }
    {
        Graph g = new_graph("at_computed", 13);
        const ValueId a = input(g, "a", {2});
        const ValueId p = input(g, "p", {}, DType::i64);
        const ValueId s = node(g, "SequenceConstruct", {a}, "s");
        g.outputs() = {node(g, "SequenceAt", {s, p}, "at")};
        const std::string m = build_error(device(), g);
        EXPECT_TRUE(contains(m, "node 'at' (SequenceAt)")) << m;
        EXPECT_TRUE(contains(m, "position 'p' must be a constant")) << m;
        // Given as a constant input, the same model builds.
        SessionOptions o;
        o.constant_inputs["p"] = scalar_i64(0);
        Session session(device(), g, o);
        EXPECT_EQ(session.inputs().size(), 1u);
    }
    {
        Graph g = new_graph("empty", 13);
        const ValueId s = node(g, "SequenceEmpty", {}, "s");
        g.outputs() = {node(g, "ConcatFromSequence", {s}, "cat", {{"axis", int64_t{0}}})};
        const std::string m = build_error(device(), g);
        EXPECT_TRUE(contains(m, "node 'cat' (ConcatFromSequence)")) << m;
        EXPECT_TRUE(contains(m, "is empty")) << m;
        Graph e = new_graph("erase_empty", 13);
        const ValueId t = node(e, "SequenceEmpty", {}, "t");
        e.outputs() = {node(e, "SequenceErase", {t}, "erase")};
        const std::string m2 = build_error(device(), e);
        EXPECT_TRUE(contains(m2, "node 'erase' (SequenceErase)")) << m2;
        EXPECT_TRUE(contains(m2, "out of range for a sequence of 0 tensors")) << m2;
    }
    {
        // A sequence into a tensor op.
        Graph g = new_graph("mixed", 13);
        const ValueId a = input(g, "a", {2});
        const ValueId s = node(g, "SequenceConstruct", {a}, "s");
        g.outputs() = {node(g, "Relu", {s}, "r")};
        const std::string m = build_error(device(), g);
        EXPECT_TRUE(contains(m, "node 'r' (Relu)")) << m;
        EXPECT_TRUE(contains(m, "is a sequence")) << m;
    }
}

// Sequence inputs: one session input per tensor; an empty one has none.
TEST_F(ControlFlowTest, SequenceInputs) {
    Graph g = new_graph("seq_in", 13);
    const ValueId s = g.add_value("s", DType::f32);
    g.value(s).kind = ValueKind::Sequence;
    g.inputs().push_back(s);
    const ValueId x = input(g, "x", {3});
    const ValueId s2 = node(g, "SequenceInsert", {s, x}, "s2");
    g.outputs() = {s2, node(g, "SequenceLength", {s2}, "n")};
    EXPECT_TRUE(contains(build_error(device(), g), "input 's' is a sequence: give the shapes"));
    SessionOptions o;
    o.sequence_inputs["s"] = {{2}, {4}};
    Session session(device(), g, o);
    ASSERT_EQ(session.inputs().size(), 3u);
    EXPECT_EQ(session.inputs()[0].name, "s[0]");
    EXPECT_EQ(session.model_inputs()[0].count, 2u);
    const auto out = session.run(std::vector<TensorData>{rand_tensor({2}, 1), rand_tensor({4}, 2), rand_tensor({3}, 3)});
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[2], rand_tensor({3}, 3));
    EXPECT_EQ(out[3].to_int64s(), std::vector<int64_t>{3});
    o.sequence_inputs["s"] = {};
    Session empty(device(), g, o);
    EXPECT_EQ(empty.inputs().size(), 1u);
    const auto out2 = empty.run(std::vector<TensorData>{rand_tensor({3}, 3)});
    ASSERT_EQ(out2.size(), 2u);
    EXPECT_EQ(out2[1].to_int64s(), std::vector<int64_t>{1});
}

TEST_F(ControlFlowTest, Optionals) {
    Graph g = new_graph("opt", 15);
    const ValueId o = g.add_value("o", DType::f32, graph::Shape(std::vector<int64_t>{3}));
    g.value(o).kind = ValueKind::Optional;
    g.inputs().push_back(o);
    const ValueId x = input(g, "x", {3});
    const ValueId wrapped = node(g, "Optional", {x}, "wrapped");
    const ValueId none = node(g, "Optional", {}, "none", {{"type", std::string("tensor:f32")}});
    g.outputs() = {node(g, "OptionalHasElement", {o}, "has_o"), node(g, "OptionalHasElement", {wrapped}, "has_w"),
                   node(g, "OptionalHasElement", {none}, "has_n"), node(g, "OptionalGetElement", {wrapped}, "get_w"),
                   o};
    {
        Session present(device(), g, {.fp32 = true});
        ASSERT_EQ(present.inputs().size(), 2u);
        const auto out = present.run(std::vector<TensorData>{rand_tensor({3}, 1), rand_tensor({3}, 2)});
        ASSERT_EQ(out.size(), 5u);
        EXPECT_EQ(out[0].to_int64s()[0], 1);
        EXPECT_EQ(out[1].to_int64s()[0], 1);
        EXPECT_EQ(out[2].to_int64s()[0], 0);
        EXPECT_EQ(out[3], rand_tensor({3}, 2));
        EXPECT_EQ(out[4], rand_tensor({3}, 1));
    }
    SessionOptions absent;
    absent.absent_inputs.insert("o");
    Session session(device(), g, absent);
    ASSERT_EQ(session.inputs().size(), 1u);
    const auto out = session.run(std::vector<TensorData>{rand_tensor({3}, 2)});
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].to_int64s()[0], 0);
    EXPECT_FALSE(session.model_outputs()[4].present);
    EXPECT_EQ(session.model_outputs()[4].count, 0u);

    Graph e = new_graph("get_none", 15);
    const ValueId n = node(e, "Optional", {}, "n", {{"type", std::string("tensor:f32")}});
    e.outputs() = {node(e, "OptionalGetElement", {n}, "get")};
    const std::string m = build_error(device(), e);
    EXPECT_TRUE(contains(m, "node 'get' (OptionalGetElement)")) << m;
    EXPECT_TRUE(contains(m, "the optional 'n' holds no element")) << m;
}

namespace {

// If(cond): then = x * 2 (x from the outer scope), else = x + c (c an initializer of the branch).
Graph if_graph(std::vector<int64_t> else_dims = {4}) {
    Graph g = new_graph("if", 13);
    const ValueId cond = input(g, "cond", {}, DType::boolean);
    input(g, "x", {4});
    Graph then_b = new_graph("then", 13);
    capture(then_b, {"x"});
    then_b.outputs() = {node(then_b, "Mul", {then_b.id("x"), then_b.add_constant("two", TensorData::scalar(2.f))}, "t")};
    Graph else_b = new_graph("else", 13);
    capture(else_b, {"x"});
    int64_t n = 1;
    for (int64_t d : else_dims) n *= d;
    const ValueId c = else_b.add_constant("c", TensorData::from_floats(else_dims, std::vector<float>(static_cast<size_t>(n), 10.f)));
    else_b.outputs() = {node(else_b, "Add", {else_b.id("x"), c}, "e")};
    const ValueId y = g.add_value("y");
    Node& n_if = g.add_node("If", {cond}, {y}, "branch");
    n_if.attributes.emplace("then_branch", std::make_shared<const Graph>(std::move(then_b)));
    n_if.attributes.emplace("else_branch", std::make_shared<const Graph>(std::move(else_b)));
    pass_captures(g, g.nodes().back(), {"x"});
    g.outputs() = {y};
    return g;
}

} // namespace

// A condition computed on the device: both branches run and Where selects, on the GPU.
TEST_F(ControlFlowTest, IfWithComputedCondition) {
    const Graph g = if_graph();
    Session session(device(), g, {.fp32 = true});
    EXPECT_EQ(session.inputs().size(), 2u);
    const TensorData x = floats({4}, {1, -2, 3, 0.5f});
    EXPECT_EQ(values(session.run(std::vector<TensorData>{scalar_bool(true), x})[0]),
              (std::vector<float>{2, -4, 6, 1}));
    EXPECT_EQ(values(session.run(std::vector<TensorData>{scalar_bool(false), x})[0]),
              (std::vector<float>{11, 8, 13, 10.5f}));
}

// Branches of different shapes need a constant condition; with one, only its branch is built.
TEST_F(ControlFlowTest, IfBranchesThatDisagreeNeedAConstantCondition) {
    const Graph g = if_graph({2, 4});
    const std::string m = build_error(device(), g);
    EXPECT_TRUE(contains(m, "node 'branch' (If)")) << m;
    EXPECT_TRUE(contains(m, "condition 'cond' must be a constant")) << m;
    EXPECT_TRUE(contains(m, "f32[4] and f32[2,4]")) << m;
    SessionOptions o;
    o.constant_inputs["cond"] = scalar_bool(false);
    Session session(device(), g, o);
    const auto out = session.run(std::vector<TensorData>{floats({4}, {1, 2, 3, 4})});
    EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(values(out[0])[7], 14.f);
}

namespace {

// Loop(M, cond, y) with body(i, c, y) -> (c_out, y + x * i, y_out as scan output); x is captured.
// cond_out is i < stop when `stop` >= 0, else the incoming condition.
Graph loop_graph(int64_t stop) {
    Graph g = new_graph("loop", 13);
    const ValueId m = input(g, "M", {}, DType::i64);
    const ValueId cond = input(g, "cond", {}, DType::boolean);
    const ValueId y0 = input(g, "y", {3});
    input(g, "x", {3});
    Graph body = new_graph("body", 13);
    const ValueId i = body.add_value("i", DType::i64, graph::Shape(std::vector<int64_t>{}));
    const ValueId c = body.add_value("c", DType::boolean, graph::Shape(std::vector<int64_t>{}));
    const ValueId y = body.add_value("y_in", DType::f32);
    body.inputs() = {i, c, y};
    capture(body, {"x"});
    const ValueId fi = node(body, "Cast", {i}, "fi", {{"to", int64_t{1}}});
    const ValueId xi = node(body, "Mul", {body.id("x"), fi}, "xi");
    const ValueId y_out = node(body, "Add", {y, xi}, "y_out");
    const ValueId scan = node(body, "Identity", {y_out}, "scan");
    // stop >= 0: i < stop; -1: the incoming condition; -2: computed on the device from y_out.
    const ValueId c_out =
        stop >= 0   ? node(body, "Less", {i, body.add_constant("stop", scalar_i64(stop))}, "c_out")
        : stop == -1 ? node(body, "Identity", {c}, "c_out")
                     : node(body, "Greater",
                            {node(body, "ReduceSum", {y_out}, "sum", {{"keepdims", int64_t{0}}}),
                             body.add_constant("limit", TensorData::scalar(1000.f))},
                            "c_out");
    body.value(scan).dtype = DType::f32;
    body.value(scan).shape = graph::Shape(std::vector<int64_t>{3});
    body.outputs() = {c_out, y_out, scan};
    const auto outs = multi(g, "Loop", {m, cond, y0}, {"y_final", "ys"});
    g.nodes().back().attributes.emplace("body", std::make_shared<const Graph>(std::move(body)));
    g.nodes().back().name = "loop";
    pass_captures(g, g.nodes().back(), {"x"});
    g.outputs() = outs;
    return g;
}

} // namespace

TEST_F(ControlFlowTest, LoopWithTripCount) {
    const Graph g = loop_graph(-1);
    {
        const std::string m = build_error(device(), g);
        EXPECT_TRUE(contains(m, "node 'loop' (Loop)")) << m;
        EXPECT_TRUE(contains(m, "trip count 'M' must be a constant")) << m;
    }
    SessionOptions o;
    o.fp32 = true;
    o.constant_inputs["M"] = scalar_i64(4);
    o.constant_inputs["cond"] = scalar_bool(true);
    Session session(device(), g, o);
    const TensorData y = floats({3}, {1, 2, 3}), x = floats({3}, {0.5f, -1, 2});
    const auto out = session.run(std::vector<TensorData>{y, x});
    // y after i = 0..3: y + x * (0 + 1 + 2 + 3)
    EXPECT_EQ(values(out[0]), (std::vector<float>{4, -4, 15}));
    ASSERT_EQ(out[1].dims(), (std::vector<int64_t>{4, 3}));
    EXPECT_EQ(values(out[1])[3], 1.5f); // after i = 1
    // No iteration: the initial value and an empty scan output of the body's declared shape.
    o.constant_inputs["M"] = scalar_i64(0);
    Session none(device(), g, o);
    const auto out0 = none.run(std::vector<TensorData>{y, x});
    EXPECT_EQ(out0[0], y);
    EXPECT_EQ(out0[1].dims(), (std::vector<int64_t>{0, 3}));
}

// The condition the body computes from the iteration number folds, so the loop stops by itself.
TEST_F(ControlFlowTest, LoopWithComputedCondition) {
    const Graph g = loop_graph(2);
    SessionOptions o;
    o.fp32 = true;
    o.constant_inputs["M"] = scalar_i64(std::numeric_limits<int64_t>::max());
    o.constant_inputs["cond"] = scalar_bool(true);
    Session session(device(), g, o);
    const auto out = session.run(std::vector<TensorData>{floats({3}, {0, 0, 0}), floats({3}, {1, 1, 1})});
    // i = 0, 1, 2 run (the condition after i = 2 is 2 < 2: false)
    EXPECT_EQ(values(out[0]), (std::vector<float>{3, 3, 3}));
    EXPECT_EQ(out[1].dims(), (std::vector<int64_t>{3, 3}));
}

TEST_F(ControlFlowTest, RunawayLoopsAreErrors) {
    const Graph g = loop_graph(-1);
    SessionOptions o;
    o.constant_inputs["M"] = scalar_i64(std::numeric_limits<int64_t>::max());
    o.constant_inputs["cond"] = scalar_bool(true);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string m = build_error(device(), g, o);
    EXPECT_TRUE(contains(m, "node 'loop' (Loop)")) << m;
    EXPECT_TRUE(contains(m, "runs more than " + std::to_string(graph::max_loop_iterations) + " iterations")) << m;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 120.0);
    // A condition computed on the device.
    const Graph d = loop_graph(-1);
    SessionOptions o2;
    o2.constant_inputs["M"] = scalar_i64(3);
    const std::string m2 = build_error(device(), d, o2);
    EXPECT_TRUE(contains(m2, "condition 'cond' must be a constant")) << m2;
    // Neither trip count nor condition.
    Graph n = loop_graph(-1);
    n.nodes().back().inputs[0] = graph::no_value;
    n.nodes().back().inputs[1] = graph::no_value;
    const std::string m3 = build_error(device(), n);
    EXPECT_TRUE(contains(m3, "would never end")) << m3;
}

// Without a condition input the body's cond_out is ignored (ONNX's for loop), even when the
// device computes it.
TEST_F(ControlFlowTest, ForLoopIgnoresTheBodysCondition) {
    Graph g = loop_graph(-2);
    {
        SessionOptions o;
        o.constant_inputs["M"] = scalar_i64(2);
        o.constant_inputs["cond"] = scalar_bool(true);
        const std::string m = build_error(device(), g, o); // a while loop: the condition matters
        EXPECT_TRUE(contains(m, "condition (computed by iteration 0) 'loop/0/c_out' must be a constant")) << m;
    }
    g.nodes().back().inputs[1] = graph::no_value;
    SessionOptions o;
    o.fp32 = true;
    o.constant_inputs["M"] = scalar_i64(3);
    o.constant_inputs["cond"] = scalar_bool(false); // read by nothing now
    Session session(device(), g, o);
    const auto out = session.run(std::vector<TensorData>{floats({3}, {0, 0, 0}), floats({3}, {1, 2, 3})});
    EXPECT_EQ(values(out[0]), (std::vector<float>{3, 6, 9}));
}

// Scan (opset 9+): a running sum over axis 1 read backwards, the scan output on axis 0 reversed.
TEST_F(ControlFlowTest, ScanAxesAndDirections) {
    Graph g = new_graph("scan", 11);
    const ValueId init = input(g, "init", {2});
    const ValueId x = input(g, "x", {2, 5});
    Graph body = new_graph("body", 11);
    const ValueId s = body.add_value("s", DType::f32);
    const ValueId e = body.add_value("e", DType::f32);
    body.inputs() = {s, e};
    const ValueId s_out = node(body, "Add", {s, e}, "s_out");
    body.outputs() = {s_out, node(body, "Identity", {s_out}, "o")};
    const auto outs = multi(g, "Scan", {init, x}, {"final", "partial"},
                            {{"num_scan_inputs", int64_t{1}},
                             {"scan_input_axes", std::vector<int64_t>{1}},
                             {"scan_input_directions", std::vector<int64_t>{1}},
                             {"scan_output_directions", std::vector<int64_t>{1}}});
    g.nodes().back().attributes.emplace("body", std::make_shared<const Graph>(std::move(body)));
    g.outputs() = outs;
    Session session(device(), g, {.fp32 = true});
    const TensorData ti = floats({2}, {100, 200});
    const TensorData tx = floats({2, 5}, {1, 2, 3, 4, 5, 10, 20, 30, 40, 50});
    const auto out = session.run(std::vector<TensorData>{ti, tx});
    EXPECT_EQ(values(out[0]), (std::vector<float>{115, 350}));
    ASSERT_EQ(out[1].dims(), (std::vector<int64_t>{5, 2}));
    // Steps read x[:, 4], x[:, 3], ...; the outputs stacked in reverse: row 0 is the last step.
    EXPECT_EQ(values(out[1]), (std::vector<float>{115, 350, 114, 340, 112, 320, 109, 290, 105, 250}));
}

// An operator vkml lacks inside a body is named before anything is built.
TEST_F(ControlFlowTest, UnsupportedOpInsideABodyIsNamed) {
    Graph g = if_graph();
    Graph then_b = new_graph("then", 13);
    capture(then_b, {"x"});
    then_b.outputs() = {node(then_b, "NoSuchOp", {then_b.id("x")}, "t")};
    g.nodes().back().attributes.insert_or_assign("then_branch", std::make_shared<const Graph>(std::move(then_b)));
    const std::string m = build_error(device(), g);
    EXPECT_TRUE(contains(m, "node 't' (NoSuchOp)")) << m;
    EXPECT_TRUE(contains(m, "not supported")) << m;
}

// As exporters write per-batch post-processing: the trip count from a shape (folds), no
// condition input, and inside the body an If on a value computed on the device from the row.
TEST_F(ControlFlowTest, LoopOverRowsWithADataDependentIf) {
    Graph g = new_graph("rows", 13);
    const ValueId x = input(g, "x", {3, 4});
    const ValueId shape = node(g, "Shape", {x}, "shape");
    const ValueId rows = node(g, "Gather", {shape, g.add_constant("zero", scalar_i64(0))}, "rows");
    Graph body = new_graph("body", 13);
    const ValueId i = body.add_value("i", DType::i64, graph::Shape(std::vector<int64_t>{}));
    const ValueId c = body.add_value("c", DType::boolean, graph::Shape(std::vector<int64_t>{}));
    body.inputs() = {i, c};
    capture(body, {"x"});
    const ValueId row = node(body, "Gather", {body.id("x"), i}, "row", {{"axis", int64_t{0}}});
    const ValueId top = node(body, "ReduceMax", {row}, "top", {{"keepdims", int64_t{0}}});
    const ValueId positive = node(body, "Greater", {top, body.add_constant("zero_f", TensorData::scalar(0.f))}, "positive");
    Graph then_b = new_graph("then", 13);
    capture(then_b, {"row"});
    then_b.outputs() = {node(then_b, "Mul", {then_b.id("row"), then_b.add_constant("two", TensorData::scalar(2.f))}, "doubled")};
    Graph else_b = new_graph("else", 13);
    capture(else_b, {"row"});
    else_b.outputs() = {node(else_b, "Neg", {else_b.id("row")}, "negated")};
    const ValueId picked = body.add_value("picked");
    Node& n_if = body.add_node("If", {positive}, {picked}, "pick");
    n_if.attributes.emplace("then_branch", std::make_shared<const Graph>(std::move(then_b)));
    n_if.attributes.emplace("else_branch", std::make_shared<const Graph>(std::move(else_b)));
    pass_captures(body, body.nodes().back(), {"row"});
    body.outputs() = {node(body, "Identity", {c}, "c_out"), picked};
    const auto outs = multi(g, "Loop", {rows, graph::no_value}, {"picked_rows"});
    g.nodes().back().attributes.emplace("body", std::make_shared<const Graph>(std::move(body)));
    g.nodes().back().name = "per_row";
    pass_captures(g, g.nodes().back(), {"x"});
    g.outputs() = outs;
    Session session(device(), g, {.fp32 = true});
    const TensorData tx = floats({3, 4}, {1, -2, 3, 0, -1, -2, -3, -4, 0, 0, 0.5f, -7});
    const auto out = session.run(std::vector<TensorData>{tx});
    ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(values(out[0]), (std::vector<float>{2, -4, 6, 0, 1, 2, 3, 4, 0, 0, 1, -14}));
    // The same session on other data takes the other branches: the select runs on the device.
    const TensorData t2 = floats({3, 4}, {-1, -1, -1, -1, 1, 1, 1, 1, -5, 0, 0, 0});
    EXPECT_EQ(values(session.run(std::vector<TensorData>{t2})[0]),
              (std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2, 5, 0, 0, 0}));
}
