// graph::fuse_attention: attention written as PyTorch's exporter writes it (MatMul with a Transpose
// of K or K^T itself, the scale as Mul or Div on the scores or sqrt-scale on Q and K, an additive
// mask, a Where with a boolean mask, Softmax on the last axis, MatMul with V) becomes one
// FusedAttention step whose output matches the unfused session's; and the graphs that must stay
// unfused (another axis, an intermediate read elsewhere, a scale that is no constant, nodes of
// different precisions) do.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "session/session_util.hpp"
#include "graph/passes.hpp"

using namespace vkml;
using namespace vkml::test;
using graph::Node;

namespace {

enum class KForm { Transpose, Given, SqrtScaled };
enum class Scale { None, Mul, MulLeft, Div };
enum class Mask { None, AddInput, AddConstant, WhereKeep, WhereDrop, SdpaBool, WhereThenAdd };

struct Pattern {
    std::vector<int64_t> batch = {2, 3};
    int64_t sq = 7, sk = 11, d = 8, dv = 5;
    KForm k = KForm::Transpose;
    Scale scale = Scale::Mul;
    Mask mask = Mask::None;
    int64_t axis = -1;
};

std::vector<int64_t> dims(std::vector<int64_t> b, int64_t r, int64_t c) {
    b.push_back(r);
    b.push_back(c);
    return b;
}

std::vector<int64_t> swap_last(size_t rank) {
    std::vector<int64_t> perm;
    for (size_t i = 0; i < rank; ++i) perm.push_back(int64_t(i));
    std::swap(perm[rank - 1], perm[rank - 2]);
    return perm;
}

// The unfused pattern on inputs q, k (or kt), v [, mask / cond]; output "y". Returns the scores
// value (the first MatMul's output) for tests that read it elsewhere.
ValueId build(Graph& g, const Pattern& p) {
    const size_t rank = p.batch.size() + 2;
    const ValueId q = input(g, "q", dims(p.batch, p.sq, p.d));
    const ValueId k = p.k == KForm::Given ? input(g, "kt", dims(p.batch, p.d, p.sk))
                                          : input(g, "k", dims(p.batch, p.sk, p.d));
    const ValueId v = input(g, "v", dims(p.batch, p.sk, p.dv));
    const double scale = 1 / std::sqrt(double(p.d));
    ValueId qq = q, kt = k;
    if (p.k == KForm::Transpose || p.k == KForm::SqrtScaled)
        kt = node(g, "Transpose", {k}, "kt", {{"perm", swap_last(rank)}});
    if (p.k == KForm::SqrtScaled) {
        const ValueId r = g.add_constant("sqrt_scale", TensorData::scalar(float(std::sqrt(scale))));
        qq = node(g, "Mul", {q, r}, "q_scaled");
        kt = node(g, "Mul", {kt, r}, "kt_scaled");
    }
    const ValueId scores = node(g, "MatMul", {qq, kt}, "scores");
    ValueId s = scores;
    switch (p.scale) {
    case Scale::None:
        break;
    case Scale::Mul:
        s = node(g, "Mul", {s, g.add_constant("scale", TensorData::scalar(float(scale)))}, "scaled");
        break;
    case Scale::MulLeft:
        s = node(g, "Mul",
                 {g.add_constant("scale", TensorData::from_floats({1}, std::vector<float>{float(scale)})), s},
                 "scaled");
        break;
    case Scale::Div:
        s = node(g, "Div", {s, g.add_constant("root_d", TensorData::scalar(float(std::sqrt(double(p.d)))))},
                 "scaled");
        break;
    }
    const float minus_inf = -std::numeric_limits<float>::infinity();
    auto cond_input = [&](std::vector<int64_t> shape) {
        return input(g, "cond", std::move(shape), DType::boolean);
    };
    switch (p.mask) {
    case Mask::None:
        break;
    case Mask::AddInput:
        s = node(g, "Add", {s, input(g, "mask", {p.batch[0], 1, p.sq, p.sk})}, "masked");
        break;
    case Mask::AddConstant:
        s = node(g, "Add", {g.add_constant("mask_c", rand_tensor({p.sq, p.sk}, 77)), s}, "masked");
        break;
    case Mask::WhereKeep:
        s = node(g, "Where",
                 {cond_input({p.sq, p.sk}), s, g.add_constant("fill", TensorData::scalar(minus_inf))},
                 "masked");
        break;
    case Mask::WhereDrop:
        s = node(g, "Where",
                 {cond_input({p.batch[0], 1, 1, p.sk}), g.add_constant("fill", TensorData::scalar(-1e4f)), s},
                 "masked");
        break;
    case Mask::SdpaBool: { // scaled_dot_product_attention's boolean mask: Where(m, 0, -inf) added
        const ValueId add = node(g, "Where",
                                 {cond_input({p.sq, p.sk}), g.add_constant("zero", TensorData::scalar(0.f)),
                                  g.add_constant("fill", TensorData::scalar(minus_inf))},
                                 "bool_mask");
        s = node(g, "Add", {s, add}, "masked");
        break;
    }
    case Mask::WhereThenAdd:
        s = node(g, "Where", {cond_input({p.sq, p.sk}), s, g.add_constant("fill", TensorData::scalar(-3.f))},
                 "selected");
        s = node(g, "Add", {s, input(g, "mask", {p.sk})}, "masked");
        break;
    }
    const ValueId pr = node(g, "Softmax", {s}, "probs", {{"axis", p.axis}});
    g.outputs().push_back(node(g, "MatMul", {pr, v}, "y"));
    return scores;
}

// Random inputs: floats, and booleans with every row keeping at least one score.
std::vector<TensorData> inputs_for(const Graph& g, uint32_t seed) {
    std::vector<TensorData> in;
    for (ValueId v : g.inputs()) {
        const auto sizes = *g.value(v).shape->sizes();
        if (g.value(v).dtype == DType::boolean) {
            std::mt19937 rng(seed++);
            std::vector<int64_t> bits(
                size_t(std::max<int64_t>(1, graph::Shape(sizes).elements().value_or(1))));
            for (size_t i = 0; i < bits.size(); ++i) bits[i] = i % 5 == 0 ? 1 : int64_t(rng() & 1);
            in.push_back(TensorData::from_ints(DType::boolean, sizes, bits));
        } else {
            in.push_back(rand_tensor(sizes, seed++, -2.f, 2.f));
        }
    }
    return in;
}

class AttentionFusionTest : public GpuTest {
protected:
    size_t count(const Session& s, const std::string& op) {
        size_t n = 0;
        for (const StepInfo& st : s.steps()) n += st.op_type == op;
        return n;
    }
    // Fused and unfused sessions on the same inputs: the fused one has one FusedAttention step
    // and no Softmax; the outputs agree.
    void expect_fused(const Graph& g, const std::string& what, bool fp32 = true) {
        const auto in = inputs_for(g, 5);
        Session fused(dev(), g, {.fp32 = fp32});
        Session plain(dev(), g, {.fp32 = fp32, .fuse = false});
        EXPECT_EQ(count(fused, "FusedAttention"), 1u) << what << "\n" << fused.describe();
        EXPECT_EQ(count(fused, "Softmax"), 0u) << what;
        EXPECT_EQ(count(fused, "MatMul"), 0u) << what;
        EXPECT_EQ(count(plain, "FusedAttention"), 0u) << what;
        const auto a = fused.run(in), b = plain.run(in);
        ASSERT_EQ(a.size(), 1u);
        ASSERT_EQ(a[0].dims(), b[0].dims()) << what;
        EXPECT_LE(max_rel_diff(a[0], b[0]), fp32 ? 2e-6 : 4e-3) << what;
    }
    void expect_unfused(const Graph& g, const std::string& what) {
        Session s(dev(), g, {.fp32 = true});
        EXPECT_EQ(count(s, "FusedAttention"), 0u) << what << "\n" << s.describe();
        // And it still runs.
        const auto out = s.run(inputs_for(g, 9));
        EXPECT_EQ(out.size(), g.outputs().size());
    }
};

TEST_F(AttentionFusionTest, ExportedForms) {
    struct Form {
        const char* name;
        Pattern p;
    };
    const Form forms[] = {
        {"vit (Transpose, Mul)", {}},
        {"scale on the left", {.scale = Scale::MulLeft}},
        {"Div by sqrt(d)", {.scale = Scale::Div}},
        {"no scale", {.scale = Scale::None}},
        {"K^T given", {.k = KForm::Given}},
        {"sqrt-scale on Q and K (sdpa)", {.k = KForm::SqrtScaled, .scale = Scale::None}},
        {"additive mask input", {.mask = Mask::AddInput}},
        {"additive constant mask, left", {.mask = Mask::AddConstant}},
        {"Where keep, -inf", {.mask = Mask::WhereKeep}},
        {"Where drop", {.mask = Mask::WhereDrop}},
        {"sdpa bool mask", {.k = KForm::SqrtScaled, .scale = Scale::None, .mask = Mask::SdpaBool}},
        {"Where then Add", {.scale = Scale::Div, .mask = Mask::WhereThenAdd}},
        {"cross attention, odd", {.batch = {3}, .sq = 5, .sk = 19, .d = 13, .dv = 9}},
        {"axis 3 of rank 4", {.axis = 3}},
        {"rank 2", {.batch = {}, .sq = 9, .sk = 4, .d = 6, .dv = 3, .mask = Mask::None}},
    };
    for (const Form& f : forms) {
        if ((f.p.mask == Mask::WhereKeep || f.p.mask == Mask::WhereDrop || f.p.mask == Mask::WhereThenAdd) &&
            !dev().caps().storage8)
            continue;
        Graph g = new_graph("attention");
        build(g, f.p);
        expect_fused(g, f.name);
        if (dev().caps().storage16) expect_fused(g, std::string(f.name) + " (f16)", false);
    }
}

TEST_F(AttentionFusionTest, PassReadsScaleAndTranspose) {
    Graph g = new_graph("attention");
    build(g, {.k = KForm::SqrtScaled, .scale = Scale::Div, .mask = Mask::AddInput});
    graph::infer_and_fold(g, dev(), [](const Node&) { return gpu::DType::f32; });
    const size_t before = g.nodes().size();
    EXPECT_EQ(graph::fuse_attention(g, dev(), [](const Node&) { return gpu::DType::f32; }), 1u);
    ASSERT_EQ(g.nodes().size(), 1u) << graph::dump(g) << " from " << before;
    const Node& n = g.nodes()[0];
    EXPECT_EQ(n.op_type, "FusedAttention");
    EXPECT_EQ(n.domain, "vkml");
    EXPECT_EQ(n.name, "y");
    // sqrt(1/sqrt(8)) twice, then / sqrt(8).
    EXPECT_NEAR(n.get_float("scale", 0), 1.0 / 8.0, 1e-6);
    EXPECT_EQ(n.get_int("k_transposed", -1), 0); // K read as it is: the Transpose is gone
    EXPECT_EQ(g.value(n.inputs[0]).name, "q");
    EXPECT_EQ(g.value(n.inputs[1]).name, "k");
    EXPECT_EQ(g.value(n.inputs[2]).name, "v");
    EXPECT_EQ(n.inputs[3], graph::no_value);
    EXPECT_EQ(g.value(n.inputs[4]).name, "mask");
    EXPECT_EQ(n.get_strings("vkml_fused").size(), 7u); // Transpose, 2 Mul, MatMul, Div, Add, Softmax

    Graph h = new_graph("attention");
    build(h, {.k = KForm::Given});
    graph::infer_and_fold(h, dev(), [](const Node&) { return gpu::DType::f32; });
    EXPECT_EQ(graph::fuse_attention(h, dev(), [](const Node&) { return gpu::DType::f32; }), 1u);
    EXPECT_EQ(h.nodes()[0].get_int("k_transposed", -1), 1);
    EXPECT_EQ(h.value(h.nodes()[0].inputs[1]).name, "kt");
}

TEST_F(AttentionFusionTest, TransposeReadElsewhereStays) {
    // K^T is also a graph output: the Transpose stays for it, the fused node reads K.
    Graph g = new_graph("attention");
    build(g, {});
    g.outputs().push_back(g.id("kt"));
    Session s(dev(), g, {.fp32 = true});
    EXPECT_EQ(count(s, "FusedAttention"), 1u);
    EXPECT_EQ(count(s, "Transpose"), 1u);
    Session plain(dev(), g, {.fp32 = true, .fuse = false});
    const auto in = inputs_for(g, 3);
    const auto a = s.run(in), b = plain.run(in);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(max_rel_diff(a[i], b[i]), 2e-6);
}

TEST_F(AttentionFusionTest, MustNotFuse) {
    {
        Graph g = new_graph("attention");
        build(g, {.axis = 2});
        expect_unfused(g, "Softmax over the query axis");
    }
    {
        Graph g = new_graph("attention");
        build(g, {.batch = {2, 3}, .sq = 7, .sk = 7, .axis = -2});
        expect_unfused(g, "Softmax over axis -2");
    }
    {
        Graph g = new_graph("attention");
        const ValueId scores = build(g, {});
        g.outputs().push_back(scores);
        expect_unfused(g, "scores read elsewhere");
    }
    {
        Graph g = new_graph("attention");
        build(g, {});
        g.outputs().push_back(g.id("probs"));
        expect_unfused(g, "probabilities read elsewhere");
    }
    {
        Graph g = new_graph("attention");
        build(g, {.mask = Mask::AddInput});
        g.outputs().push_back(g.id("scaled"));
        expect_unfused(g, "scaled scores read elsewhere");
    }
    {
        // The scale is an input, not a constant.
        Graph g = new_graph("attention");
        const ValueId q = input(g, "q", {2, 5, 4}), k = input(g, "k", {2, 6, 4}),
                      v = input(g, "v", {2, 6, 3});
        const ValueId sc = input(g, "scale", {});
        const ValueId s = node(
            g, "Mul",
            {node(g, "MatMul", {q, node(g, "Transpose", {k}, "kt", {{"perm", swap_last(3)}})}, "scores"), sc},
            "scaled");
        g.outputs().push_back(node(g, "MatMul", {node(g, "Softmax", {s}, "probs"), v}, "y"));
        expect_unfused(g, "scale computed");
    }
    {
        // A mask that makes the scores larger (broadcasts them up).
        Graph g = new_graph("attention");
        const ValueId q = input(g, "q", {1, 5, 4}), k = input(g, "k", {1, 6, 4}),
                      v = input(g, "v", {1, 6, 3});
        const ValueId s =
            node(g, "Add",
                 {node(g, "MatMul", {q, node(g, "Transpose", {k}, "kt", {{"perm", swap_last(3)}})}, "scores"),
                  input(g, "mask", {3, 5, 6})},
                 "masked");
        g.outputs().push_back(node(g, "MatMul", {node(g, "Softmax", {s}, "probs"), v}, "y"));
        expect_unfused(g, "mask broadcasting the scores");
    }
    {
        // A transpose of other axes than the last two.
        Graph g = new_graph("attention");
        const ValueId q = input(g, "q", {4, 5, 4}), k = input(g, "k", {4, 4, 5}),
                      v = input(g, "v", {4, 5, 3});
        const ValueId kt = node(g, "Transpose", {k}, "kt", {{"perm", std::vector<int64_t>{1, 0, 2}}});
        g.outputs().push_back(
            node(g, "MatMul", {node(g, "Softmax", {node(g, "MatMul", {q, kt}, "scores")}, "probs"), v}, "y"));
        Session s(dev(), g, {.fp32 = true});
        // Fused, with the Transpose kept and its output read as K^T.
        EXPECT_EQ(count(s, "FusedAttention"), 1u);
        EXPECT_EQ(count(s, "Transpose"), 1u);
        Session plain(dev(), g, {.fp32 = true, .fuse = false});
        const auto in = inputs_for(g, 4);
        EXPECT_LE(max_rel_diff(s.run(in)[0], plain.run(in)[0]), 2e-6);
    }
    if (dev().caps().storage16) {
        // Parts in different precisions (the Softmax kept in f32 in an f16 session).
        Graph g = new_graph("attention");
        build(g, {});
        Session s(dev(), g, {.precision = {{"Softmax", Precision::F32}}});
        EXPECT_EQ(count(s, "FusedAttention"), 0u);
        // All of them in f32: fused, and in f32.
        Session t(dev(), g,
                  {.precision = {{"Softmax", Precision::F32},
                                 {"MatMul", Precision::F32},
                                 {"Mul", Precision::F32},
                                 {"Transpose", Precision::F32}}});
        EXPECT_EQ(count(t, "FusedAttention"), 1u) << t.describe();
        bool f32 = false;
        for (const StepInfo& st : t.steps())
            if (st.op_type == "FusedAttention") f32 = st.detail.find("f16") == std::string::npos;
        EXPECT_TRUE(f32) << t.describe();
    }
    {
        // VKML_DISABLE_FUSED_ATTENTION=1 keeps it unfused.
        Graph g = new_graph("attention");
        build(g, {});
        setenv("VKML_DISABLE_FUSED_ATTENTION", "1", 1);
        Session s(dev(), g, {.fp32 = true});
        unsetenv("VKML_DISABLE_FUSED_ATTENTION");
        EXPECT_EQ(count(s, "FusedAttention"), 0u);
        EXPECT_EQ(count(s, "Softmax"), 1u);
    }
}

} // namespace
