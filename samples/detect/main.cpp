// samples/detect: object detection with vkml.
//   detect INPUT... [-o OUT] [--model nanodet|PATH] ...   images, folders, videos (= vkml detect)
//   detect --scene [--headless --frames N --out DIR] [--async-compute] [--model ...] [--score S]
// In the scene mode the detector is an ML pass of the frame graph that reads the rendered frame
// (on the async compute queue with --async-compute, or the 'a' key), and the boxes are drawn into
// the frame by a raster pass (clear rectangles inside dynamic rendering) with labels from the GPU
// overlay. The boxes shown belong to the frame whose detection finished most recently (read at
// record time, frames_in_flight frames back). With --async-compute the detector also runs one
// frame behind the render (samples/common/history.hpp): frame N's detector reads frame N-1's
// render from a history image while frame N renders beside it on the graphics queue. Headless runs
// write DIR/detections.json: per frame, the boxes drawn and which frame's render they came from.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/app.hpp"
#include "common/history.hpp"
#include "common/scene.hpp"
#include "detect_app.hpp"
#include "vkml/error.hpp"
#include "vkml/passes/detector.hpp"
#include "vkml/passes/overlay.hpp"

namespace {

using namespace vkml;

class SceneDetect final : public samples::Sample {
public:
    SceneDetect(samples::App& app, const passes::DetectorDesc& desc)
        : app_(app), scene_(app.device()), detector_(app.device(), desc), overlay_(app.device()),
          history_(app.device(), "render history") {
        slot_source_.assign(app.executor().frames_in_flight(), -1);
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
        detector_.add_pass(graph, input,
                           {.name = "detect",
                            .queue = app_.async_compute() ? fg::Queue::AsyncCompute : fg::Queue::Graphics});
        if (behind) history_.end(graph);
        // Boxes: a raster pass that loads the frame and clears thin rectangles along each box.
        fg::PassBuilder boxes = graph.add_raster_pass("boxes");
        color = boxes.color(color, {.load = fg::LoadOp::Load});
        boxes.record([this](fg::PassContext& ctx) { draw_boxes(ctx); });
        return overlay_.add_pass(graph, color, "labels");
    }

    void update(const samples::FrameState& state, const samples::FrameTimes& last) override {
        time_ = state.time;
        frame_ = int64_t(state.index);
        // The render this frame's detection analyses.
        source_ =
            schedule_ == samples::MlSchedule::OneFrameBehind && !history_.priming() ? frame_ - 1 : frame_;
        history_.update(app_);
        if (state.index % 30 == 0 && state.index) {
            char line[160];
            std::snprintf(line, sizeof line, "frame %llu: %zu boxes, gpu %.2f ms, detect %.2f ms (%s, %s)",
                          static_cast<unsigned long long>(state.index), shown_.size(), last.gpu_frame_ms,
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
                {"detections_last_frame", std::to_string(shown_.size())},
                {"ml_schedule", samples::schedule_name(schedule_)}};
    }

    int finish() override {
        if (!app_.headless()) return 0;
        const std::filesystem::path path = std::filesystem::path(app_.options().out_dir) / "detections.json";
        std::ofstream(path) << "{\n  \"ml_schedule\": \"" << samples::schedule_name(schedule_)
                            << "\",\n  \"frames\": [" << log_ << "\n  ]\n}\n";
        return 0;
    }

private:
    // Runs when the frame is recorded, after the executor waited for this frame slot's previous
    // frame: that frame's detections are complete and are the newest ones known to be.
    void draw_boxes(fg::PassContext& ctx) {
        const uint32_t slot = ctx.frame_slot();
        shown_ = detector_.results(slot);
        const int64_t shown_source = slot < slot_source_.size() ? slot_source_[slot] : -1;
        if (slot < slot_source_.size()) slot_source_[slot] = source_; // what this frame's detector writes
        if (app_.headless()) log_frame(shown_source);
        overlay_.clear();
        const VkRect2D area = ctx.render_area();
        const int W = int(area.extent.width), H = int(area.extent.height);
        const int t = std::max(2, std::min(W, H) / 300);
        std::vector<VkClearRect> rects;
        std::vector<VkClearAttachment> clears;
        for (const auto& d : shown_) {
            const passes::Rgba c = detect_app::class_color(d.class_id);
            const int x0 = std::clamp(int(d.x0), 0, W - 1), y0 = std::clamp(int(d.y0), 0, H - 1);
            const int x1 = std::clamp(int(d.x1), x0 + 1, W), y1 = std::clamp(int(d.y1), y0 + 1, H);
            VkClearAttachment a{VK_IMAGE_ASPECT_COLOR_BIT, 0, {}};
            a.clearValue.color = {{c.r / 255.f, c.g / 255.f, c.b / 255.f, 1.f}};
            auto rect = [&](int rx, int ry, int rw, int rh) {
                rw = std::min(rw, W - rx);
                rh = std::min(rh, H - ry);
                if (rw <= 0 || rh <= 0) return;
                VkClearRect r{{{rx, ry}, {uint32_t(rw), uint32_t(rh)}}, 0, 1};
                vkCmdClearAttachments(ctx.vk(), 1, &a, 1, &r);
            };
            rect(x0, y0, x1 - x0, t);
            rect(x0, std::max(y0, y1 - t), x1 - x0, t);
            rect(x0, y0, t, y1 - y0);
            rect(std::max(x0, x1 - t), y0, t, y1 - y0);
            char label[96];
            std::snprintf(label, sizeof label, "%s %.2f", d.name.c_str(), double(d.score));
            const int scale = std::max(1, std::min(W, H) / 400);
            const passes::TextSize ts = passes::text_size(label, scale);
            overlay_.text(x0, y0 - ts.h >= 0 ? y0 - ts.h : y0, label, {255, 255, 255, 255}, scale,
                          passes::Rgba{c.r, c.g, c.b, 200});
        }
    }

    // detections.json: {"frame": N, "source": the render frame the boxes were detected on (-1: none
    // yet), "boxes": [[class, score, x0, y0, x1, y1], ...]}.
    void log_frame(int64_t source) {
        char buf[160];
        log_ += log_.empty() ? "\n    " : ",\n    ";
        log_ += "{\"frame\": " + std::to_string(frame_) + ", \"source\": " + std::to_string(source) +
                ", \"boxes\": [";
        for (size_t i = 0; i < shown_.size(); ++i) {
            const auto& d = shown_[i];
            std::snprintf(buf, sizeof buf, "%s[%d, %.6g, %.6g, %.6g, %.6g, %.6g]", i ? ", " : "", d.class_id,
                          double(d.score), double(d.x0), double(d.y0), double(d.x1), double(d.y1));
            log_ += buf;
        }
        log_ += "]}";
    }

    samples::App& app_;
    samples::Scene scene_;
    passes::Detector detector_;
    passes::Overlay overlay_;
    samples::HistoryImage history_;
    samples::MlSchedule schedule_ = samples::MlSchedule::SameFrame;
    std::vector<int64_t> slot_source_;
    int64_t frame_ = 0, source_ = 0;
    std::string log_;
    double time_ = 0;
    std::vector<passes::Detection> shown_;
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
    app.keys_help = "  a    toggle the detector between the async compute and the graphics queue";
    return samples::run_sample(argc, argv, app,
                               [&](samples::App& a) { return std::make_unique<SceneDetect>(a, desc); });
}
