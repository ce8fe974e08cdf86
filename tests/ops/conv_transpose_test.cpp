// ConvTranspose against the double-precision reference (a scatter; the GPU kernel gathers), in
// f32 and f16 storage, plus descriptor errors.
#include <string>
#include <vector>

#include "op_test.hpp"
#include "ref/conv_ref.hpp"
#include "vkml/ops/conv.hpp"

namespace vkml::test {
namespace {

constexpr double convt_tol_f32 = 1e-5;
constexpr double convt_tol_f16 = 3e-3;

struct ConvTransposeCase {
    std::string name;
    gpu::Shape x, w; // [N, C, H, W] / [C, M/group, kH, kW] (or 1-D)
    std::vector<int64_t> strides, pads, dilations, output_padding, output_shape;
    std::string auto_pad = "NOTSET";
    int64_t group = 1;
    bool bias = true;
    ops::Activation act{};
    bool residual = false;
    gpu::Shape want_shape{}; // checked when given
};

class ConvTransposeTest : public GpuTest {
protected:
    void check(const ConvTransposeCase& c) {
        uint32_t seed = 7;
        for (char ch : c.name) seed = seed * 31 + uint32_t(ch);
        const int64_t m = c.w[1] * c.group;
        for (gpu::DType dt : float_dtypes(dev())) {
            const std::string what = c.name + " " + gpu::dtype_name(dt);
            const HostTensor x = random_tensor(c.x, dt, seed);
            const HostTensor w = random_tensor(c.w, dt, seed + 1, -1.0, 1.0);
            const HostTensor b = random_tensor({m}, dt, seed + 2);
            const ref_conv::ConvTransposeAttrs attrs{
                c.strides, c.pads, c.dilations, c.output_padding, c.output_shape, c.auto_pad, c.group};
            const HostTensor plain = ref_conv::conv_transpose(x, w, c.bias ? &b : nullptr, attrs);
            if (c.want_shape.rank()) {
                ASSERT_EQ(plain.shape(), c.want_shape) << what << " (reference)";
            }
            const HostTensor r = random_tensor(plain.shape(), dt, seed + 3);
            const HostTensor want = ref_conv::fuse(plain, c.residual ? &r : nullptr, c.act);
            std::unique_ptr<ops::ConvTranspose> op;
            try {
                op = ops::ConvTranspose::create(
                    dev(),
                    {.input = {c.x, dt},
                     .weight = {c.w, dt},
                     .bias = c.bias ? std::optional<TensorDesc>(TensorDesc{b.shape(), dt}) : std::nullopt,
                     .strides = c.strides,
                     .pads = c.pads,
                     .dilations = c.dilations,
                     .output_padding = c.output_padding,
                     .output_shape = c.output_shape,
                     .auto_pad = c.auto_pad,
                     .group = c.group,
                     .activation = c.act,
                     .residual = c.residual});
            } catch (const Error& e) {
                ADD_FAILURE() << what << ": " << e.what();
                continue;
            }
            ASSERT_EQ(op->outputs()[0].shape, want.shape()) << what;
            std::vector<HostTensor> in{x, w};
            if (c.bias) in.push_back(b);
            if (c.residual) in.push_back(r);
            const auto out = run_op(dev(), *op, in, 2);
            expect_close(out[0], want, tolerance(dt, convt_tol_f32, convt_tol_f16), what);
        }
    }
};

TEST_F(ConvTransposeTest, Stride2OutputPadding) {
    // H: 2 * 4 + 1 + 3 - 2 = 10; W: 2 * 6 + 1 + 3 - 2 = 14.
    check({"stride 2 pad 1 output_padding 1",
           {1, 3, 5, 7},
           {3, 5, 3, 3},
           {2, 2},
           {1, 1, 1, 1},
           {},
           {1, 1},
           {},
           "NOTSET",
           1,
           true,
           {},
           false,
           {1, 5, 10, 14}});
}

TEST_F(ConvTransposeTest, AsymmetricPadsDilation) {
    check({"asym pads dilation 2",
           {2, 5, 7, 5},
           {5, 3, 3, 2},
           {1, 2},
           {0, 2, 1, 1},
           {2, 2},
           {},
           {},
           "NOTSET",
           1,
           false});
}

TEST_F(ConvTransposeTest, Groups) {
    check({"group 2 stride 2 dil 2 outpad",
           {1, 4, 5, 7},
           {4, 3, 3, 3},
           {2, 2},
           {1, 0, 0, 1},
           {2, 2},
           {1, 0},
           {},
           "NOTSET",
           2});
    check({"depthwise stride 3",
           {2, 3, 5, 5},
           {3, 1, 4, 4},
           {3, 3},
           {1, 1, 1, 1},
           {},
           {2, 2},
           {},
           "NOTSET",
           3});
}

TEST_F(ConvTransposeTest, OutputShape) {
    // Full size 2 * 6 + 3 = 15 per axis; asking 13 x 14 leaves pads 2 and 1, the odd one at the
    // beginning (NOTSET) or at the end (SAME_UPPER).
    check({"output_shape",
           {1, 3, 7, 7},
           {3, 2, 3, 3},
           {2, 2},
           {},
           {},
           {},
           {13, 14},
           "NOTSET",
           1,
           true,
           {},
           false,
           {1, 2, 13, 14}});
    check(
        {"output_shape same_upper", {1, 3, 7, 7}, {3, 2, 3, 3}, {2, 2}, {}, {}, {}, {13, 14}, "SAME_UPPER"});
    check({"output_shape full rank", {1, 3, 7, 7}, {3, 2, 3, 3}, {2, 2}, {}, {}, {}, {1, 2, 14, 13}});
    // Larger than the full 5 x 5 output: negative pads (H: -1 -> begin 0, end -1 as ONNX's
    // floor halves give; W: -3 -> begin -1, end -2); the extra rows and columns are bias only.
    check({"output_shape beyond full",
           {1, 2, 3, 3},
           {2, 3, 3, 3},
           {},
           {},
           {},
           {},
           {6, 8},
           "NOTSET",
           1,
           true,
           {},
           false,
           {1, 3, 6, 8}});
}

TEST_F(ConvTransposeTest, EffectivePads) {
    auto pads = [&](std::vector<int64_t> output_shape, std::string auto_pad) {
        return ops::ConvTranspose::create(dev(), {.input = {{1, 2, 3, 3}},
                                                  .weight = {{2, 3, 3, 3}},
                                                  .output_shape = output_shape,
                                                  .auto_pad = auto_pad})
            ->pads();
    };
    using P = std::array<int64_t, 4>;                       // top, left, bottom, right
    EXPECT_EQ(pads({4, 3}, "NOTSET"), (P{1, 1, 0, 1}));     // totals 1 and 2
    EXPECT_EQ(pads({4, 3}, "SAME_UPPER"), (P{0, 1, 1, 1})); // the odd pad at the end
    EXPECT_EQ(pads({6, 8}, "NOTSET"), (P{0, -1, -1, -2}));
    EXPECT_EQ(pads({6, 8}, "SAME_UPPER"), (P{-1, -2, 0, -1}));
}

TEST_F(ConvTransposeTest, AutoPad) {
    // SAME_*: output = input * stride; total pad 1 + 4 - 2 = 3 (odd) per axis with output_padding 1.
    check({"SAME_UPPER",
           {1, 3, 5, 7},
           {3, 4, 4, 4},
           {2, 2},
           {},
           {},
           {1, 1},
           {},
           "SAME_UPPER",
           1,
           true,
           {},
           false,
           {1, 4, 10, 14}});
    check({"SAME_LOWER", {1, 3, 5, 7}, {3, 4, 4, 4}, {2, 2}, {}, {}, {1, 1}, {}, "SAME_LOWER"});
    check({"VALID",
           {1, 3, 5, 7},
           {3, 4, 3, 3},
           {2, 1},
           {},
           {},
           {},
           {},
           "VALID",
           1,
           true,
           {},
           false,
           {1, 4, 11, 9}});
}

TEST_F(ConvTransposeTest, OneDimensional) {
    check({"1-D", {2, 5, 7}, {5, 3, 3}, {2}, {1, 0}, {}, {1}, {}, "NOTSET", 1, true, {}, false, {2, 3, 15}});
}

TEST_F(ConvTransposeTest, FusedResidualAndActivation) {
    check({"residual leaky",
           {1, 4, 5, 7},
           {4, 3, 3, 3},
           {2, 2},
           {1, 1, 1, 1},
           {},
           {1, 1},
           {},
           "NOTSET",
           1,
           true,
           {ops::ActivationKind::LeakyRelu, 0.2f},
           true});
    check({"grouped residual sigmoid",
           {1, 4, 5, 5},
           {4, 1, 3, 3},
           {},
           {},
           {},
           {},
           {},
           "NOTSET",
           2,
           false,
           {ops::ActivationKind::Sigmoid},
           true});
}

TEST_F(ConvTransposeTest, DescriptorErrors) {
    const ops::ConvTransposeDesc good{.input = {{1, 4, 5, 5}}, .weight = {{4, 3, 3, 3}}};
    auto with = [&](auto edit) {
        ops::ConvTransposeDesc d = good;
        edit(d);
        return [d, this] { ops::ConvTranspose::create(dev(), d); };
    };
    expect_error(with([](auto& d) {
                     d.weight.shape = {5, 3, 3, 3};
                 }),
                 {"ConvTranspose", "weight", "channel mismatch"});
    expect_error(with([](auto& d) { d.group = 3; }), {"ConvTranspose", "group", "does not divide"});
    expect_error(with([](auto& d) {
                     d.pads = {1, 1};
                 }),
                 {"ConvTranspose", "pads", "expected 4 values, got 2"});
    expect_error(with([](auto& d) { d.output_padding = {1}; }),
                 {"ConvTranspose", "output_padding", "expected 2"});
    expect_error(with([](auto& d) {
                     d.output_shape = {9, 9, 9};
                 }),
                 {"ConvTranspose", "output_shape", "expected 2"});
    expect_error(with([](auto& d) {
                     d.output_shape = {2, 3, 9, 9};
                 }),
                 {"ConvTranspose", "output_shape", "batch and channels"});
    expect_error(with([](auto& d) { d.auto_pad = "same_upper"; }),
                 {"ConvTranspose", "auto_pad", "unknown value"});
    expect_error(with([](auto& d) {
                     d.pads = {4, 4, 4, 4};
                 }),
                 {"ConvTranspose", "pads", "crop the whole output"});
    expect_error(with([](auto& d) { d.bias = TensorDesc{{4}}; }), {"ConvTranspose", "bias", "expected [3]"});
    expect_error(with([](auto& d) { d.kernel_shape = {3, 2}; }), {"ConvTranspose", "kernel_shape"});
}

} // namespace
} // namespace vkml::test
