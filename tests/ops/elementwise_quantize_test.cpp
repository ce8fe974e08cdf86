// QuantizeLinear and DequantizeLinear against double-precision references written here: per tensor
// and per axis, uint8 and int8, with and without a zero point, f32 and f16 on the float side, at odd
// sizes on random data.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "op_test.hpp"
#include "vkml/ops/elementwise.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;

using ElementwiseQuantize = GpuTest;

// ONNX's rounding: half to even.
double round_even(double v) {
    return v - std::floor(v) == 0.5 ? 2.0 * std::round(v / 2.0) : std::round(v);
}

TEST_F(ElementwiseQuantize, RoundTripsMatchReference) {
    const Shape shape{3, 5, 7};
    std::vector<DType> floats = {DType::f32};
    if (dev().caps().storage16) floats.push_back(DType::f16);
    for (DType ft : floats)
        for (bool int8 : {false, true})
            for (int per_axis = 0; per_axis < 2; ++per_axis)
                for (bool has_zero : {true, false}) {
                    const std::string what = std::string(gpu::dtype_name(ft)) + (int8 ? " int8" : " uint8") +
                                             (per_axis ? " per axis" : " per tensor") + (has_zero ? "" : " no zero");
                    const Shape ps = per_axis ? Shape{5} : Shape{};
                    HostTensor scale = random_tensor(ps, DType::f32, 3, 0.01, 0.2, 0.01);
                    HostTensor zero = int8 ? random_ints(ps, DType::i32, 4, -20, 20) : random_ints(ps, DType::i32, 4, 100, 150);
                    const HostTensor x = random_tensor(shape, ft, 5, -20.0, 20.0);
                    const auto ch = [&](size_t i) { return per_axis ? (i / 7) % 5 : 0; };
                    ops::QuantizeDesc q{.input = x.desc, .scale = scale.desc, .axis = 1, .to_int8 = int8};
                    if (has_zero) q.zero_point = zero.desc;
                    auto quant = ops::Quantize::create(dev(), q);
                    HostTensor want(shape, int8 ? DType::i32 : DType::u8);
                    const double lo = int8 ? -128 : 0, hi = int8 ? 127 : 255;
                    for (size_t i = 0; i < x.size(); ++i) {
                        const double s = static_cast<float>(scale[ch(i)]);
                        const double z = has_zero ? zero[ch(i)] : 0;
                        want[i] = std::clamp(round_even(static_cast<float>(x[i] / s)) + z, lo, hi);
                    }
                    std::vector<HostTensor> in = {x, scale};
                    if (has_zero) in.push_back(zero);
                    const HostTensor got = run_op(dev(), *quant, in)[0];
                    expect_equal(got, want, "QuantizeLinear " + what);

                    ops::QuantizeDesc dq{.dequantize = true, .input = got.desc, .scale = scale.desc, .axis = -2, .float_dtype = ft};
                    if (has_zero) dq.zero_point = zero.desc;
                    auto deq = ops::Quantize::create(dev(), dq);
                    HostTensor back(shape, ft);
                    for (size_t i = 0; i < x.size(); ++i)
                        back[i] = (got[i] - (has_zero ? zero[ch(i)] : 0)) * static_cast<float>(scale[ch(i)]);
                    std::vector<HostTensor> din = {got, scale};
                    if (has_zero) din.push_back(zero);
                    expect_close(run_op(dev(), *deq, din)[0], back, tolerance(ft, 1e-6, 1e-3), "DequantizeLinear " + what);
                }
}

// DynamicQuantizeLinear: the range from the data (always holding 0), as ONNX defines it.
TEST_F(ElementwiseQuantize, DynamicMatchesReference) {
    std::vector<DType> floats = {DType::f32};
    if (dev().caps().storage16) floats.push_back(DType::f16);
    for (DType ft : floats)
        for (const auto& [lo, hi] : {std::pair{-3.0, 5.0}, std::pair{0.5, 7.0}, std::pair{-6.0, -0.25}}) {
            const HostTensor x = random_tensor({3, 11, 5}, ft, 9, lo, hi, 0.01);
            auto op = ops::DynamicQuantize::create(dev(), {x.desc});
            const auto got = run_op(dev(), *op, {x});
            double mn = 0, mx = 0;
            for (double v : x.data) {
                mn = std::min(mn, v);
                mx = std::max(mx, v);
            }
            const double scale = static_cast<float>((mx - mn) / 255.0);
            const double zero = round_even(std::clamp(-mn / scale, 0.0, 255.0));
            const std::string what = std::string(gpu::dtype_name(ft)) + " [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
            EXPECT_NEAR(got[1][0], scale, 1e-6 * scale) << what;
            EXPECT_EQ(got[2][0], zero) << what;
            // Vulkan lets x / scale be 2.5 ulp off (a reciprocal and a multiply): where the quotient
            // is that close to a tie (127.5 on an H100) either neighbour is right.
            for (size_t i = 0; i < x.size(); ++i) {
                const double exact = x[i] / scale;
                const double want = std::clamp(round_even(static_cast<float>(exact)) + zero, 0.0, 255.0);
                const bool tie = std::abs(exact - std::floor(exact) - 0.5) < 1e-5;
                if (tie)
                    EXPECT_LE(std::abs(got[0][i] - want), 1.0) << what << ": element " << i;
                else
                    EXPECT_EQ(got[0][i], want) << what << ": element " << i;
            }
        }
    EXPECT_THROW(ops::DynamicQuantize::create(dev(), {{{4}, DType::i32}}), Error);
}

TEST_F(ElementwiseQuantize, BadDescriptorsAreErrors) {
    const TensorDesc x{{2, 3}, DType::f32}, s{{}, DType::f32}, z{{}, DType::i32};
    EXPECT_THROW(ops::Quantize::create(dev(), {.input = x, .scale = {{4}, DType::f32}, .zero_point = {{{4}, DType::i32}}}), Error);
    EXPECT_THROW(ops::Quantize::create(dev(), {.input = x, .scale = s, .zero_point = {{{2}, DType::i32}}}), Error);
    EXPECT_THROW(ops::Quantize::create(dev(), {.input = {{2, 3}, DType::i32}, .scale = s, .zero_point = z}), Error);
    EXPECT_THROW(ops::Quantize::create(dev(), {.dequantize = true, .input = x, .scale = s, .zero_point = z}), Error);
    EXPECT_THROW(ops::Quantize::create(dev(), {.input = x, .scale = {{}, DType::f16}}), Error);
}

} // namespace
} // namespace vkml::test
