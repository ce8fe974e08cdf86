// 3-D Conv and ConvTranspose (shaders/conv3d/direct.comp); the geometry is specialization constants.
#include <algorithm>

#include "util.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/conv3d.hpp"

namespace vkml::ops {

std::unique_ptr<Conv3d> Conv3d::create(gpu::Device& device, const Conv3dDesc& desc) {
    const char* op = desc.transpose ? "ConvTranspose" : "Conv";
    detail::require_float(op, "input", desc.input);
    const Shape &in = desc.input.shape, &w = desc.weight.shape;
    if (in.rank() != 5) fail(op, "input", "must be [N, C, D, H, W], is " + in.str());
    if (w.rank() != 5) fail(op, "weight", "must have rank 5, is " + w.str());
    if (desc.weight.dtype != desc.input.dtype) fail(op, "weight", "must have the input's dtype");
    const int64_t g = desc.group, C = in[1];
    if (g < 1 || C % g != 0) fail(op, "group", std::to_string(g) + " does not divide the " + std::to_string(C) + " input channels");
    const int64_t M = desc.transpose ? w[1] * g : w[0];
    if (desc.transpose ? w[0] != C : (w[1] * g != C || M % g != 0))
        fail(op, "weight", w.str() + " does not match input " + in.str() + " with group " + std::to_string(g));
    if (desc.bias && (desc.bias->shape != Shape{M} || desc.bias->dtype != desc.input.dtype))
        fail(op, "bias", "must be [" + std::to_string(M) + "] of the input's dtype");
    const std::vector<int64_t> k = {w[2], w[3], w[4]};
    if (!desc.kernel_shape.empty() && desc.kernel_shape != k) fail(op, "kernel_shape", "differs from the weight's");
    const auto s = detail::axis_values(op, "strides", "3-D convolution", desc.strides, 3, 1, 1);
    const auto d = detail::axis_values(op, "dilations", "3-D convolution", desc.dilations, 3, 1, 1);
    auto pads = detail::axis_values(op, "pads", "3-D convolution", desc.pads, 6, 0, 0);
    const auto opad = detail::axis_values(op, "output_padding", "3-D convolution", desc.output_padding, 3, 0, 0);
    if (in[2] > 65535 || in[3] > 65535 || in[4] > 65535 || k[0] > 65535 || k[1] > 65535 || k[2] > 65535)
        fail(op, "input", "spatial sizes past 65535");
    const std::string& mode = desc.auto_pad;
    if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER")
        fail(op, "auto_pad", "unknown value '" + mode + "'");
    if (!desc.transpose && (!desc.output_padding.empty() || !desc.output_shape.empty()))
        fail(op, "output_padding", "applies to ConvTranspose only");
    int64_t out[3];
    for (size_t a = 0; a < 3; ++a) {
        const int64_t n = in[2 + a], extent = (k[a] - 1) * d[a] + 1;
        if (mode == "VALID") pads[a] = pads[a + 3] = 0;
        if (!desc.transpose) {
            if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
                out[a] = (n + s[a] - 1) / s[a];
                const int64_t total = std::max<int64_t>(0, (out[a] - 1) * s[a] + extent - n);
                pads[a] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
                pads[a + 3] = total - pads[a];
                continue;
            }
            const int64_t span = n + pads[a] + pads[a + 3] - extent;
            if (span < 0) fail(op, "kernel_shape", "the kernel is larger than the padded input");
            out[a] = span / s[a] + 1;
            continue;
        }
        if (opad[a] >= std::max(s[a], d[a])) fail(op, "output_padding", "must be smaller than the stride or dilation");
        const int64_t full = s[a] * (n - 1) + opad[a] + extent;
        if (!desc.output_shape.empty() || mode == "SAME_UPPER" || mode == "SAME_LOWER") {
            int64_t target = n * s[a];
            if (!desc.output_shape.empty()) {
                if (desc.output_shape.size() != 3 && desc.output_shape.size() != 5)
                    fail(op, "output_shape", "needs 3 (or 5) values");
                target = desc.output_shape[desc.output_shape.size() - 3 + a];
            }
            const int64_t total = full - target;
            if (total < 0 || target < 1) fail(op, "output_shape", "is larger than the transposed convolution gives");
            pads[a] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
            pads[a + 3] = total - pads[a];
        }
        out[a] = full - pads[a] - pads[a + 3];
        if (out[a] < 1) fail(op, "pads", "leave an empty output");
    }
    if (k[0] * k[1] * k[2] * (C / g) > (int64_t(1) << 26))
        unsupported(op, "more than 2^26 taps per output (one invocation walks them all)");
    const Shape out_shape = detail::shape_of(op, "output", std::vector<int64_t>{in[0], M, out[0], out[1], out[2]});
    if (out_shape.elements() > int64_t(UINT32_MAX) || in.elements() > int64_t(UINT32_MAX) ||
        w.elements() > int64_t(UINT32_MAX))
        fail(op, "input", "has more elements than 32-bit indices reach");
    auto c = std::unique_ptr<Conv3d>(new Conv3d(device));
    c->transpose_ = desc.transpose;
    c->bias_ = desc.bias.has_value();
    if (desc.residual && desc.transpose) fail(op, "residual", "applies to Conv only");
    if (desc.activation.kind != ActivationKind::None && (uint32_t(desc.activation.kind) > uint32_t(ActivationKind::Mish)))
        fail(op, "activation", "unknown kind");
    c->residual_ = desc.residual;
    c->push_ = {uint32_t(out_shape.elements()), desc.activation.alpha, desc.activation.beta};
    std::vector<uint32_t> spec = {desc.transpose ? 1u : 0u, c->bias_ ? 1u : 0u, uint32_t(C), uint32_t(M), uint32_t(g)};
    for (size_t a = 0; a < 3; ++a)
        spec.insert(spec.end(), {uint32_t(in[2 + a]), uint32_t(out[a]), uint32_t(k[a]), uint32_t(s[a]), uint32_t(d[a]),
                                 uint32_t(pads[a])});
    spec.push_back(uint32_t(desc.activation.kind));
    spec.push_back(desc.residual ? 1u : 0u);
    c->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, op, "conv3d_direct", desc.input.dtype),
                                     .bindings = 5,
                                     .push_constant_bytes = sizeof(Push),
                                     .workgroup = {64, 1, 1},
                                     .specialization = spec});
    c->inputs_ = {desc.input, desc.weight};
    if (desc.bias) c->inputs_.push_back(*desc.bias);
    if (desc.residual) c->inputs_.push_back({out_shape, desc.input.dtype});
    c->outputs_ = {{out_shape, desc.input.dtype}};
    return c;
}

void Conv3d::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                         const gpu::BufferRange&) const {
    if (push_.count == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), inputs[bias_ ? 2 : 1].range(),
                                        inputs[residual_ ? inputs.size() - 1 : 0].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, uint64_t(push_.count));
}

} // namespace vkml::ops
