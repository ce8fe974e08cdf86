// MaxPool / AveragePool over three spatial dimensions (shaders/reduce/pool3d.comp). The geometry
// (sizes, strides, pads, dilations, the output size) is specialization constants.
#include <algorithm>

#include "util.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/reduce.hpp"

namespace vkml::ops {

std::unique_ptr<Pool3d> Pool3d::create(gpu::Device& device, const Pool3dDesc& desc) {
    const char* op = desc.max ? "MaxPool" : "AveragePool";
    detail::require_float(op, "input", desc.input);
    const Shape& in = desc.input.shape;
    if (in.rank() != 5) fail(op, "input", "must be [N, C, D, H, W], is " + in.str());
    const PoolWindow& w = desc.window;
    if (w.kernel_shape.empty()) fail(op, "kernel_shape", "is required");
    const auto kernel = detail::axis_values(op, "kernel_shape", "3-D pooling", w.kernel_shape, 3, 1, 1);
    const auto strides = detail::axis_values(op, "strides", "3-D pooling", w.strides, 3, 1, 1);
    const auto dilations = detail::axis_values(op, "dilations", "3-D pooling", w.dilations, 3, 1, 1);
    auto pads = detail::axis_values(op, "pads", "3-D pooling", w.pads, 6, 0, 0);
    const std::string& mode = w.auto_pad;
    if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER")
        fail(op, "auto_pad", "unknown value '" + mode + "'");
    if (w.ceil_mode != 0 && w.ceil_mode != 1) fail(op, "ceil_mode", "must be 0 or 1");
    if (desc.count_include_pad != 0 && desc.count_include_pad != 1) fail(op, "count_include_pad", "must be 0 or 1");
    if (in[2] > 65535 || in[3] > 65535 || in[4] > 65535) fail(op, "input", "spatial sizes past 65535");
    int64_t out[3];
    for (size_t d = 0; d < 3; ++d) {
        const int64_t n = in[2 + d], s = strides[d], extent = (kernel[d] - 1) * dilations[d] + 1;
        if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
            out[d] = (n + s - 1) / s;
            const int64_t total = std::max<int64_t>(0, (out[d] - 1) * s + extent - n);
            pads[d] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
            pads[d + 3] = total - pads[d];
            continue;
        }
        if (mode == "VALID") pads[d] = pads[d + 3] = 0;
        if (pads[d] >= extent || pads[d + 3] >= extent)
            fail(op, "pads", "a pad must be smaller than the window extent " + std::to_string(extent));
        const int64_t span = n + pads[d] + pads[d + 3] - extent;
        if (span < 0) fail(op, "kernel_shape", "the window is larger than the padded input");
        out[d] = w.ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
        if (w.ceil_mode && (out[d] - 1) * s >= n + pads[d]) --out[d];
    }
    if (kernel[0] * kernel[1] * kernel[2] > (int64_t(1) << 24))
        fail(op, "kernel_shape", "has more than 2^24 taps (one invocation walks them all)");
    const Shape out_shape = detail::shape_of(op, "output", std::vector<int64_t>{in[0], in[1], out[0], out[1], out[2]});
    if (out_shape.elements() > int64_t(UINT32_MAX) || in.elements() > int64_t(UINT32_MAX))
        fail(op, "input", "has more elements than 32-bit indices reach");
    auto p = std::unique_ptr<Pool3d>(new Pool3d(device));
    p->max_ = desc.max;
    p->count_ = uint32_t(out_shape.elements());
    std::vector<uint32_t> spec = {desc.max ? 1u : 0u, uint32_t(desc.count_include_pad)};
    for (size_t d = 0; d < 3; ++d)
        spec.insert(spec.end(), {uint32_t(in[2 + d]), uint32_t(out[d]), uint32_t(kernel[d]), uint32_t(strides[d]),
                                 uint32_t(dilations[d]), uint32_t(pads[d]), uint32_t(pads[d + 3])});
    p->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, op, "reduce_pool3d", desc.input.dtype),
                                     .bindings = 2,
                                     .push_constant_bytes = sizeof(uint32_t),
                                     .workgroup = {64, 1, 1},
                                     .specialization = spec});
    p->inputs_ = {desc.input};
    p->outputs_ = {{out_shape, desc.input.dtype}};
    return p;
}

void Pool3d::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                         const gpu::BufferRange&) const {
    if (count_ == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, count_, uint64_t(count_));
}

} // namespace vkml::ops
