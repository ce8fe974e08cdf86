// IsNaN and IsInf (float in, bool out), BitShift and integer Pow (i32) against double-precision
// references written here, at odd sizes, in f32 and f16 storage for the float ops.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "op_test.hpp"
#include "vkml/ops/elementwise.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using ops::BinaryKind;
using ops::UnaryKind;

using ElementwiseClassify = GpuTest;

TEST_F(ElementwiseClassify, IsNaNAndIsInf) {
    const Shape shape{3, 7, 11};
    for (DType dt : {DType::f32, DType::f16}) {
        HostTensor x = random_tensor(shape, dt, 5, -70000.0, 70000.0);
        const double inf = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < x.size(); i += 7) x[i] = (i / 7) % 3 == 0 ? std::nan("") : ((i / 7) % 3 == 1 ? inf : -inf);
        {
            auto op = ops::Unary::create(dev(), {.kind = UnaryKind::IsNaN, .input = x.desc});
            ASSERT_EQ(op->outputs()[0].dtype, DType::u8);
            HostTensor want(shape, DType::u8);
            for (size_t i = 0; i < x.size(); ++i) want[i] = std::isnan(x[i]) ? 1 : 0;
            expect_equal(run_op(dev(), *op, {x})[0], want, std::string("IsNaN ") + gpu::dtype_name(dt));
        }
        for (int mode = 0; mode < 4; ++mode) {
            const bool neg = mode & 1, pos = mode & 2;
            auto op = ops::Unary::create(
                dev(), {.kind = UnaryKind::IsInf, .input = x.desc, .detect_negative = neg, .detect_positive = pos});
            HostTensor want(shape, DType::u8);
            // f16 storage: finite values past 65504 are stored as infinities.
            for (size_t i = 0; i < x.size(); ++i) {
                const double v = round_to(x[i], dt);
                want[i] = std::isinf(v) && (v > 0 ? pos : neg) ? 1 : 0;
            }
            expect_equal(run_op(dev(), *op, {x})[0], want,
                         std::string("IsInf ") + gpu::dtype_name(dt) + " mode " + std::to_string(mode));
        }
    }
}

TEST_F(ElementwiseClassify, RefusesWhatItLacks) {
    const TensorDesc i{{5}, DType::i32};
    EXPECT_THROW(ops::Unary::create(dev(), {.kind = UnaryKind::IsNaN, .input = i}), Error);
    const TensorDesc f{{5}, DType::f32};
    EXPECT_THROW(ops::Unary::create(dev(), {.kind = UnaryKind::Relu, .input = f, .detect_negative = false}), Error);
    EXPECT_THROW(ops::Unary::create(dev(), {.kind = UnaryKind::IsInf,
                                            .input = f,
                                            .activation = {.kind = ops::ActivationKind::Relu}}),
                 Error);
    EXPECT_THROW(ops::Binary::create(dev(), {.kind = BinaryKind::BitShiftLeft, .a = f, .b = f}), Error);
}

using ElementwiseIntegers = GpuTest;

// Shifts of random bit patterns (the harness moves values as floats, so the operands and the
// results stay exact in fp32: small values, negative ones shifted right by 28, counts past 31).
TEST_F(ElementwiseIntegers, BitShift) {
    HostTensor x = random_ints({5, 13}, DType::i32, 3, 1, 4095);
    HostTensor s = random_ints({5, 1}, DType::i32, 4, 0, 11);
    s[0] = 32;
    s[1] = 28;
    s[2] = 40;
    for (size_t c = 0; c < 13; ++c) x[13 + c] = -16.0 * double(c + 1); // row 1: negative, by 28
    for (BinaryKind kind : {BinaryKind::BitShiftLeft, BinaryKind::BitShiftRight}) {
        auto op = ops::Binary::create(dev(), {.kind = kind, .a = x.desc, .b = s.desc});
        HostTensor want({5, 13}, DType::i32);
        for (size_t r = 0; r < 5; ++r)
            for (size_t c = 0; c < 13; ++c) {
                const auto bits = static_cast<uint32_t>(static_cast<int32_t>(x[r * 13 + c]));
                const auto n = static_cast<uint32_t>(s[r]);
                const uint32_t v = n >= 32 ? 0u : (kind == BinaryKind::BitShiftLeft ? bits << n : bits >> n);
                want[r * 13 + c] = static_cast<double>(static_cast<int32_t>(v));
            }
        expect_equal(run_op(dev(), *op, {x, s})[0], want, op->type());
    }
}

// Integer powers by squaring, wrapping at 32 bits as integer multiplication does (2^31, 2^32).
TEST_F(ElementwiseIntegers, Pow) {
    HostTensor x = random_ints({7, 3}, DType::i32, 5, -9, 9);
    HostTensor y = random_ints({7, 3}, DType::i32, 6, -2, 7);
    const double cases[][2] = {{1, -3}, {-1, -3}, {2, 31}, {2, 32}, {-3, 0}, {0, 5}};
    for (size_t i = 0; i < 6; ++i) {
        x[i] = cases[i][0];
        y[i] = cases[i][1];
    }
    auto op = ops::Binary::create(dev(), {.kind = BinaryKind::Pow, .a = x.desc, .b = y.desc});
    HostTensor want({7, 3}, DType::i32);
    for (size_t i = 0; i < x.size(); ++i) {
        const auto b = static_cast<int64_t>(x[i]), e = static_cast<int64_t>(y[i]);
        uint32_t r = 1;
        if (e < 0) {
            r = b == 1 ? 1u : (b == -1 ? (e % 2 ? 0xffffffffu : 1u) : 0u);
        } else {
            for (int64_t k = 0; k < e; ++k) r *= static_cast<uint32_t>(static_cast<int32_t>(b));
        }
        want[i] = static_cast<double>(static_cast<int32_t>(r));
    }
    expect_equal(run_op(dev(), *op, {x, y})[0], want, "i32 Pow");
}

} // namespace
} // namespace vkml::test
