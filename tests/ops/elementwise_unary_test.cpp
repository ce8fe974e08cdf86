// Unary element-wise ops and activations against the double-precision reference, f32 and f16
// storage, at odd sizes that leave a partial last workgroup.
#include <cmath>
#include <ostream>
#include <string>

#include "elementwise_math.hpp"
#include "op_test.hpp"
#include "ref/elementwise_ref.hpp"
#include "vkml/ops/elementwise.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using ops::Activation;
using ops::ActivationKind;
using ops::MathPrecision;
using ops::UnaryKind;
namespace ref = ref_elementwise;
namespace em = elementwise_math;

struct UnaryCase {
    std::string name;
    UnaryKind kind;
    double lo, hi;       // input range (values with |x| < 0.05 are avoided)
    double tol32, tol16; // relative error of the whole output; 0 = exact
    std::optional<float> alpha, beta, gamma;
    std::string approximate = "none";
};

// gtest names a failing case by this instead of dumping its bytes.
void PrintTo(const UnaryCase& c, std::ostream* os) {
    *os << c.name;
}

// The ONNX defaults the op should apply when an attribute is unset (the reference's own copy).
ref::UnaryParams params_of(const UnaryCase& c) {
    ref::UnaryParams p;
    switch (c.kind) {
    case UnaryKind::LeakyRelu:
        p.alpha = 0.01f;
        break;
    case UnaryKind::Elu:
    case UnaryKind::Celu:
    case UnaryKind::Swish:
    case UnaryKind::ThresholdedRelu:
        p.alpha = 1;
        break;
    case UnaryKind::Shrink:
        p.alpha = 0.5;
        break;
    case UnaryKind::Selu:
        p.alpha = 1.67326319217681884765625f;
        p.gamma = 1.05070102214813232421875f;
        break;
    case UnaryKind::HardSigmoid:
        p.alpha = 0.2f;
        p.beta = 0.5f;
        break;
    default:
        break;
    }
    if (c.alpha) p.alpha = *c.alpha;
    if (c.beta) p.beta = *c.beta;
    if (c.gamma) p.gamma = *c.gamma;
    p.gelu_tanh = c.approximate == "tanh";
    return p;
}

// f32 tolerances come from the Vulkan precision tables (appendix "Precision of Individual
// Operations"), not from one driver's results: add, sub and mul correctly rounded (1 ULP, as the
// rounding direction is the implementation's), OpFDiv 2.5 ULP, exp (3 + 2|x|) ULP, log 3 ULP
// outside [0.5, 2] and 2^-21 absolute inside, sqrt 4.5 ULP (1 / inversesqrt), each propagated to
// first order through the shader's formula for every input of the range; the relative L2 norm of
// those worst cases, rounded up, is the tolerance (e.g. Exp on [-4, 4]: 8.7e-7 -> 1e-6).
// Sin and Cos have no usable spec bound: 2^-11 absolute, and only inside [-pi, pi], an f16-grade
// allowance under which sin(x) evaluated in half precision would pass. They get 2e-6, about 2^-19
// of RMS error: room for range reduction of |x| <= 7 above CUDA's documented 2^-21.41 worst case of
// the hardware sine on [-pi, pi] (NVIDIA 580 measured 3.8e-7), and far below what a wrong function,
// argument or precision gives. f16 tolerances are the f16 rounding of the output (about 3e-4 RMS)
// plus the input's.
//
// Under MathPrecision::Auto on a device with shaderFloat16, f16 tensors of the kinds below compute
// in half precision; every other kind keeps fp32 math (and its f16 tolerance). The exact kinds stay
// exact (abs, neg, sign, max, floor, ceil and roundEven are exact in any precision). Reciprocal is
// one half-precision OpFDiv, 2.5 f16 ULP by the spec (the shader takes fp32 for divisors outside
// [2^-14, 2^14], where that bound does not hold): 2.5 * 2^-10 = 2.4e-3 relative for every element
// at worst, so 2.5e-3 (lavapipe, rounding correctly, is near the 3e-4 of the fp32 path).
bool has_f16_math(UnaryKind kind) {
    switch (kind) {
    case UnaryKind::Abs:
    case UnaryKind::Neg:
    case UnaryKind::Sign:
    case UnaryKind::Relu:
    case UnaryKind::Floor:
    case UnaryKind::Ceil:
    case UnaryKind::Round:
    case UnaryKind::Reciprocal:
        return true;
    default:
        return false;
    }
}
constexpr double reciprocal_f16_math_tol = 2.5e-3;

std::vector<UnaryCase> cases() {
    return {
        {"Abs", UnaryKind::Abs, -2, 2, 0, 0},
        {"Neg", UnaryKind::Neg, -2, 2, 0, 0},
        {"Exp", UnaryKind::Exp, -4, 4, 1e-6, 6e-4},
        {"Log", UnaryKind::Log, 0.05, 4, 4.5e-7, 6e-4},
        {"Sqrt", UnaryKind::Sqrt, 0.05, 4, 4e-7, 6e-4},
        {"Reciprocal", UnaryKind::Reciprocal, -2, 2, 2.5e-7, 6e-4},
        {"Floor", UnaryKind::Floor, -5, 5, 0, 0},
        {"Ceil", UnaryKind::Ceil, -5, 5, 0, 0},
        {"Round", UnaryKind::Round, -5, 5, 0, 0},
        {"Sin", UnaryKind::Sin, -7, 7, 2e-6, 6e-4},
        {"Cos", UnaryKind::Cos, -7, 7, 2e-6, 6e-4},
        {"Erf", UnaryKind::Erf, -3, 3, 1e-6, 6e-4},
        {"Sign", UnaryKind::Sign, -2, 2, 0, 0},
        {"Relu", UnaryKind::Relu, -2, 2, 0, 0},
        {"LeakyRelu", UnaryKind::LeakyRelu, -3, 3, 2e-7, 6e-4},
        {"LeakyReluAlpha", UnaryKind::LeakyRelu, -3, 3, 2e-7, 6e-4, 0.3f},
        {"Elu", UnaryKind::Elu, -3, 3, 3e-7, 6e-4},
        {"EluAlpha", UnaryKind::Elu, -3, 3, 3e-7, 6e-4, 0.4f},
        {"Selu", UnaryKind::Selu, -3, 3, 3e-7, 6e-4},
        {"SeluAttrs", UnaryKind::Selu, -3, 3, 3e-7, 6e-4, 1.3f, std::nullopt, 2.1f},
        {"Celu", UnaryKind::Celu, -3, 3, 3e-7, 6e-4},
        {"CeluAlpha", UnaryKind::Celu, -3, 3, 5e-7, 6e-4, 2.5f},
        {"Sigmoid", UnaryKind::Sigmoid, -8, 8, 3.5e-7, 6e-4},
        {"HardSigmoid", UnaryKind::HardSigmoid, -4, 4, 2e-7, 6e-4},
        {"HardSigmoidAttrs", UnaryKind::HardSigmoid, -4, 4, 3e-7, 6e-4, 0.35f, 0.3f},
        {"HardSwish", UnaryKind::HardSwish, -5, 5, 4.5e-7, 6e-4},
        {"Tanh", UnaryKind::Tanh, -5, 5, 4.5e-7, 6e-4},
        {"Softplus", UnaryKind::Softplus, -10, 10, 3e-7, 6e-4},
        {"Softsign", UnaryKind::Softsign, -4, 4, 3.5e-7, 6e-4},
        {"Mish", UnaryKind::Mish, -5, 5, 1e-6, 6e-4},
        {"Gelu", UnaryKind::Gelu, -4, 4, 4.5e-7, 6e-4},
        {"GeluTanh", UnaryKind::Gelu, -4, 4, 5e-7, 6e-4, std::nullopt, std::nullopt, std::nullopt, "tanh"},
        {"Swish", UnaryKind::Swish, -6, 6, 4.5e-7, 6e-4},
        {"SwishAlpha", UnaryKind::Swish, -6, 6, 4.5e-7, 6e-4, 1.7f},
        // The spec gives atan (and the asin/acos built on it) 4096 ULP, 4.9e-4 relative: the
        // tolerance; tan inherits sin / cos (2e-6 as Sin) amplified by 1 / cos^2 up to 7 at 1.2.
        {"Tan", UnaryKind::Tan, -1.2, 1.2, 1e-5, 1e-3},
        {"Asin", UnaryKind::Asin, -0.95, 0.95, 5e-4, 1e-3},
        {"Acos", UnaryKind::Acos, -0.95, 0.95, 5e-4, 1e-3},
        {"Atan", UnaryKind::Atan, -5, 5, 5e-4, 1e-3},
        {"Sinh", UnaryKind::Sinh, -4, 4, 2e-6, 6e-4},
        {"Cosh", UnaryKind::Cosh, -4, 4, 2e-6, 6e-4},
        {"Asinh", UnaryKind::Asinh, -5, 5, 2e-6, 6e-4},
        {"Acosh", UnaryKind::Acosh, 1.05, 6, 2e-6, 6e-4},
        {"Atanh", UnaryKind::Atanh, -0.9, 0.9, 2e-6, 6e-4},
        {"ThresholdedRelu", UnaryKind::ThresholdedRelu, -3, 3, 0, 0},
        {"ThresholdedReluAlpha", UnaryKind::ThresholdedRelu, -3, 3, 0, 0, 0.7f},
        {"Shrink", UnaryKind::Shrink, -3, 3, 2e-7, 6e-4},
        {"ShrinkAttrs", UnaryKind::Shrink, -3, 3, 2e-7, 6e-4, 1.25f, 0.5f},
    };
}

class ElementwiseUnary : public GpuTest, public ::testing::WithParamInterface<UnaryCase> {};

TEST_P(ElementwiseUnary, MatchesReference) {
    const UnaryCase& c = GetParam();
    for (DType dtype : float_dtypes(dev())) {
        for (MathPrecision math : em::precisions(dtype)) {
            // 1055 = 5 x 211 elements: four full workgroups of 256 and a partial one.
            for (const gpu::Shape& shape : {gpu::Shape{5, 211}, gpu::Shape{3, 1, 7}}) {
                const std::string what =
                    c.name + " " + gpu::dtype_name(dtype) + shape.str() + " " + em::name(math);
                const HostTensor x = random_tensor(shape, dtype, 11 + uint32_t(c.kind), c.lo, c.hi);
                const auto op = ops::Unary::create(dev(), {.kind = c.kind,
                                                           .input = x.desc,
                                                           .alpha = c.alpha,
                                                           .beta = c.beta,
                                                           .gamma = c.gamma,
                                                           .approximate = c.approximate,
                                                           .math = math});
                EXPECT_STREQ(op->type(), ops::unary_name(c.kind));
                ASSERT_EQ(op->outputs()[0], x.desc);
                const bool f16_math = em::expect_f16_math(dev(), dtype, math, has_f16_math(c.kind));
                EXPECT_EQ(op->f16_math(), f16_math) << what;
                const auto out = run_op(dev(), *op, {x}, 2);
                HostTensor want = ref::unary(c.kind, x, params_of(c));
                if (c.tol32 == 0) {
                    for (double& v : want.data) v = round_to(v, dtype);
                    expect_equal(out[0], want, what);
                } else {
                    const double tol16 = f16_math ? reciprocal_f16_math_tol : c.tol16;
                    expect_close(out[0], want, tolerance(dtype, c.tol32, tol16), what);
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Kinds, ElementwiseUnary, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<UnaryCase>& p) { return p.param.name; });

using ElementwiseUnaryExtra = GpuTest;

// ONNX Round rounds halves to even; floor(x + 0.5) would fail here.
TEST_F(ElementwiseUnaryExtra, RoundHalvesToEven) {
    for (DType dtype : float_dtypes(dev())) {
        HostTensor x({10}, dtype);
        x.data = {-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5, 0.49951171875};
        const auto op = ops::Unary::create(dev(), {.kind = UnaryKind::Round, .input = x.desc});
        HostTensor want({10}, dtype);
        want.data = {-4, -2, -2, -0, 0, 2, 2, 4, 4, 0};
        expect_equal(run_op(dev(), *op, {x})[0], want, std::string("Round ") + gpu::dtype_name(dtype));
    }
}

// Large arguments must not overflow into NaN (tanh and softplus of +-100).
TEST_F(ElementwiseUnaryExtra, SaturatingActivationsStayFinite) {
    HostTensor x({6}, DType::f32);
    x.data = {-100, -30, -10, 10, 30, 100};
    for (UnaryKind kind : {UnaryKind::Tanh, UnaryKind::Softplus, UnaryKind::Sigmoid, UnaryKind::Mish,
                           UnaryKind::Swish, UnaryKind::Gelu, UnaryKind::Softsign}) {
        const auto op = ops::Unary::create(dev(), {.kind = kind, .input = x.desc});
        ref::UnaryParams p;
        p.alpha = 1;
        expect_close(run_op(dev(), *op, {x})[0], ref::unary(kind, x, p), 1e-6, ops::unary_name(kind));
    }
}

TEST_F(ElementwiseUnaryExtra, IntegerKinds) {
    const HostTensor x = random_ints({7, 13}, DType::i32, 5, -1000, 1000);
    for (UnaryKind kind : {UnaryKind::Abs, UnaryKind::Neg, UnaryKind::Sign, UnaryKind::Relu}) {
        const auto op = ops::Unary::create(dev(), {.kind = kind, .input = x.desc});
        expect_equal(run_op(dev(), *op, {x})[0], ref::unary(kind, x, {}),
                     std::string("i32 ") + ops::unary_name(kind));
    }
}

TEST_F(ElementwiseUnaryExtra, Not) {
    const HostTensor x = random_ints({3, 37}, DType::u8, 8, 0, 1);
    const auto op = ops::Unary::create(dev(), {.kind = UnaryKind::Not, .input = x.desc});
    ASSERT_EQ(op->outputs()[0].dtype, DType::u8);
    expect_equal(run_op(dev(), *op, {x}, 2)[0], ref::unary(UnaryKind::Not, x, {}), "Not");
}

// A fused activation is applied to the op's result before the store. f32 tolerance as in cases():
// Sin's 2e-6 also covers the spec's worst case for the fused tanh (inherited from sinh / cosh,
// 1.6e-6 on [-2, 2]) and Exp (5e-7). Neg and Abs run in half precision under Auto, exactly, so the
// fp32 activation sees the same value either way; Reciprocal's division (2.5 f16 ULP, see cases())
// feeds Sigmoid, whose relative condition |x sigmoid'(x) / sigmoid(x)| < 1 for x > 0 and whose
// output at x < 0 is small: 2.5e-3 under half-precision math.
TEST_F(ElementwiseUnaryExtra, FusedActivation) {
    const std::vector<std::pair<UnaryKind, Activation>> combos = {
        {UnaryKind::Neg, {ActivationKind::Relu}},
        {UnaryKind::Exp, {ActivationKind::Clip, 0.5f, 2.f}},
        {UnaryKind::Sin, {ActivationKind::LeakyRelu, 0.2f}},
        {UnaryKind::Abs, {ActivationKind::Tanh}},
        {UnaryKind::Reciprocal, {ActivationKind::Sigmoid}},
    };
    for (DType dtype : float_dtypes(dev())) {
        const HostTensor x = random_tensor({9, 29}, dtype, 21);
        for (MathPrecision math : em::precisions(dtype)) {
            for (const auto& [kind, act] : combos) {
                const auto op = ops::Unary::create(
                    dev(), {.kind = kind, .input = x.desc, .activation = act, .math = math});
                const double tol16 = op->f16_math() && kind == UnaryKind::Reciprocal ? 2.5e-3 : 6e-4;
                expect_close(run_op(dev(), *op, {x})[0], ref::unary(kind, x, {}, act),
                             tolerance(dtype, 2e-6, tol16),
                             std::string(ops::unary_name(kind)) + "+" + ops::activation_name(act.kind) + " " +
                                 gpu::dtype_name(dtype) + " " + em::name(math));
            }
        }
    }
}

} // namespace
} // namespace vkml::test
