// Conv against the double-precision reference: every kernel (direct, 1x1 GEMM, implicit GEMM) on
// every case it can run, in f32 and f16 storage, plus descriptor errors.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "op_test.hpp"
#include "ref/conv_ref.hpp"
#include "vkml/ops/conv.hpp"

namespace vkml::test {
namespace {

using ops::ActivationKind;
using ops::ConvKernel;

// fp32 accumulation: f32 results are within a few ulps; f16 ones carry the output rounding.
constexpr double conv_tol_f32 = 1e-5;
constexpr double conv_tol_f16 = 3e-3;
// f16 accumulation (ops::Accumulation::F16, tensor cores): see conv_accumulation_test.cpp.
constexpr double conv_tol_acc16 = 1e-2;

struct ConvCase {
    std::string name;
    gpu::Shape x, w; // [N, C, H, W] / [M, C/group, kH, kW] (or 1-D)
    std::vector<int64_t> strides, pads, dilations;
    std::string auto_pad = "NOTSET";
    int64_t group = 1;
    bool bias = true;
    ops::Activation act{};
    bool residual = false;
    ops::ConvPadMode pad_mode = ops::ConvPadMode::Zero;
    // A staged-window case: the conv_halo variant (shaders/conv.list) TensorCore must run it on,
    // split K off (it would take these small grids from the staged window). Checked where the
    // device has tensor cores and none of VKML_HALO_TILE, VKML_HALO_TALL_MIN and
    // VKML_DISABLE_CONV_HALO is set.
    const char* halo = nullptr;
    uint32_t halo_rows = 0; // ConvDesc::halo_rows
};

// Whether the staged-window variant Auto picks is the one the table in conv_common.cpp gives
// (not overridden for tuning).
bool halo_tiles_as_built() {
    const char* forced = std::getenv("VKML_HALO_TILE");
    const char* tall = std::getenv("VKML_HALO_TALL_MIN"); // moves the 8-/16-row boundary
    const char* off = std::getenv("VKML_DISABLE_CONV_HALO");
    return !forced && !tall && !(off && *off && std::string(off) != "0");
}

// x padded by `pads` ([begin..., end...] of the spatial axes) in a reflect or edge mode, so that
// the reference convolves it without padding.
HostTensor pad_spatial(const HostTensor& x, const std::vector<int64_t>& pads, ops::ConvPadMode mode) {
    const size_t s = x.shape().rank() - 2;
    const int64_t h = s == 2 ? x.shape()[2] : 1, w = x.shape()[s + 1];
    const int64_t pt = s == 2 ? pads[0] : 0, pb = s == 2 ? pads[2] : 0, pl = pads[s - 1], pr = pads[2 * s - 1];
    gpu::Shape shape = x.shape();
    if (s == 2) shape[2] = h + pt + pb;
    shape[s + 1] = w + pl + pr;
    HostTensor out(shape, x.desc.dtype);
    auto src = [&](int64_t i, int64_t n) {
        if (mode == ops::ConvPadMode::Edge) return std::clamp<int64_t>(i, 0, n - 1);
        i = i < 0 ? -i : i;
        return i >= n ? 2 * n - 2 - i : i;
    };
    const int64_t oh = h + pt + pb, ow = w + pl + pr, planes = x.shape()[0] * x.shape()[1];
    for (int64_t p = 0; p < planes; ++p)
        for (int64_t y = 0; y < oh; ++y)
            for (int64_t c = 0; c < ow; ++c)
                out[size_t((p * oh + y) * ow + c)] = x[size_t((p * h + src(y - pt, h)) * w + src(c - pl, w))];
    return out;
}

std::vector<ConvKernel> kernels_for(const ConvCase& c) {
    std::vector<ConvKernel> k{ConvKernel::Direct};
    const bool one = c.w.rank() == 4 ? c.w[2] == 1 && c.w[3] == 1 : c.w[2] == 1;
    bool no_pad = c.auto_pad == "NOTSET" || c.auto_pad == "VALID";
    for (int64_t p : c.pads) no_pad = no_pad && p == 0;
    bool unit_stride = true;
    for (int64_t s : c.strides) unit_stride = unit_stride && s == 1;
    if (c.group == 1) k.push_back(ConvKernel::ImplicitGemm);
    if (c.group == 1) k.push_back(ConvKernel::TensorCore); // where the device and dtype have them
    if (c.group == 1 && one && no_pad && unit_stride) k.push_back(ConvKernel::Gemm1x1);
    bool unit_dilation = true;
    for (int64_t d : c.dilations) unit_dilation = unit_dilation && d == 1;
    const int64_t kh = c.w.rank() == 4 ? c.w[2] : 1, kw = c.w.rank() == 4 ? c.w[3] : c.w[2];
    if (c.group == 1 && c.w[0] <= 8 && kh == kw && (kh == 1 || kh == 3 || kh == 5) && unit_stride && unit_dilation)
        k.push_back(ConvKernel::FewOutputs);
    return k;
}

class ConvTest : public GpuTest {
protected:
    // Runs `c` with every kernel that supports it (or just `only`) in every float dtype.
    void check(const ConvCase& c, std::vector<ConvKernel> only = {}) {
        const auto kernels = only.empty() ? kernels_for(c) : only;
        uint32_t seed = 1;
        for (char ch : c.name) seed = seed * 31 + uint32_t(ch);
        for (gpu::DType dt : float_dtypes(dev())) {
            const HostTensor x = random_tensor(c.x, dt, seed);
            const HostTensor w = random_tensor(c.w, dt, seed + 1, -1.0, 1.0);
            const HostTensor b = random_tensor({c.w[0]}, dt, seed + 2);
            const bool mirrored = c.pad_mode != ops::ConvPadMode::Zero;
            const ref_conv::ConvAttrs attrs{c.strides, mirrored ? std::vector<int64_t>{} : c.pads, c.dilations,
                                            c.auto_pad, c.group};
            const HostTensor plain = ref_conv::conv(mirrored ? pad_spatial(x, c.pads, c.pad_mode) : x, w,
                                                    c.bias ? &b : nullptr, attrs);
            const HostTensor r = random_tensor(plain.shape(), dt, seed + 3);
            const HostTensor want = ref_conv::fuse(plain, c.residual ? &r : nullptr, c.act);
            for (ConvKernel k : kernels) {
                if (k == ConvKernel::TensorCore && !ops::tensor_cores_available(dev(), dt)) continue;
                const std::string what = c.name + " " + gpu::dtype_name(dt) + " " + ops::conv_kernel_name(k);
                ops::ConvDesc d{.input = {c.x, dt},
                                .weight = {c.w, dt},
                                .bias = c.bias ? std::optional<TensorDesc>(TensorDesc{b.shape(), dt})
                                               : std::nullopt,
                                .strides = c.strides,
                                .pads = c.pads,
                                .dilations = c.dilations,
                                .auto_pad = c.auto_pad,
                                .group = c.group,
                                .pad_mode = c.pad_mode,
                                .activation = c.act,
                                .residual = c.residual,
                                .kernel = k,
                                .split_k = c.halo ? 1u : 0u,
                                .halo_small_grids = true,
                                .halo_rows = c.halo_rows};
                std::unique_ptr<ops::Conv> op;
                try {
                    op = ops::Conv::create(dev(), d);
                } catch (const Error& e) {
                    ADD_FAILURE() << what << ": " << e.what();
                    continue;
                }
                ASSERT_EQ(op->kernel(), k) << what;
                if (k == ConvKernel::TensorCore && c.halo && halo_tiles_as_built()) {
                    EXPECT_TRUE(op->halo()) << what;
                    EXPECT_EQ(std::string(op->halo_shader() ? op->halo_shader() : "none"), c.halo) << what;
                }
                ASSERT_EQ(op->outputs()[0].shape, want.shape()) << what;
                std::vector<HostTensor> in{x, w};
                if (c.bias) in.push_back(b);
                if (c.residual) in.push_back(r);
                const auto out = run_op(dev(), *op, in, 2);
                expect_close(out[0], want, tolerance(dt, conv_tol_f32, conv_tol_f16), what);
                if (op->halo()) { // the same case on the implicit GEMM
                    ops::ConvDesc plain_desc = d;
                    plain_desc.halo = false;
                    const auto gathered = ops::Conv::create(dev(), plain_desc);
                    ASSERT_FALSE(gathered->halo()) << what;
                    expect_close(run_op(dev(), *gathered, in, 2)[0], want, tolerance(dt, conv_tol_f32, conv_tol_f16),
                                 what + " without the staged window");
                }
                if (k == ConvKernel::TensorCore) { // the same variant summing in f16 (the f16c shaders)
                    ops::ConvDesc acc16 = d;
                    acc16.accumulation = ops::Accumulation::F16;
                    const auto op16 = ops::Conv::create(dev(), acc16);
                    ASSERT_EQ(op16->halo_shader() ? std::string(op16->halo_shader()) : "none",
                              op->halo_shader() ? std::string(op->halo_shader()) : "none")
                        << what;
                    EXPECT_EQ(op16->accumulation() == ops::Accumulation::F16, ops::f16_accumulation_available(dev(), dt))
                        << what;
                    expect_close(run_op(dev(), *op16, in, 2)[0], want, conv_tol_acc16, what + " f16 accumulation");
                }
                if (op->split_k() > 1) { // the same case without split K
                    d.split_k = 1;
                    const auto whole = ops::Conv::create(dev(), d);
                    ASSERT_EQ(whole->split_k(), 1u) << what;
                    expect_close(run_op(dev(), *whole, in, 2)[0], want, tolerance(dt, conv_tol_f32, conv_tol_f16),
                                 what + " unsplit");
                }
            }
        }
    }
};

TEST_F(ConvTest, Pad1Kernel3x3) {
    check({"3x3 pad 1", {1, 3, 7, 11}, {5, 3, 3, 3}, {}, {1, 1, 1, 1}, {}});
}

TEST_F(ConvTest, Stride2AsymmetricPads) {
    check({"3x3 stride 2 asym pads", {2, 5, 13, 11}, {7, 5, 3, 3}, {2, 2}, {0, 1, 2, 1}, {}});
}

TEST_F(ConvTest, Dilation2NonSquareKernel) {
    check({"5x3 dilation 2", {1, 3, 13, 13}, {4, 3, 5, 3}, {1, 2}, {2, 1, 0, 2}, {2, 2}, "NOTSET", 1, false});
}

TEST_F(ConvTest, TilesCrossingEveryBoundary) {
    // M = 67 > one 64-row tile, 2 * 9 * 11 = 198 pixels > three 64-column tiles, K = 19 * 9 = 171
    // not a multiple of the 16-deep K slice.
    check({"tile boundaries", {2, 19, 9, 11}, {67, 19, 3, 3}, {}, {1, 1, 1, 1}, {}});
}

TEST_F(ConvTest, Pointwise) {
    check({"1x1", {2, 7, 5, 11}, {6, 7, 1, 1}, {}, {}, {}});
    check({"1x1 no bias, big", {1, 67, 7, 11}, {70, 67, 1, 1}, {}, {}, {}, "NOTSET", 1, false});
}

TEST_F(ConvTest, PointwiseWithResidual) {
    // RDN's 1x1 fusion layers (68 -> 64 + residual): channel counts that are and are not whole
    // 16-deep K slices (on tensor cores the weights of 37 and 68 channels are padded to whole
    // 16-byte units), bias and residual, two images.
    check({"1x1 M32 C37 batch 2 residual", {2, 37, 4, 12}, {32, 37, 1, 1}, {}, {}, {}, "NOTSET", 1, true, {}, true});
    check({"1x1 M64 C68 residual", {1, 68, 8, 10}, {64, 68, 1, 1}, {}, {}, {}, "NOTSET", 1, true, {}, true});
    check({"1x1 M16 C64 no bias", {1, 64, 2, 8}, {16, 64, 1, 1}, {}, {}, {}, "NOTSET", 1, false});
}

TEST_F(ConvTest, PointwiseStrided) {
    // Strided 1x1 is not the GEMM path (pixels are skipped): direct and implicit GEMM.
    check({"1x1 stride 2", {1, 5, 11, 7}, {3, 5, 1, 1}, {2, 2}, {}, {}});
}

TEST_F(ConvTest, Grouped) {
    check({"group 3", {1, 6, 7, 11}, {9, 2, 3, 3}, {}, {1, 1, 1, 1}, {}, "NOTSET", 3});
}

TEST_F(ConvTest, Depthwise) {
    check({"depthwise stride 2", {2, 5, 11, 13}, {5, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "NOTSET", 5});
    check({"depthwise x2 dilation 2 same", {1, 3, 13, 11}, {6, 1, 5, 5}, {}, {}, {2, 2}, "SAME_UPPER", 3});
}

TEST_F(ConvTest, AutoPadSameUpper) {
    // Kernel 4x2 with stride 2 on 7x11 needs odd total pads (3 and 1): the extra goes at the end.
    check({"SAME_UPPER", {1, 3, 7, 11}, {5, 3, 4, 2}, {2, 2}, {}, {}, "SAME_UPPER"});
}

TEST_F(ConvTest, AutoPadSameLower) {
    check({"SAME_LOWER", {1, 3, 7, 11}, {5, 3, 4, 2}, {2, 2}, {}, {}, "SAME_LOWER"});
    check({"SAME_LOWER 3x3 dil", {1, 5, 11, 7}, {3, 5, 3, 3}, {1, 2}, {}, {2, 1}, "SAME_LOWER"});
}

TEST_F(ConvTest, AutoPadValid) {
    check({"VALID", {1, 3, 13, 11}, {5, 3, 3, 3}, {2, 2}, {}, {}, "VALID"});
    check({"VALID 1x1", {2, 5, 7, 7}, {3, 5, 1, 1}, {}, {}, {}, "VALID"});
}

TEST_F(ConvTest, OneDimensional) {
    check({"1-D", {2, 5, 13}, {3, 5, 3}, {2}, {1, 2}, {2}});
    check({"1-D pointwise", {2, 5, 13}, {3, 5, 1}, {}, {}, {}});
    check({"1-D depthwise", {1, 4, 11}, {4, 1, 5}, {}, {}, {}, "SAME_LOWER", 4});
}

TEST_F(ConvTest, FusedResidualAndActivation) {
    const ops::Activation relu{ActivationKind::Relu};
    check({"3x3 residual relu",
           {1, 5, 7, 11},
           {7, 5, 3, 3},
           {},
           {1, 1, 1, 1},
           {},
           "NOTSET",
           1,
           true,
           relu,
           true});
    check({"1x1 residual", {2, 7, 5, 5}, {3, 7, 1, 1}, {}, {}, {}, "NOTSET", 1, true, {}, true});
    check({"depthwise residual no bias silu",
           {1, 3, 7, 11},
           {3, 1, 3, 3},
           {},
           {1, 1, 1, 1},
           {},
           "NOTSET",
           3,
           false,
           {ActivationKind::Silu},
           true});
}

TEST_F(ConvTest, EveryActivation) {
    // Each activation on each kernel once (small shapes: each is a pipeline of its own).
    const std::vector<ops::Activation> acts{{ActivationKind::Relu},
                                            {ActivationKind::LeakyRelu, 0.1f},
                                            {ActivationKind::Clip, -0.5f, 1.5f},
                                            {ActivationKind::Sigmoid},
                                            {ActivationKind::HardSigmoid, 0.2f, 0.5f},
                                            {ActivationKind::HardSwish},
                                            {ActivationKind::Tanh},
                                            {ActivationKind::Silu},
                                            {ActivationKind::Gelu},
                                            {ActivationKind::Elu, 0.7f},
                                            {ActivationKind::Mish}};
    const std::vector<ConvKernel> kernels{ConvKernel::Direct, ConvKernel::ImplicitGemm, ConvKernel::Gemm1x1};
    for (size_t i = 0; i < acts.size(); ++i) {
        const ConvKernel k = kernels[i % kernels.size()];
        const bool pointwise = k == ConvKernel::Gemm1x1;
        check({std::string("act ") + ops::activation_name(acts[i].kind),
               {1, 3, 5, 7},
               {4, 3, pointwise ? 1 : 3, pointwise ? 1 : 3},
               {},
               {},
               {},
               pointwise ? "NOTSET" : "SAME_UPPER",
               1,
               true,
               acts[i],
               i % 2 == 0},
              {k});
    }
}

TEST_F(ConvTest, AlignedShapesTakeTheVectorPaths) {
    // Sizes whose rows, weights and planes are multiples of 8 elements: the tensor-core tile's
    // 16-byte loads (aligned and shifted windows), its 8-wide stores and the 1x1 GEMM form, next
    // to the scalar edges (pads, rows past 128 channels, K not a multiple of 8).
    const ops::Activation relu{ActivationKind::Relu};
    check({"aligned 3x3", {1, 8, 6, 16}, {40, 8, 3, 3}, {}, {1, 1, 1, 1}, {}});
    check({"aligned 3x3 residual relu", {1, 16, 5, 24}, {24, 16, 3, 3}, {}, {1, 1, 1, 1}, {}, "NOTSET", 1, true,
           relu, true});
    check({"aligned 3x3 stride 2 batch 2", {2, 16, 10, 32}, {24, 16, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}});
    check({"aligned 3x3 dilation 2", {1, 8, 12, 24}, {20, 8, 3, 3}, {}, {2, 2, 2, 2}, {2, 2}});
    check({"aligned 5x5 wide pads", {1, 8, 7, 16}, {16, 8, 5, 5}, {}, {2, 2, 2, 2}, {}});
    check({"aligned K 27", {1, 3, 8, 16}, {16, 3, 3, 3}, {}, {1, 1, 1, 1}, {}});
    check({"aligned 136 channels", {1, 8, 4, 16}, {136, 8, 3, 3}, {}, {1, 1, 1, 1}, {}, "NOTSET", 1, true, relu});
    check({"aligned 1x1", {2, 16, 4, 8}, {32, 16, 1, 1}, {}, {}, {}});
    // 32-channel multiples: the tensor-core tile walks K tap by tap (a 64-deep slice holds one tap
    // of 64 channels, or two taps of 32).
    check({"tap-major 3x3", {1, 64, 5, 16}, {24, 64, 3, 3}, {}, {1, 1, 1, 1}, {}});
    check({"tap-major 32 channels 3x3", {1, 32, 5, 16}, {24, 32, 3, 3}, {}, {1, 1, 1, 1}, {}});
    check({"tap-major 96 channels 3x3", {1, 96, 4, 8}, {16, 96, 3, 3}, {}, {1, 1, 1, 1}, {}});
    check({"tap-major 3x3 batch 2 residual relu", {2, 64, 4, 24}, {16, 64, 3, 3}, {}, {1, 1, 1, 1}, {}, "NOTSET", 1,
           true, relu, true});
    check({"tap-major 5x5 asymmetric pads", {1, 128, 6, 16}, {40, 128, 5, 5}, {}, {2, 1, 1, 3}, {}});
    check({"aligned 1x1 residual", {1, 24, 4, 16}, {16, 24, 1, 1}, {}, {}, {}, "NOTSET", 1, false, relu, true});
}

TEST_F(ConvTest, SplitKOnSmallGrids) {
    // One tensor-core tile of output and K = 67 * 9 = 603 (10 slices of 64, the last one short):
    // split into chunks summed by a second pass with bias, residual and activation; the check
    // also runs each case unsplit. Tap-major K (C = 64) split too, and a forced split of 3.
    const ops::Activation relu{ActivationKind::Relu};
    check({"split K", {1, 67, 5, 9}, {20, 67, 3, 3}, {}, {1, 1, 1, 1}, {}, "NOTSET", 1, true, relu, true});
    check({"split K tap-major", {1, 64, 4, 8}, {70, 64, 3, 3}, {}, {1, 1, 1, 1}, {}});
    // A 1x1 layer of one tile with 256 channels leaves the GEMM form for the split implicit GEMM.
    check({"split K 1x1", {1, 264, 5, 9}, {20, 264, 1, 1}, {}, {}, {}, "NOTSET", 1, true, relu, true});
    if (ops::tensor_cores_available(dev(), gpu::DType::f16)) {
        EXPECT_GT(ops::Conv::create(dev(), {.input = {{1, 264, 5, 9}, gpu::DType::f16},
                                            .weight = {{20, 264, 1, 1}, gpu::DType::f16}})
                      ->split_k(),
                  1u);
        auto op = ops::Conv::create(dev(), {.input = {{1, 67, 5, 9}, gpu::DType::f16},
                                            .weight = {{20, 67, 3, 3}, gpu::DType::f16},
                                            .pads = {1, 1, 1, 1},
                                            .kernel = ConvKernel::TensorCore,
                                            .split_k = 3});
        EXPECT_EQ(op->split_k(), 3u);
        EXPECT_GT(ops::Conv::create(dev(), {.input = {{1, 67, 5, 9}, gpu::DType::f16},
                                            .weight = {{20, 67, 3, 3}, gpu::DType::f16},
                                            .pads = {1, 1, 1, 1}})
                      ->split_k(),
                  1u);
    }
}

TEST_F(ConvTest, StagedWindowTiles) {
    // 3x3, 5x5 and 9x9 stride 1 on the tensor cores' staged-window kernel (conv/halo.comp) where the device has
    // them (elsewhere the other kernels run these cases): 16-channel chunks with the last one
    // short (C = 40), tiles of 8 rows x 32 columns cut by the image's edges (37 x 11), rows not
    // 16-byte aligned (W = 37) and aligned ones (W = 40, vector loads and stores), 32- and 64-row
    // channel blocks with a partial one (M = 20, 70), batches, every top/left pad from 0 to 2,
    // residual and activation. check() runs each case on the implicit GEMM too.
    const ops::Activation relu{ActivationKind::Relu};
    // Each case must run on the variant named (split K off: it would take these small grids from
    // the staged window).
    const auto window = [&](ConvCase c, const char* variant) {
        c.halo = variant;
        check(c);
    };
    window({"window C40 M20 W37", {1, 40, 11, 37}, {20, 40, 3, 3}, {}, {1, 1, 1, 1}, {}},
           "conv_halo_h32");
    window({"window C8 M3 16-row tile", {1, 8, 17, 35}, {3, 8, 3, 3}, {}, {1, 1, 1, 1}, {}},
           "conv_halo3m_h16");
    window({"window 5x5 C8 M12", {2, 8, 9, 16}, {12, 8, 5, 5}, {}, {2, 2, 2, 2}, {}},
           "conv_halo5_h16");
    window({"window 9x9 C16 M3", {1, 16, 12, 36}, {3, 16, 9, 9}, {}, {4, 4, 4, 4}, {}},
           "conv_halo9m_h32");
    window({"window 9x9 C8 M40 pads 8/0", {1, 8, 10, 33}, {40, 8, 9, 9}, {}, {8, 0, 0, 8}, {}},
           "conv_halo9_h32");
    window({"window C16 M70 W40 batch 2 residual relu", {2, 16, 9, 40}, {70, 16, 3, 3}, {}, {1, 1, 1, 1}, {},
            "NOTSET", 1, true, relu, true},
           "conv_halo_h64");
    window({"window pads 2/0 and 0/2", {1, 24, 10, 33}, {33, 24, 3, 3}, {}, {2, 0, 0, 2}, {}},
           "conv_halo_h64");
    window({"window valid", {1, 8, 12, 40}, {16, 8, 3, 3}, {}, {}, {}, "NOTSET", 1, false},
           "conv_halo_h16");
    // 16-row tiles (Auto's choice on large maps; asked for here): partial row blocks and tiles,
    // odd widths, two row blocks, batches, residual and activation, both pads.
    const auto tall = [&](ConvCase c, const char* variant) {
        c.halo_rows = 16;
        window(c, variant);
    };
    tall({"tall C40 M64 W37", {1, 40, 21, 37}, {64, 40, 3, 3}, {}, {1, 1, 1, 1}, {}}, "conv_halo_h64t");
    tall({"tall C16 M70 batch 2 residual relu", {2, 16, 18, 40}, {70, 16, 3, 3}, {}, {1, 1, 1, 1}, {}, "NOTSET", 1,
          true, relu, true},
         "conv_halo_h64t");
    tall({"tall C32 M24 pads 2/0", {1, 32, 19, 33}, {24, 32, 3, 3}, {}, {2, 0, 0, 2}, {}}, "conv_halo_h32t");
    tall({"tall C24 M12 W36 residual", {1, 24, 17, 36}, {12, 24, 3, 3}, {}, {1, 1, 1, 1}, {}, "NOTSET", 1, true, {},
          true},
         "conv_halo_h16w");
    tall({"tall 5x5 C16 M40 W41 relu", {1, 16, 20, 41}, {40, 16, 5, 5}, {}, {2, 2, 2, 2}, {}, "NOTSET", 1, true, relu},
         "conv_halo5_h64t");
    // ... and 8-row tiles asked for, and 16 where no 16-row variant runs the layer (9x9: 8 rows).
    window({"short C16 M64", {1, 16, 20, 33}, {64, 16, 3, 3}, {}, {1, 1, 1, 1}, {}, "NOTSET", 1, true, {}, false,
            ops::ConvPadMode::Zero, nullptr, 8},
           "conv_halo_h64");
    tall({"tall 9x9 C8 M20", {1, 8, 12, 33}, {20, 8, 9, 9}, {}, {4, 4, 4, 4}, {}}, "conv_halo9_h32");
    // 5x5: the weights come a kernel row at a time (five steps per channel chunk).
    window({"window 5x5 C24 M40 W41", {1, 24, 10, 41}, {40, 24, 5, 5}, {}, {2, 2, 2, 2}, {}, "NOTSET", 1, true,
            relu},
           "conv_halo5_h64");
    window({"window 5x5 pads 4/0 M20 W32", {1, 16, 9, 32}, {20, 16, 5, 5}, {}, {4, 0, 0, 4}, {}},
           "conv_halo5_h32");
    // Few input channels (C * KW <= 64 filling 3/4 of its chunks, C not a multiple of 8): the
    // kernel's columns folded into the channels. An RGB 9x9 first layer (aligned rows: shifted
    // 16-byte units), C * KW = 63 (four chunks, the last short) with pads 8/0, 3x3 C = 5 with a
    // partial 64-row block (3x3 C = 3 stays on the implicit GEMM: 9 of 16).
    window({"window fold 9x9 C3 M32 W40", {1, 3, 13, 40}, {32, 3, 9, 9}, {}, {4, 4, 4, 4}, {}},
           "conv_halo9f_h32");
    check({"window 3x3 C3 M20 W37 batch 2 (not folded)", {2, 3, 11, 37}, {20, 3, 3, 3}, {}, {1, 1, 1, 1}, {}});
    window({"window fold 9x9 C7 M12 pads 8/0", {1, 7, 10, 33}, {12, 7, 9, 9}, {}, {8, 0, 0, 8}, {}},
           "conv_halo9f_h16");
    // Few output channels (M * KW <= 32 at 9x9, 16 at 3x3): the kernel's columns folded into the
    // output rows (and "window 9x9 C16 M3", "window C8 M3" above).
    window({"window mfold 3x3 C24 M5 W37 batch 2 residual relu", {2, 24, 11, 37}, {5, 24, 3, 3}, {},
            {1, 1, 1, 1}, {}, "NOTSET", 1, true, relu, true},
           "conv_halo3m_h16");
    window({"window mfold 9x9 C8 M2 pads 8/0", {1, 8, 10, 33}, {2, 8, 9, 9}, {}, {8, 0, 0, 8}, {}},
           "conv_halo9m_h32");
    window({"window fold 3x3 C5 M70 relu", {1, 5, 9, 40}, {70, 5, 3, 3}, {}, {0, 2, 2, 0}, {}, "NOTSET", 1, true,
            relu},
           "conv_halo3f_h64");
    // Stride 2 (3x3 and 5x5, C a multiple of 8): tiles of 4 output rows x 32 columns, each reading a
    // window of 9 (5x5: 11) input rows by 72 (80) columns from column 2 ow0 - 8, or 2 ow0 where the
    // left pad is 0 (3x3). Odd input sizes, output rows and columns cut by the tiles (15 x 19, 9 x 32,
    // 11 x 23, ...), W a multiple of 8 (16-byte units) or not, left pads 0, 1 and 2 (and 4 at 5x5),
    // SAME_UPPER's 0/1 pads, a 16-channel chunk left half empty (C = 8, 24, 40), 16/32/64-row blocks
    // with a partial one (M = 48, 96; 5x5 M = 40 in two 32-row blocks), batches, residual and
    // activations.
    window({"window s2 C16 M16 37x29", {1, 16, 29, 37}, {16, 16, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}},
           "conv_halo_s2_h16");
    window({"window s2 C24 M32 W64 batch 2 relu", {2, 24, 18, 64}, {32, 24, 3, 3}, {2, 2}, {1, 1, 1, 1}, {},
            "NOTSET", 1, true, relu},
           "conv_halo_s2_h32");
    window({"window s2 C32 M48 pads 0/1 W80", {1, 32, 22, 80}, {48, 32, 3, 3}, {2, 2}, {0, 0, 1, 1}, {}},
           "conv_halo_s2_h64");
    window({"window s2 C40 M64 pads 2/0 W45", {1, 40, 21, 45}, {64, 40, 3, 3}, {2, 2}, {2, 2, 0, 0}, {}},
           "conv_halo_s2_h64");
    window({"window s2 C16 M96 pads 1,0/0,1 W72 residual silu", {1, 16, 16, 72}, {96, 16, 3, 3}, {2, 2},
            {1, 0, 0, 1}, {}, "NOTSET", 1, true, {ActivationKind::Silu}, true},
           "conv_halo_s2_h64");
    window({"window s2 C32 M20 SAME_UPPER W66", {1, 32, 30, 66}, {20, 32, 3, 3}, {2, 2}, {}, {}, "SAME_UPPER"},
           "conv_halo_s2_h32");
    window({"window s2 C8 M32 valid no bias", {1, 8, 13, 70}, {32, 8, 3, 3}, {2, 2}, {}, {}, "NOTSET", 1, false},
           "conv_halo_s2_h32");
    window({"window s2 C24 M5 W41 batch 2 pads 2/1", {2, 24, 11, 41}, {5, 24, 3, 3}, {2, 2}, {2, 1, 1, 2}, {}},
           "conv_halo_s2_h16");
    window({"window 5x5 s2 C24 M40 W43 relu", {1, 24, 19, 43}, {40, 24, 5, 5}, {2, 2}, {2, 2, 2, 2}, {},
            "NOTSET", 1, true, relu},
           "conv_halo5_s2_h32");
    window({"window 5x5 s2 C16 M12 pads 4/0 W40", {1, 16, 17, 40}, {12, 16, 5, 5}, {2, 2}, {4, 4, 0, 0}, {}},
           "conv_halo5_s2_h32");
    window({"window 5x5 s2 C16 M32 pads 0/1 W72", {1, 16, 12, 72}, {32, 16, 5, 5}, {2, 2}, {0, 0, 1, 1}, {}},
           "conv_halo5_s2_h32");
    // Auto's choices, as built (a forced VKML_HALO_TILE changes which layers have a variant and
    // how many workgroups a grid makes).
    if (ops::tensor_cores_available(dev(), gpu::DType::f16) && halo_tiles_as_built()) {
        const auto op = [&](gpu::Shape x, gpu::Shape w, std::vector<int64_t> strides) {
            return ops::Conv::create(dev(), {.input = {x, gpu::DType::f16},
                                             .weight = {w, gpu::DType::f16},
                                             .strides = strides,
                                             .pads = {1, 1, 1, 1}});
        };
        // (Auto: grids of at least VKML_HALO_MIN_GROUPS = 10 workgroups, unless K is split, which
        // such layers do only on grids of up to 4 GEMM tiles; tiles of 8 x 32)
        EXPECT_TRUE(op({1, 64, 64, 1024}, {64, 64, 3, 3}, {})->halo());
        EXPECT_TRUE(op({1, 64, 64, 128}, {64, 64, 3, 3}, {})->halo());  // 32 workgroups
        EXPECT_FALSE(op({1, 512, 7, 7}, {512, 512, 3, 3}, {})->halo()); // one tile: K split instead
        // YOLOv8n's 40x40 3x3 layers: 10 workgroups, 7 GEMM tiles (not split); its 20x20 ones:
        // 3 workgroups, below the minimum (the implicit GEMM, 2 tiles, splits K).
        EXPECT_TRUE(op({1, 64, 40, 40}, {64, 64, 3, 3}, {})->halo());
        EXPECT_EQ(op({1, 64, 40, 40}, {64, 64, 3, 3}, {})->split_k(), 1u);
        EXPECT_FALSE(op({1, 64, 20, 20}, {64, 64, 3, 3}, {})->halo());
        EXPECT_GT(op({1, 64, 20, 20}, {64, 64, 3, 3}, {})->split_k(), 1u);
        EXPECT_TRUE(op({1, 64, 64, 1024}, {64, 64, 5, 5}, {})->halo());
        EXPECT_FALSE(op({1, 60, 64, 1024}, {64, 60, 3, 3}, {})->halo());     // C not a multiple of 8
        // Stride 2: 3x3 and 5x5 on 4 x 32 tiles (a style network's 32 -> 64 downsampling at 1080p;
        // 64 x 512 outputs: 256 tiles); stride 2 in one axis only, stride 3, and C not a multiple
        // of 8 stay on the implicit GEMM.
        EXPECT_TRUE(op({1, 64, 128, 1024}, {64, 64, 3, 3}, {2, 2})->halo());
        EXPECT_TRUE(op({1, 32, 1080, 1920}, {64, 32, 3, 3}, {2, 2})->halo());
        EXPECT_TRUE(op({1, 64, 64, 1024}, {64, 64, 3, 3}, {2, 2})->halo()); // 128 workgroups
        EXPECT_TRUE(op({1, 64, 128, 1024}, {64, 64, 5, 5}, {2, 2})->halo());
        EXPECT_FALSE(op({1, 64, 128, 1024}, {64, 64, 3, 3}, {2, 1})->halo());
        EXPECT_FALSE(op({1, 64, 192, 1536}, {64, 64, 3, 3}, {3, 3})->halo());
        EXPECT_FALSE(op({1, 60, 128, 1024}, {64, 60, 3, 3}, {2, 2})->halo());
        EXPECT_FALSE(op({1, 64, 128, 1024}, {64, 64, 9, 9}, {2, 2})->halo());
        EXPECT_TRUE(op({1, 32, 64, 1024}, {3, 32, 9, 9}, {})->halo());
        EXPECT_FALSE(op({1, 64, 64, 1024}, {64, 64, 7, 7}, {})->halo());
        EXPECT_TRUE(op({1, 3, 64, 1024}, {32, 3, 9, 9}, {})->halo());   // folded: 27 virtual channels
        EXPECT_FALSE(op({1, 30, 64, 1024}, {32, 30, 3, 3}, {})->halo()); // 90 virtual channels
        EXPECT_FALSE(op({1, 3, 64, 1024}, {32, 3, 3, 3}, {})->halo());  // 9 virtual channels of 16
        EXPECT_EQ(op({1, 64, 64, 1024}, {4, 64, 3, 3}, {})->kernel(), ConvKernel::FewOutputs);
        EXPECT_TRUE(op({1, 64, 64, 1024}, {3, 64, 5, 5}, {})->halo()); // 5x5: the tensor cores
    }
}

TEST_F(ConvTest, ReflectAndEdgePadding) {
    // A reflect / edge Pad fused into its Conv (the style network pads every layer so): every
    // kernel maps padding positions to mirrored or repeated input ones. Covers pads up to the
    // axis size minus one, stride 2 (the implicit GEMM's strided gather), 1-D, the staged-window
    // kernel's edge units (W = 37 and 40: element-wise and 16-byte units) with 9x9 pads of 4, and
    // the tap-major implicit GEMM's padding rows (C = 32, W = 40), the folded staged window (C = 3).
    using ops::ConvPadMode;
    const ops::Activation relu{ActivationKind::Relu};
    for (ConvPadMode mode : {ConvPadMode::Reflect, ConvPadMode::Edge}) {
        const std::string m = mode == ConvPadMode::Reflect ? "reflect " : "edge ";
        ConvCase a{m + "3x3", {1, 3, 7, 11}, {5, 3, 3, 3}, {}, {1, 1, 1, 1}, {}};
        ConvCase b{m + "3x3 stride 2 pads 2/0", {2, 5, 9, 11}, {7, 5, 3, 3}, {2, 2}, {2, 0, 1, 2}, {}};
        ConvCase c{m + "1-D", {1, 4, 13}, {3, 4, 5}, {}, {2, 4}, {}};
        ConvCase d{m + "window C40 M20 W37", {1, 40, 11, 37}, {20, 40, 3, 3}, {}, {1, 1, 1, 1}, {}, "NOTSET", 1,
                   true, relu};
        ConvCase e{m + "window 9x9 C16 M3 W40", {1, 16, 12, 40}, {3, 16, 9, 9}, {}, {4, 4, 4, 4}, {}};
        ConvCase f{m + "tap-major C32 W40", {1, 32, 6, 40}, {40, 32, 3, 3}, {}, {1, 1, 1, 1}, {}};
        ConvCase g{m + "folded 9x9 C3 W40", {1, 3, 12, 40}, {32, 3, 9, 9}, {}, {4, 4, 4, 4}, {}};
        d.halo = "conv_halo_h32";
        e.halo = "conv_halo9m_h32";
        g.halo = "conv_halo9f_h32";
        // The stride-2 staged window (its edge units at W = 37 and 40, left pads 0, 1 and 2).
        ConvCase h{m + "window s2 C24 M32 W37", {1, 24, 15, 37}, {32, 24, 3, 3}, {2, 2}, {1, 1, 1, 1}, {},
                   "NOTSET", 1, true, relu};
        h.halo = "conv_halo_s2_h32";
        ConvCase i{m + "window s2 C16 M64 pads 2,2/1,0 W40", {1, 16, 14, 40}, {64, 16, 3, 3}, {2, 2},
                   {2, 2, 1, 0}, {}};
        i.halo = "conv_halo_s2_h64";
        ConvCase j{m + "window s2 C40 M16 pads 0/1 W38", {1, 40, 13, 38}, {16, 40, 3, 3}, {2, 2},
                   {0, 0, 1, 1}, {}};
        j.halo = "conv_halo_s2_h16";
        ConvCase l{m + "window 5x5 s2 C16 M20 W40", {1, 16, 13, 40}, {20, 16, 5, 5}, {2, 2}, {2, 2, 2, 2}, {}};
        l.halo = "conv_halo5_s2_h32";
        for (ConvCase* k : {&a, &b, &c, &d, &e, &f, &g, &h, &i, &j, &l}) {
            k->pad_mode = mode;
            check(*k);
        }
    }
    // Reflection reads position -p as p: a pad as large as the axis has nothing to mirror.
    EXPECT_THROW(ops::Conv::create(dev(), {.input = {{1, 3, 4, 9}},
                                           .weight = {{2, 3, 3, 3}},
                                           .pads = {4, 1, 1, 1},
                                           .pad_mode = ConvPadMode::Reflect}),
                 Error);
    EXPECT_NO_THROW(ops::Conv::create(dev(), {.input = {{1, 3, 4, 9}},
                                              .weight = {{2, 3, 3, 3}},
                                              .pads = {4, 1, 1, 1},
                                              .pad_mode = ConvPadMode::Edge}));
}

// conv/few.comp: 16-row x 64-column output tiles (cut here by 21 x 70 and 17 x 131), 4-channel
// input chunks with a short last one (C = 7, 13), 1-4 (MB 4) and 5-8 (MB 8) outputs, 1x1, 3x3 and
// 5x5 with pads from 0 to 2 on each side, batches, bias, residual and activation, and the reflect /
// edge paddings. Several tests, not one: on NVIDIA's driver each of these pipelines takes 5-20 s
// to compile (the kernel is unrolled over taps, channels and pixels), the 5x5 ones minutes, so the
// device script runs them in parallel processes.
const std::vector<ConvKernel> few_kernel{ConvKernel::FewOutputs};

TEST_F(ConvTest, FewOutputs3x3) {
    check({"few 3x3 M4", {1, 13, 21, 70}, {4, 13, 3, 3}, {}, {1, 1, 1, 1}, {}}, few_kernel);
    check({"few 3x3 M1 batch 2 no pad", {2, 7, 17, 131}, {1, 7, 3, 3}, {}, {}, {}}, few_kernel);
    // three 16-channel chunks of the tensor-core variant, the last one short; 8-row tiles cut by 11
    check({"few 3x3 M6 C37", {1, 37, 11, 70}, {6, 37, 3, 3}, {}, {1, 1, 1, 1}, {}}, few_kernel);
    ConvCase r{"reflect few 3x3 C32", {1, 32, 10, 19}, {3, 32, 3, 3}, {}, {1, 1, 1, 1}, {}};
    r.pad_mode = ops::ConvPadMode::Reflect;
    check(r, few_kernel);
}

TEST_F(ConvTest, FewOutputs3x3EightOutputsResidualRelu) {
    check({"few 3x3 M8 residual relu", {1, 9, 18, 66}, {8, 9, 3, 3}, {}, {0, 1, 2, 1}, {}, "NOTSET", 1, true,
           ops::Activation{ActivationKind::Relu}, true},
          few_kernel);
    // ... from 32 input channels on the tensor cores where they run
    check({"few 3x3 M8 C33 batch 2 residual relu", {2, 33, 9, 70}, {8, 33, 3, 3}, {}, {0, 1, 2, 1}, {}, "NOTSET", 1,
           true, ops::Activation{ActivationKind::Relu}, true},
          few_kernel);
}

TEST_F(ConvTest, FewOutputs5x5) {
    check({"few 5x5 M3 pads 2", {1, 5, 19, 67}, {3, 5, 5, 5}, {}, {2, 2, 2, 2}, {}}, few_kernel);
    check({"few 5x5 M6 asym pads no bias", {2, 4, 9, 29}, {6, 4, 5, 5}, {}, {1, 2, 0, 2}, {}, "NOTSET", 1, false},
          few_kernel);
}

TEST_F(ConvTest, FewOutputs1x1And1D) {
    check({"few 1x1 M7 silu", {1, 11, 17, 65}, {7, 11, 1, 1}, {}, {}, {}, "NOTSET", 1, true,
           {ActivationKind::Silu}},
          few_kernel);
    check({"few 1x1 pads 1 M2", {1, 6, 5, 9}, {2, 6, 1, 1}, {}, {1, 1, 1, 1}, {}}, few_kernel);
    check({"few 1-D 1x1", {2, 5, 13}, {3, 5, 1}, {}, {}, {}}, few_kernel);
}

TEST_F(ConvTest, FewOutputsReflectAndEdgePads) {
    for (ops::ConvPadMode mode : {ops::ConvPadMode::Reflect, ops::ConvPadMode::Edge}) {
        ConvCase c{std::string(mode == ops::ConvPadMode::Reflect ? "reflect" : "edge") + " few 3x3",
                   {1, 6, 18, 70}, {3, 6, 3, 3}, {}, {1, 1, 1, 1}, {}};
        c.pad_mode = mode;
        check(c, few_kernel);
        ConvCase d{std::string(mode == ops::ConvPadMode::Reflect ? "reflect" : "edge") + " few 5x5",
                   {1, 3, 17, 20}, {5, 3, 5, 5}, {}, {2, 2, 2, 2}, {}};
        d.pad_mode = mode;
        check(d, few_kernel);
    }
}

TEST_F(ConvTest, FewOutputsRejectsWhatItDoesNotRun) {
    for (const auto& [x, w, strides, dilations] :
         std::vector<std::tuple<gpu::Shape, gpu::Shape, std::vector<int64_t>, std::vector<int64_t>>>{
             {{1, 4, 9, 9}, {9, 4, 3, 3}, {}, {}},
             {{1, 4, 9, 9}, {4, 4, 3, 3}, {2, 2}, {}},
             {{1, 4, 9, 9}, {4, 4, 3, 3}, {}, {2, 2}},
             {{1, 4, 9, 9}, {4, 4, 7, 7}, {}, {}},
             {{1, 4, 9, 9}, {4, 4, 3, 1}, {}, {}}})
        EXPECT_THROW(ops::Conv::create(dev(), {.input = {x},
                                               .weight = {w},
                                               .strides = strides,
                                               .dilations = dilations,
                                               .kernel = ConvKernel::FewOutputs}),
                     Error)
            << w.str();
}

TEST_F(ConvTest, AutoChoosesKernelByShape) {
    auto kernel = [&](gpu::Shape x, gpu::Shape w, int64_t group, std::vector<int64_t> pads) {
        return ops::Conv::create(dev(), {.input = {x}, .weight = {w}, .pads = pads, .group = group})
            ->kernel();
    };
    EXPECT_EQ(kernel({1, 8, 9, 9}, {32, 8, 1, 1}, 1, {}), ConvKernel::Gemm1x1);
    EXPECT_EQ(kernel({1, 8, 9, 9}, {4, 8, 1, 1}, 1, {}), ConvKernel::Direct); // few channels
    EXPECT_EQ(kernel({1, 8, 9, 9}, {32, 8, 3, 3}, 1, {1, 1, 1, 1}), ConvKernel::ImplicitGemm);
    EXPECT_EQ(kernel({1, 8, 9, 9}, {31, 8, 3, 3}, 1, {1, 1, 1, 1}), ConvKernel::Direct); // few channels
    EXPECT_EQ(kernel({1, 8, 9, 9}, {8, 1, 3, 3}, 8, {1, 1, 1, 1}), ConvKernel::Direct);
    EXPECT_EQ(kernel({1, 8, 9, 9}, {4, 8, 1, 1}, 1, {1, 1, 1, 1}), ConvKernel::Direct);
    // FewOutputs: Auto takes it in f16 storage for 3x3 layers of up to 4 outputs whose rows are
    // whole 16-byte units (few.comp's form checked on real hardware), on any device; where the
    // tensor cores run (conv/few_mma.comp), for 3x3 layers of up to 8 outputs and any rows.
    const std::vector<gpu::DType> dtypes = float_dtypes(dev());
    const bool mma = ops::tensor_cores_available(dev(), gpu::DType::f16);
    if (std::find(dtypes.begin(), dtypes.end(), gpu::DType::f16) != dtypes.end()) {
        auto half = [&](gpu::Shape x, gpu::Shape w) {
            return ops::Conv::create(dev(), {.input = {x, gpu::DType::f16},
                                             .weight = {w, gpu::DType::f16},
                                             .pads = {1, 1, 1, 1}})
                ->kernel();
        };
        EXPECT_EQ(half({1, 8, 9, 16}, {4, 8, 3, 3}), ConvKernel::FewOutputs);
        EXPECT_EQ(half({1, 8, 9, 16}, {1, 8, 3, 3}), ConvKernel::FewOutputs);
        EXPECT_NE(half({1, 8, 9, 15}, {4, 8, 3, 3}), ConvKernel::FewOutputs); // rows not whole units
        EXPECT_NE(half({1, 8, 9, 16}, {5, 8, 3, 3}), ConvKernel::FewOutputs);
        // ... on the tensor cores from 32 input channels
        EXPECT_EQ(half({1, 32, 9, 15}, {4, 32, 3, 3}) == ConvKernel::FewOutputs, mma);
        EXPECT_EQ(half({1, 32, 9, 16}, {5, 32, 3, 3}) == ConvKernel::FewOutputs, mma);
        EXPECT_NE(half({1, 32, 9, 16}, {9, 32, 3, 3}), ConvKernel::FewOutputs);
        EXPECT_NE(half({1, 8, 9, 16}, {4, 8, 5, 5}), ConvKernel::FewOutputs);
    }
    // f16 storage takes the tensor cores where the device has them, from 12 output channels.
    if (ops::tensor_cores_available(dev(), gpu::DType::f16)) {
        auto f16 = [&](gpu::Shape x, gpu::Shape w, int64_t group) {
            return ops::Conv::create(dev(), {.input = {x, gpu::DType::f16},
                                             .weight = {w, gpu::DType::f16},
                                             .pads = {1, 1, 1, 1},
                                             .group = group})
                ->kernel();
        };
        EXPECT_EQ(f16({1, 8, 9, 9}, {12, 8, 3, 3}, 1), ConvKernel::TensorCore);
        EXPECT_EQ(f16({1, 6, 9, 9}, {11, 6, 3, 3}, 1), ConvKernel::Direct);
        // ... and at any count where the staged-window kernel runs the shape with 32 or more
        // input channels (a multiple of 8), unless FewOutputs takes the layer (3x3, up to 8
        // outputs on the tensor cores)
        EXPECT_EQ(f16({1, 32, 64, 1024}, {4, 32, 3, 3}, 1), ConvKernel::FewOutputs);
        EXPECT_EQ(f16({1, 32, 64, 1024}, {8, 32, 3, 3}, 1), ConvKernel::FewOutputs);
        EXPECT_EQ(f16({1, 32, 64, 1024}, {12, 32, 3, 3}, 1), ConvKernel::TensorCore);
        EXPECT_EQ(f16({1, 32, 64, 1024}, {4, 32, 5, 5}, 1), ConvKernel::TensorCore);
        EXPECT_EQ(f16({1, 24, 9, 9}, {4, 24, 3, 3}, 1), ConvKernel::Direct);
        EXPECT_EQ(f16({1, 8, 9, 9}, {8, 1, 3, 3}, 8), ConvKernel::Direct);
    } else {
        EXPECT_THROW(ops::Conv::create(dev(), {.input = {{1, 8, 9, 9}, gpu::DType::f32},
                                               .weight = {{16, 8, 3, 3}, gpu::DType::f32},
                                               .kernel = ConvKernel::TensorCore}),
                     Error);
    }
}

TEST_F(ConvTest, EffectivePads) {
    auto op = ops::Conv::create(
        dev(),
        {.input = {{1, 3, 7, 11}}, .weight = {{5, 3, 4, 2}}, .strides = {2, 2}, .auto_pad = "SAME_LOWER"});
    // H: out 4, total 3 -> 2 at the top; W: out 6, total 1 -> 1 at the left (SAME_LOWER).
    const std::array<int64_t, 4> want{2, 1, 1, 0};
    EXPECT_EQ(op->pads(), want);
    EXPECT_EQ(op->outputs()[0].shape, (gpu::Shape{1, 5, 4, 6}));
}

TEST_F(ConvTest, DescriptorErrors) {
    const ops::ConvDesc good{.input = {{1, 6, 7, 7}}, .weight = {{4, 6, 3, 3}}};
    auto with = [&](auto edit) {
        ops::ConvDesc d = good;
        edit(d);
        return [d, this] { ops::Conv::create(dev(), d); };
    };
    expect_error(with([](auto& d) {
                     d.weight.shape = {4, 5, 3, 3};
                 }),
                 {"Conv", "weight", "channel mismatch"});
    expect_error(with([](auto& d) { d.pads = {1, 1, 1}; }), {"Conv", "pads", "expected 4 values, got 3"});
    expect_error(with([](auto& d) { d.pads = {1, -1, 1, 1}; }), {"Conv", "pads", "below the minimum"});
    expect_error(with([](auto& d) {
                     d.group = 4;
                     d.weight.shape = {4, 1, 3, 3};
                 }),
                 {"Conv", "group", "does not divide the input's 6 channels"});
    expect_error(with([](auto& d) {
                     d.group = 3;
                     d.weight.shape = {4, 2, 3, 3};
                 }),
                 {"Conv", "group", "4 output channels"});
    expect_error(with([](auto& d) { d.auto_pad = "SAME"; }), {"Conv", "auto_pad", "unknown value 'SAME'"});
    expect_error(with([](auto& d) { d.halo_rows = 4; }), {"Conv", "halo_rows", "must be 0 (chosen by the grid), 8 or 16, not 4"});
    expect_error(with([](auto& d) {
                     d.auto_pad = "SAME_UPPER";
                     d.pads = {1, 1, 1, 1};
                 }),
                 {"Conv", "pads", "auto_pad"});
    expect_error(with([](auto& d) { d.kernel_shape = {3, 5}; }), {"Conv", "kernel_shape", "does not match"});
    expect_error(with([](auto& d) { d.kernel_shape = {3}; }), {"Conv", "kernel_shape", "expected 2 values"});
    expect_error(with([](auto& d) { d.strides = {1, 0}; }), {"Conv", "strides"});
    expect_error(with([](auto& d) { d.dilations = {1, 1, 1}; }), {"Conv", "dilations", "expected 2 values"});
    expect_error(with([](auto& d) { d.bias = TensorDesc{{5}}; }), {"Conv", "bias", "expected [4]"});
    expect_error(with([](auto& d) { d.weight.dtype = gpu::DType::f16; }), {"Conv", "weight", "f16"});
    expect_error(with([](auto& d) { d.input.dtype = gpu::DType::i32; }), {"Conv", "input", "f32 or f16"});
    expect_error(with([](auto& d) { d.weight.shape = {4, 6, 3}; }), {"Conv", "weight", "rank"});
    expect_error(with([](auto& d) { d.input.shape = {6, 7, 7}; }), {"Conv", "weight", "rank"});
    expect_error(with([](auto& d) { d.weight.shape = {4, 6, 9, 3}; }), {"Conv", "input", "smaller than"});
    expect_error(with([](auto& d) { d.kernel = ConvKernel::Gemm1x1; }), {"Conv", "kernel", "gemm1x1"});
    expect_error(with([](auto& d) {
                     d.group = 2;
                     d.weight.shape = {4, 3, 3, 3};
                     d.kernel = ConvKernel::ImplicitGemm;
                 }),
                 {"Conv", "kernel", "group 1"});
    expect_error(with([](auto& d) {
                     d.input.shape = {1, 6, 5, 7, 7};
                     d.weight.shape = {4, 6, 3, 3, 3};
                 }),
                 {"Conv", "3-D"});
    expect_error(with([](auto& d) { d.activation.kind = ActivationKind(200); }), {"Conv", "activation"});
}

TEST_F(ConvTest, RecordChecksTensors) {
    auto op = ops::Conv::create(dev(), {.input = {{1, 3, 5, 5}}, .weight = {{2, 3, 3, 3}}, .residual = true});
    EXPECT_EQ(op->inputs().size(), 3u); // X, W, residual
    const HostTensor x = random_tensor({1, 3, 5, 5}, gpu::DType::f32, 1);
    const HostTensor w = random_tensor({2, 3, 3, 3}, gpu::DType::f32, 2);
    expect_error([&] { run_op(dev(), *op, {x, w}); }, {"Conv", "inputs"});
    // Only the tensor-core kernels re-pack their weights: a prepacked range given to any other
    // kernel, or one too small, is an error naming the op.
    const gpu::DType dt = float_dtypes(dev()).back();
    for (ConvKernel k : {ConvKernel::Direct, ConvKernel::TensorCore}) {
        if (k == ConvKernel::TensorCore && !ops::tensor_cores_available(dev(), dt)) continue;
        const auto conv = ops::Conv::create(dev(), {.input = {{1, 32, 8, 8}, dt},
                                                    .weight = {{32, 32, 3, 3}, dt},
                                                    .pads = {1, 1, 1, 1},
                                                    .kernel = k});
        const uint64_t bytes = conv->prepack().bytes;
        EXPECT_EQ(bytes > 0, k == ConvKernel::TensorCore) << ops::conv_kernel_name(k);
        EXPECT_EQ(conv->prepack().input, 1u);
        gpu::Tensor tx(dev(), {1, 32, 8, 8}, dt, "x"), tw(dev(), {32, 32, 3, 3}, dt, "w"),
            ty(dev(), conv->outputs()[0].shape, dt, "y");
        gpu::Buffer small(dev(), gpu::BufferDesc{.size = 256, .name = "packed"});
        std::unique_ptr<gpu::Buffer> scratch;
        if (conv->scratch_bytes())
            scratch = std::make_unique<gpu::Buffer>(dev(), gpu::BufferDesc{.size = conv->scratch_bytes(), .name = "scratch"});
        const gpu::Tensor ins[] = {tx, tw}, outs[] = {ty};
        expect_error(
            [&] {
                dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
                    conv->record(cmd, ins, outs, scratch ? scratch->range() : gpu::BufferRange{}, small.range(0, 256));
                });
            },
            {"Conv", "prepacked", k == ConvKernel::TensorCore ? "needs" : "packs no input"});
    }
}

} // namespace
} // namespace vkml::test
