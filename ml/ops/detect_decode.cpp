// Detector post-processing: YoloDecode and NanoDetDecode (one dispatch per model output level,
// one invocation per box) and GatherDetections (one invocation per output row). See
// shaders/detect/{yolo_decode,nanodet_decode,gather_detections}.comp.
#include <cmath>
#include <cstring>
#include <string>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/detect.hpp"

namespace vkml::ops {

namespace {

uint32_t float_bits(float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

void check_class_offset(const char* op, float offset) {
    if (!(offset > 0.f) || !std::isfinite(offset))
        fail(op, "class_offset", std::to_string(offset) + " is not a positive finite number");
}

// The three decoder outputs for B batches of N boxes.
std::vector<TensorDesc> candidate_outputs(int64_t batches, int64_t n) {
    return {{{batches, n, 6}, DType::f32}, {{batches, n, 4}, DType::f32}, {{batches, 1, n}, DType::f32}};
}

} // namespace

// ---------------------------------------------------------------------------------------------

std::unique_ptr<YoloDecode> YoloDecode::create(gpu::Device& device, const YoloDecodeDesc& desc) {
    return std::make_unique<YoloDecode>(device, desc);
}

YoloDecode::YoloDecode(gpu::Device& device, const YoloDecodeDesc& desc) : Op(device) {
    const char* op = "YoloDecode";
    const auto& in = desc.input;
    detail::require_float(op, "input", in);
    if (desc.format != YoloFormat::V5 && desc.format != YoloFormat::V8)
        fail(op, "format", "is neither V5 nor V8");
    const bool v8 = desc.format == YoloFormat::V8;
    if (in.shape.rank() != 3)
        fail(op, "input",
             std::string("must be ") +
                 (v8 ? "[batches, 4 + classes, boxes]" : "[batches, boxes, 5 + classes]") + ", is " +
                 in.shape.str());
    const int64_t batches = in.shape[0];
    const int64_t n = v8 ? in.shape[2] : in.shape[1];
    const int64_t classes = (v8 ? in.shape[1] : in.shape[2]) - (v8 ? 4 : 5);
    if (batches < 1 || n < 1) fail(op, "input", "has an empty dimension: " + in.shape.str());
    if (classes < 1)
        fail(op, "input",
             in.shape.str() + " leaves no class scores (" +
                 (v8 ? "YOLOv8 exports are [1, 4 + classes, boxes]"
                     : "YOLOv5 exports are [1, boxes, 5 + classes]") +
                 ")");
    check_class_offset(op, desc.class_offset);
    detail::to_u32(op, "input", batches * n * 6);
    detail::to_u32(op, "input", in.shape.elements());
    boxes_ = uint32_t(batches * n);
    pipeline_ = &device.pipeline({.shader = detail::shader_for(device, op, "yolo_decode", in.dtype),
                                  .bindings = 4,
                                  .workgroup = {64, 1, 1},
                                  .specialization = {uint32_t(n), uint32_t(classes), v8 ? 1u : 0u,
                                                     uint32_t(batches), float_bits(desc.class_offset)}});
    inputs_ = {in};
    outputs_ = candidate_outputs(batches, n);
}

void YoloDecode::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange bufs[] = {inputs[0].range(), outputs[0].range(), outputs[1].range(),
                                     outputs[2].range()};
    cmd.dispatch(*pipeline_, bufs, nullptr, 0, cmd.groups_for(*pipeline_, boxes_));
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<NanoDetDecode> NanoDetDecode::create(gpu::Device& device, const NanoDetDecodeDesc& desc) {
    return std::make_unique<NanoDetDecode>(device, desc);
}

NanoDetDecode::NanoDetDecode(gpu::Device& device, const NanoDetDecodeDesc& desc) : Op(device) {
    const char* op = "NanoDetDecode";
    const size_t levels = desc.strides.size();
    if (levels == 0) fail(op, "strides", "is empty");
    if (desc.scores.size() != levels)
        fail(op, "scores",
             std::to_string(desc.scores.size()) + " tensors for " + std::to_string(levels) + " strides");
    if (desc.boxes.size() != levels)
        fail(op, "boxes",
             std::to_string(desc.boxes.size()) + " tensors for " + std::to_string(levels) + " strides");
    if (desc.width == 0 || desc.height == 0) fail(op, "width", "the model's input size has an empty side");
    if (!std::isfinite(desc.center_offset) || desc.center_offset < 0.f || desc.center_offset > 1.f)
        fail(op, "center_offset", std::to_string(desc.center_offset) + " is outside [0, 1]");
    check_class_offset(op, desc.class_offset);
    const DType dtype = desc.scores[0].dtype;
    int64_t batches = 0, classes = 0, bins = 0, total = 0;
    for (size_t l = 0; l < levels; ++l) {
        const std::string si = "scores[" + std::to_string(l) + "]", bi = "boxes[" + std::to_string(l) + "]";
        const TensorDesc& s = desc.scores[l];
        const TensorDesc& b = desc.boxes[l];
        detail::require_float(op, si, s);
        if (s.dtype != dtype || b.dtype != dtype)
            fail(op, bi, "every score and box tensor must have scores[0]'s dtype");
        if (s.shape.rank() != 3) fail(op, si, "must be [batches, cells, classes], is " + s.shape.str());
        if (b.shape.rank() != 3) fail(op, bi, "must be [batches, cells, 4 * bins], is " + b.shape.str());
        if (desc.strides[l] == 0) fail(op, "strides", "has a 0");
        const int64_t gw = (desc.width + desc.strides[l] - 1) / desc.strides[l];
        const int64_t gh = (desc.height + desc.strides[l] - 1) / desc.strides[l];
        if (l == 0) batches = s.shape[0], classes = s.shape[2], bins = b.shape[2] / 4;
        if (s.shape[0] != batches || s.shape[2] != classes || classes < 1)
            fail(op, si, s.shape.str() + " differs from scores[0]'s batches or classes");
        if (s.shape[1] != gw * gh)
            fail(op, si,
                 "has " + std::to_string(s.shape[1]) + " cells, a " + std::to_string(desc.width) + "x" +
                     std::to_string(desc.height) + " input at stride " + std::to_string(desc.strides[l]) +
                     " has " + std::to_string(gw * gh));
        if (b.shape[0] != batches || b.shape[1] != s.shape[1] || b.shape[2] % 4 != 0 ||
            b.shape[2] / 4 != bins || bins < 1)
            fail(op, bi, b.shape.str() + " does not match " + s.shape.str() + " with 4 * bins box values");
        total += s.shape[1];
    }
    detail::to_u32(op, "scores", batches * total * 6);
    detail::to_u32(op, "scores", batches * total * classes);
    int64_t base = 0;
    for (size_t l = 0; l < levels; ++l) {
        const uint32_t cells = uint32_t(desc.scores[l].shape[1]);
        const uint32_t gw = (desc.width + desc.strides[l] - 1) / desc.strides[l];
        Level level{cells, uint32_t(base), nullptr};
        level.pipeline = &device.pipeline(
            {.shader = detail::shader_for(device, op, "nanodet_decode", dtype),
             .bindings = 5,
             .workgroup = {64, 1, 1},
             .specialization = {cells, uint32_t(classes), uint32_t(bins), gw,
                                float_bits(float(desc.strides[l])), float_bits(desc.center_offset),
                                uint32_t(base), uint32_t(total), uint32_t(batches),
                                float_bits(desc.class_offset)}});
        levels_.push_back(level);
        base += cells;
    }
    inputs_ = desc.scores;
    inputs_.insert(inputs_.end(), desc.boxes.begin(), desc.boxes.end());
    outputs_ = candidate_outputs(batches, total);
}

void NanoDetDecode::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    // Levels write disjoint rows: no barriers between them.
    const size_t levels = levels_.size();
    const uint64_t batches = uint64_t(outputs[0].shape()[0]);
    for (size_t l = 0; l < levels; ++l) {
        const gpu::BufferRange bufs[] = {inputs[l].range(), inputs[levels + l].range(), outputs[0].range(),
                                         outputs[1].range(), outputs[2].range()};
        const gpu::Pipeline& pipe = *levels_[l].pipeline;
        cmd.dispatch(pipe, bufs, nullptr, 0, cmd.groups_for(pipe, batches * levels_[l].cells));
    }
}

// ---------------------------------------------------------------------------------------------

void set_mapping(GatherDetectionsDesc& desc, const LetterboxGeometry& g) {
    desc.scale_x = g.scale_x;
    desc.scale_y = g.scale_y;
    desc.offset_x = float(g.left);
    desc.offset_y = float(g.top);
    desc.clip_width = float(g.src_width);
    desc.clip_height = float(g.src_height);
}

std::unique_ptr<GatherDetections> GatherDetections::create(gpu::Device& device,
                                                           const GatherDetectionsDesc& desc) {
    return std::make_unique<GatherDetections>(device, desc);
}

GatherDetections::GatherDetections(gpu::Device& device, const GatherDetectionsDesc& desc) : Op(device) {
    const char* op = "GatherDetections";
    const auto& cand = desc.candidates;
    const auto& sel = desc.selected_indices;
    if (cand.dtype != DType::f32 || cand.shape.rank() != 3 || cand.shape[0] != 1 || cand.shape[2] != 6 ||
        cand.shape[1] < 1)
        fail(op, "candidates", "must be f32[1, boxes, 6], is " + to_string(cand));
    if ((sel.dtype != DType::i64 && sel.dtype != DType::i32) || sel.shape.rank() != 2 || sel.shape[1] != 3 ||
        sel.shape[0] < 1)
        fail(op, "selected_indices", "must be i64 or i32 [rows, 3], is " + to_string(sel));
    for (float v : {desc.scale_x, desc.scale_y})
        if (!(v > 0.f) || !std::isfinite(v)) fail(op, "scale_x", "scales must be positive and finite");
    for (float v : {desc.offset_x, desc.offset_y, desc.clip_width, desc.clip_height})
        if (!std::isfinite(v)) fail(op, "offset_x", "offsets and clip sizes must be finite");
    if (desc.clip_width < 0.f || desc.clip_height < 0.f)
        fail(op, "clip_width", "clip sizes must not be negative");
    rows_ = detail::to_u32(op, "selected_indices", sel.shape[0] * 6);
    rows_ /= 6;
    detail::to_u32(op, "candidates", cand.shape.elements());
    push_ = {desc.scale_x, desc.scale_y, desc.offset_x, desc.offset_y, desc.clip_width, desc.clip_height};
    pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, op, "gather_detections", DType::f32),
         .bindings = 5,
         .push_constant_bytes = sizeof push_,
         .workgroup = {64, 1, 1},
         .specialization = {rows_, sel.dtype == DType::i64 ? 1u : 0u, uint32_t(cand.shape[1])}});
    inputs_ = {cand, sel, {{1}, sel.dtype}};
    outputs_ = {{{int64_t(rows_), 6}, DType::f32}, {{1}, DType::i32}};
}

void GatherDetections::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                   std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange bufs[] = {inputs[0].range(), inputs[1].range(), inputs[2].range(),
                                     outputs[0].range(), outputs[1].range()};
    detail::dispatch_1d(cmd, *pipeline_, bufs, push_, rows_);
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<CompositeOver> CompositeOver::create(gpu::Device& device, const CompositeOverDesc& desc) {
    return std::make_unique<CompositeOver>(device, desc);
}

CompositeOver::CompositeOver(gpu::Device& device, const CompositeOverDesc& desc) : Op(device) {
    const char* op = "CompositeOver";
    const auto& im = desc.image;
    const auto& ov = desc.overlay;
    detail::require_float(op, "image", im);
    if (im.shape.rank() != 4 || im.shape[0] != 1 || im.shape[1] != 3 || im.shape[2] < 1 || im.shape[3] < 1)
        fail(op, "image", "must be [1, 3, height, width], is " + im.shape.str());
    if (ov.dtype != DType::u8 || ov.shape.rank() != 4 || ov.shape[0] != 1 || ov.shape[1] != im.shape[2] ||
        ov.shape[2] != im.shape[3] || ov.shape[3] != 4)
        fail(op, "overlay",
             "must be u8[1, " + std::to_string(im.shape[2]) + ", " + std::to_string(im.shape[3]) +
                 ", 4], is " + to_string(ov));
    pixels_ = detail::to_u32(op, "image", im.shape[2] * im.shape[3]);
    detail::to_u32(op, "image", im.shape.elements());
    pipeline_ = &device.pipeline({.shader = detail::shader_for(device, op, "composite_over", im.dtype),
                                  .bindings = 3,
                                  .workgroup = {64, 1, 1},
                                  .specialization = {pixels_}});
    inputs_ = {im, ov};
    outputs_ = {im};
}

void CompositeOver::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange bufs[] = {inputs[0].range(), inputs[1].range(), outputs[0].range()};
    cmd.dispatch(*pipeline_, bufs, nullptr, 0, cmd.groups_for(*pipeline_, pixels_));
}

} // namespace vkml::ops
