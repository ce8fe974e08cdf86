// The rendered scene of the samples, stylized in the frame graph: scene (raster) -> style in ->
// style model (ML) -> style blend -> style out, on the graphics queue or on async compute.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/app.hpp"
#include "common/history.hpp"
#include "common/scene.hpp"
#include "modes.hpp"
#include "styles.hpp"
#include "vkml/passes/stylizer.hpp"

namespace vkml::style_sample {

namespace {

// GLFW key codes (GLFW_KEY_*), so the sample needs no GLFW header of its own.
constexpr int key_space = 32, key_minus = 45, key_equal = 61, key_a = 65, key_o = 79, key_s = 83,
              key_right = 262, key_left = 263, key_down = 264, key_up = 265, key_kp_subtract = 333,
              key_kp_add = 334;

struct SceneOptions {
    std::vector<std::string> styles;
    float strength = 1.f;
    int cycle_every = 0; // headless: next style every N frames
    bool fp32 = false;
};

// Per-style GPU time of the style passes, from the frames after a style switch has settled.
struct Timing {
    double style_ms = 0, frame_ms = 0;
    int frames = 0;
};

class StyleSample final : public samples::Sample {
public:
    StyleSample(samples::App& app, const SceneOptions& o)
        : app_(app), scene_(app.device()), history_(app.device(), {.name = "render history"}),
          cycle_every_(o.cycle_every) {
        for (const auto& path : resolve_styles(o.styles)) {
            app.status("loading style " + path.string());
            styles_.push_back(std::make_unique<passes::Stylizer>(
                app.device(), passes::StylizerDesc{.model = path, .fp32 = o.fp32, .strength = o.strength}));
        }
        strength_ = o.strength;
    }

    fg::ImageHandle build(fg::FrameGraph& graph, const samples::FrameState& state) override {
        const VkExtent2D e = state.extent;
        fg::ImageHandle color = scene_.add_passes(graph, e.width, e.height, [this] { return time_; });
        schedule_ = samples::schedule_for(app_);
        if (original_ || schedule_ == samples::MlSchedule::SameFrame) history_.invalidate();
        if (original_) return color;
        queue_ = app_.async_compute() ? fg::Queue::AsyncCompute : fg::Queue::Graphics;
        settle_ = 3; // frames in flight may still report the previous graph's times
        if (schedule_ == samples::MlSchedule::SameFrame)
            return styles_[current_]->add_passes(graph, color, e.width, e.height, {.queue = queue_});
        // One frame behind (fg::History, vkml/fg/history.hpp): the stylizer works on the previous frame's
        // render while this frame renders beside it; the frame shows the stylized previous frame.
        const fg::ImageHandle input =
            history_.begin(graph, color, e.width, e.height, samples::Scene::color_format);
        const fg::ImageHandle styled =
            styles_[current_]->add_passes(graph, input, e.width, e.height, {.queue = queue_});
        history_.end(graph);
        return styled;
    }

    void update(const samples::FrameState& state, const samples::FrameTimes& last) override {
        time_ = state.time;
        if (history_.take_rebuild()) app_.rebuild(); // the steady graph after the priming one
        if (settle_ > 0) {
            --settle_;
        } else if (!original_ && last.gpu_frame_ms > 0) {
            Timing& t = timings_[key()];
            t.style_ms += last.sum_ms("style");
            t.frame_ms += last.gpu_frame_ms;
            ++t.frames;
        }
        if (cycle_every_ > 0 && state.index > 0 && state.index % uint64_t(cycle_every_) == 0) next_style(1);
        for (auto& s : styles_) s->set_strength(strength_);
        if (state.index % 30 == 0 || changed_) {
            changed_ = false;
            char line[256];
            std::snprintf(line, sizeof line,
                          "%s, strength %.2f, %s queue (%s), style passes %.2f ms, frame %.2f ms",
                          original_ ? "original" : ("style " + styles_[current_]->name()).c_str(), strength_,
                          queue_ == fg::Queue::AsyncCompute ? "async compute" : "graphics",
                          samples::schedule_name(schedule_), last.sum_ms("style"), last.gpu_frame_ms);
            app_.status(line);
        }
    }

    void on_key(int key) override {
        if (key == key_s || key == key_space || key == key_right) next_style(1);
        if (key == key_left) next_style(-1);
        if (key == key_up || key == key_equal || key == key_kp_add)
            strength_ = std::min(1.f, strength_ + 0.1f);
        if (key == key_down || key == key_minus || key == key_kp_subtract)
            strength_ = std::max(0.f, strength_ - 0.1f);
        if (key == key_o) {
            original_ = !original_;
            app_.rebuild();
        }
        if (key == key_a) {
            app_.set_async_compute(!app_.async_compute());
            app_.rebuild();
        }
        changed_ = true;
    }

    std::map<std::string, std::string> info() const override {
        return {{"style", original_ ? std::string("original") : styles_[current_]->name()},
                {"strength", std::to_string(strength_)},
                {"styles", std::to_string(styles_.size())},
                {"ml_schedule", samples::schedule_name(schedule_)}};
    }

    int finish() override {
        for (const auto& [k, t] : timings_)
            if (t.frames > 0)
                std::printf("style %s on the %s queue at %ux%u: style passes %.3f ms, whole frame %.3f ms "
                            "(GPU, mean of %d frames)\n",
                            k.first.c_str(), k.second ? "async compute" : "graphics", app_.extent().width,
                            app_.extent().height, t.style_ms / t.frames, t.frame_ms / t.frames, t.frames);
        return 0;
    }

private:
    std::pair<std::string, bool> key() const {
        return {styles_[current_]->name(), queue_ == fg::Queue::AsyncCompute};
    }
    void next_style(int step) {
        const int n = int(styles_.size());
        current_ = size_t(((int(current_) + step) % n + n) % n);
        app_.rebuild();
        changed_ = true;
    }

    samples::App& app_;
    samples::Scene scene_;
    fg::History history_;
    samples::MlSchedule schedule_ = samples::MlSchedule::SameFrame;
    std::vector<std::unique_ptr<passes::Stylizer>> styles_;
    size_t current_ = 0;
    float strength_ = 1.f;
    int cycle_every_ = 0;
    bool original_ = false, changed_ = true;
    int settle_ = 0;
    double time_ = 0;
    fg::Queue queue_ = fg::Queue::Graphics;
    std::map<std::pair<std::string, bool>, Timing> timings_;
};

} // namespace

int run_scene(int argc, char** argv) {
    SceneOptions o;
    samples::AppDesc desc;
    desc.name = "style_transfer";
    desc.summary =
        "fast neural style transfer on the rendered scene (or on images, folders and videos with --input)";
    desc.options = {
        {"--style", "NAME|PATH",
         "a style: NAME of assets/models/style/NAME.onnx or a model file (repeat for several; default: all "
         "committed)",
         [&](const std::string& v) { o.styles.push_back(v); }},
        {"--strength", "F", "blend with the original, 0..1 (default 1)",
         [&](const std::string& v) { o.strength = parse_strength(v); }},
        {"--cycle-every", "N", "switch to the next style every N frames (headless tests and timing runs)",
         [&](const std::string& v) {
             try {
                 o.cycle_every = std::stoi(v);
             } catch (const std::exception&) {
                 o.cycle_every = -1;
             }
             if (o.cycle_every < 1)
                 throw samples::UsageError("--cycle-every takes a positive frame count, not '" + v + "'");
         }},
        {"--fp32", "", "f32 storage for the models (default: f16 where the device has it)",
         [&](const std::string&) { o.fp32 = true; }},
        {"--input", "PATH", "file mode: stylize an image, a folder of images or a video instead of the scene",
         [](const std::string&) {}},
        {"--output", "PATH", "file mode: the output file or folder (default: style_out/)",
         [](const std::string&) {}},
    };
    desc.keys_help = "  S, Space, Right  next style        Left  previous style\n"
                     "  Up, +            strength + 0.1    Down, -  strength - 0.1\n"
                     "  O                original / styled A  graphics / async compute queue";
    return samples::run_sample(argc, argv, desc,
                               [&](samples::App& app) { return std::make_unique<StyleSample>(app, o); });
}

} // namespace vkml::style_sample
