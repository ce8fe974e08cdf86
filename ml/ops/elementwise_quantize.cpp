// QuantizeLinear and DequantizeLinear (shaders/elementwise/quantize.comp).
#include "util.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/ops/elementwise.hpp"

namespace vkml::ops {

std::unique_ptr<Quantize> Quantize::create(gpu::Device& device, const QuantizeDesc& desc) {
    const char* name = desc.dequantize ? "DequantizeLinear" : "QuantizeLinear";
    const Shape& in = desc.input.shape;
    if (desc.dequantize) {
        if (desc.input.dtype != DType::u8 && desc.input.dtype != DType::i32)
            fail(name, "input", std::string("must be u8 or i32, is ") + gpu::dtype_name(desc.input.dtype));
        if (desc.float_dtype != DType::f32 && desc.float_dtype != DType::f16)
            fail(name, "float_dtype", "must be f32 or f16");
    } else {
        detail::require_float(name, "input", desc.input);
    }
    if (desc.scale.dtype != DType::f32) fail(name, "scale", "must be f32");
    if (desc.zero_point && desc.zero_point->dtype != DType::i32) fail(name, "zero_point", "must be i32");
    if (desc.zero_point && desc.zero_point->shape.elements() != desc.scale.shape.elements())
        fail(name, "zero_point", "has shape " + desc.zero_point->shape.str() + ", scale " + desc.scale.shape.str());
    const int64_t count = desc.scale.shape.elements();
    int64_t inner = 1, channels = 1;
    if (count != 1) {
        if (desc.scale.shape.rank() != 1) fail(name, "scale", "must have one element or be 1-D, is " + desc.scale.shape.str());
        const size_t ax = detail::normalize_axis(name, "axis", desc.axis, in.rank());
        if (in[ax] != count)
            fail(name, "scale", "has " + std::to_string(count) + " elements, the input's axis " + std::to_string(desc.axis) +
                                    " " + std::to_string(in[ax]));
        channels = count;
        for (size_t a = ax + 1; a < in.rank(); ++a) inner *= in[a];
    }
    if (in.elements() > int64_t(INT32_MAX)) fail(name, "input", "has more elements than 32-bit indices reach");
    auto op = std::unique_ptr<Quantize>(new Quantize(device));
    op->dequantize_ = desc.dequantize;
    const bool int8 = desc.dequantize ? desc.input.dtype == DType::i32 : desc.to_int8;
    op->push_ = {int32_t(in.elements()), int32_t(std::max<int64_t>(inner, 1)), int32_t(channels), int8 ? -128 : 0,
                 int8 ? 127 : 255, desc.zero_point ? 1 : 0};
    const DType stored = desc.dequantize ? desc.float_dtype : desc.input.dtype; // the float side: the variant
    const char* shader = desc.dequantize ? (int8 ? "elementwise_dequantize_i32" : "elementwise_dequantize_u8")
                                         : (int8 ? "elementwise_quantize_i32" : "elementwise_quantize_u8");
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, name, shader, stored),
                                      .bindings = 4,
                                      .push_constant_bytes = sizeof(op->push_),
                                      .workgroup = {256, 1, 1}});
    op->inputs_ = {desc.input, desc.scale};
    if (desc.zero_point) op->inputs_.push_back(*desc.zero_point);
    op->outputs_ = {{in, desc.dequantize ? desc.float_dtype : (int8 ? DType::i32 : DType::u8)}};
    return op;
}

void Quantize::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                           const gpu::BufferRange&) const {
    if (push_[0] == 0) return;
    // Without a zero point the scale is bound in its place (the shader does not read it).
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(),
                                        inputs[inputs.size() > 2 ? 2 : 1].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, uint64_t(push_[0]));
}

std::unique_ptr<DynamicQuantize> DynamicQuantize::create(gpu::Device& device, const DynamicQuantizeDesc& desc) {
    const char* name = "DynamicQuantizeLinear";
    detail::require_float(name, "input", desc.input);
    if (desc.input.shape.elements() > int64_t(INT32_MAX)) fail(name, "input", "has more elements than 32-bit indices reach");
    auto op = std::unique_ptr<DynamicQuantize>(new DynamicQuantize(device));
    op->count_ = uint32_t(desc.input.shape.elements());
    auto pipe = [&](uint32_t pass) {
        return &device.pipeline({.shader = detail::shader_for(device, name, "elementwise_dynamic_quantize", desc.input.dtype),
                                 .bindings = 4,
                                 .push_constant_bytes = sizeof(uint32_t),
                                 .workgroup = {256, 1, 1},
                                 .specialization = {pass}});
    };
    op->range_ = pipe(0);
    op->quantize_ = pipe(1);
    op->inputs_ = {desc.input};
    op->outputs_ = {{desc.input.shape, DType::u8}, {Shape{}, DType::f32}, {Shape{}, DType::u8}};
    return op;
}

void DynamicQuantize::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                  std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range(), outputs[1].range(), outputs[2].range()};
    cmd.dispatch(*range_, buffers, count_, {1, 1, 1});
    if (count_ == 0) return;
    gpu::barrier::compute_to_compute(cmd);
    detail::dispatch_1d(cmd, *quantize_, buffers, count_, uint64_t(count_));
}

} // namespace vkml::ops
