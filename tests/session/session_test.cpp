// Session on small graphs built in code: lowering against CPU references, views, host folding of
// shape subgraphs, precision boundaries, errors at creation, caller command buffers and bindings,
// split() chunks, profiling and the memory plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "json_check.hpp"
#include "session/session_util.hpp"
#include "graph/memory_plan.hpp"
#include "graph/passes.hpp"
#include "vkml/ops/conv.hpp"

using namespace vkml;
using namespace vkml::test;

namespace {

class SessionTest : public GpuTest {};

// Direct NCHW convolution, batch 1, stride 1, group 1, symmetric pads: the reference.
std::vector<float> conv_ref(const std::vector<float>& x, int64_t c, int64_t h, int64_t w,
                            const std::vector<float>& wt, const std::vector<float>& b, int64_t m, int64_t k,
                            int64_t pad) {
    const int64_t oh = h + 2 * pad - k + 1, ow = w + 2 * pad - k + 1;
    std::vector<float> y(static_cast<size_t>(m * oh * ow));
    for (int64_t o = 0; o < m; ++o)
        for (int64_t yy = 0; yy < oh; ++yy)
            for (int64_t xx = 0; xx < ow; ++xx) {
                double acc = b.empty() ? 0.0 : b[static_cast<size_t>(o)];
                for (int64_t ci = 0; ci < c; ++ci)
                    for (int64_t ky = 0; ky < k; ++ky)
                        for (int64_t kx = 0; kx < k; ++kx) {
                            const int64_t iy = yy + ky - pad, ix = xx + kx - pad;
                            if (iy < 0 || ix < 0 || iy >= h || ix >= w) continue;
                            acc += static_cast<double>(
                                       wt[static_cast<size_t>(((o * c + ci) * k + ky) * k + kx)]) *
                                   x[static_cast<size_t>((ci * h + iy) * w + ix)];
                        }
                y[static_cast<size_t>((o * oh + yy) * ow + xx)] = static_cast<float>(acc);
            }
    return y;
}

// x [1,2,5,6] -> Conv 3x3 (pads 1, bias) -> Relu -> y
Graph conv_relu_graph(TensorData& w, TensorData& b) {
    Graph g = new_graph("conv_relu");
    const ValueId x = input(g, "x", {1, 2, 5, 6});
    w = rand_tensor({3, 2, 3, 3}, 11);
    b = rand_tensor({3}, 12);
    const ValueId wid = g.add_constant("w", w), bid = g.add_constant("b", b);
    const ValueId c = node(g, "Conv", {x, wid, bid}, "conv", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    g.outputs().push_back(node(g, "Relu", {c}, "y"));
    return g;
}

} // namespace

TEST_F(SessionTest, ConvReluMatchesTheCpuInF32AndF16) {
    TensorData w, b;
    const Graph g = conv_relu_graph(w, b);
    const TensorData x = rand_tensor({1, 2, 5, 6}, 1);
    auto want = conv_ref(x.to_floats(), 2, 5, 6, w.to_floats(), b.to_floats(), 3, 3, 1);
    for (float& v : want) v = std::max(v, 0.f);
    const TensorData expect = TensorData::from_floats({1, 3, 5, 6}, want);
    for (bool fp32 : {true, false}) {
        Session s(dev(), g, {.fp32 = fp32});
        ASSERT_EQ(s.inputs().size(), 1u);
        EXPECT_EQ(s.outputs()[0].shape, (gpu::Shape{1, 3, 5, 6}));
        EXPECT_EQ(s.outputs()[0].dtype, DType::f32); // the model's dtype at the boundary, f16 inside
        const auto out = s.run(std::vector<TensorData>{x});
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{1, 3, 5, 6}));
        EXPECT_LE(max_rel_diff(out[0], expect), fp32 ? 1e-5 : 3e-3) << (fp32 ? "f32" : "f16");
        // The Relu is fused into the Conv: one op (plus boundary casts in f16).
        size_t convs = 0;
        for (const auto& st : s.steps()) {
            convs += st.op_type == "Conv";
            EXPECT_NE(st.op_type, "Relu");
        }
        EXPECT_EQ(convs, 1u) << s.describe();
        if (!fp32 && dev().caps().storage16) {
            const auto steps = s.steps();
            EXPECT_TRUE(std::any_of(steps.begin(), steps.end(), [](const StepInfo& st) {
                return st.op_type == "Cast";
            })) << s.describe();
        }
    }
}

// storage_io: the f32 input and output bound as f16 tensors where the session stores f16, and no
// conversion step at either edge; run() takes and returns f32 as before, with the same values
// (the host rounds the input to f16 as the GPU's Cast did, and widens the output exactly).
TEST_F(SessionTest, StorageIoBindsF16WithoutEdgeConversions) {
    TensorData w, b;
    const Graph g = conv_relu_graph(w, b);
    const TensorData x = rand_tensor({1, 2, 5, 6}, 4);
    Session plain(dev(), g, {});
    Session direct(dev(), g, {.storage_io = true});
    const gpu::DType want_io = dev().caps().storage16 ? gpu::DType::f16 : gpu::DType::f32;
    EXPECT_EQ(direct.inputs()[0].storage, want_io);
    EXPECT_EQ(direct.outputs()[0].storage, want_io);
    EXPECT_EQ(direct.inputs()[0].dtype, DType::f32);
    EXPECT_EQ(direct.outputs()[0].dtype, DType::f32);
    EXPECT_EQ(plain.inputs()[0].storage, gpu::DType::f32);
    for (const auto& st : direct.steps()) EXPECT_NE(st.op_type, "Cast") << direct.describe();
    const auto a = plain.run(std::vector<TensorData>{x});
    const auto d = direct.run(std::vector<TensorData>{x});
    ASSERT_EQ(d[0].dtype(), DType::f32);
    EXPECT_EQ(d[0].to_floats(), a[0].to_floats());
    // In f32 sessions the option changes nothing.
    Session full(dev(), g, {.fp32 = true, .storage_io = true});
    EXPECT_EQ(full.inputs()[0].storage, gpu::DType::f32);
    EXPECT_EQ(full.outputs()[0].storage, gpu::DType::f32);
}

TEST_F(SessionTest, ViewsRecordNoStepsAndShareMemory) {
    Graph g = new_graph("views");
    const ValueId x = input(g, "x", {2, 3, 4});
    const ValueId r = node(g, "Reshape", {x, g.add_constant("shape", ints({6, 4}))}, "r");
    const ValueId t = node(g, "Transpose", {r}, "t", {{"perm", std::vector<int64_t>{1, 0}}});
    const ValueId u = node(g, "Unsqueeze", {t, g.add_constant("axes", ints({0}))}, "u");
    const ValueId f = node(g, "Flatten", {u}, "f", {{"axis", int64_t{2}}});
    g.outputs().push_back(f);
    Session s(dev(), g, {.fp32 = true});
    const auto steps = s.steps();
    ASSERT_EQ(steps.size(), 1u) << s.describe(); // the Transpose, writing the output directly
    EXPECT_EQ(steps[0].op_type, "Transpose");
    EXPECT_EQ(s.outputs()[0].shape, (gpu::Shape{4, 6}));
    const TensorData xd = rand_tensor({2, 3, 4}, 3);
    const auto out = s.run(std::vector<TensorData>{xd});
    const auto xv = xd.to_floats(), ov = out[0].to_floats();
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 4; ++j)
            EXPECT_EQ(ov[static_cast<size_t>(j * 6 + i)], xv[static_cast<size_t>(i * 4 + j)]);
}

// NanoDet-style: the Resize's sizes computed from the input's shape (Shape -> Slice -> Concat),
// and a Reshape's target from Shape -> Gather -> Unsqueeze -> Concat: all folded on the host.
TEST_F(SessionTest, ShapeSubgraphsFoldIntoConstants) {
    Graph g = new_graph("shapes");
    const ValueId x = input(g, "x", {1, 2, 3, 4});
    const ValueId shape = node(g, "Shape", {x}, "shape");
    const ValueId nc =
        node(g, "Slice", {shape, g.add_constant("s0", ints({0})), g.add_constant("s1", ints({2}))}, "nc");
    const ValueId sizes =
        node(g, "Concat", {nc, g.add_constant("hw", ints({6, 8}))}, "sizes", {{"axis", int64_t{0}}});
    const ValueId up = node(
        g, "Resize", {x, graph::no_value, graph::no_value, sizes}, "up",
        {{"mode", "nearest"}, {"coordinate_transformation_mode", "asymmetric"}, {"nearest_mode", "floor"}});
    const ValueId batch = node(
        g, "Gather", {shape, g.add_constant("zero", TensorData::from_int64s({}, std::vector<int64_t>{0}))},
        "batch", {{"axis", int64_t{0}}});
    const ValueId b1 = node(g, "Unsqueeze", {batch, g.add_constant("ax0", ints({0}))}, "b1");
    const ValueId target =
        node(g, "Concat", {b1, g.add_constant("rest", ints({-1}))}, "target", {{"axis", int64_t{0}}});
    g.outputs().push_back(node(g, "Reshape", {up, target}, "flat"));
    Session s(dev(), g, {.fp32 = true});
    const auto hist = graph::op_histogram(s.graph());
    EXPECT_EQ(hist, (std::map<std::string, int>{{"Reshape", 1}, {"Resize", 1}})) << graph::dump(s.graph());
    EXPECT_EQ(s.outputs()[0].shape, (gpu::Shape{1, 2 * 6 * 8}));
    const TensorData xd = rand_tensor({1, 2, 3, 4}, 4);
    const auto out = s.run(std::vector<TensorData>{xd});
    const auto xv = xd.to_floats();
    const auto ov = out[0].to_floats();
    for (int c = 0; c < 2; ++c)
        for (int y = 0; y < 6; ++y)
            for (int xx = 0; xx < 8; ++xx)
                ASSERT_EQ(ov[static_cast<size_t>((c * 6 + y) * 8 + xx)],
                          xv[static_cast<size_t>((c * 3 + y / 2) * 4 + xx / 2)]);
}

TEST_F(SessionTest, UnsupportedOperatorIsNamedAtCreation) {
    Graph g = new_graph("unsupported");
    const ValueId x = input(g, "x", {2, 2});
    g.outputs().push_back(node(g, "Bernoulli", {x}, "my_bernoulli"));
    try {
        Session s(dev(), g);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_NE(m.find("Bernoulli"), std::string::npos) << m;
        EXPECT_NE(m.find("my_bernoulli"), std::string::npos) << m;
        EXPECT_NE(m.find("unsupported.test"), std::string::npos) << m;
    }
}

TEST_F(SessionTest, ComputedParameterIsAClearError) {
    Graph g = new_graph("computed");
    const ValueId x = input(g, "x", {2, 6});
    const ValueId shape = input(g, "shape", {2}, DType::i64);
    g.outputs().push_back(node(g, "Reshape", {x, shape}, "r"));
    try {
        Session s(dev(), g);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("'r' (Reshape)"), std::string::npos) << m;
        EXPECT_NE(m.find("must be a constant"), std::string::npos) << m;
        EXPECT_NE(m.find("computed.test"), std::string::npos) << m;
    }
}

TEST_F(SessionTest, FreeDimensionsMustBeGiven) {
    Graph g = new_graph("free");
    const ValueId x = g.add_value(
        "x", DType::f32,
        graph::Shape({graph::Dim::known(1), graph::Dim::symbolic("height"), graph::Dim::known(4)}));
    g.inputs().push_back(x);
    g.outputs().push_back(node(g, "Relu", {x}, "y"));
    try {
        Session s(dev(), g);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--free-dim height=SIZE"), std::string::npos) << e.what();
    }
    Session s(dev(), g, {.free_dims = {{"height", 3}}});
    EXPECT_EQ(s.inputs()[0].shape, (gpu::Shape{1, 3, 4}));
    Session t(dev(), g, {.input_shapes = {{"x", {1, 5, 4}}}});
    EXPECT_EQ(t.outputs()[0].shape, (gpu::Shape{1, 5, 4}));
}

// Per-node precision: a Softmax forced to f32 inside an f16 model gets conversions around it, and
// the model's f32 inputs and outputs convert at the boundary.
TEST_F(SessionTest, PrecisionOverridesAndBoundaries) {
    if (!dev().caps().storage16) GTEST_SKIP() << "no 16-bit storage";
    Graph g = new_graph("precision");
    const ValueId x = input(g, "x", {2, 7});
    const ValueId m = node(g, "Mul", {x, g.add_constant("k", TensorData::scalar(3.f))}, "scaled");
    const ValueId sm = node(g, "Softmax", {m}, "softmax", {{"axis", int64_t{-1}}});
    g.outputs().push_back(node(g, "Add", {sm, g.add_constant("one", TensorData::scalar(1.f))}, "y"));
    const TensorData xd = rand_tensor({2, 7}, 5);
    Session ref(dev(), g, {.fp32 = true});
    const auto want = ref.run(std::vector<TensorData>{xd});
    Session mixed(dev(), g, {.precision = {{"Softmax", Precision::F32}}});
    std::vector<std::string> types;
    for (const auto& st : mixed.steps()) types.push_back(st.op_type + ":" + st.detail);
    const std::string d = mixed.describe();
    EXPECT_NE(d.find("Softmax 'softmax': f32[2, 7] -> f32[2, 7]"), std::string::npos) << d;
    EXPECT_NE(d.find("Mul 'scaled': f16[2, 7], f16[] -> f16[2, 7]"), std::string::npos) << d;
    const auto got = mixed.run(std::vector<TensorData>{xd});
    EXPECT_EQ(got[0].dtype(), DType::f32);
    EXPECT_LE(max_rel_diff(got[0], want[0]), 2e-3) << d;
    // By node name, overriding the op type.
    Session named(dev(), g, {.fp32 = true, .precision = {{"softmax", Precision::F16}}});
    EXPECT_NE(named.describe().find("Softmax 'softmax': f16[2, 7] -> f16[2, 7]"), std::string::npos)
        << named.describe();
}

TEST_F(SessionTest, AccumulationByOpTypeNodeNameAndFusedName) {
    // x [1,64,13,37] -> Conv 3x3 64->32 (pads 1, bias) -> Relu (fused into the Conv node "conv").
    Graph g = new_graph("accumulation");
    const ValueId x = input(g, "x", {1, 64, 13, 37});
    const TensorData w = rand_tensor({32, 64, 3, 3}, 21), b = rand_tensor({32}, 22);
    const ValueId c = node(g, "Conv", {x, g.add_constant("w", w), g.add_constant("b", b)}, "conv",
                           {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    g.outputs().push_back(node(g, "Relu", {c}, "y"));
    const TensorData xd = rand_tensor({1, 64, 13, 37}, 23);
    auto want = conv_ref(xd.to_floats(), 64, 13, 37, w.to_floats(), b.to_floats(), 32, 3, 1);
    for (float& v : want) v = std::max(v, 0.f);
    const TensorData expect = TensorData::from_floats({1, 32, 13, 37}, want);
    Session plain(dev(), g);
    const auto base = plain.run(std::vector<TensorData>{xd})[0].to_floats();
    // Where the tensor cores sum in f16 the Conv takes its f16c kernel: close to the reference
    // and not the fp32 result bit for bit; elsewhere the option changes nothing.
    const bool f16 = ops::f16_accumulation_available(dev(), dev().caps().storage16 ? gpu::DType::f16 : gpu::DType::f32);
    for (const char* key : {"Conv", "conv", "y"}) {
        Session s(dev(), g, {.accumulation = {{key, ops::Accumulation::F16}}});
        const auto out = s.run(std::vector<TensorData>{xd})[0];
        EXPECT_LE(max_rel_diff(out, expect), f16 ? 1e-2 : 3e-3) << key;
        const auto got = out.to_floats();
        ASSERT_EQ(got.size(), base.size());
        size_t differ = 0;
        for (size_t i = 0; i < got.size(); ++i) differ += got[i] != base[i];
        if (f16)
            EXPECT_GT(differ, 0u) << key << ": the f16c kernel did not run";
        else
            EXPECT_EQ(differ, 0u) << key;
    }
}

TEST_F(SessionTest, IntegerAndBooleanValues) {
    Graph g = new_graph("ints");
    const ValueId a = input(g, "a", {5}, DType::i64);
    const ValueId b = input(g, "b", {5}, DType::i64);
    const ValueId sum = node(g, "Add", {a, b}, "sum");
    g.outputs().push_back(sum);
    g.outputs().push_back(node(g, "Greater", {a, b}, "gt"));
    g.outputs().push_back(a); // an input straight through: copied
    g.outputs().push_back(g.add_constant("const_out", ints({7, 8, 9})));
    Session s(dev(), g);
    const std::vector<int64_t> av = {1, -2, 300000, 4, -5}, bv = {10, 20, -30, 4, 5};
    const auto out =
        s.run(std::vector<TensorData>{TensorData::from_int64s({5}, av), TensorData::from_int64s({5}, bv)});
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].dtype(), DType::i64);
    EXPECT_EQ(out[0].to_int64s(), (std::vector<int64_t>{11, 18, 299970, 8, 0}));
    EXPECT_EQ(out[1].dtype(), DType::boolean);
    EXPECT_EQ(out[1].to_int64s(), (std::vector<int64_t>{0, 0, 1, 0, 0}));
    EXPECT_EQ(out[2].to_int64s(), av);
    EXPECT_EQ(out[3].to_int64s(), (std::vector<int64_t>{7, 8, 9}));
}

// The caller's command buffer and tensors: record twice in one submission (the second record's
// leading barrier orders it after the first), then compare with run().
TEST_F(SessionTest, RecordIntoTheCallersCommandBuffer) {
    TensorData w, b;
    const Graph g = conv_relu_graph(w, b);
    Session s(dev(), g, {.fp32 = true});
    const TensorData xd = rand_tensor({1, 2, 5, 6}, 6);
    const auto want = s.run(std::vector<TensorData>{xd});
    gpu::Tensor x(dev(), s.inputs()[0].shape, s.inputs()[0].storage, "caller x");
    gpu::Tensor y(dev(), s.outputs()[0].shape, s.outputs()[0].storage, "caller y");
    gpu::upload(dev(), x, xd.floats());
    gpu::CommandBuffer cmd(dev(), gpu::QueueRole::Compute);
    cmd.begin();
    const gpu::Tensor ins[] = {x}, outs[] = {y};
    s.record(cmd, {ins, outs});
    s.record(cmd, {ins, outs});
    gpu::barrier::compute_to_transfer(cmd);
    cmd.end();
    dev().wait(gpu::QueueRole::Compute, dev().submit(gpu::QueueRole::Compute, cmd));
    EXPECT_EQ(gpu::download_floats(dev(), y),
              std::vector<float>(want[0].floats().begin(), want[0].floats().end()));
    // Wrong bindings are named.
    const gpu::Tensor wrong[] = {y};
    try {
        s.record(cmd, {wrong, outs});
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("input 'x'"), std::string::npos) << e.what();
    }
}

namespace {

// A chain deep enough to split: x -> (Conv 3x3 + Relu) x depth -> Add(skip) -> y.
Graph deep_graph(int depth, int channels = 4, int64_t size = 9) {
    Graph g = new_graph("deep");
    ValueId x = input(g, "x", {1, channels, size, size});
    const ValueId skip = x;
    for (int i = 0; i < depth; ++i) {
        const std::string n = "c" + std::to_string(i);
        const ValueId w = g.add_constant(
            n + "/w", rand_tensor({channels, channels, 3, 3}, 100 + static_cast<uint32_t>(i), -0.3f, 0.3f));
        const ValueId b = g.add_constant(n + "/b", rand_tensor({channels}, 200 + static_cast<uint32_t>(i)));
        x = node(g, "Conv", {x, w, b}, n, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
        x = node(g, "Relu", {x}, n + "/relu");
    }
    g.outputs().push_back(node(g, "Add", {x, skip}, "y"));
    return g;
}

} // namespace

TEST_F(SessionTest, SplitChunksRecordedSeparatelyEqualTheWhole) {
    const Graph g = deep_graph(7);
    Session s(dev(), g, {.fp32 = true});
    const TensorData xd = rand_tensor({1, 4, 9, 9}, 7);
    const auto want = s.run(std::vector<TensorData>{xd});
    for (size_t n : {size_t{1}, size_t{3}, size_t{100}}) {
        const auto chunks = s.split(n);
        ASSERT_EQ(chunks.size(), std::min(n, s.steps().size()));
        EXPECT_EQ(chunks.front().first_step(), 0u);
        EXPECT_EQ(chunks.back().end_step(), s.steps().size());
        for (size_t c = 1; c < chunks.size(); ++c)
            EXPECT_EQ(chunks[c].first_step(), chunks[c - 1].end_step());
        EXPECT_EQ(chunks.front().inputs_read(), std::vector<size_t>{0});
        EXPECT_EQ(chunks.back().outputs_written(), std::vector<size_t>{0});
        gpu::Tensor x(dev(), s.inputs()[0].shape, s.inputs()[0].storage, "x");
        gpu::Tensor y(dev(), s.outputs()[0].shape, s.outputs()[0].storage, "y");
        gpu::upload(dev(), x, xd.floats());
        const gpu::Tensor ins[] = {x}, outs[] = {y};
        // One submission per chunk, as a frame graph interleaving them with rendering would do.
        for (const SessionChunk& c : chunks)
            dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
                c.record(cmd, {ins, outs});
                gpu::barrier::compute_to_transfer(cmd);
            });
        EXPECT_EQ(gpu::download_floats(dev(), y),
                  std::vector<float>(want[0].floats().begin(), want[0].floats().end()))
            << n << " chunks";
    }
}

// SessionOptions::prefetch_weights: the weights read into the cache before the first step change
// no result (bit for bit), records back to back in one command buffer and split chunks included;
// the validation layer (synchronization too) sees no hazard on the prefetch's sink.
TEST_F(SessionTest, WeightPrefetchChangesNothing) {
    const Graph g = deep_graph(3);
    const TensorData xd = rand_tensor({1, 4, 9, 9}, 8);
    for (bool fp32 : {true, false}) {
        Session plain(dev(), g, {.fp32 = fp32, .prefetch_weights = false});
        Session fetched(dev(), g, {.fp32 = fp32, .prefetch_weights = true});
        const auto want = plain.run(std::vector<TensorData>{xd});
        const auto got = fetched.run(std::vector<TensorData>{xd});
        ASSERT_EQ(got.size(), 1u);
        const auto floats = [](const TensorData& t) {
            return std::vector<float>(t.floats().begin(), t.floats().end());
        };
        EXPECT_EQ(floats(got[0]), floats(want[0])) << (fp32 ? "f32" : "f16");
        gpu::Tensor x(dev(), fetched.inputs()[0].shape, fetched.inputs()[0].storage, "x");
        gpu::Tensor y(dev(), fetched.outputs()[0].shape, fetched.outputs()[0].storage, "y");
        gpu::upload(dev(), x, xd.floats());
        const gpu::Tensor ins[] = {x}, outs[] = {y};
        dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
            fetched.record(cmd, {ins, outs});
            fetched.record(cmd, {ins, outs});
            for (const SessionChunk& c : fetched.split(2)) c.record(cmd, {ins, outs});
            gpu::barrier::compute_to_transfer(cmd);
        });
        EXPECT_EQ(gpu::download_floats(dev(), y), floats(want[0])) << (fp32 ? "f32" : "f16");
    }
}

TEST_F(SessionTest, ProfileGivesATableAndATrace) {
    if (!dev().caps().timestamps) GTEST_SKIP() << "no timestamps";
    const Graph g = deep_graph(3);
    Session s(dev(), g);
    const auto p = s.profile(std::vector<TensorData>{rand_tensor({1, 4, 9, 9}, 8)});
    ASSERT_EQ(p.records.size(), s.steps().size());
    const std::string table = p.table();
    EXPECT_NE(table.find("c0+c0/relu (Conv)"), std::string::npos) << table;
    EXPECT_NE(table.find("by op type"), std::string::npos) << table;
    EXPECT_TRUE(test::JsonParser::parse(p.chrome_trace()).has_value()) << p.chrome_trace();
}

// The profiled run's own results (Python's InferenceSession(profile=True) runs the model once).
TEST_F(SessionTest, ProfileGivesTheRunsResults) {
    if (!dev().caps().timestamps) GTEST_SKIP() << "no timestamps";
    const Graph g = deep_graph(3);
    const std::vector<TensorData> in{rand_tensor({1, 4, 9, 9}, 8)};
    Session s(dev(), g, {.fp32 = true});
    const std::vector<TensorData> want = s.run(in);
    Session t(dev(), g, {.fp32 = true});
    std::vector<TensorData> got;
    const SessionProfile p = t.profile(in, &got);
    ASSERT_EQ(p.records.size(), t.steps().size());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].dims(), want[i].dims());
        EXPECT_EQ(max_rel_diff(got[i], want[i]), 0.0) << i;
    }
}

TEST_F(SessionTest, MemoryPlanReusesTheArena) {
    const Graph g = deep_graph(8, 8, 16);
    Session s(dev(), g, {.fp32 = true});
    const SessionMemory m = s.memory();
    // Each conv output lives until the next conv: two or three tensors of 8 KiB at a time.
    EXPECT_LT(m.arena, m.unshared / 2) << s.describe();
    EXPECT_GE(m.arena, m.peak_live);
    EXPECT_GT(m.constants, 8u * (8 * 8 * 9 + 8) * 4 - 1);
    EXPECT_EQ(m.constants_read, m.constants) << "no weights re-packed in f32";
}

// Weights re-packed once at build (the tensor-core Conv's layout) are not read by a run: the
// constants' layout puts them last, and the weight prefetch reads only the part before them.
TEST_F(SessionTest, PrepackedWeightsAreNotReadByARun) {
    const Graph g = deep_graph(3, 64, 40); // (built, never run)
    Session s(dev(), g, {});
    const SessionMemory m = s.memory();
    if (m.prepacked == 0) {
        EXPECT_EQ(m.constants_read, m.constants) << s.describe();
        GTEST_SKIP() << "no Conv re-packs its weights here (no tensor cores)";
    }
    // Only the biases stay: 3 layers of 64 f16 values, each constant aligned.
    EXPECT_LT(m.constants_read, m.constants / 16) << s.describe();
}

TEST(MemoryPlan, DisjointLifetimesShareBytes) {
    const graph::MemoryRequest reqs[] = {{100, 0, 1}, {100, 1, 2}, {100, 2, 3}, {300, 3, 4}, {50, 0, 4}};
    const auto p = graph::plan_memory(reqs, 64);
    ASSERT_EQ(p.offsets.size(), 5u);
    for (uint64_t o : p.offsets) EXPECT_EQ(o % 64, 0u);
    // No two requests that are live together overlap.
    for (size_t i = 0; i < 5; ++i)
        for (size_t j = i + 1; j < 5; ++j) {
            const bool together = reqs[i].first <= reqs[j].last && reqs[j].first <= reqs[i].last;
            const auto ai = (reqs[i].bytes + 63) / 64 * 64, aj = (reqs[j].bytes + 63) / 64 * 64;
            const bool overlap = p.offsets[i] < p.offsets[j] + aj && p.offsets[j] < p.offsets[i] + ai;
            EXPECT_FALSE(together && overlap) << i << " and " << j;
        }
    EXPECT_EQ(p.unshared_bytes, 128u * 3 + 320 + 64);
    EXPECT_EQ(p.peak_live_bytes, 320u + 128 + 64);
    EXPECT_LE(p.arena_bytes, p.peak_live_bytes + 128);
    EXPECT_LT(p.arena_bytes, p.unshared_bytes);
}

TEST(MemoryPlan, EmptyAndSingle) {
    EXPECT_EQ(graph::plan_memory({}, 16).arena_bytes, 0u);
    const graph::MemoryRequest one[] = {{10, 2, 2}};
    const auto p = graph::plan_memory(one, 256);
    EXPECT_EQ(p.offsets[0], 0u);
    EXPECT_EQ(p.arena_bytes, 256u);
}

// Concat in place: the producers write their slices of the Concat's output, so no Concat step is
// recorded; nested (a Concat of another in-place Concat's parts, as Anime4K's heads), a value in
// two Concats (the second one copies), slices off the offset alignment (copied) and a slice that
// is a graph output all give the numbers of the unfused session.
// Split in place: a Conv's output split along the channels is read where it lies by the Split's
// readers (a Sigmoid, a Transpose, a Concat of both parts, a graph output), so no Split step runs;
// with slices off the alignment (variant 1) or split along a dimension behind a non-1 one
// (variant 2) the Split runs as an op. The results equal the session without fusions, in f32 and
// in f16 storage.
TEST_F(SessionTest, SplitReadsItsInputInPlace) {
    const int64_t align = int64_t(dev().caps().min_storage_buffer_offset_alignment);
    for (int variant = 0; variant < 3; ++variant) {
        Graph g = new_graph("split_in_place");
        // 4 x 4 x w values per channel: slices of 3 and 5 channels start at multiples of the
        // alignment in f16 and f32, except in variant 1 (1 x 3 pixels, 6-byte channels).
        const int64_t w = variant == 1 ? 3 : std::max<int64_t>(align / 2, 4);
        const int64_t h = variant == 1 ? 1 : 4;
        const ValueId x = input(g, "x", {1, 2, h, w});
        const ValueId wt =
            g.add_constant("w", rand_tensor({8, 2, 1, 1}, 80 + uint32_t(variant), -0.5f, 0.5f));
        const ValueId c = node(g, "Conv", {x, wt}, "conv");
        const ValueId a = g.add_value("a"), b = g.add_value("b");
        const int64_t axis = variant == 2 ? 2 : 1;
        graph::Node& sp =
            g.add_node("Split",
                       {c, g.add_constant("parts", ints(variant == 2 ? std::vector<int64_t>{1, h - 1}
                                                                     : std::vector<int64_t>{3, 5}))},
                       {a, b}, "split");
        sp.attributes.insert_or_assign("axis", graph::Attribute(axis));
        g.outputs().push_back(node(g, "Sigmoid", {a}, "sig"));
        g.outputs().push_back(node(g, "Transpose", {b}, "t", {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}));
        g.outputs().push_back(node(g, "Concat", {b, a}, "swapped", {{"axis", axis}}));
        g.outputs().push_back(a);
        const TensorData xd = rand_tensor({1, 2, h, w}, 90 + uint32_t(variant));
        for (bool fp32 : {true, false}) {
            Session fused(dev(), g, {.fp32 = fp32});
            Session plain(dev(), g, {.fp32 = fp32, .fuse = false});
            size_t splits = 0;
            for (const auto& st : fused.steps()) splits += st.op_type == "Split";
            EXPECT_EQ(splits, variant == 0 ? 0u : 1u) << fused.describe();
            const auto got = fused.run(std::vector<TensorData>{xd}),
                       want = plain.run(std::vector<TensorData>{xd});
            ASSERT_EQ(got.size(), want.size());
            for (size_t k = 0; k < got.size(); ++k)
                EXPECT_EQ(max_rel_diff(got[k], want[k]), 0.0)
                    << "variant " << variant << " output " << k << (fp32 ? " f32" : " f16");
        }
    }
}

TEST_F(SessionTest, ConcatWritesItsInputsInPlace) {
    const int64_t align = int64_t(dev().caps().min_storage_buffer_offset_alignment);
    for (int variant = 0; variant < 4; ++variant) {
        Graph g = new_graph("concat_in_place");
        // Slices of 4 channels x 4 x align/4 f32: every slice start stays aligned, except in
        // variant 2 whose 12-byte slices put them off the alignment.
        const std::vector<int64_t> dims =
            variant == 2 ? std::vector<int64_t>{1, 1, 1, 3} : std::vector<int64_t>{1, 4, 4, std::max<int64_t>(align / 4, 4)};
        const ValueId x = input(g, "x", dims);
        const ValueId pos = node(g, "Relu", {x}, "pos");
        const ValueId neg = node(g, "Relu", {node(g, "Neg", {x}, "neg_in")}, "neg");
        const ValueId inner = node(g, "Concat", {pos, neg}, "inner", {{"axis", int64_t{1}}});
        const ValueId sig = node(g, "Sigmoid", {x}, "sig");
        const ValueId head = node(g, "Concat", {pos, neg, sig}, "head", {{"axis", int64_t{1}}});
        g.outputs().push_back(node(g, "Tanh", {inner}, "t"));
        g.outputs().push_back(node(g, "Abs", {head}, "a"));
        if (variant == 1) g.outputs().push_back(node(g, "Concat", {sig, x}, "twice", {{"axis", int64_t{1}}}));
        if (variant == 3) g.outputs().push_back(neg);
        Session fused(dev(), g, {.fp32 = true});
        Session plain(dev(), g, {.fp32 = true, .fuse = false});
        size_t concats = 0;
        for (const auto& st : fused.steps()) concats += st.op_type == "Concat";
        // variant 1: "twice" reads a graph input, which has no arena slice: one Concat copies.
        EXPECT_EQ(concats, variant == 1 ? 1u : variant == 2 ? 2u : 0u) << fused.describe();
        const TensorData xd = rand_tensor(dims, 70 + uint32_t(variant));
        const auto a = fused.run(std::vector<TensorData>{xd}), b = plain.run(std::vector<TensorData>{xd});
        ASSERT_EQ(a.size(), b.size());
        for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(max_rel_diff(a[k], b[k]), 0.0) << "variant " << variant;
    }
}
