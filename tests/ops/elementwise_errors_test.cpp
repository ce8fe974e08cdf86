// Bad descriptors fail at create() with an error naming the op and the field.
#include "op_test.hpp"
#include "vkml/ops/elementwise.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using namespace vkml::ops;

using ElementwiseErrors = GpuTest;

TEST_F(ElementwiseErrors, Unary) {
    const TensorDesc f{{4, 5}, DType::f32}, i{{4, 5}, DType::i32}, b{{4, 5}, DType::u8},
        l{{4, 5}, DType::i64};
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::Exp, .input = i}); },
                 {"Exp", "input", "i32"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::Abs, .input = l}); },
                 {"Abs", "input", "i64"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::Not, .input = f}); }, {"Not", "input", "u8"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::Relu, .input = b}); },
                 {"Relu", "input", "u8"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::LeakyRelu, .input = f, .beta = 1.f}); },
                 {"LeakyRelu", "beta", "no beta"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::Exp, .input = f, .alpha = 1.f}); },
                 {"Exp", "alpha"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::Celu, .input = f, .alpha = 0.f}); },
                 {"Celu", "alpha", "nonzero"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::Elu, .input = f, .alpha = INFINITY}); },
                 {"Elu", "alpha", "finite"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::Gelu, .input = f, .approximate = "fast"}); },
                 {"Gelu", "approximate", "fast"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind::Tanh, .input = f, .approximate = "tanh"}); },
                 {"Tanh", "approximate"});
    expect_error(
        [&] {
            Unary::create(dev(), {.kind = UnaryKind::Abs, .input = i, .activation = {ActivationKind::Relu}});
        },
        {"Abs", "activation", "float"});
    expect_error(
        [&] {
            Unary::create(
                dev(), {.kind = UnaryKind::Abs, .input = f, .activation = {ActivationKind::Clip, 2.f, 1.f}});
        },
        {"Abs", "activation", "exceeds"});
    expect_error([&] { Unary::create(dev(), {.kind = UnaryKind(200), .input = f}); }, {"Unary", "kind"});
}

TEST_F(ElementwiseErrors, Binary) {
    const TensorDesc f34{{3, 4}, DType::f32}, f5{{5}, DType::f32}, h34{{3, 4}, DType::f16};
    const TensorDesc i34{{3, 4}, DType::i32}, b34{{3, 4}, DType::u8}, l34{{3, 4}, DType::i64};
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::Add, .a = f34, .b = f5}); },
                 {"Add", "inputs", "[3, 4]", "[5]", "do not broadcast"});
    expect_error(
        [&] {
            Binary::create(
                dev(), {.kind = BinaryKind::Mul, .a = {{2, 3, 1}, DType::f32}, .b = {{4, 2}, DType::f32}});
        },
        {"Mul", "inputs", "do not broadcast"});
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::Add, .a = f34, .b = h34}); },
                 {"Add", "b", "f16", "f32"});
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::Add, .a = l34, .b = l34}); },
                 {"Add", "a", "i64"});
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::Sub, .a = b34, .b = b34}); },
                 {"Sub", "a", "u8"});
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::And, .a = f34, .b = f34}); },
                 {"And", "a", "u8"});
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::Pow, .a = l34, .b = l34}); },
                 {"Pow", "a", "i64"});
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::BitShiftLeft, .a = f34, .b = f34}); },
                 {"BitShift", "a", "f32"});
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::Less, .a = l34, .b = l34}); },
                 {"Less", "a", "i64"});
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::Mod, .a = f34, .b = f34, .fmod = 2}); },
                 {"Mod", "fmod", "0 or 1"});
    expect_error([&] { Binary::create(dev(), {.kind = BinaryKind::Div, .a = f34, .b = f34, .fmod = 1}); },
                 {"Div", "fmod"});
    // PRelu's slope broadcasts to X only: X [4] with slope [3, 4] would grow X.
    expect_error(
        [&] {
            Binary::create(dev(), {.kind = BinaryKind::PRelu, .a = {{4}, DType::f32}, .b = f34});
        },
        {"PRelu", "b", "slope"});
    expect_error(
        [&] {
            Binary::create(
                dev(), {.kind = BinaryKind::Equal, .a = f34, .b = f34, .activation = {ActivationKind::Relu}});
        },
        {"Equal", "activation", "u8"});
    expect_error(
        [&] {
            Binary::create(
                dev(), {.kind = BinaryKind::Add, .a = i34, .b = i34, .activation = {ActivationKind::Relu}});
        },
        {"Add", "activation", "i32"});
    expect_error(
        [&] {
            Binary::create(dev(),
                           {.kind = BinaryKind::Add, .a = f34, .b = f34, .activation = {ActivationKind(99)}});
        },
        {"Add", "activation", "unknown"});
    // 70000^2 elements exceed the kernels' 32-bit indices (nothing is allocated at create()).
    expect_error(
        [&] {
            Binary::create(
                dev(), {.kind = BinaryKind::Add, .a = {{70000, 70000}, DType::f32}, .b = {{1}, DType::f32}});
        },
        {"Add", "elements", "32-bit"});
}

TEST_F(ElementwiseErrors, Variadic) {
    const TensorDesc f{{3, 4}, DType::f32}, h{{3, 4}, DType::f16}, i{{3, 4}, DType::i32};
    expect_error([&] { Variadic::create(dev(), {.kind = VariadicKind::Max}); },
                 {"Max", "inputs", "at least one"});
    expect_error(
        [&] {
            Variadic::create(dev(), {.kind = VariadicKind::Sum, .inputs = {f, f, h}});
        },
        {"Sum", "inputs[2]", "f16"});
    expect_error(
        [&] {
            Variadic::create(dev(), {.kind = VariadicKind::Mean, .inputs = {i, i}});
        },
        {"Mean", "inputs[0]", "i32"});
    expect_error(
        [&] {
            Variadic::create(dev(), {.kind = VariadicKind::Min, .inputs = {f, {{5}, DType::f32}}});
        },
        {"Min", "inputs", "do not broadcast"});
    expect_error(
        [&] {
            Variadic::create(dev(), {.kind = VariadicKind::Max, .inputs = {{{3}, DType::u8}}});
        },
        {"Max", "inputs[0]", "u8"});
}

TEST_F(ElementwiseErrors, Where) {
    const TensorDesc c{{3, 4}, DType::u8}, f{{3, 4}, DType::f32}, h{{3, 4}, DType::f16};
    expect_error([&] { Where::create(dev(), {.condition = f, .x = f, .y = f}); },
                 {"Where", "condition", "u8"});
    expect_error([&] { Where::create(dev(), {.condition = c, .x = f, .y = h}); }, {"Where", "y", "f16"});
    expect_error(
        [&] {
            Where::create(dev(), {.condition = c, .x = {{3, 4}, DType::i64}, .y = {{3, 4}, DType::i64}});
        },
        {"Where", "x", "i64"});
    expect_error(
        [&] {
            Where::create(dev(), {.condition = {{2, 1, 1}, DType::u8}, .x = f, .y = {{3, 1, 1}, DType::f32}});
        },
        {"Where", "inputs", "do not broadcast"});
}

TEST_F(ElementwiseErrors, Clip) {
    const TensorDesc f{{3, 4}, DType::f32};
    expect_error([&] { Clip::create(dev(), {.input = {{3}, DType::u8}}); }, {"Clip", "input", "u8"});
    expect_error(
        [&] {
            Clip::create(dev(), {.input = f, .min = TensorDesc{{3}, DType::f32}});
        },
        {"Clip", "min", "one value"});
    expect_error(
        [&] {
            Clip::create(dev(), {.input = f, .max = TensorDesc{{1}, DType::f16}});
        },
        {"Clip", "max", "f16"});
    expect_error(
        [&] {
            Clip::create(dev(), {.input = f, .min = TensorDesc{{}, DType::f32}, .min_value = 0.f});
        },
        {"Clip", "min_value", "together"});
    expect_error([&] { Clip::create(dev(), {.input = f, .max_value = NAN}); }, {"Clip", "max_value", "NaN"});
}

TEST_F(ElementwiseErrors, Cast) {
    expect_error(
        [&] {
            Cast::create(dev(), {.input = {{3}, DType::f32}, .to = DType::i32, .to_bool = true});
        },
        {"Cast", "to_bool", "u8"});
}

// The checks record() makes (from the Op base) also hold for these ops.
TEST_F(ElementwiseErrors, RecordChecksTensors) {
    const auto op =
        Binary::create(dev(), {.kind = BinaryKind::Add, .a = {{3, 4}, DType::f32}, .b = {{4}, DType::f32}});
    gpu::Tensor a(dev(), {3, 4}, DType::f32), wrong(dev(), {3}, DType::f32), out(dev(), {3, 4}, DType::f32);
    gpu::CommandBuffer cmd(dev(), gpu::QueueRole::Compute);
    cmd.begin();
    const gpu::Tensor ins[] = {a, wrong};
    expect_error([&] { op->record(cmd, ins, std::span<const gpu::Tensor>(&out, 1)); },
                 {"Add", "inputs[1]", "[3]"});
    cmd.end();
}

} // namespace
} // namespace vkml::test
