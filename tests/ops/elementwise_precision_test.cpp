// MathPrecision in the element-wise ops: which ops take the half-precision (f16a) kernel, and what
// only that kernel does: its result is an f16 before a fused activation sees it, and its division
// falls back to fp32 where half-precision division has no bound. Accuracy in both precisions is
// checked by each op's own tests (elementwise_unary/binary/misc_test.cpp).
#include <cmath>
#include <set>
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
using ops::BinaryKind;
using ops::MathPrecision;
using ops::UnaryKind;
using ops::VariadicKind;
namespace ref = ref_elementwise;
namespace em = elementwise_math;

using ElementwisePrecision = GpuTest;

// Every float kind of every element-wise op with a `math` field, f32 and f16, Auto and F32: only the
// kinds listed here, on f16 under Auto, on a device with shaderFloat16, compute in half precision.
TEST_F(ElementwisePrecision, PathSelection) {
    const std::set<UnaryKind> unary_f16 = {UnaryKind::Abs,   UnaryKind::Neg,       UnaryKind::Sign,
                                           UnaryKind::Relu,  UnaryKind::Floor,     UnaryKind::Ceil,
                                           UnaryKind::Round, UnaryKind::Reciprocal};
    const std::set<BinaryKind> binary_f16 = {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul,
                                             BinaryKind::Div, BinaryKind::PRelu};
    for (DType dtype : float_dtypes(dev())) {
        const ops::TensorDesc t{{4, 5}, dtype};
        for (MathPrecision math : {MathPrecision::Auto, MathPrecision::F32}) {
            const std::string where = std::string(gpu::dtype_name(dtype)) + " " + em::name(math);
            for (uint32_t k = 0; k <= uint32_t(ops::last_unary_kind); ++k) {
                const UnaryKind kind = UnaryKind(k);
                if (kind == UnaryKind::Not) continue; // bool only
                const auto op = ops::Unary::create(dev(), {.kind = kind, .input = t, .math = math});
                EXPECT_EQ(op->f16_math(), em::expect_f16_math(dev(), dtype, math, unary_f16.count(kind) > 0))
                    << ops::unary_name(kind) << " " << where;
            }
            for (uint32_t k = 0; k <= uint32_t(BinaryKind::GreaterOrEqual); ++k) {
                const BinaryKind kind = BinaryKind(k);
                const auto op = ops::Binary::create(dev(), {.kind = kind, .a = t, .b = t, .math = math});
                EXPECT_EQ(op->f16_math(), em::expect_f16_math(dev(), dtype, math, binary_f16.count(kind) > 0))
                    << ops::binary_name(kind) << " " << where;
            }
            for (VariadicKind kind :
                 {VariadicKind::Max, VariadicKind::Min, VariadicKind::Sum, VariadicKind::Mean}) {
                const auto op =
                    ops::Variadic::create(dev(), {.kind = kind, .inputs = {t, t, t}, .math = math});
                EXPECT_EQ(op->f16_math(), em::expect_f16_math(dev(), dtype, math, kind != VariadicKind::Mean))
                    << ops::variadic_name(kind) << " " << where;
            }
            const auto clip = ops::Clip::create(dev(), {.input = t, .min_value = -1.f, .math = math});
            EXPECT_EQ(clip->f16_math(), em::expect_f16_math(dev(), dtype, math, true)) << "Clip " << where;
        }
    }
}

// Under half-precision math the op's result is an f16 before the fused activation sees it, as an
// unfused graph would have stored it: -300 * 300 overflows f16 (to -inf, or to -65504 on a device
// that saturates) and LeakyRelu(0.1) keeps it at or beyond -6550.4, while in fp32 math the product
// -90000 fits and LeakyRelu gives -9000. So the result shows which arithmetic ran, not only the flag.
TEST_F(ElementwisePrecision, HalfResultFeedsTheFusedActivation) {
    if (!dev().caps().storage16 || !dev().caps().float16) GTEST_SKIP() << "the device has no shaderFloat16";
    HostTensor a({2}, DType::f16), b({2}, DType::f16);
    a.data = {-300, 2};
    b.data = {300, 3};
    for (MathPrecision math : {MathPrecision::Auto, MathPrecision::F32}) {
        const auto op = ops::Binary::create(dev(), {.kind = BinaryKind::Mul,
                                                    .a = a.desc,
                                                    .b = b.desc,
                                                    .activation = {ActivationKind::LeakyRelu, 0.1f},
                                                    .math = math});
        const HostTensor out = run_op(dev(), *op, {a, b})[0];
        EXPECT_EQ(out[1], 6.0) << em::name(math);
        if (math == MathPrecision::Auto) {
            EXPECT_TRUE(op->f16_math());
            EXPECT_TRUE((std::isinf(out[0]) && out[0] < 0) || std::abs(out[0] + 6550.4) < 8) << out[0];
        } else {
            EXPECT_FALSE(op->f16_math());
            EXPECT_EQ(out[0], -9000.0);
        }
    }
}

// Half-precision OpFDiv is bounded (2.5 ULP) only for divisors in [2^-14, 2^14]; the f16a kernel
// divides by larger ones in fp32 (within one f16 ULP after the store), so those keep the tolerance
// of fp32 math. Dividends of magnitude 100 to 1000 over divisors of 16400 to 65000 (either sign)
// keep the quotients in f16's normal range. (Reciprocal's fallback is not checked this way: 1 / x
// for |x| > 2^14 is an f16 subnormal, which a device may flush to zero on store in either path.)
TEST_F(ElementwisePrecision, DivisionByLargeDivisors) {
    if (!dev().caps().storage16) GTEST_SKIP() << "the device has no 16-bit storage";
    const HostTensor a = random_tensor({7, 23}, DType::f16, 31, -1000, 1000, 100);
    const HostTensor b = random_tensor({23}, DType::f16, 32, -65000, 65000, 16400);
    for (MathPrecision math : {MathPrecision::Auto, MathPrecision::F32}) {
        const auto op =
            ops::Binary::create(dev(), {.kind = BinaryKind::Div, .a = a.desc, .b = b.desc, .math = math});
        EXPECT_EQ(op->f16_math(), em::expect_f16_math(dev(), DType::f16, math, true));
        expect_close(run_op(dev(), *op, {a, b})[0], ref::binary(BinaryKind::Div, a, b), 6e-4,
                     std::string("Div by large divisors ") + em::name(math));
    }
}

TEST_F(ElementwisePrecision, UnknownPrecisionFails) {
    const ops::TensorDesc h{{4, 5}, DType::f16};
    const auto bad = MathPrecision(7);
    expect_error([&] { ops::Unary::create(dev(), {.kind = UnaryKind::Relu, .input = h, .math = bad}); },
                 {"Relu", "math", "unknown precision 7"});
    expect_error([&] { ops::Binary::create(dev(), {.kind = BinaryKind::Add, .a = h, .b = h, .math = bad}); },
                 {"Add", "math", "unknown precision 7"});
    expect_error(
        [&] {
            ops::Variadic::create(dev(), {.kind = VariadicKind::Sum, .inputs = {h, h}, .math = bad});
        },
        {"Sum", "math", "unknown precision 7"});
    expect_error([&] { ops::Clip::create(dev(), {.input = h, .math = bad}); },
                 {"Clip", "math", "unknown precision 7"});
}

} // namespace
} // namespace vkml::test
