// Softmax / LogSoftmax along one axis, opset-13 semantics (shaders/reduce/softmax.comp).
#include <string>

#include "reduce_common.hpp"
#include "vkml/gpu/command.hpp"

namespace vkml::ops {

namespace {
struct SoftmaxParams {
    uint32_t rows, n, inner;
};
} // namespace

const char* Softmax::type() const {
    return kind_ == SoftmaxKind::Softmax ? "Softmax" : kind_ == SoftmaxKind::LogSoftmax ? "LogSoftmax" : "Hardmax";
}

std::unique_ptr<Softmax> Softmax::create(gpu::Device& device, const SoftmaxDesc& desc) {
    auto s = std::make_unique<Softmax>(device, detail::ReduceKey{});
    s->kind_ = desc.kind;
    const char* op = s->type();
    detail::require_float(op, "input", desc.input);
    if (desc.input.shape.rank() == 0) fail(op, "input", "must have at least one dimension");
    detail::require_nonempty(op, desc.input);
    const size_t axis = detail::normalize_axis(op, "axis", desc.axis, desc.input.shape.rank());
    const detail::AxisSplit split = detail::split_at_axis(op, desc.input.shape, axis);
    s->rows_ = split.outer * split.inner;
    s->n_ = split.n;
    s->inner_ = split.inner;
    s->inputs_ = {desc.input};
    s->outputs_ = {desc.input};

    if (desc.kind == SoftmaxKind::Hardmax) {
        if (desc.path == ReducePath::Workgroup) fail(op, "path", "Hardmax has the per-row kernel only");
        s->path_ = ReducePath::PerOutput;
        s->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, op, "reduce_hardmax", desc.input.dtype),
                                         .bindings = 2,
                                         .push_constant_bytes = sizeof(SoftmaxParams),
                                         .workgroup = {detail::reduce_loop_size, 1, 1}});
        return s;
    }
    s->path_ = detail::choose_reduce_path(desc.path, split.n, s->rows_, split.inner == 1);
    const bool wg = s->path_ == ReducePath::Workgroup;
    s->pipeline_ =
        &device.pipeline({.shader = detail::shader_for(
                              device, op, wg ? "reduce_softmax_wg" : "reduce_softmax_loop", desc.input.dtype),
                          .bindings = 2,
                          .push_constant_bytes = sizeof(SoftmaxParams),
                          .workgroup = {wg ? detail::reduce_wg_size : detail::reduce_loop_size, 1, 1},
                          .specialization = {desc.kind == SoftmaxKind::LogSoftmax ? 1u : 0u}});
    return s;
}

void Softmax::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                          std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    const SoftmaxParams params{rows_, n_, inner_};
    if (path_ == ReducePath::Workgroup)
        cmd.dispatch(*pipeline_, buffers, params, detail::groups_per_item(device_, rows_));
    else
        detail::dispatch_1d(cmd, *pipeline_, buffers, params, rows_);
}

} // namespace vkml::ops
