// Softmax / LogSoftmax along one axis, opset-13 semantics (shaders/reduce/softmax.comp).
#include <algorithm>
#include <bit>
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
    return kind_ == SoftmaxKind::Softmax      ? "Softmax"
           : kind_ == SoftmaxKind::LogSoftmax ? "LogSoftmax"
                                              : "Hardmax";
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
        if (desc.path == ReducePath::Workgroup || desc.path == ReducePath::Rows)
            fail(op, "path", "Hardmax has the per-row kernel only");
        s->path_ = ReducePath::PerOutput;
        s->pipeline_ =
            &device.pipeline({.shader = detail::shader_for(device, op, "reduce_hardmax", desc.input.dtype),
                              .bindings = 2,
                              .push_constant_bytes = sizeof(SoftmaxParams),
                              .workgroup = {detail::reduce_loop_size, 1, 1}});
        return s;
    }
    const bool contiguous = split.inner == 1;
    if (desc.path == ReducePath::Rows && !contiguous)
        fail(op, "path", "the rows kernel needs the innermost axis (contiguous rows)");
    const uint32_t log = desc.kind == SoftmaxKind::LogSoftmax ? 1u : 0u;
    if (contiguous && (desc.path == ReducePath::Auto || desc.path == ReducePath::Rows)) {
        // Softmax over contiguous rows (attention, classifier heads): G invocations per row with
        // up to `target` vec4 slices in registers, read as 16-byte units (f32: 4 floats, f16: 8
        // halves) where rows are whole units, 8-byte ones for f16 rows of whole 4-vectors, else
        // single elements. G goes up to the whole workgroup (1024 on most GPUs): one workgroup
        // per long row keeps up to 1024 x 32 fp32 values in registers, so the row is read once and
        // written once. Longer rows are read twice. (8-byte f16 loads, G <= 256 and 16 slices per
        // invocation: Softmax 128x32768 f16 reached 29 % of the copy bandwidth on the H200.)
        constexpr uint32_t target = 8, max_slices = 8, min_wg = 128;
        const gpu::Capabilities& caps = device.caps();
        const uint32_t max_g = std::min(
            1024u, std::bit_floor(std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0])));
        const bool f16 = desc.input.dtype == gpu::DType::f16;
        const uint32_t vec = f16 && split.n % 8 == 0 ? 8u : split.n % 4 == 0 ? 4u : 1u;
        const uint32_t slices = vec == 8 ? 2 : 1; // vec4 slices per unit
        const uint32_t units = uint32_t(split.n / vec);
        const uint32_t unit_target = target / slices;
        uint32_t g = std::min(max_g, std::bit_ceil((units + unit_target - 1) / unit_target));
        uint32_t upt = (units + g - 1) / g;
        const bool cached = upt * slices <= max_slices;
        if (!cached) upt = 1;
        const uint32_t wg = std::max(g, min_wg), rows_per_wg = wg / g;
        const uint64_t groups = (uint64_t(s->rows_) + rows_per_wg - 1) / rows_per_wg;
        s->rows_invocations_ = detail::to_u32(op, "input", int64_t(groups * wg));
        s->rows_vec_ = vec > 1;
        // One row per workgroup: its states merged by subgroup arithmetic where the device has it
        // (VKML_SOFTMAX_SUBGROUP=0: the shared-memory tree).
        static const bool subgroup_knob = detail::tuning_knob("VKML_SOFTMAX_SUBGROUP", 1, 0, 1) != 0;
        const bool subgroup = subgroup_knob && rows_per_wg == 1 && caps.subgroup_arithmetic;
        s->rows_subgroup_ = subgroup;
        s->rows_pipeline_ = &device.pipeline(
            {.shader = detail::shader_for(
                 device, op, subgroup ? "reduce_softmax_rows_sg" : "reduce_softmax_rows", desc.input.dtype),
             .bindings = 2,
             .workgroup = {wg, 1, 1},
             .specialization = {log, split.n, s->rows_, g, upt, vec, cached}});
        s->path_ = ReducePath::Rows;
    }
    // The per-output or workgroup kernel: any axis, and the rows kernel's fallback.
    const ReducePath other = detail::choose_reduce_path(
        desc.path == ReducePath::Rows ? ReducePath::Auto : desc.path, split.n, s->rows_, contiguous);
    if (!s->rows_pipeline_) s->path_ = other;
    const bool wg = other == ReducePath::Workgroup;
    s->wg_ = wg;
    s->pipeline_ =
        &device.pipeline({.shader = detail::shader_for(
                              device, op, wg ? "reduce_softmax_wg" : "reduce_softmax_loop", desc.input.dtype),
                          .bindings = 2,
                          .push_constant_bytes = sizeof(SoftmaxParams),
                          .workgroup = {wg ? detail::reduce_wg_size : detail::reduce_loop_size, 1, 1},
                          .specialization = {log}});
    return s;
}

void Softmax::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                          std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    const SoftmaxParams params{rows_, n_, inner_};
    // The vector loads need both tensors on 16 bytes (the Session's arena is; a caller's tensor
    // may not be).
    if (rows_pipeline_ && (!rows_vec_ || (buffers[0].offset % 16 == 0 && buffers[1].offset % 16 == 0))) {
        cmd.dispatch(*rows_pipeline_, buffers, nullptr, 0,
                     cmd.groups_for(*rows_pipeline_, rows_invocations_));
        return;
    }
    if (wg_)
        cmd.dispatch(*pipeline_, buffers, params, detail::groups_per_item(device_, rows_));
    else
        detail::dispatch_1d(cmd, *pipeline_, buffers, params, rows_);
}

} // namespace vkml::ops
