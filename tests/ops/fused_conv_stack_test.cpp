// FusedConvStack against a double-precision reference built from the unfused pieces (ONNX Conv of
// tests/ops/ref, CReLU / ReLU, channel Concat, DepthToSpace CRD, Resize linear half_pixel, Add),
// on random weights and inputs at odd sizes, with tiles cut by the image's edges.
#include <algorithm>
#include <cmath>
#include <random>

#include "op_test.hpp"
#include "ref/conv_ref.hpp"
#include "vkml/ops/fused.hpp"

using namespace vkml;
using namespace vkml::test;
using ops::ConvStackDesc;
using ops::ConvStackLayer;
using ops::StackAct;
using ops::StackHead;
using ops::StackOutput;

namespace {

class FusedConvStackTest : public GpuTest {};

struct Shape4 {
    int64_t n, c, h, w;
};

// Random weights scaled by 1/sqrt(fan-in), so activations stay of order 1 through many layers;
// biases never zero.
ConvStackLayer random_layer(int64_t outputs, int64_t inputs, int64_t taps, uint32_t seed) {
    std::mt19937 rng(seed);
    const double scale = 1.5 / std::sqrt(double(inputs * taps));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto nonzero = [&](double s) {
        double v = 0;
        while (std::fabs(v) < 0.05) v = u(rng);
        return float(v * s);
    };
    ConvStackLayer l;
    l.outputs = outputs;
    for (int64_t i = 0; i < outputs * inputs * taps; ++i) l.weight.push_back(nonzero(scale));
    for (int64_t i = 0; i < outputs; ++i) l.bias.push_back(nonzero(0.2));
    return l;
}

HostTensor as_tensor(const std::vector<float>& v, const gpu::Shape& shape) {
    HostTensor t(shape, gpu::DType::f32);
    for (size_t i = 0; i < v.size(); ++i) t[i] = v[i];
    return t;
}

// act(f) over the channels: CReLU [relu(f), relu(-f)] or relu(f).
HostTensor activate(const HostTensor& f, StackAct act) {
    const gpu::Shape& s = f.shape();
    const int64_t n = s[0], c = s[1], hw = s[2] * s[3], k = act == StackAct::CRelu ? 2 : 1;
    HostTensor out(gpu::Shape{n, c * k, s[2], s[3]}, gpu::DType::f32);
    for (int64_t b = 0; b < n; ++b)
        for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t i = 0; i < hw; ++i) {
                const double v = f[size_t((b * c + ch) * hw + i)];
                out[size_t((b * c * k + ch) * hw + i)] = std::max(v, 0.0);
                if (k == 2) out[size_t((b * c * k + c + ch) * hw + i)] = std::max(-v, 0.0);
            }
    return out;
}

HostTensor concat_channels(const std::vector<HostTensor>& parts) {
    const gpu::Shape& s0 = parts[0].shape();
    int64_t c = 0;
    for (const auto& p : parts) c += p.shape()[1];
    const int64_t hw = s0[2] * s0[3];
    HostTensor out(gpu::Shape{s0[0], c, s0[2], s0[3]}, gpu::DType::f32);
    for (int64_t b = 0; b < s0[0]; ++b) {
        int64_t at = 0;
        for (const auto& p : parts) {
            const int64_t pc = p.shape()[1];
            for (int64_t i = 0; i < pc * hw; ++i) out[size_t((b * c + at) * hw + i)] = p[size_t(b * pc * hw + i)];
            at += pc;
        }
    }
    return out;
}

// The network, layer by layer, in double precision.
HostTensor reference(const ConvStackDesc& d, const HostTensor& x) {
    ref_conv::ConvAttrs pad1;
    pad1.pads = {1, 1, 1, 1};
    auto conv = [&](const HostTensor& in, const ConvStackLayer& l, int64_t k, const ref_conv::ConvAttrs& a) {
        const int64_t ci = int64_t(l.weight.size()) / (l.outputs * k * k);
        const HostTensor w = as_tensor(l.weight, gpu::Shape{l.outputs, ci, k, k});
        const HostTensor b = as_tensor(l.bias, gpu::Shape{l.outputs});
        return ref_conv::conv(in, w, &b, a);
    };
    std::vector<HostTensor> acts;
    HostTensor f = conv(x, d.layers[0], 3, pad1);
    for (size_t l = 1; l < d.layers.size(); ++l) {
        acts.push_back(activate(f, d.act));
        f = conv(acts.back(), d.layers[l], 3, pad1);
    }
    HostTensor h = f;
    if (d.head == StackHead::Concat1x1) {
        acts.push_back(activate(f, d.act));
        h = conv(concat_channels(acts), d.head_conv, 1, {});
    }
    const gpu::Shape& xs = x.shape();
    const int64_t n = xs[0], cin = xs[1], H = xs[2], W = xs[3], k = h.shape()[1];
    if (d.output == StackOutput::Residual) {
        HostTensor y(xs, gpu::DType::f32);
        for (int64_t b = 0; b < n; ++b)
            for (int64_t c = 0; c < cin; ++c)
                for (int64_t i = 0; i < H * W; ++i)
                    y[size_t((b * cin + c) * H * W + i)] = x[size_t((b * cin + c) * H * W + i)] + h[size_t((b * k + c) * H * W + i)];
        return y;
    }
    // DepthToSpace(2, CRD): out[c][2y + i][2x + j] = h[4c + 2i + j][y][x]; Resize linear half_pixel.
    const int64_t dc = k / 4, oc = std::max(dc, cin);
    HostTensor y(gpu::Shape{n, oc, 2 * H, 2 * W}, gpu::DType::f32);
    auto up = [&](int64_t b, int64_t c, int64_t oy, int64_t ox) {
        auto axis = [](int64_t o, int64_t len, int64_t& i0, int64_t& i1, double& t) {
            const double s = (double(o) + 0.5) / 2.0 - 0.5;
            const double fl = std::floor(s);
            t = s - fl;
            i0 = std::clamp<int64_t>(int64_t(fl), 0, len - 1);
            i1 = std::clamp<int64_t>(int64_t(fl) + 1, 0, len - 1);
        };
        int64_t y0, y1, x0, x1;
        double ty, tx;
        axis(oy, H, y0, y1, ty);
        axis(ox, W, x0, x1, tx);
        auto at = [&](int64_t yy, int64_t xx) { return x[size_t(((b * cin + c) * H + yy) * W + xx)]; };
        return (1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x1)) + ty * ((1 - tx) * at(y1, x0) + tx * at(y1, x1));
    };
    for (int64_t b = 0; b < n; ++b)
        for (int64_t c = 0; c < oc; ++c)
            for (int64_t oy = 0; oy < 2 * H; ++oy)
                for (int64_t ox = 0; ox < 2 * W; ++ox) {
                    const int64_t hc = (dc == 1 ? 0 : c) * 4 + (oy % 2) * 2 + ox % 2;
                    y[size_t(((b * oc + c) * 2 * H + oy) * 2 * W + ox)] =
                        up(b, cin == 1 ? 0 : c, oy, ox) + h[size_t(((b * k + hc) * H + oy / 2) * W + ox / 2)];
                }
    return y;
}

struct Net {
    int64_t cin = 3, c = 4, layers = 7, k = 12;
    StackHead head = StackHead::Concat1x1;
    StackAct act = StackAct::CRelu;
    StackOutput output = StackOutput::DepthToSpaceBilinear;
};

ConvStackDesc make_desc(const Net& net, const gpu::Shape& shape, gpu::DType io, gpu::DType smem, uint32_t seed) {
    ConvStackDesc d;
    d.input = {shape, io};
    d.act = net.act;
    d.head = net.head;
    d.output = net.output;
    d.smem = smem;
    const int64_t s = net.act == StackAct::CRelu ? 2 : 1;
    for (int64_t l = 0; l < net.layers; ++l) {
        const bool last = l == net.layers - 1 && net.head == StackHead::LastLayer;
        d.layers.push_back(random_layer(last ? net.k : net.c, l == 0 ? net.cin : s * net.c, 9, seed + uint32_t(l)));
    }
    if (net.head == StackHead::Concat1x1) d.head_conv = random_layer(net.k, net.layers * s * net.c, 1, seed + 100);
    return d;
}

struct Case {
    gpu::DType io, smem;
    std::array<int, 2> tile;
    ops::StackKernel kernel = ops::StackKernel::Scalar;
};

// Whether the tensor-core kernel runs here (NVIDIA with cooperative matrices; not lavapipe).
bool mma_here(gpu::Device& dev) {
    ConvStackDesc d = make_desc({}, gpu::Shape{1, 3, 8, 8}, gpu::DType::f32, gpu::DType::f16, 1);
    d.kernel = ops::StackKernel::TensorCores;
    return ops::FusedConvStack::supported(dev, d);
}

// f32 throughout at a small forced tile (more tiles, cut by the image's edges on both axes), and
// f16 storage with f16 shared memory at the automatic tile; `mixed` adds f32 storage with f16
// shared memory (what a session in f16 runs on an f32 input). Each case is a pipeline that
// llvmpipe takes seconds to compile, so not every combination.
void check(gpu::Device& dev, const Net& net, const gpu::Shape& shape, uint32_t seed, bool mixed = false) {
    const gpu::DType half = dev.caps().storage16 ? gpu::DType::f16 : gpu::DType::f32;
    std::vector<Case> cases = {{gpu::DType::f32, gpu::DType::f32, {8, 6}}, {half, gpu::DType::f16, {0, 0}}};
    if (mixed) cases.push_back({gpu::DType::f32, gpu::DType::f16, {0, 0}});
    // The tensor-core kernel where it runs: at its automatic tile and at the smallest one (more
    // tiles, cut by the edges), f16 and f32 storage.
    if (mma_here(dev)) {
        cases.push_back({half, gpu::DType::f16, {0, 0}, ops::StackKernel::TensorCores});
        cases.push_back({gpu::DType::f32, gpu::DType::f16, {16, 8}, ops::StackKernel::TensorCores});
    }
    for (const Case& c : cases) {
        ConvStackDesc d = make_desc(net, shape, c.io, c.smem, seed);
        d.tile = c.tile;
        d.kernel = c.kernel;
        const HostTensor x = random_tensor(shape, c.io, seed + 7, 0.0, 1.0, 0.01);
        auto op = ops::FusedConvStack::create(dev, d);
        const auto got = run_op(dev, *op, {x}, 2);
        const HostTensor want = reference(d, x);
        const bool mma = c.kernel == ops::StackKernel::TensorCores;
        ASSERT_EQ(op->tensor_cores(), mma);
        const std::string what = std::string("io ") + gpu::dtype_name(c.io) + ", smem " + gpu::dtype_name(c.smem) +
                                 ", tile " + std::to_string(op->tile()[0]) + "x" + std::to_string(op->tile()[1]) +
                                 (mma ? ", tensor cores" : "");
        const bool exact = c.io == gpu::DType::f32 && c.smem == gpu::DType::f32;
        // The tensor cores round the weights to f16 as well.
        expect_close(got[0], want, exact ? 2e-5 : mma ? 6e-3 : 4e-3, what);
    }
}

} // namespace

TEST_F(FusedConvStackTest, Anime4kMShape) {
    check(dev(), {}, gpu::Shape{1, 3, 23, 37}, 11, true);
}

TEST_F(FusedConvStackTest, Anime4kLShapeEightChannels) {
    check(dev(), {.c = 8, .layers = 4}, gpu::Shape{1, 3, 19, 29}, 21);
}

TEST_F(FusedConvStackTest, Anime4kSShapeLastLayerHeadBroadcast) {
    // The last 3x3 layer is the head: 4 outputs, one channel after DepthToSpace, added to each of
    // the three upsampled input channels.
    check(dev(), {.layers = 4, .k = 4, .head = StackHead::LastLayer}, gpu::Shape{1, 3, 17, 31}, 31);
}

TEST_F(FusedConvStackTest, RestoreShapeResidualLastLayer) {
    check(dev(), {.c = 8, .layers = 5, .k = 4, .head = StackHead::LastLayer, .output = StackOutput::Residual},
          gpu::Shape{2, 3, 13, 27}, 41);
}

TEST_F(FusedConvStackTest, ReluOddChannelsBatchAndOneInputChannel) {
    // ReLU instead of CReLU, 3 hidden channels (a partial vec4), one input channel broadcast over
    // the two channels DepthToSpace leaves, two images.
    check(dev(), {.cin = 1, .c = 3, .layers = 3, .k = 8, .act = StackAct::Relu}, gpu::Shape{2, 1, 11, 9}, 51);
}

TEST_F(FusedConvStackTest, OneLayerAndTinyImage) {
    check(dev(), {.cin = 4, .c = 2, .layers = 1, .k = 16, .output = StackOutput::Residual}, gpu::Shape{1, 4, 1, 3}, 61);
}

TEST_F(FusedConvStackTest, RejectsWhatItCannotRun) {
    const gpu::Shape s{1, 3, 8, 8};
    auto desc = [&](Net net) { return make_desc(net, s, gpu::DType::f32, gpu::DType::f32, 1); };
    expect_error([&] { (void)ops::FusedConvStack::create(dev(), desc({.c = 9})); }, {"FusedConvStack", "1 to 8"});
    expect_error([&] { (void)ops::FusedConvStack::create(dev(), desc({.k = 20})); }, {"FusedConvStack", "1x1 head"});
    expect_error([&] { (void)ops::FusedConvStack::create(dev(), desc({.k = 10})); }, {"FusedConvStack", "multiple of 4"});
    ConvStackDesc bad = desc({});
    bad.layers[2].weight.pop_back();
    expect_error([&] { (void)ops::FusedConvStack::create(dev(), bad); }, {"FusedConvStack", "layers[2].weight"});
    ConvStackDesc big = desc({});
    big.tile = {64, 64};
    std::string why;
    EXPECT_FALSE(ops::FusedConvStack::supported(dev(), big, &why));
    EXPECT_NE(why.find("tile"), std::string::npos) << why;
    EXPECT_TRUE(ops::FusedConvStack::supported(dev(), desc({})));
}

TEST_F(FusedConvStackTest, TensorCoresWhereTheyRunAndClearErrorsElsewhere) {
    const gpu::Shape s{1, 3, 8, 8};
    ConvStackDesc d = make_desc({.c = 8}, s, gpu::DType::f32, gpu::DType::f16, 1);
    // Auto takes them where they run for layers reading 16 channels (VKML_STACK_MMA=0 aside, which
    // the tests leave unset), not for 8.
    EXPECT_EQ(ops::FusedConvStack::create(dev(), d)->tensor_cores(), mma_here(dev()));
    EXPECT_FALSE(ops::FusedConvStack::create(dev(), make_desc({.c = 4}, s, gpu::DType::f32, gpu::DType::f16, 1))
                     ->tensor_cores());
    d.kernel = ops::StackKernel::Scalar;
    EXPECT_FALSE(ops::FusedConvStack::create(dev(), d)->tensor_cores());
    d.kernel = ops::StackKernel::TensorCores;
    if (!mma_here(dev()))
        expect_error([&] { (void)ops::FusedConvStack::create(dev(), d); }, {"FusedConvStack", "TensorCores", "NVIDIA"});
    d.smem = gpu::DType::f32;
    expect_error([&] { (void)ops::FusedConvStack::create(dev(), d); }, {"FusedConvStack", "smem must be f16"});
    // smem f32 asks for exact activations: Auto keeps the scalar kernel (two layers, so that it fits
    // llvmpipe's 32 KiB in f32).
    ConvStackDesc exact = make_desc({.c = 8, .layers = 2}, s, gpu::DType::f32, gpu::DType::f32, 1);
    EXPECT_FALSE(ops::FusedConvStack::create(dev(), exact)->tensor_cores());
}
