// Each fusion on a small graph: the graph before and after fuse() (op counts, attributes), and the
// session with fusion on and off computing the same numbers in f32. Plus the cases that must not
// fuse.
#include <gtest/gtest.h>

#include "session/session_util.hpp"
#include "graph/passes.hpp"
#include "vkml/import/model.hpp"

using namespace vkml;
using namespace vkml::test;
using graph::Node;

namespace {

class FusionTest : public GpuTest {
protected:
    // The graph with static shapes and folded constants, ready for fuse().
    Graph inferred(Graph g) {
        graph::infer_and_fold(g, dev(), [](const Node&) { return gpu::DType::f32; });
        return g;
    }
    // Runs `g` with and without fusion in f32 on the same random inputs; returns the largest
    // relative difference over the outputs.
    double fused_vs_unfused(const Graph& g, uint32_t seed = 1) {
        std::vector<TensorData> in;
        for (ValueId v : g.inputs()) {
            const auto sizes = *g.value(v).shape->sizes();
            in.push_back(rand_tensor(sizes, seed++));
        }
        Session fused(dev(), g, {.fp32 = true});
        Session plain(dev(), g, {.fp32 = true, .fuse = false});
        const auto a = fused.run(in), b = plain.run(in);
        double worst = 0;
        for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, max_rel_diff(a[i], b[i]));
        return worst;
    }
    const Node& only(const Graph& g, const std::string& op) {
        const Node* found = nullptr;
        for (const Node& n : g.nodes())
            if (n.op_type == op) {
                EXPECT_EQ(found, nullptr) << "two " << op << " nodes";
                found = &n;
            }
        if (!found) throw std::runtime_error("no " + op + " node in\n" + graph::dump(g));
        return *found;
    }
};

ValueId conv(Graph& g, ValueId x, int64_t cin, int64_t cout, const std::string& name, uint32_t seed,
             std::vector<int64_t> pads = {1, 1, 1, 1}, bool bias = true) {
    const ValueId w = g.add_constant(name + "/w", rand_tensor({cout, cin, 3, 3}, seed));
    std::vector<ValueId> in = {x, w};
    if (bias) in.push_back(g.add_constant(name + "/b", rand_tensor({cout}, seed + 1)));
    return node(g, "Conv", in, name, {{"pads", pads}, {"kernel_shape", std::vector<int64_t>{3, 3}}});
}

// A node of `op` (Conv, Gemm, InstanceNormalization or Add) named "p" on fresh inputs of `g`, its
// constants drawn from `seed`.
ValueId producer_node(Graph& g, const std::string& op, uint32_t seed) {
    if (op == "Conv") return conv(g, input(g, "x", {1, 3, 7, 5}), 3, 5, "p", seed);
    if (op == "Gemm")
        return node(g, "Gemm",
                    {input(g, "x", {3, 5}), g.add_constant("b", rand_tensor({4, 5}, seed)),
                     g.add_constant("c", rand_tensor({4}, seed + 1))},
                    "p", {{"transB", int64_t{1}}});
    if (op == "InstanceNormalization")
        return node(g, "InstanceNormalization",
                    {input(g, "x", {1, 3, 4, 5}), g.add_constant("s", rand_tensor({3}, seed)),
                     g.add_constant("b", rand_tensor({3}, seed + 1))},
                    "p");
    return node(g, "Add", {input(g, "x", {2, 3}), input(g, "z", {2, 3})}, "p");
}

} // namespace

TEST_F(FusionTest, ConvBatchNormFoldsIntoWeights) {
    for (bool bias : {true, false}) {
        Graph g = new_graph("conv_bn");
        const ValueId x = input(g, "x", {1, 3, 7, 6});
        const ValueId c = conv(g, x, 3, 4, "conv", 3, {1, 1, 1, 1}, bias);
        const ValueId bn =
            node(g, "BatchNormalization",
                 {c, g.add_constant("s", rand_tensor({4}, 4, 0.5f, 2.f)),
                  g.add_constant("bb", rand_tensor({4}, 5)), g.add_constant("m", rand_tensor({4}, 6)),
                  g.add_constant("v", rand_tensor({4}, 7, 0.1f, 2.f))},
                 "bn", {{"epsilon", 1e-3f}});
        g.outputs().push_back(bn);
        Graph f = inferred(g);
        const auto report = graph::fuse(f);
        EXPECT_EQ(report.conv_batchnorm, 1u);
        EXPECT_EQ(graph::op_histogram(f), (std::map<std::string, int>{{"Conv", 1}})) << graph::dump(f);
        const Node& n = only(f, "Conv");
        EXPECT_EQ(n.inputs.size(), 3u); // a bias appears when the Conv had none
        EXPECT_EQ(f.value(n.outputs[0]).name, "bn");
        EXPECT_EQ(n.get_strings("vkml_fused"), std::vector<std::string>{"bn"});
        EXPECT_LE(fused_vs_unfused(g), 1e-5) << (bias ? "with bias" : "without bias");
    }
}

TEST_F(FusionTest, ActivationsFuseIntoConvGemmAndNorms) {
    struct Case {
        std::string op;
        std::vector<std::pair<std::string, graph::Attribute>> attrs;
        std::string kind;
        float alpha, beta;
    };
    const Case cases[] = {{"Relu", {}, "Relu", 0, 0},
                          {"LeakyRelu", {{"alpha", 0.2f}}, "LeakyRelu", 0.2f, 0},
                          {"Sigmoid", {}, "Sigmoid", 0, 0},
                          {"HardSwish", {}, "HardSwish", 0, 0},
                          {"HardSigmoid", {}, "HardSigmoid", 0.2f, 0.5f},
                          {"Tanh", {}, "Tanh", 0, 0},
                          {"Elu", {{"alpha", 0.7f}}, "Elu", 0.7f, 0},
                          {"Clip", {}, "Clip", 0.f, 6.f}};
    for (const Case& c : cases) {
        for (const std::string producer : {"Conv", "Gemm", "InstanceNormalization", "Add"}) {
            Graph g = new_graph("act");
            const ValueId y = producer_node(g, producer, 10);
            std::vector<ValueId> act_in = {y};
            if (c.op == "Clip") {
                act_in.push_back(g.add_constant("lo", TensorData::scalar(0.f)));
                act_in.push_back(g.add_constant("hi", TensorData::scalar(6.f)));
            }
            g.outputs().push_back(node(g, c.op, act_in, "act", c.attrs));
            Graph f = inferred(g);
            EXPECT_EQ(graph::fuse(f).activation, 1u) << c.op << " after " << producer;
            EXPECT_EQ(f.nodes().size(), 1u) << graph::dump(f);
            const Node& n = f.nodes()[0];
            EXPECT_EQ(n.op_type, producer);
            EXPECT_EQ(n.get_string("vkml_activation", ""), c.kind);
            EXPECT_FLOAT_EQ(n.get_float("vkml_activation_alpha", -1), c.alpha);
            EXPECT_FLOAT_EQ(n.get_float("vkml_activation_beta", -1), c.beta);
            EXPECT_LE(fused_vs_unfused(g), 1e-5) << c.op << " after " << producer;
        }
    }
}

TEST_F(FusionTest, ResidualAddThenActivation) {
    // x -> Conv -> Add(skip) -> Relu: one Conv with the residual and the Relu.
    Graph g = new_graph("residual");
    const ValueId x = input(g, "x", {1, 3, 6, 5});
    const ValueId skip = input(g, "skip", {1, 4, 6, 5});
    const ValueId c = conv(g, x, 3, 4, "conv", 20);
    const ValueId sum = node(g, "Add", {skip, c}, "add"); // the Conv on either side
    g.outputs().push_back(node(g, "Relu", {sum}, "relu"));
    Graph f = inferred(g);
    const auto r = graph::fuse(f);
    EXPECT_EQ(r.residual, 1u);
    EXPECT_EQ(r.activation, 1u);
    ASSERT_EQ(f.nodes().size(), 1u) << graph::dump(f);
    const Node& n = f.nodes()[0];
    EXPECT_EQ(n.get_int("vkml_residual", 0), 1);
    ASSERT_EQ(n.inputs.size(), 4u);
    EXPECT_EQ(f.value(n.inputs[3]).name, "skip");
    EXPECT_EQ(n.get_string("vkml_activation", ""), "Relu");
    EXPECT_EQ(n.get_strings("vkml_fused"), (std::vector<std::string>{"add", "relu"}));
    EXPECT_LE(fused_vs_unfused(g), 1e-5);
}

TEST_F(FusionTest, SiluFusesIntoItsProducer) {
    // x * Sigmoid(x), as YOLOv8 and EfficientNet export SiLU: the Sigmoid and the Mul become the
    // Conv's (or Gemm's, an InstanceNorm's, an Add's) Silu activation, the Mul's operands in
    // either order.
    for (const std::string producer : {"Conv", "Gemm", "InstanceNormalization", "Add"}) {
        for (bool sigmoid_first : {false, true}) {
            Graph g = new_graph("silu");
            const ValueId y = producer_node(g, producer, 40);
            const ValueId s = node(g, "Sigmoid", {y}, "sig");
            g.outputs().push_back(node(g, "Mul", sigmoid_first ? std::vector<ValueId>{s, y} : std::vector<ValueId>{y, s}, "mul"));
            Graph f = inferred(g);
            EXPECT_EQ(graph::fuse(f).activation, 1u) << producer;
            ASSERT_EQ(f.nodes().size(), 1u) << graph::dump(f);
            const Node& n = f.nodes()[0];
            EXPECT_EQ(n.op_type, producer);
            EXPECT_EQ(n.get_string("vkml_activation", ""), "Silu");
            EXPECT_EQ(n.get_strings("vkml_fused"), (std::vector<std::string>{"sig", "mul"}));
            EXPECT_EQ(f.value(n.outputs[0]).name, "mul");
            EXPECT_LE(fused_vs_unfused(g), 1e-5) << producer;
        }
    }
    // Not SiLU, or x needed elsewhere: nothing fuses, the results stay the same.
    for (int variant = 0; variant < 3; ++variant) {
        Graph g = new_graph("not_silu");
        const ValueId x = input(g, "x", {1, 2, 4, 4});
        const ValueId c = conv(g, x, 2, 2, "conv", 45);
        const ValueId other = conv(g, x, 2, 2, "conv2", 47);
        // 0: Sigmoid of another value; 1: the Conv's output also read by an Add; 2: the Sigmoid
        // also a graph output.
        const ValueId s = node(g, "Sigmoid", {variant == 0 ? other : c}, "sig");
        const ValueId m = node(g, "Mul", {c, s}, "mul");
        g.outputs().push_back(variant == 1 ? node(g, "Add", {m, c}, "add") : m);
        if (variant == 2) g.outputs().push_back(s);
        Graph f = inferred(g);
        graph::fuse(f);
        for (const Node& n : f.nodes()) EXPECT_NE(n.get_string("vkml_activation", ""), "Silu") << variant << graph::dump(f);
        EXPECT_EQ(graph::op_histogram(f).at("Mul"), 1) << variant;
        EXPECT_LE(fused_vs_unfused(g), 1e-5) << variant;
    }
}

TEST_F(FusionTest, ActivationFusesIntoTheTransposeAfterIt) {
    // A Sigmoid whose producer cannot take it (a Split's part, as NanoDet's heads) and whose only
    // reader is a Transpose, directly or through a Reshape (variant 3, as NanoDet): the Transpose
    // applies it. Read elsewhere too, or a graph output, it stays.
    for (int variant = 0; variant < 4; ++variant) {
        Graph g = new_graph("act_transpose");
        const ValueId x = input(g, "x", {1, 6, 5, 3});
        const ValueId a = g.add_value("a"), b = g.add_value("b");
        graph::Node& sp = g.add_node("Split", {x, g.add_constant("parts", ints({4, 2}))}, {a, b}, "split");
        sp.attributes.insert_or_assign("axis", graph::Attribute(int64_t{1}));
        const ValueId s = node(g, "Sigmoid", {a}, "sig");
        const ValueId r =
            variant == 3 ? node(g, "Reshape", {s, g.add_constant("to", ints({1, 4, 15}))}, "r") : s;
        const std::vector<int64_t> perm =
            variant == 3 ? std::vector<int64_t>{0, 2, 1} : std::vector<int64_t>{0, 2, 3, 1};
        g.outputs().push_back(node(g, "Transpose", {r}, "t", {{"perm", perm}}));
        g.outputs().push_back(node(g, "Transpose", {b}, "u", {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}));
        if (variant == 1) g.outputs().push_back(node(g, "Neg", {s}, "n"));
        if (variant == 2) g.outputs().push_back(s);
        Graph f = inferred(g);
        graph::fuse(f);
        const auto hist = graph::op_histogram(f);
        const bool fuses = variant == 0 || variant == 3;
        EXPECT_EQ(hist.count("Sigmoid"), fuses ? 0u : 1u) << variant << graph::dump(f);
        if (fuses) {
            for (const Node& n : f.nodes())
                if (n.op_type == "Transpose" && f.value(n.outputs[0]).name == "t") {
                    EXPECT_EQ(n.get_string("vkml_activation", ""), "Sigmoid");
                    EXPECT_EQ(n.get_strings("vkml_fused"), (std::vector<std::string>{"sig"}));
                }
        }
        EXPECT_LE(fused_vs_unfused(g), 1e-6) << variant;
    }
}

TEST_F(FusionTest, WhatMustNotFuse) {
    {
        // The Conv's output is read twice: the Add cannot take it over.
        Graph g = new_graph("shared");
        const ValueId x = input(g, "x", {1, 2, 4, 4});
        const ValueId c = conv(g, x, 2, 2, "conv", 30);
        const ValueId a = node(g, "Add", {c, x}, "add");
        g.outputs().push_back(node(g, "Mul", {a, c}, "mul"));
        Graph f = inferred(g);
        const auto r = graph::fuse(f);
        EXPECT_EQ(r.residual, 0u);
        EXPECT_EQ(graph::op_histogram(f).at("Add"), 1);
        EXPECT_LE(fused_vs_unfused(g), 1e-5);
    }
    {
        // A broadcast operand ([1,C,1,1] bias-like) is no residual.
        Graph g = new_graph("broadcast");
        const ValueId x = input(g, "x", {1, 2, 4, 4});
        const ValueId c = conv(g, x, 2, 3, "conv", 31);
        g.outputs().push_back(node(g, "Add", {c, g.add_constant("k", rand_tensor({1, 3, 1, 1}, 32))}, "add"));
        Graph f = inferred(g);
        EXPECT_EQ(graph::fuse(f).residual, 0u);
        EXPECT_LE(fused_vs_unfused(g), 1e-5);
    }
    {
        // Conv -> Relu -> Add: the Conv applies its activation after the residual, so only the
        // Relu fuses.
        Graph g = new_graph("order");
        const ValueId x = input(g, "x", {1, 2, 4, 4});
        const ValueId c = conv(g, x, 2, 2, "conv", 33);
        const ValueId r = node(g, "Relu", {c}, "relu");
        g.outputs().push_back(node(g, "Add", {r, x}, "add"));
        Graph f = inferred(g);
        const auto rep = graph::fuse(f);
        EXPECT_EQ(rep.residual, 0u);
        EXPECT_EQ(rep.activation, 1u);
        EXPECT_LE(fused_vs_unfused(g), 1e-5);
    }
    {
        // A graph output in the middle keeps its producer's output.
        Graph g = new_graph("visible");
        const ValueId x = input(g, "x", {1, 2, 4, 4});
        const ValueId c = conv(g, x, 2, 2, "conv", 34);
        g.outputs().push_back(c);
        g.outputs().push_back(node(g, "Relu", {c}, "relu"));
        Graph f = inferred(g);
        EXPECT_EQ(graph::fuse(f).total(), 0u);
        EXPECT_LE(fused_vs_unfused(g), 1e-5);
    }
    {
        // Reflect padding around the Conv's own zero padding is neither, and a pad as large as
        // the axis has nothing to mirror (the Pad op reports it).
        for (auto [conv_pads, pad] : {std::pair{std::vector<int64_t>{1, 1, 1, 1}, int64_t{1}},
                                      std::pair{std::vector<int64_t>{0, 0, 0, 0}, int64_t{5}}}) {
            Graph g = new_graph("reflect");
            const ValueId x = input(g, "x", {1, 2, 5, 5});
            const ValueId p = node(g, "Pad", {x, g.add_constant("pads", ints({0, 0, pad, pad, 0, 0, 1, 1}))}, "pad",
                                   {{"mode", "reflect"}});
            g.outputs().push_back(conv(g, p, 2, 2, "conv", 35, conv_pads));
            Graph f = inferred(g);
            EXPECT_EQ(graph::fuse(f).pad_into_conv, 0u);
            if (pad < 5) {
                EXPECT_LE(fused_vs_unfused(g), 1e-5);
            }
        }
    }
}

TEST_F(FusionTest, PadFoldsIntoConvPads) {
    Graph g = new_graph("pad_conv");
    const ValueId x = input(g, "x", {1, 2, 5, 7});
    // Asymmetric spatial pads [top 1, left 2, bottom 0, right 1] on top of the Conv's own 1s.
    const ValueId p = node(g, "Pad", {x, g.add_constant("pads", ints({0, 0, 1, 2, 0, 0, 0, 1}))}, "pad");
    g.outputs().push_back(conv(g, p, 2, 3, "conv", 40));
    Graph f = inferred(g);
    EXPECT_EQ(graph::fuse(f).pad_into_conv, 1u);
    EXPECT_EQ(graph::op_histogram(f), (std::map<std::string, int>{{"Conv", 1}})) << graph::dump(f);
    EXPECT_EQ(only(f, "Conv").get_ints("pads"), (std::vector<int64_t>{2, 3, 1, 2}));
    EXPECT_EQ(f.value(only(f, "Conv").inputs[0]).name, "x");
    EXPECT_LE(fused_vs_unfused(g), 1e-5);
}

TEST_F(FusionTest, ReflectAndEdgePadsBecomeTheConvsPadding) {
    // The style network's layers: a reflect Pad, then a Conv without padding. The Conv reads the
    // mirrored (or repeated) positions itself.
    for (const char* mode : {"reflect", "edge"}) {
        Graph g = new_graph(std::string("pad_conv_") + mode);
        const ValueId x = input(g, "x", {1, 3, 6, 9});
        const ValueId p = node(g, "Pad", {x, g.add_constant("pads", ints({0, 0, 2, 1, 0, 0, 1, 3}))}, "pad",
                               {{"mode", mode}});
        g.outputs().push_back(conv(g, p, 3, 4, "conv", 41, {0, 0, 0, 0}));
        Graph f = inferred(g);
        EXPECT_EQ(graph::fuse(f).pad_into_conv, 1u) << mode;
        EXPECT_EQ(graph::op_histogram(f), (std::map<std::string, int>{{"Conv", 1}})) << graph::dump(f);
        EXPECT_EQ(only(f, "Conv").get_ints("pads"), (std::vector<int64_t>{2, 1, 1, 3}));
        EXPECT_EQ(only(f, "Conv").get_string("vkml_pad_mode", ""), mode);
        EXPECT_LE(fused_vs_unfused(g), 1e-5) << mode;
    }
}

TEST_F(FusionTest, AnUnknownConvPadModeIsAnError) {
    // vkml_pad_mode is vkml's own attribute (written by the Pad fusion); a model that carries
    // another value gets an error naming the node, not zero padding.
    Graph g = new_graph("pad_mode_wrap");
    const ValueId x = input(g, "x", {1, 3, 6, 9});
    const ValueId w = g.add_constant("w", rand_tensor({4, 3, 3, 3}, 43));
    g.outputs().push_back(node(g, "Conv", {x, w}, "wrapped",
                               {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                {"kernel_shape", std::vector<int64_t>{3, 3}},
                                {"vkml_pad_mode", "wrap"}}));
    try {
        Session s(dev(), g, {.fp32 = true});
        FAIL() << "a Conv with vkml_pad_mode 'wrap' was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("wrapped"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("vkml_pad_mode 'wrap'"), std::string::npos) << e.what();
    }
}

// On a real model: esrgan-slim's Conv+Relu pairs fuse, and the fused session still matches the
// unfused one (the golden-image test checks the result itself).
TEST_F(FusionTest, EsrganSlimFusesItsActivations) {
    const auto model = model_cache() / "esrgan-slim/models/x2/model.json";
    VKML_REQUIRE_FILE(model, "run tools/fetch-models (or set VKML_MODELS)");
    Graph g = import::load_model(model);
    const std::string in = g.value(g.inputs()[0]).name;
    Session s(dev(), g, {.fp32 = true, .input_shapes = {{in, {1, 3, 12, 10}}}});
    const auto h = graph::op_histogram(s.graph());
    EXPECT_EQ(h.count("Relu"), 0u) << graph::dump(s.graph());
    EXPECT_EQ(h.at("Conv"), 12);
    // The caller's graph is unchanged.
    EXPECT_EQ(graph::op_histogram(g).at("Relu"), 4);
}

TEST_F(FusionTest, RepeatedNodesAreComputedOnce) {
    Graph g = new_graph("dedupe");
    const ValueId x = input(g, "x", {1, 3, 5, 4});
    // Two CReLUs of x, built the way the Anime4K importer builds one per reader.
    auto crelu = [&](const std::string& name) {
        const ValueId pos = node(g, "Relu", {x}, name + "/pos");
        const ValueId neg = node(g, "Relu", {node(g, "Neg", {x}, name + "/neg_in")}, name + "/neg");
        return node(g, "Concat", {pos, neg}, name, {{"axis", int64_t{1}}});
    };
    const ValueId a = crelu("a"), b = crelu("b");
    const ValueId lrelu1 = node(g, "LeakyRelu", {x}, "l1", {{"alpha", 0.1f}});
    const ValueId lrelu2 = node(g, "LeakyRelu", {x}, "l2", {{"alpha", 0.2f}}); // other attribute
    g.outputs().push_back(node(g, "Add", {a, b}, "sum"));
    g.outputs().push_back(node(g, "Sub", {lrelu1, lrelu2}, "diff"));
    Graph f = inferred(g);
    graph::FusionOptions only_dedupe{.conv_batchnorm = false, .pad_into_conv = false, .residual = false,
                                     .activation = false, .sibling_convs = false};
    EXPECT_EQ(graph::fuse(f, only_dedupe).dedupe, 4u); // b's Relu, Neg, Relu and Concat
    const auto h = graph::op_histogram(f);
    EXPECT_EQ(h.at("Relu"), 2) << graph::dump(f);
    EXPECT_EQ(h.at("Neg"), 1);
    EXPECT_EQ(h.at("Concat"), 1);
    EXPECT_EQ(h.at("LeakyRelu"), 2);
    EXPECT_LE(fused_vs_unfused(g), 1e-6);

    // A node whose output is a graph output stays, even when an earlier node computes the same.
    Graph g2 = new_graph("dedupe_output");
    const ValueId y = input(g2, "y", {2, 3});
    g2.outputs().push_back(node(g2, "Relu", {y}, "r1"));
    g2.outputs().push_back(node(g2, "Relu", {y}, "r2"));
    Graph f2 = inferred(g2);
    EXPECT_EQ(graph::fuse(f2).dedupe, 0u);
    EXPECT_EQ(graph::op_histogram(f2).at("Relu"), 2);
}

TEST_F(FusionTest, SiblingConvsOfAConcatBecomeOneConv) {
    Graph g = new_graph("heads");
    const ValueId x = input(g, "x", {1, 5, 7, 6});
    // Three heads of 4, 3 and 4 channels (Anime4K's 3 x 4 before the pixel shuffle), one without
    // a bias, concatenated on the channels.
    const ValueId h0 = conv(g, x, 5, 4, "h0", 50), h1 = conv(g, x, 5, 3, "h1", 52, {1, 1, 1, 1}, false),
                  h2 = conv(g, x, 5, 4, "h2", 54);
    const ValueId cat = node(g, "Concat", {h0, h1, h2}, "cat", {{"axis", int64_t{1}}});
    g.outputs().push_back(node(g, "DepthToSpace", {cat}, "shuffle", {{"blocksize", int64_t{1}}}));
    Graph f = inferred(g);
    EXPECT_EQ(graph::fuse(f).sibling_convs, 1u);
    EXPECT_EQ(graph::op_histogram(f), (std::map<std::string, int>{{"Conv", 1}, {"DepthToSpace", 1}}))
        << graph::dump(f);
    EXPECT_EQ(f.value(only(f, "Conv").inputs[1]).data->dims(), (std::vector<int64_t>{11, 5, 3, 3}));
    EXPECT_EQ(only(f, "Conv").get_strings("vkml_fused"), (std::vector<std::string>{"h1", "h2", "cat"}));
    EXPECT_LE(fused_vs_unfused(g), 1e-5);

    // What must not merge: different inputs, different attributes, a head read by something else.
    for (int variant = 0; variant < 3; ++variant) {
        Graph n = new_graph("heads_no");
        const ValueId a = input(n, "a", {1, 5, 7, 6}), b = input(n, "b", {1, 5, 7, 6});
        const ValueId c0 = conv(n, a, 5, 4, "c0", 60);
        const ValueId c1 = conv(n, variant == 0 ? b : a, 5, 4, "c1", 62);
        if (variant == 1) // same geometry, other attributes: explicit dilations
            n.nodes().back().attributes.insert_or_assign("dilations", std::vector<int64_t>{1, 1});
        n.outputs().push_back(node(n, "Concat", {c0, c1}, "cat", {{"axis", int64_t{1}}}));
        if (variant == 2) n.outputs().push_back(c1);
        Graph fn = inferred(n);
        EXPECT_EQ(graph::fuse(fn).sibling_convs, 0u) << "variant " << variant;
        EXPECT_EQ(graph::op_histogram(fn).at("Conv"), 2) << "variant " << variant;
        EXPECT_LE(fused_vs_unfused(n), 1e-5) << "variant " << variant;
    }
}

// RDN's global fusion: each block's output starts the next block's dense Concat and the 1x1 over
// every block's output concatenates them again. The second Concat takes the dense block's other
// inputs too, with zero weights, so both Concats are in place (no Concat step) and the numbers
// stay those of the unfused session; the rewrite leaves what it must not touch.
TEST_F(FusionTest, AConcatRepeatingAnotherConcatsFirstInputTakesItsOtherInputs) {
    const int64_t align = int64_t(dev().caps().min_storage_buffer_offset_alignment);
    const int64_t w = std::max<int64_t>(align / 4, 4); // slices of whole alignment units in f32
    auto build = [&](int variant) {
        Graph g = new_graph("rdn");
        const ValueId x = input(g, "x", {1, 8, 3, w});
        const ValueId a = conv(g, x, 8, 8, "lrl1", 80);
        const ValueId f = conv(g, a, 8, 4, "f2", 82);
        const ValueId k = node(g, "Concat", {a, f}, "dense", {{"axis", int64_t{1}}});
        const ValueId b = conv(g, k, 12, 8, "lff2", 84);
        const ValueId z = node(g, "Concat", {a, b}, "lrls", {{"axis", int64_t{1}}});
        if (variant == 1) g.outputs().push_back(z); // read by a graph output: must stay
        if (variant == 2) g.outputs().push_back(node(g, "Relu", {z}, "other")); // read by a non-Conv
        g.outputs().push_back(conv(g, z, 16, 5, "gff", 86));
        return g;
    };
    for (int variant = 0; variant < 3; ++variant) {
        Graph g = build(variant);
        Graph f = inferred(g);
        const size_t n = graph::fuse(f).concat_prefixes;
        EXPECT_EQ(n, variant == 0 ? 1u : 0u) << "variant " << variant;
        if (variant == 0) {
            for (const Node& node : f.nodes()) {
                if (node.name == "lrls") {
                    EXPECT_EQ(node.inputs.size(), 3u) << graph::dump(f);
                }
                if (node.name == "gff") {
                    EXPECT_EQ(f.value(node.inputs[1]).data->dims(), (std::vector<int64_t>{5, 20, 3, 3}));
                }
            }
            Session s(dev(), g, {.fp32 = true});
            size_t concats = 0;
            for (const auto& st : s.steps()) concats += st.op_type == "Concat";
            EXPECT_EQ(concats, 0u) << s.describe();
        }
        EXPECT_LE(fused_vs_unfused(g), 1e-5) << "variant " << variant;
    }
}
