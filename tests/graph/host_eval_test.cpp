// The host evaluator, constant folding and the fusion passes on hostile graphs, without a GPU:
// checked shape arithmetic (issue 14, item 9: huge ConstantOfShape, Range, Tile, Expand, Concat
// sizes are errors naming the file and the node, not overflows or allocations of any size),
// wrapping integer arithmetic, and the inputs the fuzzers (tests/fuzz) found crashing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "vkml/error.hpp"
#include "vkml/graph/graph.hpp"
#include "graph/passes.hpp"

using namespace vkml;
using namespace vkml::graph;

namespace {

constexpr int64_t i64_max = std::numeric_limits<int64_t>::max();
constexpr int64_t i64_min = std::numeric_limits<int64_t>::min();

TensorData ints(std::vector<int64_t> v) {
    return TensorData::from_int64s({static_cast<int64_t>(v.size())}, v);
}
TensorData scalar_int(int64_t v) {
    return TensorData::from_int64s({}, std::vector<int64_t>{v});
}

// A graph "huge.onnx" with one node `op` named "the_node" over constant inputs; its output is
// the graph's output.
struct OneNode {
    Graph g;
    explicit OneNode(const std::string& op, const std::vector<TensorData>& inputs,
                     std::vector<std::pair<std::string, Attribute>> attrs = {}) {
        g.name = "huge";
        g.source = "huge.onnx";
        g.format = "test";
        g.opsets.push_back({"", 13});
        std::vector<ValueId> in;
        for (size_t i = 0; i < inputs.size(); ++i)
            in.push_back(g.add_constant("in" + std::to_string(i), inputs[i]));
        const ValueId y = g.add_value("y");
        Node& n = g.add_node(op, in, {y}, "the_node");
        for (auto& [k, a] : attrs) n.attributes.insert_or_assign(k, std::move(a));
        g.outputs().push_back(y);
    }
    // fold_constants' error, or "" when it folds.
    std::string fold_error(int64_t max_elements = host_max_elements) {
        try {
            fold_constants(g, max_elements);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    }
    const TensorData& result() const { return *g.value(g.outputs()[0]).data; }
};

// An error naming the model file and the node, and saying `what`.
void expect_named(const std::string& error, const std::string& what) {
    EXPECT_NE(error.find("'huge.onnx'"), std::string::npos) << error;
    EXPECT_NE(error.find("node 'the_node'"), std::string::npos) << error;
    EXPECT_NE(error.find(what), std::string::npos) << error;
}

} // namespace

TEST(HostEval, HugeShapesAreErrorsNamingTheFileAndNode) {
    // ConstantOfShape of 2^62 elements (and of a shape whose product overflows 64 bits).
    expect_named(OneNode("ConstantOfShape", {ints({int64_t{1} << 31, int64_t{1} << 31})}).fold_error(),
                 "more than the 134217728 vkml computes on the host");
    expect_named(OneNode("ConstantOfShape", {ints({int64_t{1} << 40, int64_t{1} << 40})}).fold_error(),
                 "more elements than 64 bits count");
    expect_named(OneNode("ConstantOfShape", {ints({-3, 2})}).fold_error(), "negative dimension");
    // Range from INT64_MIN to INT64_MAX: the count overflows in int64 arithmetic.
    expect_named(OneNode("Range", {scalar_int(i64_min), scalar_int(i64_max), scalar_int(1)}).fold_error(),
                 "elements");
    expect_named(
        OneNode("Range", {TensorData::scalar(0.f), TensorData::scalar(1e30f), TensorData::scalar(1e-30f)})
            .fold_error(),
        "elements");
    // Tile by 2^62, and by repeats whose product with the size overflows.
    expect_named(OneNode("Tile", {ints({1, 2}), ints({int64_t{1} << 61})}).fold_error(),
                 "vkml computes on the host");
    expect_named(OneNode("Tile", {ints({1, 2}), ints({i64_max})}).fold_error(), "overflow");
    expect_named(OneNode("Tile", {ints({1, 2}), ints({-1})}).fold_error(), "negative");
    // Expand to 2^31 x 2^31.
    expect_named(OneNode("Expand", {ints({1}), ints({int64_t{1} << 31, int64_t{1} << 31})}).fold_error(),
                 "vkml computes on the host");
    // Concat whose axis sizes add up past 64 bits is caught before (its inputs would be too big):
    // here inputs that do not fit beside the axis, which wrote past the output before.
    OneNode concat("Concat",
                   {TensorData::from_int64s({2, 3}, std::vector<int64_t>(6, 1)),
                    TensorData::from_int64s({2, 5}, std::vector<int64_t>(10, 2))},
                   {{"axis", int64_t{0}}});
    expect_named(concat.fold_error(), "does not fit");
    // The cap is the caller's: the fuzzers fold with a small one.
    expect_named(OneNode("ConstantOfShape", {ints({2048, 2048})}).fold_error(int64_t{1} << 20), "1048576");
    EXPECT_EQ(OneNode("ConstantOfShape", {ints({2048, 2048})}).fold_error(), "");
}

TEST(HostEval, IntegerArithmeticWrapsAsOnnxRuntimeDoes) {
    auto binary = [](const std::string& op, int64_t a, int64_t b) {
        OneNode n(op, {scalar_int(a), scalar_int(b)});
        EXPECT_EQ(n.fold_error(), "") << op;
        return n.result().to_int64s().at(0);
    };
    EXPECT_EQ(binary("Add", i64_max, 1), i64_min);
    EXPECT_EQ(binary("Sub", i64_min, 1), i64_max);
    EXPECT_EQ(binary("Mul", int64_t{1} << 62, 4), 0);
    EXPECT_EQ(binary("Div", i64_min, -1), i64_min);
    EXPECT_EQ(binary("Div", 7, 0), 0);
    EXPECT_EQ(binary("Mod", i64_min, -1), 0);
    EXPECT_EQ(binary("Pow", 10, 40), i64_max); // saturates instead of an undefined float cast
    OneNode neg("Neg", {scalar_int(i64_min)});
    EXPECT_EQ(neg.fold_error(), "");
    EXPECT_EQ(neg.result().to_int64s().at(0), i64_min);
    // Range near the ends of int64 counts without overflow.
    OneNode range("Range", {scalar_int(i64_max - 2), scalar_int(i64_max), scalar_int(1)});
    EXPECT_EQ(range.fold_error(), "");
    EXPECT_EQ(range.result().to_int64s(), (std::vector<int64_t>{i64_max - 2, i64_max - 1}));
    // Casting a huge float to int64 saturates.
    OneNode cast("Cast", {TensorData::scalar(1e30f)}, {{"to", int64_t{7}}});
    EXPECT_EQ(cast.fold_error(), "");
    EXPECT_EQ(cast.result().to_int64s().at(0), 9200000000000000000);
}

// The host-only ops: NonZero (a data-dependent shape), EyeLike, the windows, and ScatterND's
// reductions, against values worked out by hand (double precision on the host).
TEST(HostEval, HostOnlyOps) {
    OneNode nz("NonZero", {TensorData::from_int64s({2, 3}, std::vector<int64_t>{0, 4, 0, -1, 0, 7})});
    EXPECT_EQ(nz.fold_error(), "");
    EXPECT_EQ(nz.result().dims(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(nz.result().to_int64s(), (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));

    OneNode eye("EyeLike", {TensorData::from_floats({3, 4}, std::vector<float>(12, 5.f))}, {{"k", int64_t{1}}});
    EXPECT_EQ(eye.fold_error(), "");
    EXPECT_EQ(eye.result().dtype(), DType::f32);
    EXPECT_EQ(eye.result().to_floats(), (std::vector<float>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));

    const double pi = 3.14159265358979323846;
    for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
        for (int64_t periodic : {0, 1}) {
            OneNode w(op, {scalar_int(5)}, {{"periodic", periodic}});
            EXPECT_EQ(w.fold_error(), "") << op;
            const auto v = w.result().to_floats();
            ASSERT_EQ(v.size(), 5u) << op;
            const double n = periodic ? 5 : 4;
            for (size_t e = 0; e < 5; ++e) {
                const double a = 2 * pi * double(e) / n;
                const double want = std::string(op) == "HannWindow" ? 0.5 - 0.5 * std::cos(a)
                                    : std::string(op) == "HammingWindow"
                                        ? 0.54347826086956519 - 0.45652173913043476 * std::cos(a)
                                        : 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
                EXPECT_NEAR(v[e], want, 1e-6) << op << " periodic " << periodic << " element " << e;
            }
        }

    // MelWeightMatrix: 3 mel bins over 0-4000 Hz, dft_length 16 at 8000 Hz. The 5 points evenly
    // spaced in mel (2146.06 / 5 apart: 0, 324.5, 799.2, 1494, 2510.6 Hz) fall in bins
    // floor(17 f / 8000) = 0, 0, 1, 3, 5; each mel bin is the triangle over three of them.
    OneNode mel("MelWeightMatrix", {scalar_int(3), scalar_int(16), scalar_int(8000), TensorData::scalar(0.f),
                                    TensorData::scalar(4000.f)});
    EXPECT_EQ(mel.fold_error(), "");
    EXPECT_EQ(mel.result().dims(), (std::vector<int64_t>{9, 3}));
    std::vector<float> want(27, 0.f);
    for (auto [bin, m, v] : std::vector<std::tuple<int, int, float>>{
             {0, 0, 1.f}, {1, 1, 1.f}, {2, 1, 0.5f}, {2, 2, 0.5f}, {3, 2, 1.f}, {4, 2, 0.5f}})
        want[static_cast<size_t>(bin * 3 + m)] = v;
    EXPECT_EQ(mel.result().to_floats(), want);
    // An upper edge that maps past the last bin (dft_length / 2) is an error, not a write past the end.
    OneNode past("MelWeightMatrix", {scalar_int(2), scalar_int(4), scalar_int(8000), TensorData::scalar(0.f),
                                     TensorData::scalar(100000.f)});
    EXPECT_NE(past.fold_error().find("past the last spectrogram bin"), std::string::npos) << past.fold_error();

    // TfIdfVectorizer, ONNX's example row: pool 1-grams {2, 3, 5, 4}, 2-grams {5 6, 7 8, 6 7}.
    const std::vector<int64_t> row = {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8};
    auto tfidf = [&](int64_t min_n, int64_t max_n, int64_t skip, const std::string& mode, std::vector<float> weights = {}) {
        std::vector<std::pair<std::string, graph::Attribute>> a = {
            {"min_gram_length", min_n}, {"max_gram_length", max_n}, {"max_skip_count", skip}, {"mode", mode},
            {"pool_int64s", std::vector<int64_t>{2, 3, 5, 4, 5, 6, 7, 8, 6, 7}},
            {"ngram_counts", std::vector<int64_t>{0, 4}},
            {"ngram_indexes", std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}}};
        if (!weights.empty()) a.emplace_back("weights", weights);
        OneNode t("TfIdfVectorizer", {TensorData::from_int64s({2, 6}, row)}, a);
        EXPECT_EQ(t.fold_error(), "");
        return t.result().to_floats();
    };
    // Bigrams, no skip: row 0 (1 1 3 3 3 7) has none of the pool's; row 1 (8 6 7 5 6 8) has 6 7 and 5 6.
    EXPECT_EQ(tfidf(2, 2, 0, "TF"), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, /**/ 0, 0, 0, 0, 1, 0, 1}));
    // 1- and 2-grams with skips up to 5: 3 three times; in row 1 the 1-gram 5, 5 6 (adjacent), 6 7
    // (adjacent) and 7 8 (7 _ _ 8, distance 3); 5 6 once (adjacent; no other 5 before a 6).
    EXPECT_EQ(tfidf(1, 2, 5, "TF"), (std::vector<float>{0, 3, 0, 0, 0, 0, 0, /**/ 0, 0, 1, 0, 1, 1, 1}));
    // IDF: the weight where the count is non-zero; TFIDF: count x weight.
    const std::vector<float> w = {0.5f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f};
    EXPECT_EQ(tfidf(1, 2, 5, "IDF", w), (std::vector<float>{0, 2, 0, 0, 0, 0, 0, /**/ 0, 0, 3, 0, 5, 6, 7}));
    EXPECT_EQ(tfidf(1, 2, 5, "TFIDF", w), (std::vector<float>{0, 6, 0, 0, 0, 0, 0, /**/ 0, 0, 3, 0, 5, 6, 7}));
    // A pool that is not whole n-grams is an error, not a read past its end.
    OneNode bad("TfIdfVectorizer", {TensorData::from_int64s({3}, std::vector<int64_t>{1, 2, 3})},
                {{"min_gram_length", int64_t{1}}, {"max_gram_length", int64_t{2}}, {"mode", "TF"},
                 {"pool_int64s", std::vector<int64_t>{1, 2, 3, 4}}, {"ngram_counts", std::vector<int64_t>{0, 1}},
                 {"ngram_indexes", std::vector<int64_t>{0, 1}}});
    EXPECT_NE(bad.fold_error().find("whole 2-grams"), std::string::npos) << bad.fold_error();

    // ScatterND add: the repeated index accumulates both updates.
    OneNode sc("ScatterND",
               {TensorData::from_floats({4}, std::vector<float>{1, 2, 3, 4}),
                TensorData::from_int64s({3, 1}, std::vector<int64_t>{1, 3, 1}),
                TensorData::from_floats({3}, std::vector<float>{10, 20, 30})},
               {{"reduction", "add"}});
    EXPECT_EQ(sc.fold_error(), "");
    EXPECT_EQ(sc.result().to_floats(), (std::vector<float>{1, 42, 3, 24}));
}

TEST(HostEval, MalformedNodesAreErrorsNotOutOfBoundsAccess) {
    // A Transpose perm naming an axis twice read past the input.
    expect_named(OneNode("Transpose", {TensorData::from_int64s({2, 3}, std::vector<int64_t>(6, 0))},
                         {{"perm", std::vector<int64_t>{0, 0}}})
                     .fold_error(),
                 "twice");
    // Slice steps at the ends of int64 overflowed the count; they take one element.
    OneNode slice("Slice", {ints({1, 2, 3, 4}), ints({0}), ints({4}), ints({0}), ints({i64_max})});
    EXPECT_EQ(slice.fold_error(), "");
    EXPECT_EQ(slice.result().to_int64s(), std::vector<int64_t>{1});
    OneNode back("Slice", {ints({1, 2, 3, 4}), ints({-1}), ints({i64_min}), ints({0}), ints({i64_min})});
    EXPECT_EQ(back.fold_error(), "");
    EXPECT_EQ(back.result().to_int64s(), std::vector<int64_t>{4});
    // Where with a float condition and mixed branches read the wrong (empty) arrays.
    OneNode where("Where", {TensorData::from_floats({2}, std::vector<float>{1.f, 0.f}), ints({5, 6}),
                            TensorData::from_floats({2}, std::vector<float>{7.5f, 8.5f})});
    EXPECT_EQ(where.fold_error(), "");
    EXPECT_EQ(where.result().to_int64s(), (std::vector<int64_t>{5, 8}));
    // Range of non-scalars threw std::out_of_range (an "internal error" in the tool).
    expect_named(OneNode("Range", {ints({}), scalar_int(3), scalar_int(1)}).fold_error(), "scalars");
}

TEST(HostEval, FoldConstantsFoldsChainsAndKeepsTheRest) {
    Graph g;
    g.source = "chain.onnx";
    g.opsets.push_back({"", 13});
    const ValueId x = g.add_value("x", DType::f32, Shape({2}));
    g.inputs().push_back(x);
    const ValueId c = g.add_constant("c", ints({2, 3}));
    const ValueId s = g.add_value("s"), f = g.add_value("f"), y = g.add_value("y");
    g.add_node("ConstantOfShape", {c}, {s}, "cos");
    g.add_node("ReduceSum", {s}, {f}, "sum");
    g.add_node("Add", {x, f}, {y}, "add");
    g.outputs().push_back(y);
    EXPECT_EQ(fold_constants(g), 2u);
    ASSERT_EQ(g.nodes().size(), 1u);
    EXPECT_EQ(g.nodes()[0].op_type, "Add");
    ASSERT_TRUE(g.value(f).is_constant());
    EXPECT_EQ(g.value(f).data->to_floats(), std::vector<float>{0.f});
}

// Fusion on graphs as an importer hands them over, before inference has checked each node: the
// fuzzers found these reaching past a node's inputs.
TEST(Fuse, OddNodesAreLeftAlone) {
    Graph g;
    g.source = "odd.onnx";
    g.opsets.push_back({"", 13});
    const ValueId x = g.add_value("x", DType::f32, Shape({1, 4, 8, 8}));
    g.inputs().push_back(x);
    std::vector<ValueId> stats;
    for (const char* n : {"scale", "beta", "mean", "var"})
        stats.push_back(g.add_constant(n, TensorData::from_floats({4}, std::vector<float>(4, 1.f))));
    // A Conv with only its data input, feeding a BatchNormalization.
    const ValueId c = g.add_value("c", DType::f32), b = g.add_value("b", DType::f32);
    g.add_node("Conv", {x}, {c}, "conv");
    g.add_node("BatchNormalization", {c, stats[0], stats[1], stats[2], stats[3]}, {b}, "bn");
    // An Add and a Relu whose input is omitted ("" in ONNX).
    const ValueId a = g.add_value("a", DType::f32), r = g.add_value("r", DType::f32);
    g.add_node("Add", {b, no_value}, {a}, "add");
    g.add_node("Relu", {no_value}, {r}, "relu");
    g.outputs() = {a, r};
    EXPECT_NO_THROW(fuse(g));
    EXPECT_EQ(g.nodes().size(), 4u);
}

TEST(Fuse, PadIntoConvDoesNotOverflowThePads) {
    Graph g;
    g.source = "pads.onnx";
    g.opsets.push_back({"", 13});
    const ValueId x = g.add_value("x", DType::f32, Shape({1, 1, 4, 4}));
    g.inputs().push_back(x);
    const ValueId pads = g.add_constant("pads", ints({0, 0, i64_max, 1, 0, 0, 1, 1}));
    const ValueId w = g.add_constant("w", TensorData::from_floats({1, 1, 1, 1}, std::vector<float>{1.f}));
    const ValueId p = g.add_value("p", DType::f32), y = g.add_value("y", DType::f32);
    g.add_node("Pad", {x, pads}, {p}, "pad");
    Node& conv = g.add_node("Conv", {p, w}, {y}, "conv");
    conv.attributes.insert_or_assign("pads", std::vector<int64_t>{1, 1, 1, 1});
    g.outputs().push_back(y);
    EXPECT_EQ(fuse(g).pad_into_conv, 0u); // i64_max + 1 would overflow: left as a Pad
    EXPECT_EQ(g.nodes().size(), 2u);
}

namespace {

// Compress and Unique (data-dependent output shapes: host only), against values worked out by hand
// as numpy's compress and unique give them.
TEST(HostEval, CompressAndUnique) {
    const TensorData x = TensorData::from_floats({3, 2}, std::vector<float>{1, 2, 3, 4, 5, 6});
    const TensorData cond = TensorData(DType::boolean, {3}, std::vector<std::byte>{std::byte{0}, std::byte{1}, std::byte{1}});
    OneNode c0("Compress", {x, cond}, {{"axis", int64_t{0}}});
    EXPECT_EQ(c0.fold_error(), "");
    EXPECT_EQ(c0.result().dims(), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(c0.result().to_floats(), (std::vector<float>{3, 4, 5, 6}));
    OneNode flat("Compress", {x, cond}); // no axis: the flattened input, the condition shorter
    EXPECT_EQ(flat.fold_error(), "");
    EXPECT_EQ(flat.result().to_floats(), (std::vector<float>{2, 3}));
    const TensorData long_cond = TensorData(DType::boolean, {4}, std::vector<std::byte>(4, std::byte{1}));
    OneNode bad("Compress", {x, long_cond}, {{"axis", int64_t{1}}});
    EXPECT_NE(bad.fold_error().find("condition has 4 elements"), std::string::npos);

    // numpy.unique([2, 1, 1, 3, 4, 3], return_index, return_inverse, return_counts).
    const TensorData u = TensorData::from_floats({6}, std::vector<float>{2, 1, 1, 3, 4, 3});
    for (int64_t sorted : {1, 0}) {
        OneNode un("Unique", {u}, {{"sorted", sorted}});
        Node& node = un.g.nodes()[0];
        for (const char* name : {"indices", "inverse", "counts"}) {
            node.outputs.push_back(un.g.add_value(name));
            un.g.outputs().push_back(node.outputs.back());
        }
        EXPECT_EQ(un.fold_error(), "");
        auto out = [&](size_t k) { return *un.g.value(un.g.outputs()[k]).data; };
        if (sorted) {
            EXPECT_EQ(out(0).to_floats(), (std::vector<float>{1, 2, 3, 4}));
            EXPECT_EQ(out(1).to_int64s(), (std::vector<int64_t>{1, 0, 3, 4}));
            EXPECT_EQ(out(2).to_int64s(), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
            EXPECT_EQ(out(3).to_int64s(), (std::vector<int64_t>{2, 1, 2, 1}));
        } else {
            EXPECT_EQ(out(0).to_floats(), (std::vector<float>{2, 1, 3, 4}));
            EXPECT_EQ(out(1).to_int64s(), (std::vector<int64_t>{0, 1, 3, 4}));
            EXPECT_EQ(out(2).to_int64s(), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
            EXPECT_EQ(out(3).to_int64s(), (std::vector<int64_t>{1, 2, 2, 1}));
        }
    }
    // Rows of a matrix (axis 0), sorted lexicographically.
    const TensorData m = TensorData::from_int64s({4, 2}, std::vector<int64_t>{1, 0, 0, 5, 1, 0, 0, 2});
    OneNode rows("Unique", {m}, {{"axis", int64_t{0}}});
    EXPECT_EQ(rows.fold_error(), "");
    EXPECT_EQ(rows.result().dims(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(rows.result().to_int64s(), (std::vector<int64_t>{0, 2, 0, 5, 1, 0}));
}

} // namespace
