// Det (shaders/math/det.comp).
#include "util.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/math.hpp"

namespace vkml::ops {

std::unique_ptr<Det> Det::create(gpu::Device& device, const DetDesc& desc) {
    detail::require_float("Det", "input", desc.input);
    const Shape& in = desc.input.shape;
    if (in.rank() < 2 || in[in.rank() - 1] != in[in.rank() - 2])
        fail("Det", "input", "must be square matrices [..., M, M], is " + in.str());
    if (in.elements() > int64_t(UINT32_MAX))
        fail("Det", "input", "has more elements than 32-bit indices reach");
    const int64_t m = in[in.rank() - 1];
    std::vector<int64_t> out(in.dims().begin(), in.dims().end() - 2);
    auto op = std::unique_ptr<Det>(new Det(device));
    const Shape out_shape = detail::shape_of("Det", "output", out);
    op->push_ = {uint32_t(out_shape.elements()), uint32_t(m)};
    op->scratch_bytes_ = uint64_t(in.elements()) * sizeof(float);
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, "Det", "math_det", desc.input.dtype),
                                      .bindings = 3,
                                      .push_constant_bytes = sizeof(op->push_),
                                      .workgroup = {64, 1, 1}});
    op->inputs_ = {desc.input};
    op->outputs_ = {{out_shape, desc.input.dtype}};
    return op;
}

void Det::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                      const gpu::BufferRange& scratch) const {
    if (push_[0] == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range(),
                                        {scratch.buffer, scratch.offset, scratch_bytes_}};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, uint64_t(push_[0]));
}

} // namespace vkml::ops
