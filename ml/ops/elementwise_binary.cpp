// Binary element-wise ops and the variadic Max/Min/Sum/Mean, on elementwise_binary (numeric
// results) and elementwise_compare (bool results). Shapes are fixed at create(), so the broadcast
// layout (merged dimensions and strides) is computed once and only its rank specializes the
// pipeline: ops of any shape with the same rank share one pipeline.
#include <cstring>

#include "elementwise_kernels.hpp"
#include "util.hpp"

namespace vkml::ops {

namespace ew = detail::elementwise;

namespace {

bool is_compare(BinaryKind kind) {
    return uint32_t(kind) >= uint32_t(BinaryKind::Equal) && uint32_t(kind) <= uint32_t(BinaryKind::Xor);
}
bool is_shift(BinaryKind kind) {
    return kind == BinaryKind::BitShiftLeft || kind == BinaryKind::BitShiftRight;
}
bool is_logic(BinaryKind kind) {
    return kind == BinaryKind::And || kind == BinaryKind::Or || kind == BinaryKind::Xor;
}

uint32_t code_of(BinaryKind kind, int64_t fmod) {
    switch (kind) {
    case BinaryKind::Add:
        return ew::code_add;
    case BinaryKind::Sub:
        return ew::code_sub;
    case BinaryKind::Mul:
        return ew::code_mul;
    case BinaryKind::Div:
        return ew::code_div;
    case BinaryKind::Pow:
        return ew::code_pow;
    case BinaryKind::Mod:
        return fmod ? ew::code_fmod : ew::code_mod;
    case BinaryKind::PRelu:
        return ew::code_prelu;
    case BinaryKind::Equal:
        return ew::code_equal;
    case BinaryKind::Less:
        return ew::code_less;
    case BinaryKind::LessOrEqual:
        return ew::code_less_equal;
    case BinaryKind::Greater:
        return ew::code_greater;
    case BinaryKind::GreaterOrEqual:
        return ew::code_greater_equal;
    case BinaryKind::And:
        return ew::code_and;
    case BinaryKind::Or:
        return ew::code_or;
    case BinaryKind::Xor:
        return ew::code_xor;
    case BinaryKind::BitShiftLeft:
        return ew::code_shl;
    case BinaryKind::BitShiftRight:
        return ew::code_shr;
    }
    return 0;
}

bool is_float(DType d) {
    return d == DType::f32 || d == DType::f16;
}

// Kinds with a half-precision path (elementwise_binary_f16a's apply_half): correctly rounded in f16
// (Add, Sub, Mul, PRelu's product: the bound fp32 math has once rounded to f16 on store) or one
// division (2.5 ULP where half-precision division is bounded, fp32 elsewhere). Pow (exp2 and log2
// in f16 lose most bits and overflow) and Mod (exact in fp32 already) stay fp32; comparisons have
// no arithmetic.
bool has_f16_math(BinaryKind kind) {
    return kind == BinaryKind::Add || kind == BinaryKind::Sub || kind == BinaryKind::Mul ||
           kind == BinaryKind::Div || kind == BinaryKind::PRelu;
}

// The elementwise_binary variant for an op storing `dtype`: f16a when it computes in half precision.
gpu::ShaderId binary_shader(gpu::Device& device, const char* op, DType dtype, bool f16_math) {
    return f16_math ? detail::shader_for(device, op, "elementwise_binary", "f16a")
                    : detail::shader_for(device, op, "elementwise_binary", dtype);
}

} // namespace

const char* binary_name(BinaryKind kind) {
    switch (kind) {
    case BinaryKind::Add:
        return "Add";
    case BinaryKind::Sub:
        return "Sub";
    case BinaryKind::Mul:
        return "Mul";
    case BinaryKind::Div:
        return "Div";
    case BinaryKind::Pow:
        return "Pow";
    case BinaryKind::Mod:
        return "Mod";
    case BinaryKind::PRelu:
        return "PRelu";
    case BinaryKind::Equal:
        return "Equal";
    case BinaryKind::Less:
        return "Less";
    case BinaryKind::LessOrEqual:
        return "LessOrEqual";
    case BinaryKind::Greater:
        return "Greater";
    case BinaryKind::GreaterOrEqual:
        return "GreaterOrEqual";
    case BinaryKind::And:
        return "And";
    case BinaryKind::Or:
        return "Or";
    case BinaryKind::Xor:
        return "Xor";
    case BinaryKind::BitShiftLeft:
    case BinaryKind::BitShiftRight:
        return "BitShift";
    }
    return "Binary";
}

std::unique_ptr<Binary> Binary::create(gpu::Device& device, const BinaryDesc& desc) {
    if (uint32_t(desc.kind) > uint32_t(BinaryKind::BitShiftRight))
        fail("Binary", "kind", "unknown kind " + std::to_string(uint32_t(desc.kind)));
    const char* name = binary_name(desc.kind);
    const DType dtype = desc.a.dtype;
    const std::string dname = gpu::dtype_name(dtype);
    if (is_logic(desc.kind)) {
        if (dtype != DType::u8) fail(name, "a", "must be u8 (bool), is " + dname);
    } else if (is_compare(desc.kind)) {
        if (dtype == DType::i64) fail(name, "a", "must be f32, f16, i32 or u8, is " + dname);
    } else if (is_shift(desc.kind)) {
        if (dtype != DType::i32) fail(name, "a", "must be i32, is " + dname);
    } else if (desc.kind == BinaryKind::PRelu) {
        if (!is_float(dtype)) fail(name, "a", "must be f32 or f16, is " + dname);
    } else if (!is_float(dtype) && dtype != DType::i32) {
        fail(name, "a", "must be f32, f16 or i32, is " + dname);
    }
    if (desc.b.dtype != dtype)
        fail(name, "b", std::string("dtype ") + gpu::dtype_name(desc.b.dtype) + " differs from a's " + dname);
    if (desc.kind == BinaryKind::Mod) {
        if (desc.fmod != 0 && desc.fmod != 1)
            fail(name, "fmod", "must be 0 or 1, is " + std::to_string(desc.fmod));
    } else if (desc.fmod != 0) {
        fail(name, "fmod", std::string(name) + " has no fmod attribute");
    }

    const Shape out = detail::broadcast_shapes(name, desc.a.shape, desc.b.shape);
    // ONNX PRelu broadcasts the slope to X only (unidirectionally): X keeps its shape.
    if (desc.kind == BinaryKind::PRelu && out != desc.a.shape)
        fail(name, "b",
             "slope " + desc.b.shape.str() + " does not broadcast to X's shape " + desc.a.shape.str());
    const DType out_dtype = is_compare(desc.kind) ? DType::u8 : dtype;
    ew::check_activation(name, desc.activation, out_dtype);
    detail::check_math(name, desc.math);

    const Shape shapes[] = {desc.a.shape, desc.b.shape};
    const ew::BroadcastLayout layout = ew::broadcast_layout(name, out, shapes);
    auto op = std::make_unique<Binary>(device, Key{});
    op->kind_ = desc.kind;
    op->inputs_ = {desc.a, desc.b};
    op->outputs_ = {{out, out_dtype}};
    op->rank_ = layout.rank;
    op->n_ = uint32_t(out.elements());
    op->push_ = ew::as_words(ew::binary_push(op->n_, layout, desc.activation));
    op->f16_math_ = has_f16_math(desc.kind) && detail::use_f16_math(device, dtype, desc.math);
    const gpu::ShaderId shader = is_compare(desc.kind)
                                     ? detail::shader_for(device, name, "elementwise_compare", dtype)
                                     : binary_shader(device, name, dtype, op->f16_math_);
    op->pipeline_ =
        &ew::pipeline(device, shader, 3, sizeof(ew::BinaryPush),
                      {code_of(desc.kind, desc.fmod), layout.rank, uint32_t(desc.activation.kind)});
    if (layout.rank == 0 && !is_compare(desc.kind) && (dtype == DType::f32 || dtype == DType::f16))
        op->pipeline4_ =
            &ew::pipeline(device, shader, 3, sizeof(ew::BinaryPush),
                          {code_of(desc.kind, desc.fmod), layout.rank, uint32_t(desc.activation.kind), 4});
    return op;
}

void Binary::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), outputs[0].range()};
    ew::dispatch_vec(cmd, *pipeline_, pipeline4_, buffers, push_.data(), uint32_t(push_.size() * 4), n_);
}

// ---------------------------------------------------------------------------------------------

const char* variadic_name(VariadicKind kind) {
    switch (kind) {
    case VariadicKind::Max:
        return "Max";
    case VariadicKind::Min:
        return "Min";
    case VariadicKind::Sum:
        return "Sum";
    case VariadicKind::Mean:
        return "Mean";
    }
    return "Variadic";
}

std::unique_ptr<Variadic> Variadic::create(gpu::Device& device, const VariadicDesc& desc) {
    if (uint32_t(desc.kind) > uint32_t(VariadicKind::Mean))
        fail("Variadic", "kind", "unknown kind " + std::to_string(uint32_t(desc.kind)));
    const char* name = variadic_name(desc.kind);
    if (desc.inputs.empty()) fail(name, "inputs", "needs at least one input");
    const DType dtype = desc.inputs[0].dtype;
    const std::string dname = gpu::dtype_name(dtype);
    if (desc.kind == VariadicKind::Mean ? !is_float(dtype) : !is_float(dtype) && dtype != DType::i32)
        fail(name, "inputs[0]",
             std::string(desc.kind == VariadicKind::Mean ? "must be f32 or f16" : "must be f32, f16 or i32") +
                 ", is " + dname);
    Shape out = desc.inputs[0].shape;
    for (size_t i = 1; i < desc.inputs.size(); ++i) {
        const std::string field = "inputs[" + std::to_string(i) + "]";
        if (desc.inputs[i].dtype != dtype)
            fail(name, field,
                 std::string("dtype ") + gpu::dtype_name(desc.inputs[i].dtype) +
                     " differs from inputs[0]'s " + dname);
        out = detail::broadcast_shapes(name, out, desc.inputs[i].shape);
    }
    ew::check_activation(name, desc.activation, dtype);
    detail::check_math(name, desc.math);

    auto op = std::make_unique<Variadic>(device, Key{});
    op->kind_ = desc.kind;
    op->inputs_ = desc.inputs;
    op->outputs_ = {{out, dtype}};
    op->n_ = detail::to_u32(name, "output elements", out.elements());
    // Max and Min are exact in f16, Sum's partial sums are stored in f16 after every step anyway;
    // Mean's last step (sum + x) * (1 / N) could overflow f16 in the sum, so it stays fp32.
    op->f16_math_ = desc.kind != VariadicKind::Mean && detail::use_f16_math(device, dtype, desc.math);
    const gpu::ShaderId shader = binary_shader(device, name, dtype, op->f16_math_);
    const uint32_t code = desc.kind == VariadicKind::Max   ? ew::code_max
                          : desc.kind == VariadicKind::Min ? ew::code_min
                                                           : ew::code_add;
    const size_t count = desc.inputs.size();
    auto add_step = [&](int a, int b, uint32_t step_code, const Activation& act, float scale) {
        const Shape shapes[] = {a < 0 ? out : desc.inputs[size_t(a)].shape, desc.inputs[size_t(b)].shape};
        const ew::BroadcastLayout layout = ew::broadcast_layout(name, out, shapes);
        Step step;
        step.a = a;
        step.b = b;
        step.push = ew::as_words(ew::binary_push(op->n_, layout, act, scale));
        step.pipeline = &ew::pipeline(device, shader, 3, sizeof(ew::BinaryPush),
                                      {step_code, layout.rank, uint32_t(act.kind)});
        op->steps_.push_back(std::move(step));
    };
    if (count == 1) {
        add_step(0, 0, ew::code_first, desc.activation, 1.f);
        return op;
    }
    // The last step applies the activation, and for Mean the division: (sum of N-1) + last, times 1/N.
    for (size_t b = 1; b < count; ++b) {
        const bool last = b + 1 == count;
        const uint32_t step_code = last && desc.kind == VariadicKind::Mean ? ew::code_add_scale : code;
        add_step(b == 1 ? 0 : -1, int(b), step_code, last ? desc.activation : Activation{},
                 last ? 1.f / float(count) : 1.f);
    }
    return op;
}

void Variadic::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                           std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    for (size_t s = 0; s < steps_.size(); ++s) {
        const Step& step = steps_[s];
        // Each further step reads and rewrites the output the previous one wrote.
        if (s) gpu::barrier::compute_to_compute(cmd);
        const gpu::BufferRange buffers[] = {step.a < 0 ? outputs[0].range() : inputs[size_t(step.a)].range(),
                                            inputs[size_t(step.b)].range(), outputs[0].range()};
        ew::dispatch(cmd, *step.pipeline, buffers, step.push.data(), uint32_t(step.push.size() * 4), n_);
    }
}

} // namespace vkml::ops
