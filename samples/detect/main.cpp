// samples/detect: object detection with vkml.
//   detect INPUT... [-o OUT] [--model nanodet|PATH] ...   images, folders, videos (= vkml detect)
//   detect --scene [--headless --frames N --out DIR] [--async-compute] [--model ...] [--score S]
// In the scene mode the detector is an ML pass of the frame graph that reads the rendered frame
// (on the async compute queue with --async-compute, or the 'a' key) and writes its detections into
// a GPU buffer of the same frame graph; a raster pass draws the box outlines from that buffer
// (shaders/detect/boxes.vert), so frame N shows the boxes its own detector run found, with no CPU
// round trip. With --async-compute the detector runs one frame behind the render
// (fg::History): frame N's detector reads frame N-1's render from a history image
// while frame N renders beside it on the graphics queue, and frame N draws render N-1's boxes.
// Without it, frame N draws render N's boxes. The labels (class and score text, GPU overlay) come
// from the CPU readback and lag: they are the detections of frame N - frames_in_flight. Headless
// runs write DIR/detections.json: per frame, the boxes drawn and which frame's render they came from.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/app.hpp"
#include "common/history.hpp"
#include "common/scene.hpp"
#include "detect_app.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/passes/detector.hpp"
#include "vkml/passes/overlay.hpp"
#include "vkml/shader_ids.hpp"

namespace {

using namespace vkml;

// The raster pipeline of the "boxes" pass: shaders/detect/boxes.{vert,frag} with the detector's GPU
// output as two per-instance vertex buffers (the rows, and the count through a stride-0 binding),
// so the pass needs no descriptors.
class BoxPipeline {
public:
    BoxPipeline(gpu::Device& device, VkFormat color_format)
        // Binding 0: the detection rows (6 floats) from byte 16; binding 1: the i32 count at byte 0,
        // stride 0 so every instance reads it.
        : pipeline_(device.pipeline(gpu::GraphicsPipelineDesc{
              .vertex = gpu::ShaderId::detect_boxes_vs_f32,
              .fragment = gpu::ShaderId::detect_boxes_fs_f32,
              .push_constant_bytes = sizeof(Push),
              .color_formats = {color_format},
              .vertex_bindings = {{0, 6 * sizeof(float), VK_VERTEX_INPUT_RATE_INSTANCE},
                                  {1, 0, VK_VERTEX_INPUT_RATE_INSTANCE}},
              .vertex_attributes = {{0, 0, VK_FORMAT_R32G32B32A32_SFLOAT, 0},
                                    {1, 0, VK_FORMAT_R32G32_SFLOAT, 4 * sizeof(float)},
                                    {2, 1, VK_FORMAT_R32_SINT, 0}},
              .name = "detection boxes"})) {}

    // Inside the raster pass: `detections` is the detector's output buffer as the pass sees it.
    void draw(fg::PassContext& ctx, const gpu::BufferRange& detections, uint32_t max_detections) const {
        const VkRect2D area = ctx.render_area();
        const uint32_t W = area.extent.width, H = area.extent.height;
        const Push push{float(W), float(H), float(std::max(2u, std::min(W, H) / 300))};
        const VkBuffer buffers[] = {detections.buffer, detections.buffer};
        const VkDeviceSize offsets[] = {detections.offset + 16, detections.offset};
        vkCmdBindVertexBuffers(ctx.vk(), 0, 2, buffers, offsets);
        ctx.cmd().draw(pipeline_, {}, push, 24, max_detections); // 4 rectangles x 2 triangles per box
    }

private:
    struct Push {
        float width, height, thickness;
    };
    const gpu::Pipeline& pipeline_; // the device's pipeline cache owns it
};

class SceneDetect final : public samples::Sample {
public:
    SceneDetect(samples::App& app, const passes::DetectorDesc& desc, bool labels, bool stage_times)
        : labels_on_(labels), stage_times_(stage_times), app_(app), scene_(app.device()),
          detector_(app.device(), desc), overlay_(app.device()),
          history_(app.device(), {.name = "render history"}),
          boxes_(app.device(), samples::Scene::color_format) {
        slot_frame_.assign(app.executor().frames_in_flight(), -1);
        app.status(detector_.describe());
    }

    fg::ImageHandle build(fg::FrameGraph& graph, const samples::FrameState& state) override {
        const uint32_t w = state.extent.width, h = state.extent.height;
        fg::ImageHandle color = scene_.add_passes(graph, w, h, [this] { return time_; });
        schedule_ = samples::schedule_for(app_);
        const bool behind = schedule_ == samples::MlSchedule::OneFrameBehind;
        // One frame behind: the detector reads the previous frame's render; this frame's render is
        // stored after that read and before the boxes are drawn into it.
        fg::ImageHandle input = color;
        if (behind)
            input = history_.begin(graph, color, w, h, samples::Scene::color_format);
        else
            history_.invalidate();
        // The detections stay on the GPU: the detector writes them into a transient buffer that
        // the boxes pass reads as vertex data in the same frame (the graph adds the async compute
        // -> graphics semaphore; the render still overlaps the detector, only the boxes wait).
        fg::BufferHandle detections = graph.create_buffer("detections", {.size = detector_.output_bytes()});
        detections =
            detector_.add_pass(graph, input,
                               {.name = "detect",
                                .queue = app_.async_compute() ? fg::Queue::AsyncCompute : fg::Queue::Graphics,
                                .stage_timestamps = stage_times_},
                               detections);
        if (behind) history_.end(graph);
        fg::PassBuilder boxes = graph.add_raster_pass("boxes");
        boxes.read(detections, fg::BufferRead::Vertex);
        color = boxes.color(color, {.load = fg::LoadOp::Load});
        boxes.record([this, detections](fg::PassContext& ctx) {
            boxes_.draw(ctx, ctx.buffer(detections), detector_.desc().max_detections);
            queue_labels(ctx);
        });
        return overlay_.add_pass(graph, color, "labels");
    }

    void update(const samples::FrameState& state, const samples::FrameTimes& last) override {
        time_ = state.time;
        frame_ = int64_t(state.index);
        // The render this frame's detection analyses (and whose boxes this frame draws).
        source_ =
            schedule_ == samples::MlSchedule::OneFrameBehind && !history_.priming() ? frame_ - 1 : frame_;
        if (history_.take_rebuild()) app_.rebuild(); // the steady graph after the priming one
        if (state.index % 30 == 0 && state.index) {
            char line[160];
            std::snprintf(line, sizeof line, "frame %llu: %zu boxes, gpu %.2f ms, detect %.2f ms (%s, %s)",
                          static_cast<unsigned long long>(state.index), labels_.size(), last.gpu_frame_ms,
                          last.sum_ms("detect"), app_.async_compute() ? "async compute" : "graphics queue",
                          samples::schedule_name(schedule_));
            app_.status(line);
        }
    }

    void on_key(int key) override {
        if (key == GLFW_KEY_A) {
            app_.set_async_compute(!app_.async_compute());
            app_.rebuild();
        }
    }

    std::map<std::string, std::string> info() const override {
        return {{"model", detector_.model_path().string()},
                {"format", passes::format_name(detector_.format())},
                {"detections_last_frame", std::to_string(labels_.size())},
                {"ml_schedule", samples::schedule_name(schedule_)}};
    }

    int finish() override {
        if (!app_.headless()) return 0;
        // The GPU is idle: every slot's readback holds the last frame that ran in it.
        for (uint32_t s = 0; s < slot_frame_.size(); ++s) collect(s);
        std::string log;
        for (const auto& [frame, entry] : log_) log += (log.empty() ? "\n    " : ",\n    ") + entry;
        const std::filesystem::path path = std::filesystem::path(app_.options().out_dir) / "detections.json";
        std::ofstream(path) << "{\n  \"ml_schedule\": \"" << samples::schedule_name(schedule_)
                            << "\",\n  \"frames\": [" << log << "\n  ]\n}\n";
        return 0;
    }

private:
    // Runs when the frame is recorded, after the executor waited for this frame slot's previous
    // frame: the readback of that frame's detections is complete. They serve the labels (which so
    // lag frames_in_flight frames behind the boxes the GPU draws) and detections.json.
    void queue_labels(fg::PassContext& ctx) {
        const uint32_t slot = ctx.frame_slot();
        if (slot >= slot_frame_.size()) slot_frame_.resize(slot + 1, -1);
        labels_ = collect(slot);
        slot_frame_[slot] = frame_;
        frame_source_[frame_] = source_;
        overlay_.clear();
        if (!labels_on_) return;
        const VkRect2D area = ctx.render_area();
        const int W = int(area.extent.width), H = int(area.extent.height);
        for (const auto& d : labels_) {
            const passes::Rgba c = detect_app::class_color(d.class_id);
            const int x0 = std::clamp(int(d.x0), 0, W - 1), y0 = std::clamp(int(d.y0), 0, H - 1);
            char label[96];
            std::snprintf(label, sizeof label, "%s %.2f", d.name.c_str(), double(d.score));
            const int scale = std::max(1, std::min(W, H) / 400);
            const passes::TextSize ts = passes::text_size(label, scale);
            overlay_.text(x0, y0 - ts.h >= 0 ? y0 - ts.h : y0, label, {255, 255, 255, 255}, scale,
                          passes::Rgba{c.r, c.g, c.b, 200});
        }
    }

    // Reads the detections slot `slot` holds (the frame that last ran in it) and, headless, logs
    // them as that frame's boxes.
    std::vector<passes::Detection> collect(uint32_t slot) {
        const int64_t frame = slot < slot_frame_.size() ? slot_frame_[slot] : -1;
        if (frame < 0) return {};
        std::vector<passes::Detection> dets = detector_.results(slot);
        if (app_.headless()) log_frame(frame, frame_source_[frame], dets);
        return dets;
    }

    // detections.json: {"frame": N, "source": the render frame the boxes drawn in frame N were
    // detected on, "boxes": [[class, score, x0, y0, x1, y1], ...]}.
    void log_frame(int64_t frame, int64_t source, const std::vector<passes::Detection>& dets) {
        char buf[160];
        std::string e = "{\"frame\": " + std::to_string(frame) + ", \"source\": " + std::to_string(source) +
                        ", \"boxes\": [";
        for (size_t i = 0; i < dets.size(); ++i) {
            const auto& d = dets[i];
            std::snprintf(buf, sizeof buf, "%s[%d, %.6g, %.6g, %.6g, %.6g, %.6g]", i ? ", " : "", d.class_id,
                          double(d.score), double(d.x0), double(d.y0), double(d.x1), double(d.y1));
            e += buf;
        }
        log_[frame] = e + "]}";
    }

    bool labels_on_;
    bool stage_times_;
    samples::App& app_;
    samples::Scene scene_;
    passes::Detector detector_;
    passes::Overlay overlay_;
    fg::History history_;
    BoxPipeline boxes_;
    samples::MlSchedule schedule_ = samples::MlSchedule::SameFrame;
    std::vector<int64_t> slot_frame_;         // the frame whose detections each slot's readback holds
    std::map<int64_t, int64_t> frame_source_; // frame -> the render its detector analysed
    std::map<int64_t, std::string> log_;      // frame -> its detections.json entry
    int64_t frame_ = 0, source_ = 0;
    double time_ = 0;
    std::vector<passes::Detection> labels_;
};

bool has_flag(int argc, char** argv, std::string_view flag) {
    for (int i = 1; i < argc; ++i)
        if (flag == argv[i]) return true;
    return false;
}

} // namespace

int main(int argc, char** argv) {
    if (!has_flag(argc, argv, "--scene")) {
        // Files: the same application as `vkml detect`.
        std::vector<std::string_view> args(argv + 1, argv + argc);
        try {
            const auto o = detect_app::parse_args(args, "detect");
            if (!o) {
                std::printf("\n  --scene              run on the rendered 3D scene instead (detect --scene "
                            "--help)\n");
                return 0;
            }
            return detect_app::run(*o);
        } catch (const Error& e) {
            std::fprintf(stderr, "detect: %s\n", e.what());
            return e.code() == ErrorCode::InvalidArgument ? 2 : 1;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "detect: error: %s\n", e.what());
            return 1;
        }
    }
    passes::DetectorDesc desc;
    bool labels = true;
    samples::AppDesc app{.name = "detect",
                         .summary =
                             "object detection on the rendered scene: the detector as a frame-graph ML pass, "
                             "boxes drawn by a raster pass",
                         .default_width = 960,
                         .default_height = 540};
    app.options = {
        {"--scene", "", "run on the rendered scene (this mode)", [](const std::string&) {}},
        {"--model", "nanodet|PATH", "detector model (default nanodet)",
         [&](const std::string& v) { desc.model = v; }},
        {"--format", "F", "auto, yolov5, yolov8 or nanodet",
         [&](const std::string& v) {
             try {
                 desc.format = passes::parse_format(v);
             } catch (const Error& e) {
                 throw samples::UsageError(e.what());
             }
         }},
        {"--score", "S", "score threshold (default 0.35)",
         [&](const std::string& v) {
             try {
                 desc.score_threshold = std::stof(v);
             } catch (const std::exception&) {
                 throw samples::UsageError("--score: '" + v + "' is not a number");
             }
             if (!(desc.score_threshold >= 0.f && desc.score_threshold < 1.f))
                 throw samples::UsageError("--score must be in [0, 1)");
         }},
    };
    app.options.push_back({"--no-labels", "", "draw the boxes only, without class and score labels",
                           [&](const std::string&) { labels = false; }});
    bool stage_times = false;
    app.options.push_back({"--stage-times", "",
                           "also time each stage of the detector pass (detect/letterbox, detect/model, "
                           "detect/nms, ...: timing.json)",
                           [&](const std::string&) { stage_times = true; }});
    app.keys_help = "  a    toggle the detector between the async compute and the graphics queue";
    return samples::run_sample(argc, argv, app, [&](samples::App& a) {
        return std::make_unique<SceneDetect>(a, desc, labels, stage_times);
    });
}
