// GridSample (shaders/layout/grid_sample.comp).
#include "layout_common.hpp"

namespace vkml::ops {

std::unique_ptr<GridSample> GridSample::create(gpu::Device& device, const GridSampleDesc& desc) {
    const char* op = "GridSample";
    detail::require_float(op, "input", desc.input);
    if (desc.grid.dtype != desc.input.dtype) fail(op, "grid", "must have the input's dtype");
    const Shape& x = desc.input.shape;
    const Shape& g = desc.grid.shape;
    if (x.rank() != 4) unsupported(op, "only 2-D sampling (a rank-4 input) is implemented, the input is " + x.str());
    if (g.rank() != 4 || g[0] != x[0] || g[3] != 2)
        fail(op, "grid", "expected [" + std::to_string(x[0]) + ", Ho, Wo, 2], got " + g.str());
    uint32_t mode = 0;
    if (desc.mode == "bilinear" || desc.mode == "linear") mode = 0;
    else if (desc.mode == "nearest") mode = 1;
    else if (desc.mode == "bicubic" || desc.mode == "cubic") mode = 2;
    else fail(op, "mode", "must be bilinear/linear, nearest or bicubic/cubic, is \"" + desc.mode + "\"");
    uint32_t padding = 0;
    if (desc.padding_mode == "zeros") padding = 0;
    else if (desc.padding_mode == "border") padding = 1;
    else if (desc.padding_mode == "reflection") padding = 2;
    else fail(op, "padding_mode", "must be zeros, border or reflection, is \"" + desc.padding_mode + "\"");
    const Shape out{x[0], x[1], g[1], g[2]};
    if (out.elements() > int64_t(UINT32_MAX) || x.elements() > int64_t(UINT32_MAX) || g.elements() > int64_t(UINT32_MAX))
        fail(op, "input", "has more elements than 32-bit indices reach");
    if (x[2] == 0 || x[3] == 0) fail(op, "input", "has an empty plane " + x.str());
    auto s = std::unique_ptr<GridSample>(new GridSample(device));
    s->push_ = {uint32_t(out.elements()), uint32_t(x[1]), uint32_t(x[2]), uint32_t(x[3]), uint32_t(g[1]), uint32_t(g[2])};
    s->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, op, "layout_grid_sample", desc.input.dtype),
                                     .bindings = 3,
                                     .push_constant_bytes = sizeof(s->push_),
                                     .workgroup = {64, 1, 1},
                                     .specialization = {mode, padding, desc.align_corners ? 1u : 0u}});
    s->inputs_ = {desc.input, desc.grid};
    s->outputs_ = {{out, desc.input.dtype}};
    return s;
}

void GridSample::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    if (push_[0] == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, push_[0]);
}

} // namespace vkml::ops
