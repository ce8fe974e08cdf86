// Letterbox: one dispatch, one invocation per output element (see shaders/detect/letterbox.comp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/detect.hpp"

namespace vkml::ops {

namespace {

constexpr const char* op_name = "Letterbox";

uint32_t float_bits(float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

} // namespace

LetterboxGeometry letterbox_geometry(uint32_t src_width, uint32_t src_height, uint32_t dst_width,
                                     uint32_t dst_height) {
    if (!src_width || !src_height || !dst_width || !dst_height)
        fail(op_name, "size",
             "letterboxing " + std::to_string(src_width) + "x" + std::to_string(src_height) + " into " +
                 std::to_string(dst_width) + "x" + std::to_string(dst_height) + " has an empty side");
    LetterboxGeometry g;
    g.src_width = src_width, g.src_height = src_height, g.dst_width = dst_width, g.dst_height = dst_height;
    const double r = std::min(double(dst_width) / src_width, double(dst_height) / src_height);
    // The content keeps at least one pixel on each axis (a 1000x1 strip into 640x640).
    g.content_width = std::clamp(uint32_t(std::lround(src_width * r)), 1u, dst_width);
    g.content_height = std::clamp(uint32_t(std::lround(src_height * r)), 1u, dst_height);
    g.left = (dst_width - g.content_width) / 2;
    g.top = (dst_height - g.content_height) / 2;
    g.scale_x = float(double(g.content_width) / src_width);
    g.scale_y = float(double(g.content_height) / src_height);
    return g;
}

std::unique_ptr<Letterbox> Letterbox::create(gpu::Device& device, const LetterboxDesc& desc) {
    return std::make_unique<Letterbox>(device, desc);
}

Letterbox::Letterbox(gpu::Device& device, const LetterboxDesc& desc) : Op(device) {
    const auto& in = desc.input;
    uint32_t kind = 0, sw = 0, sh = 0, sc = 3;
    if (in.dtype == DType::u8) {
        if (in.shape.rank() != 4 || in.shape[0] != 1 || (in.shape[3] != 3 && in.shape[3] != 4) ||
            in.shape[1] < 1 || in.shape[2] < 1)
            fail(op_name, "input", "u8 pixels must be [1, height, width, 3 or 4], is " + in.shape.str());
        kind = 2;
        sh = detail::to_u32(op_name, "input", in.shape[1]);
        sw = detail::to_u32(op_name, "input", in.shape[2]);
        sc = uint32_t(in.shape[3]);
    } else if (in.dtype == DType::f32 || in.dtype == DType::f16) {
        if (in.shape.rank() != 4 || in.shape[0] != 1 || in.shape[1] != 3 || in.shape[2] < 1 ||
            in.shape[3] < 1)
            fail(op_name, "input", "must be [1, 3, height, width], is " + in.shape.str());
        kind = in.dtype == DType::f32 ? 0 : 1;
        sh = detail::to_u32(op_name, "input", in.shape[2]);
        sw = detail::to_u32(op_name, "input", in.shape[3]);
    } else {
        fail(op_name, "input",
             std::string("dtype ") + gpu::dtype_name(in.dtype) + " is not f32, f16 or u8 (packed pixels)");
    }
    detail::to_u32(op_name, "input", in.shape.elements());
    if (desc.width == 0) fail(op_name, "width", "is 0");
    if (desc.height == 0) fail(op_name, "height", "is 0");
    detail::to_u32(op_name, "width", int64_t(desc.width) * desc.height * 3);
    detail::require_float(op_name, "dtype", {{1}, desc.dtype});
    if (!std::isfinite(desc.pad_value)) fail(op_name, "pad_value", "is not finite");
    if (desc.order != ChannelOrder::RGB && desc.order != ChannelOrder::BGR)
        fail(op_name, "order", "is neither RGB nor BGR");

    std::array<float, 12> t{1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
    auto put = [&](const std::vector<float>& v, const char* field, size_t at, bool nonzero) {
        if (v.size() != 1 && v.size() != 3)
            fail(op_name, std::string("transform.") + field,
                 "has " + std::to_string(v.size()) + " values, expected 1 or 3");
        for (size_t c = 0; c < 3; ++c) {
            const float x = v.size() == 1 ? v[0] : v[c];
            if (!std::isfinite(x)) fail(op_name, std::string("transform.") + field, "value is not finite");
            if (nonzero && x == 0.f) fail(op_name, std::string("transform.") + field, "value is 0");
            t[at + c] = x;
        }
    };
    put(desc.transform.scale, "scale", 0, true);
    put(desc.transform.mean, "mean", 4, false);
    put(desc.transform.std, "std", 8, true);
    push_ = t;

    geometry_ = letterbox_geometry(sw, sh, desc.width, desc.height);
    const auto& g = geometry_;
    pipeline_ =
        &device.pipeline({.shader = detail::shader_for(device, op_name, "letterbox", desc.dtype),
                          .bindings = 2,
                          .push_constant_bytes = sizeof push_,
                          .workgroup = {64, 1, 1},
                          .specialization = {kind, sw, sh, sc, desc.width, desc.height, g.left, g.top,
                                             g.content_width, g.content_height, float_bits(desc.pad_value),
                                             desc.order == ChannelOrder::BGR ? 1u : 0u}});
    inputs_ = {in};
    outputs_ = {{{1, 3, int64_t(desc.height), int64_t(desc.width)}, desc.dtype}};
}

void Letterbox::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                            std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    // The kernel reads the input as 32-bit words: u8 and f16 inputs whose size is not a multiple
    // of 4 bytes need the buffer to reach to the end of their last word.
    const Tensor& in = inputs[0];
    const uint64_t words = (in.bytes() + 3) / 4 * 4;
    if (in.byte_offset() + words > in.buffer()->size())
        fail(type(), "input",
             "the kernel reads whole 32-bit words: the buffer must hold " + std::to_string(words) +
                 " bytes from the tensor's start (round the allocation up to 4 bytes)");
    const gpu::BufferRange bufs[] = {{in.buffer()->vk(), in.byte_offset(), words}, outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, bufs, push_, uint64_t(outputs[0].elements()));
}

} // namespace vkml::ops
