// File mode: --input IMAGE | FOLDER | VIDEO, each through every --style. Images and folders run
// the stylizer standalone (PNG/JPEG through libstb); videos go through vkml_media's pipelined
// transcoder with the stylizer as its frame processor (f16 frames where the device has them).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "common/app.hpp"
#include "common/image_io.hpp"
#include "modes.hpp"
#include "styles.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/passes/stylizer.hpp"
#if VKML_STYLE_VIDEO
#include "vkml/media/transcode.hpp"
#endif

namespace vkml::style_sample {

namespace {

namespace fs = std::filesystem;

struct FileOptions {
    fs::path input, output = "style_out";
    bool output_given = false;
    std::vector<std::string> styles;
    float strength = 1.f;
    bool fp32 = false;
    std::string device;
    int64_t max_frames = 0;
};

const char* usage_text =
    "usage: style_transfer --input IMAGE|FOLDER|VIDEO [--output PATH] [--style NAME|PATH]... [--strength F]\n"
    "                      [--fp32] [--device NAME] [--max-frames N]\n"
    "  --input PATH       an image (PNG/JPEG), a folder of images, or a video file\n"
    "  --output PATH      image input: an image file or a folder; folder input: a folder; video input: a\n"
    "                     video file or a folder (default: style_out/; names get _<style> when several "
    "styles run)\n"
    "  --style NAME|PATH  assets/models/style/NAME.onnx or a model file; repeat for several (default: all "
    "committed)\n"
    "  --strength F       blend with the original, 0..1 (default 1)\n"
    "  --fp32             f32 storage for the model (default: f16 where the device has it)\n"
    "  --device NAME      device index or name substring (default: $VKML_DEVICE or the best)\n"
    "  --max-frames N     video: stop after N frames (default: all)\n"
    "Without --input, style_transfer stylizes the rendered scene (see style_transfer --help).\n";

FileOptions parse(int argc, char** argv) {
    FileOptions o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw samples::UsageError(a + " needs a value");
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            std::fputs(usage_text, stdout);
            std::exit(0);
        } else if (a == "--input") {
            o.input = value();
        } else if (a == "--output") {
            o.output = value();
            o.output_given = true;
        } else if (a == "--style") {
            o.styles.push_back(value());
        } else if (a == "--strength") {
            o.strength = parse_strength(value());
        } else if (a == "--fp32") {
            o.fp32 = true;
        } else if (a == "--device") {
            o.device = value();
        } else if (a == "--max-frames") {
            const std::string v = value();
            char* end = nullptr;
            o.max_frames = std::strtoll(v.c_str(), &end, 10);
            if (v.empty() || *end || o.max_frames < 1)
                throw samples::UsageError("--max-frames takes a positive frame count, not '" + v + "'");
        } else {
            throw samples::UsageError("unknown option '" + a + "' for --input (file) mode");
        }
    }
    return o;
}

bool is_image(const fs::path& p) {
    std::string e = p.extension().string();
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return e == ".png" || e == ".jpg" || e == ".jpeg";
}

// `base` with `_<style>` before the extension when several styles share one output name.
fs::path with_style(const fs::path& base, const std::string& style, bool several) {
    if (!several) return base;
    return base.parent_path() / (base.stem().string() + "_" + style + base.extension().string());
}

graph::TensorData to_tensor(const samples::Image8& img) {
    const size_t plane = size_t(img.width) * size_t(img.height);
    std::vector<float> v(3 * plane);
    for (size_t i = 0; i < plane; ++i)
        for (size_t c = 0; c < 3; ++c) v[c * plane + i] = float(img.pixels[i * 3 + c]) / 255.f;
    return graph::TensorData::from_floats({1, 3, img.height, img.width}, v);
}

samples::Image8 to_image(const graph::TensorData& t) {
    const auto& d = t.dims();
    samples::Image8 img(static_cast<int>(d[3]), static_cast<int>(d[2]), 3);
    const std::vector<float> v = t.to_floats();
    const size_t plane = size_t(img.width) * size_t(img.height);
    for (size_t i = 0; i < plane; ++i)
        for (size_t c = 0; c < 3; ++c)
            img.pixels[i * 3 + c] = uint8_t(std::lround(std::clamp(v[c * plane + i], 0.f, 1.f) * 255.f));
    return img;
}

void stylize_image(passes::Stylizer& style, const fs::path& in, const fs::path& out) {
    const auto t0 = std::chrono::steady_clock::now();
    const samples::Image8 img = samples::read_image(in.string(), 3);
    const samples::Image8 result = to_image(style.run(to_tensor(img)));
    if (!out.parent_path().empty()) fs::create_directories(out.parent_path());
    samples::write_image(out.string(), result);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s -> %s (%dx%d, style %s, %.0f ms)\n", in.string().c_str(), out.string().c_str(), img.width,
                img.height, style.name().c_str(), ms);
    std::fflush(stdout);
}

#if VKML_STYLE_VIDEO
// The stylizer as the transcoder's frame processor: same size out, f16 frames where possible.
class StyleProcessor final : public media::FrameProcessor {
public:
    StyleProcessor(passes::Stylizer& style, gpu::DType dtype) : style_(style), dtype_(dtype) {}
    media::Size output_size(int w, int h) const override { return {w, h}; }
    gpu::DType dtype() const override { return dtype_; }
    void prepare(const media::ProcessorSetup& s) override {
        style_.prepare(uint32_t(s.input.width), uint32_t(s.input.height));
    }
    void process(media::FrameContext& f) override { style_.record(f.cmd(), f.input(), f.output()); }
    std::string name() const override { return "style " + style_.name(); }

private:
    passes::Stylizer& style_;
    gpu::DType dtype_;
};
#endif

} // namespace

int run_files(int argc, char** argv) {
    try {
        const FileOptions o = parse(argc, argv);
        std::error_code ec;
        if (!fs::exists(o.input, ec))
            throw Error(ErrorCode::Io, "input '" + o.input.string() + "' does not exist");
        const std::vector<fs::path> models = resolve_styles(o.styles);
        const bool several = models.size() > 1;

        int validation_messages = 0;
        gpu::DeviceDesc dd;
        dd.select = o.device;
        dd.on_message = [&](const gpu::Message& m) {
            if (m.severity == gpu::Severity::Info) return;
            if (m.source == "validation") ++validation_messages;
            std::fprintf(stderr, "style_transfer: %.*s %s: %.*s\n", int(m.source.size()), m.source.data(),
                         m.severity == gpu::Severity::Error ? "error" : "warning", int(m.text.size()),
                         m.text.data());
        };
        auto device = gpu::Device::create(dd);

        std::vector<fs::path> images;
        const bool folder = fs::is_directory(o.input, ec);
        if (folder) {
            for (const auto& e : fs::directory_iterator(o.input, ec))
                if (e.is_regular_file(ec) && is_image(e.path())) images.push_back(e.path());
            std::sort(images.begin(), images.end());
            if (images.empty())
                throw Error(ErrorCode::Io, "folder '" + o.input.string() + "' has no PNG or JPEG images");
        }
        for (const fs::path& model : models) {
            passes::Stylizer style(*device, {.model = model, .fp32 = o.fp32, .strength = o.strength});
            if (folder) {
                const fs::path dir = several ? o.output / style.name() : o.output;
                for (size_t i = 0; i < images.size(); ++i) {
                    std::printf("[%zu/%zu] ", i + 1, images.size());
                    stylize_image(style, images[i], dir / images[i].filename());
                }
            } else if (is_image(o.input)) {
                const fs::path out = is_image(o.output)
                                         ? with_style(o.output, style.name(), several)
                                         : o.output / (o.input.stem().string() + "_" + style.name() + ".png");
                stylize_image(style, o.input, out);
            } else {
#if VKML_STYLE_VIDEO
                fs::path out = o.output;
                if (!o.output_given || fs::is_directory(out, ec) || !out.has_extension())
                    out = out / (o.input.stem().string() + "_" + style.name() + ".mp4");
                else
                    out = with_style(out, style.name(), several);
                if (!out.parent_path().empty()) fs::create_directories(out.parent_path());
                StyleProcessor proc(style, device->caps().storage16 ? gpu::DType::f16 : gpu::DType::f32);
                media::TranscodeDesc td{.input = o.input, .output = out};
                td.device = device.get();
                td.log_name = "style_transfer";
                td.max_frames = o.max_frames;
                const media::TranscodeStats stats = media::transcode(td, proc);
                std::printf("%s -> %s: %s\n", o.input.string().c_str(), stats.output.string().c_str(),
                            stats.summary().c_str());
#else
                throw Error(ErrorCode::Unsupported,
                            "'" + o.input.string() +
                                "' is not a PNG/JPEG image or a folder, and this build has no "
                                "video support (vkml_media was not built)");
#endif
            }
        }
        if (validation_messages) {
            std::fprintf(stderr, "style_transfer: error: %d validation messages\n", validation_messages);
            return 1;
        }
        return 0;
    } catch (const samples::UsageError& e) {
        std::fprintf(stderr, "style_transfer: %s (see style_transfer --input X --help)\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "style_transfer: error: %s\n", e.what());
        return 1;
    }
}

} // namespace vkml::style_sample
