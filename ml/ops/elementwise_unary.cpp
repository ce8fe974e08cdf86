// Unary element-wise ops: one shader (elementwise_unary) whose operation is a specialization
// constant, so each op and fused activation compiles to straight-line code.
#include <cmath>

#include "elementwise_kernels.hpp"
#include "util.hpp"

namespace vkml::ops {

namespace {

using detail::elementwise::code_gelu_tanh;

// Which ONNX attributes each kind has, and their defaults.
struct UnaryAttrs {
    bool alpha = false, beta = false, gamma = false;
    float alpha_default = 0.f, beta_default = 0.f, gamma_default = 0.f;
};

UnaryAttrs attrs_of(UnaryKind kind) {
    switch (kind) {
    case UnaryKind::LeakyRelu:
        return {.alpha = true, .alpha_default = 0.01f};
    case UnaryKind::Elu:
    case UnaryKind::Celu:
    case UnaryKind::Swish:
    case UnaryKind::ThresholdedRelu:
        return {.alpha = true, .alpha_default = 1.f};
    case UnaryKind::Shrink:
        return {.alpha = true, .beta = true, .alpha_default = 0.5f, .beta_default = 0.f};
    case UnaryKind::Selu:
        return {.alpha = true,
                .gamma = true,
                .alpha_default = 1.67326319217681884765625f,
                .gamma_default = 1.05070102214813232421875f};
    case UnaryKind::HardSigmoid:
        return {.alpha = true, .beta = true, .alpha_default = 0.2f, .beta_default = 0.5f};
    default:
        return {};
    }
}

// Kinds with a half-precision path (elementwise_unary_f16a's apply_half): exact in f16 (Abs, Neg,
// Sign, Relu, Floor, Ceil, Round) or one bounded division (Reciprocal, 2.5 ULP). Everything else is
// transcendental (exp, log, sin, erf and the activations built on them: f16 loses accuracy and
// overflows in intermediates such as exp(12)), takes an fp32 attribute that f16 would round
// (LeakyRelu, HardSigmoid, ...), cancels (HardSwish near -3) or is inherited from several
// half-precision steps (Sqrt, Softsign), and stays in fp32.
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

bool allows_i32(UnaryKind kind) {
    return kind == UnaryKind::Abs || kind == UnaryKind::Neg || kind == UnaryKind::Sign ||
           kind == UnaryKind::Relu;
}

} // namespace

const char* unary_name(UnaryKind kind) {
    switch (kind) {
    case UnaryKind::Abs:
        return "Abs";
    case UnaryKind::Neg:
        return "Neg";
    case UnaryKind::Exp:
        return "Exp";
    case UnaryKind::Log:
        return "Log";
    case UnaryKind::Sqrt:
        return "Sqrt";
    case UnaryKind::Reciprocal:
        return "Reciprocal";
    case UnaryKind::Floor:
        return "Floor";
    case UnaryKind::Ceil:
        return "Ceil";
    case UnaryKind::Round:
        return "Round";
    case UnaryKind::Sin:
        return "Sin";
    case UnaryKind::Cos:
        return "Cos";
    case UnaryKind::Erf:
        return "Erf";
    case UnaryKind::Sign:
        return "Sign";
    case UnaryKind::Not:
        return "Not";
    case UnaryKind::Relu:
        return "Relu";
    case UnaryKind::LeakyRelu:
        return "LeakyRelu";
    case UnaryKind::Elu:
        return "Elu";
    case UnaryKind::Selu:
        return "Selu";
    case UnaryKind::Celu:
        return "Celu";
    case UnaryKind::Sigmoid:
        return "Sigmoid";
    case UnaryKind::HardSigmoid:
        return "HardSigmoid";
    case UnaryKind::HardSwish:
        return "HardSwish";
    case UnaryKind::Tanh:
        return "Tanh";
    case UnaryKind::Softplus:
        return "Softplus";
    case UnaryKind::Softsign:
        return "Softsign";
    case UnaryKind::Mish:
        return "Mish";
    case UnaryKind::Gelu:
        return "Gelu";
    case UnaryKind::Swish:
        return "Swish";
    case UnaryKind::Tan:
        return "Tan";
    case UnaryKind::Asin:
        return "Asin";
    case UnaryKind::Acos:
        return "Acos";
    case UnaryKind::Atan:
        return "Atan";
    case UnaryKind::Sinh:
        return "Sinh";
    case UnaryKind::Cosh:
        return "Cosh";
    case UnaryKind::Asinh:
        return "Asinh";
    case UnaryKind::Acosh:
        return "Acosh";
    case UnaryKind::Atanh:
        return "Atanh";
    case UnaryKind::ThresholdedRelu:
        return "ThresholdedRelu";
    case UnaryKind::Shrink:
        return "Shrink";
    case UnaryKind::IsNaN:
        return "IsNaN";
    case UnaryKind::IsInf:
        return "IsInf";
    }
    return "Unary";
}

std::unique_ptr<Unary> Unary::create(gpu::Device& device, const UnaryDesc& desc) {
    if (uint32_t(desc.kind) > uint32_t(last_unary_kind))
        fail("Unary", "kind", "unknown kind " + std::to_string(uint32_t(desc.kind)));
    const char* name = unary_name(desc.kind);
    const DType dtype = desc.input.dtype;
    const bool classify = desc.kind == UnaryKind::IsNaN || desc.kind == UnaryKind::IsInf;
    if (classify) {
        if (dtype != DType::f32 && dtype != DType::f16)
            fail(name, "input", std::string("must be f32 or f16, is ") + gpu::dtype_name(dtype));
        if (desc.activation.kind != ActivationKind::None)
            fail(name, "activation", "a bool result takes no fused activation");
    } else if (desc.kind == UnaryKind::Not) {
        if (dtype != DType::u8)
            fail(name, "input", std::string("must be u8 (bool), is ") + gpu::dtype_name(dtype));
    } else if (dtype == DType::i32) {
        if (!allows_i32(desc.kind)) fail(name, "input", "must be f32 or f16, is i32");
    } else if (dtype != DType::f32 && dtype != DType::f16) {
        fail(name, "input",
             std::string("must be f32 or f16") + (allows_i32(desc.kind) ? " or i32" : "") + ", is " +
                 gpu::dtype_name(dtype));
    }

    const UnaryAttrs attrs = attrs_of(desc.kind);
    if (desc.alpha && !attrs.alpha) fail(name, "alpha", std::string(name) + " has no alpha attribute");
    if (desc.beta && !attrs.beta) fail(name, "beta", std::string(name) + " has no beta attribute");
    if (desc.gamma && !attrs.gamma) fail(name, "gamma", std::string(name) + " has no gamma attribute");
    const float alpha = desc.alpha.value_or(attrs.alpha_default);
    const float beta = desc.beta.value_or(attrs.beta_default);
    const float gamma = desc.gamma.value_or(attrs.gamma_default);
    for (const auto& [field, v] :
         {std::pair{"alpha", alpha}, std::pair{"beta", beta}, std::pair{"gamma", gamma}})
        if (!std::isfinite(v)) fail(name, field, "must be finite, is " + std::to_string(v));
    if (desc.kind == UnaryKind::Celu && alpha == 0.f)
        fail(name, "alpha", "must be nonzero (Celu divides by it)");

    uint32_t code = uint32_t(desc.kind);
    if (desc.kind == UnaryKind::Gelu) {
        if (desc.approximate == "tanh")
            code = code_gelu_tanh;
        else if (desc.approximate != "none")
            fail(name, "approximate", "must be \"none\" or \"tanh\", is \"" + desc.approximate + "\"");
    } else if (desc.approximate != "none") {
        fail(name, "approximate", std::string(name) + " has no approximate attribute");
    }
    if (desc.kind != UnaryKind::IsInf && (!desc.detect_negative || !desc.detect_positive))
        fail(name, "detect_negative", std::string(name) + " has no detect_negative/detect_positive attributes");
    if (!classify) detail::elementwise::check_activation(name, desc.activation, dtype);
    detail::check_math(name, desc.math);

    if (classify) {
        auto op = std::make_unique<Unary>(device, Key{});
        op->kind_ = desc.kind;
        op->inputs_ = {desc.input};
        op->outputs_ = {{desc.input.shape, DType::u8}};
        op->push_ = {detail::to_u32(name, "input elements", desc.input.shape.elements()),
                     desc.detect_negative ? 1.f : 0.f,
                     desc.detect_positive ? 1.f : 0.f,
                     0.f,
                     0.f,
                     0.f};
        op->pipeline_ = &detail::elementwise::pipeline(
            device, detail::shader_for(device, name, "elementwise_classify", dtype), 2, sizeof(Push),
            {uint32_t(desc.kind), 0u});
        return op;
    }
    auto op = std::make_unique<Unary>(device, Key{});
    op->kind_ = desc.kind;
    op->inputs_ = {desc.input};
    op->outputs_ = {desc.input};
    op->push_ = {detail::to_u32(name, "input elements", desc.input.shape.elements()),
                 alpha,
                 beta,
                 gamma,
                 desc.activation.alpha,
                 desc.activation.beta};
    op->f16_math_ = has_f16_math(desc.kind) && detail::use_f16_math(device, dtype, desc.math);
    const gpu::ShaderId shader = op->f16_math_ ? detail::shader_for(device, name, "elementwise_unary", "f16a")
                                               : detail::shader_for(device, name, "elementwise_unary", dtype);
    op->pipeline_ = &detail::elementwise::pipeline(device, shader, 2, sizeof(Push),
                                                   {code, uint32_t(desc.activation.kind)});
    if (dtype == DType::f32 || dtype == DType::f16)
        op->pipeline4_ = &detail::elementwise::pipeline(device, shader, 2, sizeof(Push),
                                                        {code, uint32_t(desc.activation.kind), 4});
    return op;
}

void Unary::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                        std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    detail::elementwise::dispatch_vec(cmd, *pipeline_, pipeline4_, buffers, &push_, sizeof(Push), push_.n);
}

} // namespace vkml::ops
