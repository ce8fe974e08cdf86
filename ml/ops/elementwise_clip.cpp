// Clip (elementwise_clip): bounds from one-element input tensors (Clip-11+) or attributes (Clip-6).
#include <bit>
#include <cmath>

#include "elementwise_kernels.hpp"
#include "util.hpp"

namespace vkml::ops {

namespace ew = detail::elementwise;

namespace {
// An i32 bound from a float attribute: x >= 1.5 holds for integers exactly when x >= 2, so the
// bounds round inward; infinities saturate.
int32_t int_bound(float v, bool lower) {
    const double r = lower ? std::ceil(double(v)) : std::floor(double(v));
    if (r <= double(INT32_MIN)) return INT32_MIN;
    if (r >= double(INT32_MAX)) return INT32_MAX;
    return int32_t(r);
}
} // namespace

std::unique_ptr<Clip> Clip::create(gpu::Device& device, const ClipDesc& desc) {
    const DType dtype = desc.input.dtype;
    if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::i32)
        fail("Clip", "input", std::string("must be f32, f16 or i32, is ") + gpu::dtype_name(dtype));
    auto check_bound = [&](const std::optional<TensorDesc>& t, const char* field, float attr,
                           const char* attr_field, float attr_default) {
        if (std::isnan(attr)) fail("Clip", attr_field, "is NaN");
        if (!t) return;
        if (t->dtype != dtype)
            fail("Clip", field,
                 std::string("dtype ") + gpu::dtype_name(t->dtype) + " differs from the input's " +
                     gpu::dtype_name(dtype));
        if (t->shape.elements() != 1)
            fail("Clip", field, "must hold one value (a scalar), is " + to_string(*t));
        if (attr != attr_default)
            fail("Clip", attr_field, std::string("is given together with the ") + field + " input; give one");
    };
    check_bound(desc.min, "min", desc.min_value, "min_value", -INFINITY);
    check_bound(desc.max, "max", desc.max_value, "max_value", INFINITY);
    detail::check_math("Clip", desc.math);

    auto op = std::make_unique<Clip>(device, Key{});
    op->inputs_ = {desc.input};
    if (desc.min) {
        op->min_index_ = int(op->inputs_.size());
        op->inputs_.push_back(*desc.min);
    }
    if (desc.max) {
        op->max_index_ = int(op->inputs_.size());
        op->inputs_.push_back(*desc.max);
    }
    op->outputs_ = {desc.input};
    op->push_.n = detail::to_u32("Clip", "input elements", desc.input.shape.elements());
    if (dtype == DType::i32) {
        op->push_.lo = uint32_t(int_bound(desc.min_value, true));
        op->push_.hi = uint32_t(int_bound(desc.max_value, false));
    } else {
        op->push_.lo = std::bit_cast<uint32_t>(desc.min_value);
        op->push_.hi = std::bit_cast<uint32_t>(desc.max_value);
    }
    // min(max()) commutes with the (monotonic) rounding to f16, so half precision is exact here.
    op->f16_math_ = detail::use_f16_math(device, dtype, desc.math);
    const gpu::ShaderId shader = op->f16_math_
                                     ? detail::shader_for(device, "Clip", "elementwise_clip", "f16a")
                                     : detail::shader_for(device, "Clip", "elementwise_clip", dtype);
    op->pipeline_ = &ew::pipeline(device, shader, 4, sizeof(Push),
                                  {uint32_t(desc.min.has_value()), uint32_t(desc.max.has_value())});
    return op;
}

void Clip::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                       std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    // An absent bound's binding still needs a buffer; the input stands in (the shader never reads it).
    const gpu::BufferRange buffers[] = {
        inputs[0].range(), inputs[size_t(min_index_ < 0 ? 0 : min_index_)].range(),
        inputs[size_t(max_index_ < 0 ? 0 : max_index_)].range(), outputs[0].range()};
    ew::dispatch(cmd, *pipeline_, buffers, &push_, sizeof(Push), push_.n);
}

} // namespace vkml::ops
