// Letterbox: one dispatch, one invocation per output element (see shaders/detect/letterbox.comp),
// or per output pixel for an image source (shaders/detect/letterbox_image.comp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "detect_common.hpp"
#include "util.hpp"
#include "vkml/gpu/command.hpp"
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

Letterbox::Letterbox(gpu::Device& device, const LetterboxDesc& desc) : Op(device), image_(desc.image) {
    const auto& in = desc.input;
    uint32_t kind = 0, sw = 0, sh = 0, sc = 3;
    if (desc.image) {
        if (in.shape.rank() != 0)
            fail(op_name, "input", "must be left empty when the source is an image, is " + in.shape.str());
        detail::check_sampled_source(op_name, device, desc.image->format, desc.image->layout);
        if (desc.image->width == 0 || desc.image->height == 0)
            fail(op_name, "image",
                 "has an empty side: " + std::to_string(desc.image->width) + "x" +
                     std::to_string(desc.image->height));
        sw = desc.image->width;
        sh = desc.image->height;
    } else if (in.dtype == DType::u8) {
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
    push_ = detail::pack_transform(op_name, desc.transform, 3);

    geometry_ = letterbox_geometry(sw, sh, desc.width, desc.height);
    const auto& g = geometry_;
    const uint32_t bgr = desc.order == ChannelOrder::BGR ? 1u : 0u;
    if (desc.image) {
        detail::pixel_groups(device, op_name, desc.width, desc.height);
        const bool encode = desc.image->format == VK_FORMAT_R8G8B8A8_SRGB;
        pipeline_ = &device.pipeline(
            {.shader = detail::shader_for(device, op_name, "letterbox_image", desc.dtype),
             .binding_types = {gpu::BindingType::SampledImage, gpu::BindingType::StorageBuffer},
             .push_constant_bytes = sizeof push_,
             .workgroup = {8, 8, 1},
             .specialization = {sw, sh, desc.width, desc.height, g.left, g.top, g.content_width,
                                g.content_height, float_bits(desc.pad_value), bgr, encode ? 1u : 0u},
             .name = "Letterbox (image)"});
        inputs_ = {};
    } else {
        pipeline_ = &device.pipeline(
            {.shader = detail::shader_for(device, op_name, "letterbox", desc.dtype),
             .bindings = 2,
             .push_constant_bytes = sizeof push_,
             .workgroup = {64, 1, 1},
             .specialization = {kind, sw, sh, sc, desc.width, desc.height, g.left, g.top, g.content_width,
                                g.content_height, float_bits(desc.pad_value), bgr}});
        inputs_ = {in};
    }
    outputs_ = {{{1, 3, int64_t(desc.height), int64_t(desc.width)}, desc.dtype}};
}

void Letterbox::record(gpu::CommandBuffer& cmd, const ImageRef& image, const Tensor& output) const {
    if (!image_) fail(type(), "image", "the op was created for a tensor source: record it with its tensor");
    detail::check_image(*this, image, image_->format, image_->width, image_->height);
    detail::check_tensor(*this, device_, "output", output, outputs_[0]);
    const gpu::Binding bindings[] = {gpu::Binding::sampled_image(image.view, image_->layout),
                                     gpu::Binding::storage_buffer(output.range())};
    cmd.dispatch(*pipeline_, bindings, push_,
                 detail::pixel_groups(device_, type(), geometry_.dst_width, geometry_.dst_height));
}

void Letterbox::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                            std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    if (image_) fail(type(), "inputs", "the op reads an image: record it with record(cmd, image, output)");
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
