// Binary element-wise ops with numpy broadcasting, against the double-precision reference.
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
using gpu::Shape;
using ops::Activation;
using ops::ActivationKind;
using ops::BinaryKind;
using ops::MathPrecision;
namespace ref = ref_elementwise;
namespace em = elementwise_math;

bool is_compare(BinaryKind k) {
    return int(k) >= int(BinaryKind::Equal);
}
bool is_logic(BinaryKind k) {
    return k == BinaryKind::And || k == BinaryKind::Or || k == BinaryKind::Xor;
}

// Inputs suited to `kind`: positive bases for Pow; small integers for comparisons (so that equal
// pairs occur); 0/1 for logic; random nonzero floats otherwise.
HostTensor input_for(BinaryKind kind, const Shape& shape, DType dtype, uint32_t seed, bool second) {
    if (is_logic(kind)) return random_ints(shape, DType::u8, seed, 0, 1);
    if (is_compare(kind)) return random_ints(shape, dtype, seed, -3, 3);
    if (kind == BinaryKind::Pow && !second) return random_tensor(shape, dtype, seed, 0.1, 3.0);
    return random_tensor(shape, dtype, seed);
}

struct BinaryCase {
    std::string name;
    BinaryKind kind;
    int64_t fmod = 0;
    double tol32 = 2e-7, tol16 = 6e-4; // 0 = exact
    double tol16_math = 6e-4;          // f16 under half-precision math
};

void PrintTo(const BinaryCase& c, std::ostream* os) {
    *os << c.name;
}

// f32 tolerances from the Vulkan precision tables, as in elementwise_unary_test.cpp: add, sub and
// mul are correctly rounded (2e-7 covers 1 ULP); OpFDiv is 2.5 ULP (2.2e-7 over these inputs);
// pow is inherited from exp2(y * log2(x)), (3 + 2|y log2 x|) ULP plus log2's error scaled by |y|
// (2.1e-6 for x in [0.1, 3], y in [-2, 2]).
//
// Under MathPrecision::Auto on a device with shaderFloat16, f16 Add, Sub, Mul, Div and PRelu compute
// in half precision (has_f16_math); Pow, Mod and the comparisons keep fp32 math. Half-precision add,
// sub and mul are correctly rounded, the bound fp32 math has after its result is rounded to f16 on
// store: the same tolerance. Half-precision OpFDiv is 2.5 f16 ULP (for divisors in [2^-14, 2^14];
// the shader divides in fp32 outside), 2.5 * 2^-10 = 2.4e-3 relative per element at worst: 2.5e-3.
bool has_f16_math(BinaryKind k) {
    return k == BinaryKind::Add || k == BinaryKind::Sub || k == BinaryKind::Mul || k == BinaryKind::Div ||
           k == BinaryKind::PRelu;
}

std::vector<BinaryCase> cases() {
    return {
        {"Add", BinaryKind::Add},
        {"Sub", BinaryKind::Sub},
        {"Mul", BinaryKind::Mul},
        {"Div", BinaryKind::Div, 0, 2.5e-7, 6e-4, 2.5e-3},
        {"Pow", BinaryKind::Pow, 0, 2.5e-6, 1e-3},
        {"Mod", BinaryKind::Mod, 0},
        {"Fmod", BinaryKind::Mod, 1},
        {"Equal", BinaryKind::Equal, 0, 0, 0},
        {"Less", BinaryKind::Less, 0, 0, 0},
        {"LessOrEqual", BinaryKind::LessOrEqual, 0, 0, 0},
        {"Greater", BinaryKind::Greater, 0, 0, 0},
        {"GreaterOrEqual", BinaryKind::GreaterOrEqual, 0, 0, 0},
        {"And", BinaryKind::And, 0, 0, 0},
        {"Or", BinaryKind::Or, 0, 0, 0},
        {"Xor", BinaryKind::Xor, 0, 0, 0},
    };
}

// Checks the op in `math` (and that it chose the path the test expects).
void check(gpu::Device& dev, const BinaryCase& c, const HostTensor& a, const HostTensor& b,
           const std::string& what, Activation act = {}, int64_t expect_rank = -1,
           MathPrecision math = MathPrecision::Auto) {
    const auto op = ops::Binary::create(
        dev, {.kind = c.kind, .a = a.desc, .b = b.desc, .fmod = c.fmod, .activation = act, .math = math});
    const HostTensor want = ref::binary(c.kind, a, b, c.fmod, act);
    ASSERT_EQ(op->outputs()[0], want.desc) << what;
    if (expect_rank >= 0) {
        EXPECT_EQ(op->broadcast_rank(), uint32_t(expect_rank)) << what;
    }
    const bool f16_math = em::expect_f16_math(dev, a.desc.dtype, math, has_f16_math(c.kind));
    EXPECT_EQ(op->f16_math(), f16_math) << what;
    const auto out = run_op(dev, *op, {a, b}, 2);
    if (c.tol32 == 0 || a.desc.dtype == DType::i32) {
        HostTensor rounded = want;
        for (double& v : rounded.data) v = round_to(v, want.desc.dtype);
        expect_equal(out[0], rounded, what);
    } else {
        expect_close(out[0], want, tolerance(a.desc.dtype, c.tol32, f16_math ? c.tol16_math : c.tol16), what);
    }
}

// check() in every precision `a`'s dtype is tested in.
void check_all(gpu::Device& dev, const BinaryCase& c, const HostTensor& a, const HostTensor& b,
               const std::string& what, Activation act = {}, int64_t expect_rank = -1) {
    for (MathPrecision math : em::precisions(a.desc.dtype))
        check(dev, c, a, b, what + " " + em::name(math), act, expect_rank, math);
}

// Shape pairs covering each broadcast pattern, with the rank left after merging dimensions.
struct ShapePair {
    const char* name;
    Shape a, b;
    uint32_t rank;
};
std::vector<ShapePair> shape_pairs() {
    return {
        {"same", {4, 5, 13}, {4, 5, 13}, 0},
        {"scalar", {7, 11}, {}, 1},
        {"one", {1}, {3, 17}, 1},
        {"row", {13, 17}, {17}, 2},
        {"column", {13, 17}, {13, 1}, 2},
        {"middle", {3, 5, 7}, {5, 1}, 3},
        {"rank mismatch", {2, 3, 4, 5}, {4, 1}, 3},
        {"both sides", {3, 1, 5}, {1, 4, 1}, 3},
        {"merged", {2, 3, 4, 5}, {1, 1, 4, 5}, 2},
        {"rank 6", {2, 1, 3, 1, 5, 2}, {1, 3, 1, 4, 1, 2}, 6},
    };
}

class ElementwiseBinary : public GpuTest, public ::testing::WithParamInterface<BinaryCase> {};

// Every kind, every float dtype, on a flat shape and on a both-sides broadcast.
TEST_P(ElementwiseBinary, MatchesReference) {
    const BinaryCase& c = GetParam();
    const std::vector<DType> dtypes = is_logic(c.kind) ? std::vector<DType>{DType::u8} : float_dtypes(dev());
    for (DType dtype : dtypes) {
        for (const auto& [sa, sb] :
             {std::pair{Shape{5, 211}, Shape{5, 211}}, std::pair{Shape{3, 1, 5}, Shape{1, 4, 1}},
              std::pair{Shape{7, 1}, Shape{6, 7, 9}}}) {
            const HostTensor a = input_for(c.kind, sa, dtype, 3 + uint32_t(c.kind), false);
            const HostTensor b = input_for(c.kind, sb, dtype, 40 + uint32_t(c.kind), true);
            check_all(dev(), c, a, b, c.name + " " + gpu::dtype_name(dtype) + sa.str() + sb.str());
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Kinds, ElementwiseBinary, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<BinaryCase>& p) { return p.param.name; });

using ElementwiseBroadcast = GpuTest;

// Each broadcast pattern on an asymmetric op (Sub: a and b must not be swapped), a comparison and
// Mod, in both operand orders; also checks how far the dimensions merge.
TEST_F(ElementwiseBroadcast, Patterns) {
    for (DType dtype : float_dtypes(dev())) {
        for (const ShapePair& p : shape_pairs()) {
            for (const BinaryCase& c :
                 {BinaryCase{"Sub", BinaryKind::Sub}, BinaryCase{"Mod", BinaryKind::Mod},
                  BinaryCase{"Less", BinaryKind::Less, 0, 0, 0}}) {
                const std::string what = c.name + " " + p.name + " " + gpu::dtype_name(dtype);
                const HostTensor a = input_for(c.kind, p.a, dtype, 1, false);
                const HostTensor b = input_for(c.kind, p.b, dtype, 2, true);
                check_all(dev(), c, a, b, what, {}, p.rank);
                check_all(dev(), c, b, a, what + " swapped", {}, p.rank);
            }
        }
    }
}

// A scalar (rank 0) against a scalar: one element, rank-0 output.
TEST_F(ElementwiseBroadcast, Scalars) {
    const HostTensor a = random_tensor({}, DType::f32, 4), b = random_tensor({}, DType::f32, 5);
    check(dev(), {"Mul", BinaryKind::Mul}, a, b, "Mul scalar*scalar", {}, 0);
}

// A broadcast operand read across workgroup boundaries (3 x 1031 elements: 12 full groups of 256
// and a partial one), with a stride that is not a multiple of the workgroup size.
TEST_F(ElementwiseBroadcast, AcrossWorkgroups) {
    const HostTensor a = random_tensor({3, 1031}, DType::f32, 6), b = random_tensor({3, 1}, DType::f32, 7);
    check(dev(), {"Add", BinaryKind::Add}, a, b, "Add [3, 1031] + [3, 1]", {}, 2);
}

// Empty tensors are valid ONNX: the op records nothing (and the output keeps its shape).
TEST_F(ElementwiseBroadcast, EmptyTensors) {
    const auto op = ops::Binary::create(
        dev(), {.kind = BinaryKind::Add, .a = {{0, 5}, DType::f32}, .b = {{5}, DType::f32}});
    ASSERT_EQ(op->outputs()[0].shape, (Shape{0, 5}));
    gpu::Tensor a(dev(), {0, 5}, DType::f32), b(dev(), {5}, DType::f32), out(dev(), {0, 5}, DType::f32);
    const gpu::Tensor ins[] = {a, b};
    dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        op->record(cmd, ins, std::span<const gpu::Tensor>(&out, 1));
    });
}

using ElementwiseBinaryExtra = GpuTest;

TEST_F(ElementwiseBinaryExtra, Integers) {
    auto nonzero = [](HostTensor t) {
        for (double& v : t.data)
            if (v == 0) v = 7;
        return t;
    };
    const HostTensor a = random_ints({4, 9, 7}, DType::i32, 1, -50, 50);
    const HostTensor b = nonzero(random_ints({9, 1}, DType::i32, 2, -9, 9));
    for (const BinaryCase& c : {BinaryCase{"Add", BinaryKind::Add}, BinaryCase{"Sub", BinaryKind::Sub},
                                BinaryCase{"Mul", BinaryKind::Mul}, BinaryCase{"Div", BinaryKind::Div},
                                BinaryCase{"Mod", BinaryKind::Mod, 0}, BinaryCase{"Fmod", BinaryKind::Mod, 1},
                                BinaryCase{"Equal", BinaryKind::Equal}, BinaryCase{"Less", BinaryKind::Less},
                                BinaryCase{"GreaterOrEqual", BinaryKind::GreaterOrEqual}}) {
        check(dev(), c, a, b, "i32 " + c.name);
        check(dev(), c, b, nonzero(a), "i32 " + c.name + " swapped");
    }
}

// Equal on bools (u8), not only And/Or/Xor.
TEST_F(ElementwiseBinaryExtra, BoolEqual) {
    const HostTensor a = random_ints({6, 7}, DType::u8, 3, 0, 1), b = random_ints({7}, DType::u8, 4, 0, 1);
    check(dev(), {"Equal", BinaryKind::Equal, 0, 0, 0}, a, b, "u8 Equal");
}

// Signs of Mod's result, both fmod modes, including exact multiples and a quotient fp32 rounds up
// (1 / 0.1f rounds to 10, which naive a - b * trunc(a / b) turns into a tiny negative number).
TEST_F(ElementwiseBinaryExtra, ModSigns) {
    HostTensor a({8}, DType::f32), b({8}, DType::f32);
    a.data = {7, -7, 7, -7, 6, -6, 1, 5.5};
    b.data = {3, 3, -3, -3, 2, 4, double(0.1f), -2};
    for (int64_t fmod : {0, 1}) {
        const auto op =
            ops::Binary::create(dev(), {.kind = BinaryKind::Mod, .a = a.desc, .b = b.desc, .fmod = fmod});
        HostTensor want({8}, DType::f32);
        if (fmod)
            want.data = {1, -1, 1, -1, 0, -2, std::fmod(1.0, double(0.1f)), 1.5};
        else
            want.data = {1, 2, -2, -1, 0, 2, std::fmod(1.0, double(0.1f)), -0.5};
        for (double& v : want.data) v = double(float(v));
        expect_close(run_op(dev(), *op, {a, b})[0], want, 1e-7, "Mod fmod=" + std::to_string(fmod));
    }
}

// Negative bases with integral exponents keep C pow's signs; 0^0 = 1, 0^y = 0 for y > 0. f32
// tolerance: the spec's pow bound for |x| in [0.05, 2], |y| <= 3 (5.4e-6, led by 0.05^-3 where
// |y log2 x| = 13). Only the cases the shader decides without pow() are checked exactly: pow()
// itself need not return (-2)^3 = -8 exactly (log2(2) may be off by 2^-21).
TEST_F(ElementwiseBinaryExtra, PowSigns) {
    for (DType dtype : float_dtypes(dev())) {
        const HostTensor a = random_tensor({9, 11}, dtype, 8);
        const HostTensor b = random_ints({11}, dtype, 9, -3, 3);
        check(dev(), {"Pow", BinaryKind::Pow, 0, 6e-6, 1e-3}, a, b,
              std::string("Pow integral ") + gpu::dtype_name(dtype));
    }
    HostTensor a({3}, DType::f32), b({3}, DType::f32);
    a.data = {0, 0, 2};
    b.data = {0, 2, 0};
    check(dev(), {"Pow", BinaryKind::Pow, 0, 0, 0}, a, b, "Pow zeros");
}

// PRelu: the slope broadcasts to X (per channel, per element, scalar).
TEST_F(ElementwiseBinaryExtra, PRelu) {
    for (DType dtype : float_dtypes(dev())) {
        const HostTensor x = random_tensor({2, 5, 3, 7}, dtype, 10);
        for (const Shape& slope : {Shape{5, 1, 1}, Shape{2, 5, 3, 7}, Shape{7}, Shape{1}}) {
            const HostTensor s = random_tensor(slope, dtype, 11, 0.05, 0.9);
            check_all(dev(), {"PRelu", BinaryKind::PRelu, 0, 2e-7, 6e-4}, x, s,
                      std::string("PRelu ") + gpu::dtype_name(dtype) + slope.str());
        }
    }
}

// Every fused activation after an Add, with a broadcast operand. Under half-precision math the sum
// is rounded to f16 before the (fp32) activation, as an unfused Add would store it: that rounding
// (0.5 f16 ULP of the sum, scaled by the activation's slope) raises the RMS error over these inputs
// from 2.3e-4 (fp32 math, led by the f16 output rounding) to 3.5e-4 (HardSwish, the largest;
// SiLU, Gelu and Mish 3.4e-4): 1e-3 keeps the margin the 6e-4 of fp32 math has.
TEST_F(ElementwiseBinaryExtra, FusedActivations) {
    const std::vector<Activation> acts = {
        {ActivationKind::Relu},
        {ActivationKind::LeakyRelu, 0.1f},
        {ActivationKind::Clip, -0.5f, 1.5f},
        {ActivationKind::Sigmoid},
        {ActivationKind::HardSigmoid, 0.3f, 0.4f},
        {ActivationKind::HardSwish},
        {ActivationKind::Tanh},
        {ActivationKind::Silu},
        {ActivationKind::Gelu},
        {ActivationKind::Elu, 0.7f},
        {ActivationKind::Mish},
    };
    for (DType dtype : float_dtypes(dev())) {
        const HostTensor a = random_tensor({6, 37}, dtype, 12), b = random_tensor({37}, dtype, 13);
        for (const Activation& act : acts)
            check_all(dev(), {"Add", BinaryKind::Add, 0, 3e-7, 6e-4, 1e-3}, a, b,
                      std::string("Add+") + ops::activation_name(act.kind) + " " + gpu::dtype_name(dtype),
                      act);
    }
}

} // namespace
} // namespace vkml::test
