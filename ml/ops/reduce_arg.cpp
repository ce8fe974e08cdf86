// ArgMax / ArgMin (shaders/reduce/arg.comp).
#include <string>

#include "reduce_common.hpp"
#include "vkml/gpu/command.hpp"

namespace vkml::ops {

namespace {
struct ArgParams {
    uint32_t outputs, n, inner;
};
} // namespace

const char* ArgReduce::type() const {
    return kind_ == ArgReduceKind::ArgMax ? "ArgMax" : "ArgMin";
}

std::unique_ptr<ArgReduce> ArgReduce::create(gpu::Device& device, const ArgReduceDesc& desc) {
    auto a = std::make_unique<ArgReduce>(device, detail::ReduceKey{});
    a->kind_ = desc.kind;
    const char* op = a->type();
    detail::require_float(op, "input", desc.input);
    if (desc.input.shape.rank() == 0) fail(op, "input", "must have at least one dimension");
    detail::require_nonempty(op, desc.input);
    const size_t axis = detail::normalize_axis(op, "axis", desc.axis, desc.input.shape.rank());
    if (desc.keepdims != 0 && desc.keepdims != 1)
        fail(op, "keepdims", "must be 0 or 1, is " + std::to_string(desc.keepdims));
    if (desc.select_last_index != 0 && desc.select_last_index != 1)
        fail(op, "select_last_index", "must be 0 or 1, is " + std::to_string(desc.select_last_index));
    if (desc.output_dtype != DType::i64 && desc.output_dtype != DType::i32)
        fail(op, "output_dtype", std::string("must be i64 or i32, is ") + gpu::dtype_name(desc.output_dtype));

    const detail::AxisSplit s = detail::split_at_axis(op, desc.input.shape, axis);
    a->outputs_count_ = s.outer * s.inner;
    a->n_ = s.n;
    a->inner_ = s.inner;
    std::vector<int64_t> out_dims;
    for (size_t i = 0; i < desc.input.shape.rank(); ++i) {
        if (i != axis)
            out_dims.push_back(desc.input.shape[i]);
        else if (desc.keepdims)
            out_dims.push_back(1);
    }
    a->inputs_ = {desc.input};
    a->outputs_ = {{Shape(std::span<const int64_t>(out_dims)), desc.output_dtype}};

    if (desc.path == ReducePath::Rows) fail(op, "path", "the rows kernel is Softmax's and LogSoftmax's only");
    a->path_ = detail::choose_reduce_path(desc.path, s.n, a->outputs_count_, s.inner == 1);
    const bool wg = a->path_ == ReducePath::Workgroup;
    a->pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, op, wg ? "reduce_arg_wg" : "reduce_arg_loop", desc.input.dtype),
         .bindings = 2,
         .push_constant_bytes = sizeof(ArgParams),
         .workgroup = {wg ? detail::reduce_wg_size : detail::reduce_loop_size, 1, 1},
         .specialization = {desc.kind == ArgReduceKind::ArgMin ? 1u : 0u, uint32_t(desc.select_last_index),
                            desc.output_dtype == DType::i64 ? 2u : 1u}});
    return a;
}

void ArgReduce::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                            std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    const ArgParams params{outputs_count_, n_, inner_};
    if (path_ == ReducePath::Workgroup)
        cmd.dispatch(*pipeline_, buffers, params, detail::groups_per_item(device_, outputs_count_));
    else
        detail::dispatch_1d(cmd, *pipeline_, buffers, params, outputs_count_);
}

} // namespace vkml::ops
