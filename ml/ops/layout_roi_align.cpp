// RoiAlign (shaders/layout/roi_align.comp).
#include <cmath>

#include "layout_common.hpp"

namespace vkml::ops {

std::unique_ptr<RoiAlign> RoiAlign::create(gpu::Device& device, const RoiAlignDesc& desc) {
    const Shape& in = desc.input.shape;
    detail::require_float("RoiAlign", "input", desc.input);
    if (in.rank() != 4) fail("RoiAlign", "input", "must be [N, C, H, W], is " + in.str());
    if (desc.rois.dtype != desc.input.dtype) fail("RoiAlign", "rois", "must have X's dtype");
    if (desc.rois.shape.rank() != 2 || desc.rois.shape[1] != 4)
        fail("RoiAlign", "rois", "must be [R, 4], is " + desc.rois.shape.str());
    const int64_t R = desc.rois.shape[0];
    if (desc.batch_indices.dtype != DType::i32) fail("RoiAlign", "batch_indices", "must be i32");
    if (desc.batch_indices.shape != Shape{R})
        fail("RoiAlign", "batch_indices", "must be [" + std::to_string(R) + "], is " + desc.batch_indices.shape.str());
    if (desc.mode != "avg" && desc.mode != "max") fail("RoiAlign", "mode", "'" + desc.mode + "' is not avg or max");
    float offset = 0.f;
    if (desc.coordinate_transformation_mode == "half_pixel")
        offset = 0.5f;
    else if (desc.coordinate_transformation_mode != "output_half_pixel")
        fail("RoiAlign", "coordinate_transformation_mode",
             "'" + desc.coordinate_transformation_mode + "' is not half_pixel or output_half_pixel");
    if (desc.output_height < 1 || desc.output_width < 1 || desc.output_height > 65536 || desc.output_width > 65536)
        fail("RoiAlign", "output_height", "output sizes must be in [1, 65536]");
    if (desc.sampling_ratio < 0 || desc.sampling_ratio > 1024)
        fail("RoiAlign", "sampling_ratio", "must be in [0, 1024], is " + std::to_string(desc.sampling_ratio));
    if (!std::isfinite(desc.spatial_scale)) fail("RoiAlign", "spatial_scale", "must be finite");
    const Shape out = detail::shape_of("RoiAlign", "output", std::vector<int64_t>{R, in[1], desc.output_height, desc.output_width});
    if (out.elements() > int64_t(UINT32_MAX) || in.elements() > int64_t(UINT32_MAX))
        fail("RoiAlign", "input", "has more elements than 32-bit indices reach");
    auto op = std::unique_ptr<RoiAlign>(new RoiAlign(device));
    op->push_ = {uint32_t(out.elements()), uint32_t(in[1]), uint32_t(in[2]), uint32_t(in[3]),
                 uint32_t(desc.output_height), uint32_t(desc.output_width), uint32_t(desc.sampling_ratio),
                 desc.mode == "max" ? 1u : 0u, uint32_t(in[0]), desc.spatial_scale, offset};
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, "RoiAlign", "layout_roi_align", desc.input.dtype),
                                      .bindings = 4,
                                      .push_constant_bytes = sizeof(Push),
                                      .workgroup = {64, 1, 1}});
    op->inputs_ = {desc.input, desc.rois, desc.batch_indices};
    op->outputs_ = {{out, desc.input.dtype}};
    return op;
}

void RoiAlign::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                           const gpu::BufferRange&) const {
    if (push_.count == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), inputs[2].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, uint64_t(push_.count));
}

} // namespace vkml::ops
