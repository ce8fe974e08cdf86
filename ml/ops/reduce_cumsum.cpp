// CumSum (shaders/reduce/cumsum.comp).
#include "reduce_common.hpp"
#include "vkml/gpu/command.hpp"

namespace vkml::ops {

std::unique_ptr<CumSum> CumSum::create(gpu::Device& device, const CumSumDesc& desc) {
    const char* op = "CumSum";
    const DType dt = desc.input.dtype;
    if (dt != DType::f32 && dt != DType::f16 && dt != DType::i32)
        fail(op, "input", std::string("must be f32, f16 or i32, is ") + gpu::dtype_name(dt));
    if (desc.input.shape.rank() == 0) fail(op, "input", "must have at least one dimension");
    auto c = std::make_unique<CumSum>(device, detail::ReduceKey{});
    c->inputs_ = {desc.input};
    c->outputs_ = {desc.input};
    if (desc.input.shape.elements() == 0) return c;
    const size_t axis = detail::normalize_axis(op, "axis", desc.axis, desc.input.shape.rank());
    const detail::AxisSplit s = detail::split_at_axis(op, desc.input.shape, axis);
    c->rows_ = s.outer * s.inner;
    c->n_ = s.n;
    c->inner_ = s.inner;
    c->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, op, "reduce_cumsum", dt),
                                     .bindings = 2,
                                     .push_constant_bytes = 3 * sizeof(uint32_t),
                                     .workgroup = {detail::reduce_loop_size, 1, 1},
                                     .specialization = {desc.exclusive ? 1u : 0u, desc.reverse ? 1u : 0u}});
    return c;
}

void CumSum::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                         const gpu::BufferRange&) const {
    if (rows_ == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    const std::array<uint32_t, 3> params{rows_, n_, inner_};
    detail::dispatch_1d(cmd, *pipeline_, buffers, params, rows_);
}

} // namespace vkml::ops
