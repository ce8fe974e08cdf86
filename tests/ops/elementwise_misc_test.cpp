// Variadic Max/Min/Sum/Mean, Where and Clip against the double-precision reference.
#include <cmath>
#include <string>

#include "elementwise_math.hpp"
#include "op_test.hpp"
#include "ref/elementwise_ref.hpp"
#include "vkml/ops/elementwise.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using ops::Activation;
using ops::ActivationKind;
using ops::MathPrecision;
using ops::VariadicKind;
namespace ref = ref_elementwise;
namespace em = elementwise_math;

using ElementwiseVariadic = GpuTest;

// 1 to 4 inputs, broadcast against each other (the first two need not have the output's shape, and
// later ones fold into the output in place). Recorded twice: folding must restart from the inputs.
// Under MathPrecision::Auto (shaderFloat16 devices) f16 Max, Min and Sum compute in half precision:
// max and min are exact, and each step of Sum is a correctly rounded add whose result is stored in
// f16 anyway, the bound of fp32 math: the same tolerance. Mean keeps fp32 math.
TEST_F(ElementwiseVariadic, MatchesReference) {
    const std::vector<Shape> shapes = {{3, 1, 5}, {1, 4, 1}, {5}, {}};
    for (DType dtype : float_dtypes(dev())) {
        for (MathPrecision math : em::precisions(dtype)) {
            for (VariadicKind kind :
                 {VariadicKind::Max, VariadicKind::Min, VariadicKind::Sum, VariadicKind::Mean}) {
                for (size_t count = 1; count <= shapes.size(); ++count) {
                    std::vector<HostTensor> in;
                    std::vector<ops::TensorDesc> descs;
                    for (size_t i = 0; i < count; ++i) {
                        in.push_back(random_tensor(shapes[i], dtype, uint32_t(10 * count + i)));
                        descs.push_back(in.back().desc);
                    }
                    const auto op =
                        ops::Variadic::create(dev(), {.kind = kind, .inputs = descs, .math = math});
                    const HostTensor want = ref::variadic(kind, in);
                    ASSERT_EQ(op->outputs()[0], want.desc);
                    const std::string what = std::string(op->type()) + " x" + std::to_string(count) + " " +
                                             gpu::dtype_name(dtype) + " " + em::name(math);
                    EXPECT_EQ(op->f16_math(),
                              em::expect_f16_math(dev(), dtype, math, kind != VariadicKind::Mean))
                        << what;
                    expect_close(run_op(dev(), *op, in, 2)[0], want, tolerance(dtype, 2e-7, 6e-4), what);
                }
            }
        }
    }
}

// The later inputs may be larger than the first two: [5] and [1] grow into [2, 3, 5] only with the third.
TEST_F(ElementwiseVariadic, OutputShapeFromLaterInputs) {
    std::vector<HostTensor> in = {random_tensor({5}, DType::f32, 1), random_tensor({1}, DType::f32, 2),
                                  random_tensor({2, 3, 1}, DType::f32, 3)};
    const auto op = ops::Variadic::create(dev(), {.kind = VariadicKind::Sum,
                                                  .inputs = {in[0].desc, in[1].desc, in[2].desc},
                                                  .activation = {ActivationKind::Relu}});
    expect_close(run_op(dev(), *op, in, 2)[0], ref::variadic(VariadicKind::Sum, in, {ActivationKind::Relu}),
                 2e-7, "Sum+Relu");
}

TEST_F(ElementwiseVariadic, Integers) {
    std::vector<HostTensor> in = {random_ints({4, 1}, DType::i32, 1, -100, 100),
                                  random_ints({6}, DType::i32, 2, -100, 100),
                                  random_ints({4, 6}, DType::i32, 3, -100, 100)};
    for (VariadicKind kind : {VariadicKind::Max, VariadicKind::Min, VariadicKind::Sum}) {
        const auto op =
            ops::Variadic::create(dev(), {.kind = kind, .inputs = {in[0].desc, in[1].desc, in[2].desc}});
        expect_equal(run_op(dev(), *op, in)[0], ref::variadic(kind, in), std::string("i32 ") + op->type());
    }
}

using ElementwiseWhere = GpuTest;

TEST_F(ElementwiseWhere, MatchesReference) {
    struct Case {
        Shape c, x, y;
        uint32_t rank;
    };
    const std::vector<Case> cases = {
        {{4, 5, 6}, {4, 5, 6}, {4, 5, 6}, 0},
        {{4, 1, 6}, {5, 1}, {}, 3},
        {{1}, {3, 7}, {7}, 2},
        {{2, 1, 3}, {1, 5, 1}, {2, 5, 3}, 3},
    };
    std::vector<DType> dtypes = float_dtypes(dev());
    dtypes.push_back(DType::i32);
    dtypes.push_back(DType::u8);
    for (DType dtype : dtypes) {
        for (const Case& k : cases) {
            const HostTensor c = random_ints(k.c, DType::u8, 1, 0, 1);
            const bool is_int = dtype == DType::i32 || dtype == DType::u8;
            const HostTensor x = is_int ? random_ints(k.x, dtype, 2, 0, 200) : random_tensor(k.x, dtype, 2);
            const HostTensor y = is_int ? random_ints(k.y, dtype, 3, 0, 200) : random_tensor(k.y, dtype, 3);
            const auto op = ops::Where::create(dev(), {.condition = c.desc, .x = x.desc, .y = y.desc});
            EXPECT_EQ(op->broadcast_rank(), k.rank);
            const HostTensor want = ref::where(c, x, y);
            ASSERT_EQ(op->outputs()[0], want.desc);
            expect_equal(run_op(dev(), *op, {c, x, y}, 2)[0], want,
                         std::string("Where ") + gpu::dtype_name(dtype) + k.c.str() + k.x.str() + k.y.str());
        }
    }
}

using ElementwiseClip = GpuTest;

// Clip is exact in either precision (half-precision math rounds the attribute bounds to f16
// first, which for f16 inputs gives what fp32 math rounded on store gives); the bound 0.1 is not an
// f16 value, so rounding it is exercised.
TEST_F(ElementwiseClip, Attributes) {
    const float inf = INFINITY;
    for (DType dtype : float_dtypes(dev())) {
        const HostTensor x = random_tensor({7, 31}, dtype, 4, -3, 3);
        for (MathPrecision math : em::precisions(dtype)) {
            for (const auto& [lo, hi] :
                 {std::pair{-inf, inf}, std::pair{-0.5f, inf}, std::pair{-inf, 1.25f}, std::pair{-1.f, 0.75f},
                  std::pair{1.f, -1.f}, std::pair{-0.1f, 0.1f}}) {
                const auto op = ops::Clip::create(
                    dev(), {.input = x.desc, .min_value = lo, .max_value = hi, .math = math});
                const std::string what = "Clip [" + std::to_string(lo) + ", " + std::to_string(hi) + "] " +
                                         gpu::dtype_name(dtype) + " " + em::name(math);
                EXPECT_EQ(op->f16_math(), em::expect_f16_math(dev(), dtype, math, true)) << what;
                HostTensor want = ref::clip(x, round_to(lo, dtype), round_to(hi, dtype));
                for (double& v : want.data) v = round_to(v, dtype);
                expect_equal(run_op(dev(), *op, {x}, 2)[0], want, what);
            }
        }
    }
}

// min and max as one-element input tensors (rank 0 or [1]), each alone and together; min > max.
TEST_F(ElementwiseClip, InputTensors) {
    for (DType dtype : float_dtypes(dev())) {
        const HostTensor x = random_tensor({5, 13}, dtype, 5, -3, 3);
        HostTensor lo({}, dtype), hi({1}, dtype), big({}, dtype);
        lo.data = {-0.75};
        hi.data = {1.5};
        big.data = {2.5};
        struct Case {
            const HostTensor* min;
            const HostTensor* max;
        };
        for (const Case& c : {Case{&lo, nullptr}, Case{nullptr, &hi}, Case{&lo, &hi}, Case{&big, &hi}}) {
            for (MathPrecision math : em::precisions(dtype)) {
                ops::ClipDesc desc{.input = x.desc, .math = math};
                std::vector<HostTensor> in = {x};
                if (c.min) {
                    desc.min = c.min->desc;
                    in.push_back(*c.min);
                }
                if (c.max) {
                    desc.max = c.max->desc;
                    in.push_back(*c.max);
                }
                const auto op = ops::Clip::create(dev(), desc);
                ASSERT_EQ(op->inputs().size(), in.size());
                EXPECT_EQ(op->f16_math(), em::expect_f16_math(dev(), dtype, math, true));
                const HostTensor want =
                    ref::clip(x, c.min ? (*c.min)[0] : -INFINITY, c.max ? (*c.max)[0] : INFINITY);
                expect_equal(run_op(dev(), *op, in)[0], want,
                             std::string("Clip inputs ") + (c.min ? "min " : "") + (c.max ? "max " : "") +
                                 gpu::dtype_name(dtype) + " " + em::name(math));
            }
        }
    }
}

TEST_F(ElementwiseClip, Integers) {
    const HostTensor x = random_ints({3, 41}, DType::i32, 6, -20, 20);
    // Integer bounds from float attributes round inward: x >= -3.5 means x >= -3.
    const auto op = ops::Clip::create(dev(), {.input = x.desc, .min_value = -3.5f, .max_value = 7.9f});
    expect_equal(run_op(dev(), *op, {x})[0], ref::clip(x, -3, 7), "Clip i32 attributes");
    HostTensor lo({1}, DType::i32);
    lo.data = {-4};
    const auto op2 = ops::Clip::create(dev(), {.input = x.desc, .min = lo.desc});
    expect_equal(run_op(dev(), *op2, {x, lo})[0], ref::clip(x, -4, INFINITY), "Clip i32 min input");
}

} // namespace
} // namespace vkml::test
