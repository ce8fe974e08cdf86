// super_resolution: render a 3D scene at half resolution, upscale it 2x with a trained network (or a
// classic filter) inside the frame graph, draw an overlay with GPU timings, and show it in a window
// or write PNG frames headless.
//
//   super_resolution [--model anime4k-m] [--size 1920x1080] [--async-compute] [--split]
//   super_resolution --headless --frames 60 --out out --model esrgan-slim [--compare]
//
// The frame: "render" (raster, 960x540) -> "upscale to tensor" -> "upscale ml" (the model, one ML
// pass) -> "upscale to image" (1920x1080) [-> "bilinear ..." + "split"] -> "overlay" -> present or
// readback. With --async-compute the three upscale passes go to the async compute queue.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <GLFW/glfw3.h>

#include "common/app.hpp"
#include "common/history.hpp"
#include "common/image_io.hpp"
#include "common/metrics.hpp"
#include "common/scene.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/passes/overlay.hpp"
#include "vkml/passes/super_resolution.hpp"
#include "vkml/passes/text.hpp"

namespace {

using namespace vkml;
using samples::App;
using samples::FrameState;
using samples::FrameTimes;

struct Options {
    std::string model = "anime4k-m";
    bool split = false;
    bool compare = false;
    bool compare_all = false;
    bool overlay = true;
    bool fp32 = false;
    double time_offset = 0;
};

// Split view: bilinear left of the middle, the model right of it, as two image copies (the
// overlay draws the divider line).
fg::ImageHandle add_split_pass(fg::FrameGraph& graph, fg::ImageHandle left, fg::ImageHandle right,
                               fg::Queue queue) {
    fg::ImageHandle out = graph.create_image("split output", {.format = VK_FORMAT_R8G8B8A8_UNORM});
    fg::PassBuilder pass = graph.add_transfer_pass("split");
    pass.read(left, fg::ImageRead::TransferSrc);
    pass.read(right, fg::ImageRead::TransferSrc);
    out = pass.write(out, fg::ImageWrite::TransferDst);
    pass.queue(queue).record([left, right, out](fg::PassContext& ctx) {
        const VkExtent2D e = ctx.extent(out);
        const uint32_t half = e.width / 2;
        VkImageCopy region{};
        region.srcSubresource = region.dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        region.extent = {half, e.height, 1};
        vkCmdCopyImage(ctx.vk(), ctx.image(left), ctx.layout(left), ctx.image(out), ctx.layout(out), 1,
                       &region);
        region.srcOffset = region.dstOffset = {int32_t(half), 0, 0};
        region.extent = {e.width - half, e.height, 1};
        vkCmdCopyImage(ctx.vk(), ctx.image(right), ctx.layout(right), ctx.image(out), ctx.layout(out), 1,
                       &region);
    });
    return out;
}

class SuperResolutionSample : public samples::Sample {
public:
    SuperResolutionSample(App& app, const Options& o)
        : app_(app), options_(o), scene_(app.device()), overlay_(app.device(), 2),
          history_(app.device(), {.name = "render history"}) {
        const VkExtent2D e = app.extent();
        if (e.width % 2 || e.height % 2)
            throw samples::UsageError(
                "--size must be even in both dimensions (the scene renders at half of it)");
        low_ = {e.width / 2, e.height / 2};
        models_ = passes::SuperResolution::model_names();
        auto it = std::find(models_.begin(), models_.end(), o.model);
        if (it == models_.end()) {
            models_.insert(models_.begin(), o.model); // a path, or a variant such as anime4k-m-an
            index_ = 0;
        } else {
            index_ = size_t(it - models_.begin());
        }
        split_ = o.split;
        // Created now so a missing model file fails before the first frame, with one clear line.
        sr_ = make(models_[index_]);
    }

    fg::ImageHandle build(fg::FrameGraph& graph, const FrameState&) override {
        if (!sr_ || sr_->name() != models_[index_]) {
            sr_.reset(); // the GPU is idle here: the old model's passes are done
            sr_ = make(models_[index_]);
        }
        if (split_ && !bilinear_) bilinear_ = make("bilinear");
        if (!split_ && sr_->name() != "bilinear") bilinear_.reset();
        const fg::Queue queue = app_.async_compute() ? fg::Queue::AsyncCompute : fg::Queue::Graphics;
        fg::ImageHandle low = scene_.add_passes(
            graph, low_.width, low_.height, [this] { return time_; }, "render");
        // With async compute the upscaler works one frame behind, on the previous frame's render
        // kept in the history, so this frame's render overlaps it (fg::History, vkml/fg/history.hpp).
        schedule_ = samples::schedule_for(app_);
        const bool behind = schedule_ == samples::MlSchedule::OneFrameBehind;
        if (behind)
            low = history_.begin(graph, low, low_.width, low_.height, samples::Scene::color_format);
        else
            history_.invalidate();
        fg::ImageHandle high = sr_->add_passes(graph, low, queue, "upscale");
        fg::ImageHandle left{};
        if (split_) left = bilinear_->add_passes(graph, low, queue, "bilinear");
        if (behind) history_.end(graph);
        if (split_) high = add_split_pass(graph, left, high, queue);
        if (options_.overlay) high = overlay_.add_pass(graph, high, "overlay");
        return high;
    }

    void update(const FrameState& state, const FrameTimes& t) override {
        time_ = state.time + options_.time_offset;
        last_time_ = time_;
        if (history_.take_rebuild()) app_.rebuild(); // the steady graph after the priming one
        if (!options_.overlay) return;
        const VkExtent2D e = app_.extent();
        const int scale = e.width >= 1280 ? 2 : 1;
        const double ml_ms = t.sum_ms("upscale ml");
        const double convert_ms = t.sum_ms("upscale to");
        const double render_ms = t.sum_ms("render");
        const bool async_used = app_.async_compute() && app_.has_async_compute();
        char text[512];
        std::snprintf(text, sizeof text,
                      "frame %.2f ms (GPU)  ML %.2f ms (+%.2f convert)  render %.2f ms\n"
                      "%s%s  %ux%u -> %ux%u\n"
                      "ML queue: %s, %s",
                      t.gpu_frame_ms, ml_ms, convert_ms, render_ms, split_ ? "bilinear | " : "",
                      sr_->name().c_str(), low_.width, low_.height, e.width, e.height,
                      async_used             ? "async compute"
                      : app_.async_compute() ? "graphics (no async queue)"
                                             : "graphics",
                      samples::schedule_name(schedule_));
        overlay_.clear();
        if (split_)
            overlay_.fill(int(e.width / 2) - 1, 0, int(e.width / 2) + 1, int(e.height), {255, 255, 255, 255});
        overlay_.text(8 * scale, 8 * scale, text, {255, 255, 255, 255}, scale, passes::Rgba{0, 0, 0, 150});
        if (!app_.headless()) {
            const std::string keys = "[M] model  [S] split  [A] async compute  [O] overlay";
            const int h = passes::text_size(keys, scale).h;
            overlay_.text(8 * scale, int(e.height) - h - 8 * scale, keys, {255, 255, 200, 255}, scale,
                          passes::Rgba{0, 0, 0, 150});
        }
    }

    void on_key(int key) override {
        switch (key) {
        case GLFW_KEY_M:
        case GLFW_KEY_N:
        case GLFW_KEY_RIGHT:
            index_ = (index_ + 1) % models_.size();
            app_.rebuild();
            app_.status("model: " + models_[index_]);
            break;
        case GLFW_KEY_LEFT:
            index_ = (index_ + models_.size() - 1) % models_.size();
            app_.rebuild();
            app_.status("model: " + models_[index_]);
            break;
        case GLFW_KEY_S:
            split_ = !split_;
            app_.rebuild();
            app_.status(split_ ? "split screen: bilinear | " + models_[index_] : "split screen off");
            break;
        case GLFW_KEY_A:
            app_.set_async_compute(!app_.async_compute());
            app_.status(std::string("ML passes on the ") +
                        (app_.async_compute() ? "async compute" : "graphics") + " queue" +
                        (app_.async_compute() && !app_.has_async_compute() ? " (not available here)" : ""));
            break;
        case GLFW_KEY_O:
            options_.overlay = !options_.overlay;
            app_.rebuild();
            break;
        default:
            break;
        }
    }

    std::map<std::string, std::string> info() const override {
        return {{"model", sr_ ? sr_->name() : models_[index_]},
                {"input", std::to_string(low_.width) + "x" + std::to_string(low_.height)},
                {"output", std::to_string(app_.extent().width) + "x" + std::to_string(app_.extent().height)},
                {"ml_queue", app_.async_compute() && app_.has_async_compute() ? "async compute" : "graphics"},
                {"split", split_ ? "true" : "false"},
                {"ml_schedule", samples::schedule_name(schedule_)}};
    }

    int finish() override {
        if (!options_.compare && !options_.compare_all) return 0;
        compare();
        return 0;
    }

private:
    std::unique_ptr<passes::SuperResolution> make(const std::string& model) {
        return std::make_unique<passes::SuperResolution>(
            app_.device(),
            passes::SuperResolutionDesc{
                .model = model, .width = low_.width, .height = low_.height, .fp32 = options_.fp32});
    }

    // One frame at the last frame's time: the low-res render, each upscaler's result and the native
    // render at full size, read back; a side-by-side image and PSNR / SSIM against the native one.
    void compare() {
        const VkExtent2D e = app_.extent();
        const double t = last_time_;
        std::vector<std::string> methods = {"nearest", "bilinear"};
        if (sr_->name() != "nearest" && sr_->name() != "bilinear") methods.push_back(sr_->name());
        if (options_.compare_all)
            for (const std::string& m : passes::SuperResolution::model_names())
                if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
        samples::Readback native_rb(app_.device(), e.width, e.height);
        std::vector<std::unique_ptr<samples::Readback>> rbs;
        std::vector<std::unique_ptr<passes::SuperResolution>> owned;
        {
            fg::FrameGraph graph({.name = "compare", .output_width = e.width, .output_height = e.height});
            const fg::ImageHandle low = scene_.add_passes(graph, low_.width, low_.height, t, "render low");
            const fg::ImageHandle native = scene_.add_passes(graph, e.width, e.height, t, "render native");
            native_rb.add_pass(graph, native, "read native");
            for (const std::string& m : methods) {
                passes::SuperResolution* sr = nullptr;
                if (m == sr_->name()) {
                    sr = sr_.get();
                } else {
                    owned.push_back(make(m));
                    sr = owned.back().get();
                }
                const fg::ImageHandle up = sr->add_passes(graph, low, fg::Queue::Graphics, "compare " + m);
                rbs.push_back(std::make_unique<samples::Readback>(app_.device(), e.width, e.height));
                rbs.back()->add_pass(graph, up, "read " + m);
            }
            app_.executor().run(graph);
            app_.executor().wait_idle();
        }
        auto image = [&](const samples::Readback& rb) {
            samples::Image8 img(int(rb.width()), int(rb.height()), 4);
            img.pixels = rb.rgba();
            return img;
        };
        const samples::Image8 native = image(native_rb);
        const std::filesystem::path dir = app_.options().out_dir;
        std::filesystem::create_directories(dir);
        struct Row {
            std::string method;
            double psnr, ssim;
        };
        std::vector<Row> rows;
        std::vector<samples::Image8> panels;
        for (size_t i = 0; i < methods.size(); ++i) {
            samples::Image8 img = image(*rbs[i]);
            const samples::ImageView8 a{img.pixels.data(), img.width, img.height, 4},
                b{native.pixels.data(), native.width, native.height, 4};
            rows.push_back({methods[i], samples::psnr(a, b), samples::ssim(a, b)});
            std::string file = methods[i];
            std::replace_if(
                file.begin(), file.end(), [](char c) { return c == '/' || c == '.'; }, '_');
            samples::write_image((dir / ("compare_" + file + ".png")).string(), img);
            panels.push_back(std::move(img));
        }
        samples::write_image((dir / "compare_native.png").string(), native);

        // low-res (nearest-upscaled) | bilinear | model | native, labelled.
        const int w = int(e.width), h = int(e.height);
        const int scale = w >= 1280 ? 2 : 1;
        const int label_h = passes::font_cell_h * scale + 4;
        samples::Image8 sheet(4 * w, h + label_h, 3);
        std::fill(sheet.pixels.begin(), sheet.pixels.end(), uint8_t(24));
        const size_t mine = size_t(std::find(methods.begin(), methods.end(), sr_->name()) - methods.begin());
        const samples::Image8* order[4] = {&panels[0], &panels[1], &panels[mine], &native};
        auto fmt = [](const Row& r) {
            char buf[64];
            std::snprintf(buf, sizeof buf, " %.2f dB %.4f", r.psnr, r.ssim);
            return std::string(buf);
        };
        const std::string labels[4] = {"low-res " + std::to_string(low_.width) + "x" +
                                           std::to_string(low_.height) + fmt(rows[0]),
                                       "bilinear" + fmt(rows[1]), rows[mine].method + fmt(rows[mine]),
                                       "native " + std::to_string(w) + "x" + std::to_string(h)};
        const passes::PixelView view{sheet.pixels.data(), sheet.width, sheet.height, sheet.width * 3, 3};
        for (int i = 0; i < 4; ++i) {
            samples::blit(sheet, *order[i], i * w, label_h);
            passes::draw_text(view, i * w + 4, 2, labels[i], {255, 255, 255, 255}, scale);
        }
        samples::write_image((dir / "compare.png").string(), sheet);

        std::printf("\nagainst the native %dx%d render (scene time %.3f s):\n%-16s %9s %8s\n", w, h, t,
                    "method", "PSNR dB", "SSIM");
        std::ostringstream json;
        json.precision(12);
        json << "{\n  \"time\": " << t << ",\n  \"input\": \"" << low_.width << "x" << low_.height
             << "\",\n  \"output\": \"" << w << "x" << h << "\",\n  \"model\": \"" << sr_->name()
             << "\",\n  \"methods\": {";
        for (size_t i = 0; i < rows.size(); ++i) {
            std::printf("%-16s %9.3f %8.4f\n", rows[i].method.c_str(), rows[i].psnr, rows[i].ssim);
            json << (i ? "," : "") << "\n    \"" << rows[i].method << "\": {\"psnr\": " << rows[i].psnr
                 << ", \"ssim\": " << rows[i].ssim << "}";
        }
        json << "\n  }\n}\n";
        std::ofstream(dir / "compare.json") << json.str();
        std::printf("wrote %s\n", (dir / "compare.png").string().c_str());
    }

    App& app_;
    Options options_;
    samples::Scene scene_;
    passes::Overlay overlay_;
    VkExtent2D low_{};
    std::vector<std::string> models_;
    size_t index_ = 0;
    bool split_ = false;
    double time_ = 0, last_time_ = 0;
    std::unique_ptr<passes::SuperResolution> sr_, bilinear_;
    fg::History history_;
    samples::MlSchedule schedule_ = samples::MlSchedule::SameFrame;
};

} // namespace

int main(int argc, char** argv) {
    Options o;
    samples::AppDesc desc;
    desc.name = "super_resolution";
    desc.summary =
        "Renders a 3D scene at half the output size and upscales it 2x with a network in the frame graph.";
    desc.options = {
        {"--model", "NAME",
         "anime4k-s/m/l (-rl weights; -an, -3d variants too), esrgan-slim, esrgan-medium, "
         "bilinear, nearest, or a model file (default: anime4k-m)",
         [&](const std::string& v) { o.model = v; }},
        {"--split", "", "split screen: bilinear left, the model right",
         [&](const std::string&) { o.split = true; }},
        {"--compare", "",
         "after the frames: write compare.png (low-res | bilinear | model | native) and print PSNR/SSIM",
         [&](const std::string&) { o.compare = true; }},
        {"--compare-all", "", "as --compare, with PSNR/SSIM rows for every built-in model",
         [&](const std::string&) { o.compare_all = true; }},
        {"--no-overlay", "", "no text overlay", [&](const std::string&) { o.overlay = false; }},
        {"--fp32", "", "run the model in f32 (default: f16 storage where the device has it)",
         [&](const std::string&) { o.fp32 = true; }},
        {"--time", "SECONDS", "scene time of the first frame (default: 0)",
         [&](const std::string& v) {
             char* end = nullptr;
             o.time_offset = std::strtod(v.c_str(), &end);
             if (v.empty() || *end || !std::isfinite(o.time_offset))
                 throw samples::UsageError("--time: expected a number of seconds, got '" + v + "'");
         }},
    };
    desc.keys_help =
        "keys: M / Right next model, Left previous model, S split screen, A async compute, O overlay";
    return samples::run_sample(argc, argv, desc,
                               [&](App& app) { return std::make_unique<SuperResolutionSample>(app, o); });
}
