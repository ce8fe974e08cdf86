#include <algorithm>
#include <climits>

#include "conv_common.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/conv.hpp"

namespace vkml::ops {

namespace {

constexpr const char* op_name = "ConvTranspose";

struct AxisOut {
    int64_t out, pad_begin, pad_end;
};

// One spatial axis of ONNX ConvTranspose. `full` is the size before cropping pads:
// stride * (in - 1) + output_padding + dilated kernel.
AxisOut transpose_axis(detail::conv::AutoPad mode, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
                       int64_t pe, int64_t out_pad, int64_t requested, const char* axis) {
    // Checked: stride and input size are each 32-bit, so their product alone can reach 2^63.
    auto add = [](int64_t a, int64_t b) { return detail::add_dims(op_name, "strides", a, b); };
    auto mul = [](int64_t a, int64_t b) { return detail::mul_dims(op_name, "strides", a, b); };
    const int64_t full = add(add(mul(s, in - 1), out_pad), (k - 1) * d + 1);
    AxisOut r{};
    if (requested > 0 || mode == detail::conv::AutoPad::SameUpper ||
        mode == detail::conv::AutoPad::SameLower) {
        // Pads follow from the wanted size: an explicit output_shape, else input * stride.
        r.out = requested > 0 ? requested : mul(in, s);
        const int64_t total = full - r.out;
        // ONNX: SAME_UPPER puts the odd pad at the end; every other mode at the beginning. Halves
        // round down as in ONNX's reference (Python's //), which matters for a negative total
        // (an output larger than the full one).
        const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        if (mode == detail::conv::AutoPad::SameUpper) {
            r.pad_begin = half;
            r.pad_end = total - half;
        } else {
            r.pad_begin = total - half;
            r.pad_end = half;
        }
        return r;
    }
    if (mode == detail::conv::AutoPad::Valid) pb = pe = 0;
    r = {full - pb - pe, pb, pe};
    if (r.out < 1)
        fail(op_name, "pads",
             std::string(axis) + " pads " + std::to_string(pb) + " + " + std::to_string(pe) +
                 " crop the whole output of size " + std::to_string(full));
    return r;
}

} // namespace

std::unique_ptr<ConvTranspose> ConvTranspose::create(gpu::Device& device, const ConvTransposeDesc& desc) {
    const char* op = op_name;
    const detail::conv::ConvGeometry g = detail::conv::conv_geometry(
        op, desc.input, desc.weight, desc.kernel_shape, desc.strides, desc.dilations);
    const size_t s = g.spatial;

    if (desc.group < 1) fail(op, "group", "must be at least 1, is " + std::to_string(desc.group));
    if (g.c % desc.group != 0)
        fail(op, "group",
             std::to_string(desc.group) + " does not divide the input's " + std::to_string(g.c) +
                 " channels");
    if (desc.weight.shape[0] != g.c)
        fail(op, "weight",
             "channel mismatch: weight " + desc.weight.shape.str() + " is for " +
                 std::to_string(desc.weight.shape[0]) + " input channels, the input " +
                 desc.input.shape.str() + " has " + std::to_string(g.c));
    const int64_t m = detail::mul_dims(op, "group", desc.weight.shape[1], desc.group);
    if (desc.bias) {
        detail::conv::require_dtype(op, "bias", *desc.bias, desc.input);
        if (desc.bias->shape != Shape{m})
            fail(op, "bias", "expected [" + std::to_string(m) + "], got " + desc.bias->shape.str());
    }
    detail::conv::check_activation(op, desc.activation);

    const detail::conv::AutoPad mode = detail::conv::parse_auto_pad(op, desc.auto_pad);
    const auto pads = detail::conv::axis_attr(op, "pads", desc.pads, 2 * s, 0, 0);
    if (mode != detail::conv::AutoPad::NotSet &&
        std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
        fail(op, "pads", "must be empty or zero when auto_pad is " + desc.auto_pad);
    const auto out_pad = detail::conv::axis_attr(op, "output_padding", desc.output_padding, s, 0, 0);
    // output_shape is the spatial sizes, or (as some exporters write it) the whole output shape.
    std::vector<int64_t> requested(s, 0);
    if (!desc.output_shape.empty()) {
        const auto& os = desc.output_shape;
        if (os.size() != s && os.size() != s + 2)
            fail(op, "output_shape",
                 "expected " + std::to_string(s) + " spatial sizes (or " + std::to_string(s + 2) +
                     " dims), got " + std::to_string(os.size()));
        if (os.size() == s + 2 && (os[0] != g.n || os[1] != m))
            fail(op, "output_shape",
                 "batch and channels [" + std::to_string(os[0]) + ", " + std::to_string(os[1]) +
                     "] differ from [" + std::to_string(g.n) + ", " + std::to_string(m) + "]");
        for (size_t i = 0; i < s; ++i) {
            requested[i] = os[os.size() - s + i];
            if (requested[i] < 1) fail(op, "output_shape", "sizes must be at least 1");
        }
    }
    const AxisOut ax_w = transpose_axis(mode, g.w, g.kw, g.sw, g.dw, pads[s - 1], pads[2 * s - 1],
                                        out_pad[s - 1], requested[s - 1], "W");
    const AxisOut ax_h =
        s == 2 ? transpose_axis(mode, g.h, g.kh, g.sh, g.dh, pads[0], pads[2], out_pad[0], requested[0], "H")
               : AxisOut{1, 0, 0};

    auto ct = std::unique_ptr<ConvTranspose>(new ConvTranspose(device));
    ct->pads_ = {ax_h.pad_begin, ax_w.pad_begin, ax_h.pad_end, ax_w.pad_end};
    for (int64_t p : ct->pads_)
        if (p > INT32_MAX || p < INT32_MIN)
            fail(op, "pads", std::to_string(p) + " exceeds the kernel's 32-bit offsets");
    ct->has_bias_ = desc.bias.has_value();
    ct->has_residual_ = desc.residual;
    const TensorDesc output{detail::conv::conv_output_shape(g, m, ax_h.out, ax_w.out), desc.input.dtype};
    detail::conv::require_dense(op, "output", output);
    ct->inputs_ = {desc.input, desc.weight};
    if (desc.bias) ct->inputs_.push_back(*desc.bias);
    if (desc.residual) ct->inputs_.push_back(output);
    ct->outputs_ = {output};

    // Pads derived from output_shape may be negative (an output larger than the full one): the
    // gather kernel handles that, the extra positions get only bias (and residual).
    const detail::conv::ConvSpec spec =
        detail::conv::conv_spec(g, m, ax_h.out, ax_w.out, ax_h.pad_begin, ax_w.pad_begin, desc.group,
                                ct->has_bias_, desc.residual, desc.activation.kind);
    ct->pipeline_ =
        &device.pipeline({.shader = detail::shader_for(device, op, "conv_transpose", desc.input.dtype),
                          .bindings = 5,
                          .push_constant_bytes = 8,
                          .workgroup = {64, 1, 1},
                          .specialization = spec.values()});
    ct->push_ = {desc.activation.alpha, desc.activation.beta};
    return ct;
}

void ConvTranspose::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange x = inputs[0].range(), w = inputs[1].range();
    // Absent optional inputs bind a read-only tensor the kernel never reads (its flag is off).
    const gpu::BufferRange b = has_bias_ ? inputs[2].range() : w;
    const gpu::BufferRange r = has_residual_ ? inputs[has_bias_ ? 3 : 2].range() : x;
    const gpu::BufferRange bufs[] = {x, w, b, r, outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, bufs, push_, uint64_t(outputs[0].elements()));
}

} // namespace vkml::ops
