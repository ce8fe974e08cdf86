// The detection application (see detect_app.hpp): images are decoded by stb, detected on the
// GPU, annotated on the CPU with vkml's font and written by stb; videos go through the media
// library's pipelined transcoder, with the boxes composited onto each frame on the GPU.
#include "detect_app.hpp"

#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>

#include "image_file.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/profiler.hpp"

// Videos through the media library when the build has it (vkml_cli links it and defines this).
#ifndef VKML_DETECT_VIDEO
#define VKML_DETECT_VIDEO 0
#endif
#if VKML_DETECT_VIDEO
#include "vkml/media/output_file.hpp"
#include "vkml/media/transcode.hpp"
#include "vkml/ops/detect.hpp"
#endif

namespace vkml::detect_app {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad_usage(std::string_view program, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, std::string(program) + ": " + what + " (--help for usage)");
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

bool is_image(const fs::path& p) {
    const std::string e = lower(p.extension().string());
    return e == ".png" || e == ".jpg" || e == ".jpeg" || e == ".bmp" || e == ".tga";
}

bool is_video(const fs::path& p) {
    const std::string e = lower(p.extension().string());
    return e == ".mp4" || e == ".mkv" || e == ".avi" || e == ".mov" || e == ".webm" || e == ".m4v" ||
           e == ".mpg" || e == ".mpeg" || e == ".ts";
}

float parse_float(std::string_view program, std::string_view option, std::string_view text) {
    try {
        size_t used = 0;
        const std::string s(text);
        const float v = std::stof(s, &used);
        if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
        return v;
    } catch (const std::exception&) {
        bad_usage(program, std::string(option) + ": '" + std::string(text) + "' is not a number");
    }
}

std::string json_escape(std::string_view s) {
    std::string o;
    for (char c : s) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            o += buf;
        } else {
            o += c;
        }
    }
    return o;
}

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

struct ImageFile {
    int width = 0, height = 0, channels = 3;
    std::vector<uint8_t> pixels;
};

ImageFile load_image(const fs::path& path) {
    tool::RgbImage rgb = tool::read_rgb_image(path);
    return ImageFile{rgb.width, rgb.height, 3, std::move(rgb.pixels)};
}

// Every output (annotated images, the JSON file) appears whole or not at all: written to a hidden
// temporary file beside it, checked, flushed and renamed (vkml/media/output_file.hpp); a write error (a
// full disk) is an error naming the output.
void write_output(const fs::path& path, std::span<const uint8_t> bytes) {
#if VKML_DETECT_VIDEO
    media::write_file_atomically(path, bytes);
#else
    (void)bytes;
    throw Error(ErrorCode::Unsupported,
                "'" + path.string() + "': this build writes no files (no media library)");
#endif
}

void save_image(const fs::path& path, const ImageFile& img) {
    const std::string e = lower(path.extension().string());
    std::vector<uint8_t> bytes;
    auto append = [](void* context, void* data, int size) {
        auto* out = static_cast<std::vector<uint8_t>*>(context);
        const auto* p = static_cast<const uint8_t*>(data);
        out->insert(out->end(), p, p + size);
    };
    int ok = 0;
    if (e == ".jpg" || e == ".jpeg")
        ok = stbi_write_jpg_to_func(append, &bytes, img.width, img.height, img.channels, img.pixels.data(),
                                    92);
    else if (e == ".bmp")
        ok = stbi_write_bmp_to_func(append, &bytes, img.width, img.height, img.channels, img.pixels.data());
    else
        ok = stbi_write_png_to_func(append, &bytes, img.width, img.height, img.channels, img.pixels.data(),
                                    img.width * img.channels);
    if (!ok || bytes.empty())
        throw Error(ErrorCode::Io, "'" + path.string() + "': cannot encode the annotated image");
    write_output(path, bytes);
}

// One JSON record per image or video frame.
struct Record {
    std::string file;
    int width = 0, height = 0;
    int64_t frame = -1; // videos
    double seconds = 0;
    std::vector<passes::Detection> dets;
};

std::string records_json(const std::vector<Record>& records) {
    std::ostringstream s;
    s << "[";
    for (size_t i = 0; i < records.size(); ++i) {
        const Record& r = records[i];
        s << (i ? ",\n " : "\n ") << "{\"file\": \"" << json_escape(r.file) << "\", \"width\": " << r.width
          << ", \"height\": " << r.height;
        if (r.frame >= 0) s << ", \"frame\": " << r.frame << ", \"time\": " << num(r.seconds);
        s << ", \"detections\": " << detections_json(r.dets, 2) << "}";
    }
    s << "\n]\n";
    return s.str();
}

// Where an input's annotated copy goes: -o as a file for a single input that is not a folder,
// else <output folder>/<name>; without -o, <stem>_detect<ext> in the current folder.
fs::path output_for(const Options& o, const fs::path& input, bool single) {
    const std::string ext = is_video(input) ? ".mp4" : input.extension().string();
    const std::string name = input.stem().string() + "_detect" + (is_video(input) ? ext : ext);
    if (!o.output) return fs::path(name);
    if (single && !fs::is_directory(*o.output) && o.output->has_extension()) return *o.output;
    return *o.output / input.filename().replace_extension(is_video(input) ? ".mp4" : input.extension());
}

void print_dets(const std::string& what, const std::vector<passes::Detection>& dets) {
    std::printf("%s: %zu detection%s\n", what.c_str(), dets.size(), dets.size() == 1 ? "" : "s");
    for (const auto& d : dets)
        std::printf("  %-14s %.2f  [%.0f, %.0f, %.0f, %.0f]\n", d.name.c_str(), d.score, d.x0, d.y0, d.x1,
                    d.y1);
}

#if VKML_DETECT_VIDEO
// The transcoder's frame processor: detect, read the boxes back, draw them on the CPU into a
// transparent premultiplied RGBA canvas and composite it over the frame on the GPU.
class VideoProcessor final : public media::FrameProcessor {
public:
    VideoProcessor(passes::Detector& detector, std::vector<Record>& records)
        : detector_(detector), records_(records) {}
    media::Size output_size(int w, int h) const override { return {w, h}; }
    void prepare(const media::ProcessorSetup& setup) override {
        gpu::Device& dev = *setup.device;
        w_ = setup.input.width;
        h_ = setup.input.height;
        composite_ = ops::CompositeOver::create(
            dev, {.image = {{1, 3, h_, w_}, gpu::DType::f32}, .overlay = {{1, h_, w_, 4}, gpu::DType::u8}});
        canvases_.clear();
        // One canvas per frame the GPU may still be compositing, plus the one being drawn.
        for (int i = 0; i < std::max(1, setup.frames_in_flight) + 1; ++i) {
            auto buf = std::make_shared<gpu::Buffer>(dev, gpu::BufferDesc{.size = uint64_t(w_) * h_ * 4,
                                                                          .memory = gpu::MemoryUsage::Upload,
                                                                          .name = "detect canvas"});
            canvases_.push_back(gpu::Tensor(buf, 0, {1, h_, w_, 4}, gpu::DType::u8));
        }
        out_ = detector_.make_output();
    }
    void process(media::FrameContext& f) override {
        detector_.record(f.cmd(), f.input(), out_);
        f.submit_and_wait();
        Record r;
        r.file = f.info().file;
        r.width = w_;
        r.height = h_;
        r.frame = f.info().index;
        r.seconds = f.info().seconds;
        r.dets = detector_.read(out_);
        const gpu::Tensor& canvas = canvases_[next_++ % canvases_.size()];
        uint8_t* px = reinterpret_cast<uint8_t*>(canvas.buffer()->mapped());
        std::memset(px, 0, size_t(w_) * h_ * 4);
        draw_detections({px, int(w_), int(h_), int(w_) * 4, 4}, r.dets);
        const gpu::Tensor in[] = {f.input(), canvas};
        composite_->record(f.cmd(), in, std::span(&f.output(), 1));
        records_.push_back(std::move(r));
    }
    std::string name() const override {
        return std::string("detect ") + passes::format_name(detector_.format());
    }

private:
    passes::Detector& detector_;
    std::vector<Record>& records_;
    int64_t w_ = 0, h_ = 0;
    std::unique_ptr<ops::CompositeOver> composite_;
    std::vector<gpu::Tensor> canvases_;
    size_t next_ = 0;
    passes::DetectionBuffer out_;
};
#endif

} // namespace

// ---------------------------------------------------------------------------------------------

void print_usage(FILE* out, std::string_view program) {
    std::fprintf(
        out,
        "usage: %.*s INPUT... [-o OUT] [options]\n\n"
        "Detects objects (COCO's 80 classes) in images, folders of images and videos on the GPU,\n"
        "draws labelled boxes and writes the annotated files and a JSON list of detections.\n\n"
        "  INPUT                PNG/JPEG/BMP image, a folder of them, or a video file%s\n"
        "  -o OUT               output file (one input) or folder (created); default: NAME_detect.EXT\n"
        "                       in the current folder\n"
        "  --model nanodet|PATH NanoDet from the model cache (default), or a YOLO-format ONNX export\n"
        "  --format F           auto (default: from the output shape), yolov5 ([1, N, 85]),\n"
        "                       yolov8 ([1, 84, N]) or nanodet\n"
        "  --score S            score threshold (default 0.35)\n"
        "  --iou T              IoU above which same-class boxes are suppressed (default 0.5)\n"
        "  --max-dets N         at most N detections per image (default 100)\n"
        "  --size WxH           input size for models with a free input size (default 640x640)\n"
        "  --json FILE          write the detections as JSON (\"-\" for stdout)\n"
        "  --frames N           videos: stop after N frames (audio is cut with them)\n"
        "  --tolerate-errors    videos: go on past damaged or truncated input (default: an error)\n"
        "  --fp32               f32 storage in the model (default f16 where the device has it)\n"
        "  --repeat N           images: detect N times and print the median ms (timing)\n"
        "  --profile            with --repeat: also the median GPU time of each stage (letterbox,\n"
        "                       model, decode, nms, gather)\n"
        "  --quiet              no per-image output\n",
        int(program.size()), program.data(), VKML_DETECT_VIDEO ? "" : " (videos: not in this build)");
}

std::optional<Options> parse_args(std::span<const std::string_view> args, std::string_view program) {
    Options o;
    auto value = [&](size_t& i) -> std::string_view {
        if (i + 1 >= args.size()) bad_usage(program, std::string(args[i]) + " needs a value");
        return args[++i];
    };
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h") {
            print_usage(stdout, program);
            return std::nullopt;
        } else if (a == "-o" || a == "--output") {
            o.output = fs::path(value(i));
        } else if (a == "--model") {
            o.detector.model = std::string(value(i));
        } else if (a == "--format") {
            o.detector.format = passes::parse_format(value(i));
        } else if (a == "--score") {
            o.detector.score_threshold = parse_float(program, a, value(i));
            if (!(o.detector.score_threshold >= 0.f && o.detector.score_threshold < 1.f))
                bad_usage(program, "--score must be in [0, 1)");
        } else if (a == "--iou") {
            o.detector.iou_threshold = parse_float(program, a, value(i));
            if (!(o.detector.iou_threshold >= 0.f && o.detector.iou_threshold <= 1.f))
                bad_usage(program, "--iou must be in [0, 1]");
        } else if (a == "--max-dets") {
            const float v = parse_float(program, a, value(i));
            if (v < 1 || v > 10000 || v != std::floor(v)) bad_usage(program, "--max-dets must be 1..10000");
            o.detector.max_detections = uint32_t(v);
        } else if (a == "--size") {
            const std::string s(value(i));
            unsigned w = 0, h = 0;
            char x = 0;
            if (std::sscanf(s.c_str(), "%u%c%u", &w, &x, &h) != 3 || x != 'x' || !w || !h || w > 8192 ||
                h > 8192)
                bad_usage(program, "--size takes WxH, e.g. 640x640");
            o.detector.input_width = w;
            o.detector.input_height = h;
        } else if (a == "--json") {
            o.json = fs::path(value(i));
        } else if (a == "--frames") {
            const float v = parse_float(program, a, value(i));
            // Bounded: a float past int64's range (1e21) must not reach the conversion below.
            if (v < 1 || v > 1e9f || v != std::floor(v))
                bad_usage(program, "--frames must be an integer in 1..1000000000");
            o.max_frames = int64_t(v);
        } else if (a == "--repeat") {
            const float v = parse_float(program, a, value(i));
            if (v < 1 || v > 100000 || v != std::floor(v)) bad_usage(program, "--repeat must be 1..100000");
            o.repeat = int(v);
        } else if (a == "--profile") {
            o.profile = true;
        } else if (a == "--tolerate-errors") {
            o.tolerate_errors = true;
        } else if (a == "--fp32") {
            o.detector.fp32 = true;
        } else if (a == "--quiet" || a == "-q") {
            o.quiet = true;
        } else if (a.size() > 1 && a[0] == '-') {
            bad_usage(program, "unknown option '" + std::string(a) + "'");
        } else {
            o.inputs.emplace_back(a);
        }
    }
    if (o.inputs.empty()) bad_usage(program, "no input given");
    if (o.profile && o.repeat < 2) bad_usage(program, "--profile needs --repeat N (N >= 2)");
    return o;
}

passes::Rgba class_color(int class_id) {
    // Hues spaced by the golden angle, full saturation and value: neighbours differ clearly.
    const double h = std::fmod(double(class_id) * 137.508 + 20.0, 360.0) / 60.0;
    const double x = 1.0 - std::fabs(std::fmod(h, 2.0) - 1.0);
    double r = 0, g = 0, b = 0;
    switch (int(h)) {
    case 0:
        r = 1, g = x;
        break;
    case 1:
        r = x, g = 1;
        break;
    case 2:
        g = 1, b = x;
        break;
    case 3:
        g = x, b = 1;
        break;
    case 4:
        r = x, b = 1;
        break;
    default:
        r = 1, b = x;
        break;
    }
    auto q = [](double v) { return uint8_t(std::lround(40 + v * 215)); };
    return {q(r), q(g), q(b), 255};
}

void draw_detections(const passes::PixelView& image, std::span<const passes::Detection> dets) {
    const int side = std::min(image.width, image.height);
    const int thickness = std::max(2, side / 300);
    const int scale = std::max(1, side / 400);
    // Lowest scores first, so the best boxes and labels end up on top.
    for (size_t k = dets.size(); k-- > 0;) {
        const passes::Detection& d = dets[k];
        const passes::Rgba c = class_color(d.class_id);
        const int x0 = int(std::floor(d.x0)), y0 = int(std::floor(d.y0));
        const int x1 = int(std::ceil(d.x1)), y1 = int(std::ceil(d.y1));
        passes::draw_rect(image, x0, y0, x1, y1, c, thickness);
        char label[96];
        std::snprintf(label, sizeof label, "%s %.2f", d.name.c_str(), double(d.score));
        const passes::TextSize ts = passes::text_size(label, scale);
        // Above the box when there is room, else inside its top edge.
        const int ty = y0 - ts.h >= 0 ? y0 - ts.h : y0;
        const int tx = std::clamp(x0, 0, std::max(0, image.width - ts.w));
        const bool light = int(c.r) * 299 + int(c.g) * 587 + int(c.b) * 114 > 150000;
        passes::draw_text(image, tx, ty, label,
                          light ? passes::Rgba{0, 0, 0, 255} : passes::Rgba{255, 255, 255, 255}, scale,
                          passes::Rgba{c.r, c.g, c.b, 220});
    }
}

std::string detections_json(std::span<const passes::Detection> dets, int indent) {
    const std::string pad(size_t(indent), ' ');
    std::ostringstream s;
    s << "[";
    for (size_t i = 0; i < dets.size(); ++i) {
        const auto& d = dets[i];
        s << (i ? ",\n" : "\n") << pad << "  {\"class\": \"" << json_escape(d.name)
          << "\", \"class_id\": " << d.class_id << ", \"score\": " << std::to_string(d.score)
          << ", \"box\": [" << num(d.x0) << ", " << num(d.y0) << ", " << num(d.x1) << ", " << num(d.y1)
          << "]}";
    }
    s << (dets.empty() ? "]" : "\n" + pad + "]");
    return s.str();
}

int run(const Options& o) {
    // Expand folders; check every input before loading the model, so typos fail fast.
    std::vector<fs::path> files;
    for (const fs::path& in : o.inputs) {
        std::error_code ec;
        if (fs::is_directory(in, ec)) {
            std::vector<fs::path> found;
            for (const auto& e : fs::directory_iterator(in, ec))
                if (e.is_regular_file() && (is_image(e.path()) || is_video(e.path())))
                    found.push_back(e.path());
            if (ec)
                throw Error(ErrorCode::InvalidArgument,
                            in.string() + ": cannot list the folder (" + ec.message() + ")");
            if (found.empty())
                throw Error(ErrorCode::InvalidArgument, in.string() + ": the folder has no images or videos");
            std::sort(found.begin(), found.end());
            files.insert(files.end(), found.begin(), found.end());
        } else if (!fs::exists(in, ec)) {
            throw Error(ErrorCode::InvalidArgument, in.string() + ": no such file or folder");
        } else if (is_image(in) || is_video(in)) {
            files.push_back(in);
        } else {
            throw Error(ErrorCode::InvalidArgument,
                        in.string() +
                            ": not an image (.png, .jpg, .bmp) or video (.mp4, .mkv, .avi, ...) file");
        }
    }
#if !VKML_DETECT_VIDEO
    for (const fs::path& f : files)
        if (is_video(f))
            throw Error(ErrorCode::Unsupported,
                        f.string() + ": this build of vkml has no video support (media library)");
#endif
    const bool single = files.size() == 1 && o.inputs.size() == 1 && !fs::is_directory(o.inputs[0]);
    if (o.output && !single) {
        std::error_code ec;
        fs::create_directories(*o.output, ec);
        if (ec)
            throw Error(ErrorCode::InvalidArgument, o.output->string() + ": cannot create the output folder");
    }

    auto device = gpu::Device::create();
    passes::Detector detector(*device, o.detector);
    if (!o.quiet) std::printf("%s\n", detector.describe().c_str());

    std::vector<Record> records;
    int interrupted = 0; // the exit code once Ctrl-C or SIGTERM stopped a video
    for (const fs::path& f : files) {
        const fs::path out = output_for(o, f, single);
        if (out.has_parent_path()) {
            std::error_code ec;
            fs::create_directories(out.parent_path(), ec);
            if (ec)
                throw Error(ErrorCode::Io, out.parent_path().string() + ": cannot create the output folder");
        }
        if (is_video(f)) {
#if VKML_DETECT_VIDEO
            VideoProcessor proc(detector, records);
            media::TranscodeDesc td{.input = f, .output = out};
            td.device = device.get();
            td.quiet = o.quiet;
            td.max_frames = o.max_frames;
            td.tolerate_errors = o.tolerate_errors;
            td.tolerate_hint = " (--tolerate-errors goes on with what can be read)";
            td.log_name = "vkml detect";
            const media::TranscodeStats st = media::transcode(td, proc);
            if (!o.quiet) std::printf("%s -> %s: %s\n", f.c_str(), st.output.c_str(), st.summary().c_str());
            if (st.cancelled) {
                std::fprintf(stderr, "vkml detect: interrupted after %lld frames of %s; %s kept (playable)\n",
                             static_cast<long long>(st.frames), f.c_str(), st.output.c_str());
                interrupted = 128 + (st.signal ? st.signal : 2);
                break;
            }
#endif
            continue;
        }
        ImageFile img = load_image(f);
        const auto t0 = std::chrono::steady_clock::now();
        Record r{f.string(),
                 img.width,
                 img.height,
                 -1,
                 0,
                 detector.detect({img.pixels.data(), uint32_t(img.width), uint32_t(img.height), 3, 0})};
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (o.repeat > 1) {
            // Pipelines are built by now: the median of the repeats is the steady per-image cost
            // (upload, letterbox, model, decode, NMS, readback; one submission each).
            std::vector<double> times;
            std::optional<gpu::Profiler> profiler;
            if (o.profile) profiler.emplace(*device, 8, "vkml detect profile");
            std::map<std::string, std::vector<double>> stages; // GPU ms per stage, by name
            std::vector<std::string> order;
            for (int k = 0; k < o.repeat; ++k) {
                const auto t1 = std::chrono::steady_clock::now();
                (void)detector.detect({img.pixels.data(), uint32_t(img.width), uint32_t(img.height), 3, 0},
                                      profiler ? &*profiler : nullptr);
                times.push_back(
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
                if (profiler)
                    for (const gpu::TimingRecord& rec : profiler->results()) {
                        if (!stages.count(rec.name)) order.push_back(rec.name);
                        stages[rec.name].push_back(rec.duration_us / 1000.0);
                    }
            }
            auto median = [](std::vector<double> v) {
                std::sort(v.begin(), v.end());
                return v[v.size() / 2];
            };
            ms = median(times);
            std::printf("%s: median %.3f ms per image over %d runs (%s)\n", f.c_str(), ms, o.repeat,
                        passes::format_name(detector.format()));
            if (o.profile) {
                if (order.empty()) std::printf("  no GPU timestamps on this device or queue\n");
                double total = 0;
                for (const std::string& name : order) {
                    const double m = median(stages[name]);
                    total += m;
                    std::printf("  %-10s %8.3f ms GPU (median)\n", name.c_str(), m);
                }
                if (!order.empty())
                    std::printf("  %-10s %8.3f ms GPU (sum of the medians)\n", "total", total);
            }
        }
        draw_detections({img.pixels.data(), img.width, img.height, img.width * 3, 3}, r.dets);
        save_image(out, img);
        if (!o.quiet) print_dets(f.string() + " -> " + out.string() + " (" + num(ms) + " ms)", r.dets);
        records.push_back(std::move(r));
    }
    if (o.json) {
        const std::string text = records_json(records);
        if (o.json->string() == "-") {
            std::fputs(text.c_str(), stdout);
        } else {
            write_output(*o.json, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
        }
    }
    return interrupted;
}

} // namespace vkml::detect_app
