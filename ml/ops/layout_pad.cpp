// Pad: constant, reflect, edge and wrap, with negative pads cropping (shaders/layout/pad.comp).
#include <bit>
#include <cmath>
#include <cstring>

#include "layout_common.hpp"

namespace vkml::ops {

std::unique_ptr<Pad> Pad::create(gpu::Device& device, const PadDesc& desc) {
    const Shape& in = desc.input.shape;
    const size_t r = in.rank();
    uint32_t mode = 0;
    if (desc.mode == "constant")
        mode = 0;
    else if (desc.mode == "reflect")
        mode = 1;
    else if (desc.mode == "edge")
        mode = 2;
    else if (desc.mode == "wrap")
        mode = 3;
    else
        fail("Pad", "mode", "'" + desc.mode + "' is not constant, reflect, edge or wrap");

    std::vector<size_t> axes;
    if (desc.axes.empty()) {
        for (size_t i = 0; i < r; ++i) axes.push_back(i);
    } else {
        std::vector<bool> seen(r, false);
        for (int64_t a : desc.axes) {
            const size_t i = detail::normalize_axis("Pad", "axes", a, r);
            if (seen[i])
                fail("Pad", "axes", detail::layout_list(desc.axes) + " repeats axis " + std::to_string(i));
            seen[i] = true;
            axes.push_back(i);
        }
    }
    if (desc.pads.size() != 2 * axes.size())
        fail("Pad", "pads",
             "has " + std::to_string(desc.pads.size()) + " values, expected " +
                 std::to_string(2 * axes.size()) + " (begin and end per axis)");
    std::vector<int64_t> begin(r, 0), end(r, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
        begin[axes[i]] = desc.pads[i];
        end[axes[i]] = desc.pads[i + axes.size()];
    }

    auto op = std::unique_ptr<Pad>(new Pad(device));
    auto& p = op->push_;
    const auto strides = detail::layout_strides(in);
    std::vector<int64_t> out(r);
    int64_t base = 0;
    for (size_t i = 0; i < r; ++i) {
        // Negative pads crop: the kernel sees the window [crop_begin, in - crop_end) of the input.
        // Pads beyond +-2^62 are far past any size and would overflow the sums below.
        constexpr int64_t huge = int64_t{1} << 62;
        if (begin[i] > huge || begin[i] < -huge || end[i] > huge || end[i] < -huge)
            fail("Pad", "pads", detail::layout_list(desc.pads) + " has a pad beyond 2^62");
        const int64_t crop_begin = std::max<int64_t>(-begin[i], 0), crop_end = std::max<int64_t>(-end[i], 0);
        const int64_t win = in[i] - crop_begin - crop_end;
        out[i] = detail::add_dims("Pad", "pads", detail::add_dims("Pad", "pads", in[i], begin[i]), end[i]);
        if (win < 0 || out[i] < 0)
            fail("Pad", "pads",
                 detail::layout_list(desc.pads) + " crop more than dimension " + std::to_string(i) + " of " +
                     in.str() + " holds");
        if (win == 0 && out[i] > 0 && mode != 0)
            fail("Pad", "pads", desc.mode + " padding of an empty dimension " + std::to_string(i));
        base += crop_begin * strides[i];
        // Innermost first.
        const size_t k = r - 1 - i;
        p[5 + k] = uint32_t(out[i]);
        p[11 + k] = uint32_t(int32_t(strides[i]));
        p[17 + k] = uint32_t(int32_t(win));
        p[23 + k] = uint32_t(int32_t(std::max<int64_t>(begin[i], 0)));
    }
    const Shape out_shape = detail::shape_of("Pad", "pads", out);
    const uint32_t words = detail::layout_words(desc.input.dtype);
    if (out_shape.elements() > int64_t(INT32_MAX) / words || in.elements() > int64_t(INT32_MAX) / words)
        fail("Pad", "input", "has more elements than 32-bit indices reach");
    // Eight outputs of the innermost dimension per invocation where its length allows (a style
    // network's reflect pads of 64 x 1080 x 1920 f16 took 0.39 ms one output per invocation).
    const uint32_t per = r > 0 && out_shape[r - 1] % 8 == 0 ? 8 : 1;
    p[0] = uint32_t(out_shape.elements());
    op->count_ = p[0] / per;
    p[1] = uint32_t(r);
    p[2] = uint32_t(int32_t(base));
    // The constant in the input's own dtype, as the kernel stores it (f16: from its float value).
    switch (desc.input.dtype) {
    case DType::f32:
    case DType::f16:
        p[3] = std::bit_cast<uint32_t>(float(desc.constant_value));
        break;
    case DType::i32:
    case DType::u8:
        p[3] = uint32_t(int32_t(std::llround(desc.constant_value)));
        break;
    case DType::i64: {
        const auto v = uint64_t(std::llround(desc.constant_value));
        p[3] = uint32_t(v);
        p[4] = uint32_t(v >> 32);
        break;
    }
    }
    op->pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, "Pad", "layout_pad", detail::layout_variant(desc.input.dtype)),
         .bindings = 2,
         .push_constant_bytes = sizeof(op->push_),
         .workgroup = {256, 1, 1},
         .specialization = {mode, words, per}});
    op->inputs_ = {desc.input};
    op->outputs_ = {{out_shape, desc.input.dtype}};
    return op;
}

void Pad::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                      std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    if (count_ == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, count_);
}

} // namespace vkml::ops
