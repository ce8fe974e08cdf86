// `vkml upscale`'s options (upscale_args.hpp).
#include "upscale_args.hpp"

#include <cstdlib>
#include <string>

#include "vkml/error.hpp"

namespace vkml::tool {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad_usage(const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, "upscale: " + what + " (vkml upscale --help)");
}

int to_int(std::string_view v, const std::string& opt, int lo, int hi) {
    const std::string s(v);
    char* end = nullptr;
    const long x = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || x < lo || x > hi)
        bad_usage(opt + ": '" + s + "' is not a number in " + std::to_string(lo) + ".." + std::to_string(hi));
    return static_cast<int>(x);
}

} // namespace

void upscale_usage(FILE* out) {
    std::fprintf(
        out,
        "usage: vkml upscale [INPUT] [-o OUTPUT] [options]\n\n"
        "Upscales a video (anything FFmpeg's libraries decode), an image (PNG, JPEG) or a folder of\n"
        "images with a super-resolution model on the GPU. Audio and subtitle streams are copied\n"
        "unchanged; timestamps, metadata and rotation are kept, and so are the codec family, pixel\n"
        "format, bit depth and alpha channel where the output can hold them (a note says what\n"
        "changes). Outputs appear whole or not at all. With no INPUT it upscales the bundled clip\n"
        "(%s).\n\n"
        "  -o, --output PATH      output file or folder (default: ./<input name>_x<scale>.<ext>)\n"
        "  -m, --model NAME|PATH  anime4k-s|m|l (fast, default for video; add -an or -3d for\n"
        "                         those weights), esrgan-slim|medium|thick (quality, default for\n"
        "                         images), or any model file vkml loads (ONNX, TF.js, Anime4K JSON)\n"
        "  -s, --scale N          2 (default); esrgan: 2, 3, 4 or 8; a model file: its own scale\n"
        "      --input-range 1|255  pixel range a model file expects (default 1; esrgan uses 255)\n"
        "      --fp32             run the model in f32 (default: f16 storage where the GPU has it,\n"
        "                         11 bits; inputs of more than 10 bits, 16-bit images or 12-bit\n"
        "                         video, always run in f32 so that every bit is kept)\n"
        "  -t, --tile N           tile size in input pixels (default: from the GPU memory budget)\n"
        "video encoding:\n"
        "  -c, --codec NAME       libx264, libx265, libvpx-vp9, libaom-av1, mpeg4, ffv1, ... (any\n"
        "                         libavcodec video encoder; default: the input's codec family where\n"
        "                         the container holds it, else libx264)\n"
        "      --crf N            quality (x264/x265 default 18; lower is better)\n"
        "      --preset NAME      encoder preset (x264/x265: ultrafast ... veryslow)\n"
        "      --pix-fmt NAME     e.g. yuv420p, yuv444p, yuv420p10le (default: the input's)\n"
        "  -e KEY=VALUE           encoder option, passed to libavcodec (repeatable), e.g. -e tune=film\n"
        "pipeline:\n"
        "  -j, --threads L:P:S    decoder threads : GPU frames in flight : encoder threads (default 0:2:0,\n"
        "                         0 = automatic)\n"
        "      --frames N         stop after N frames (audio and subtitles are cut with them)\n"
        "      --tolerate-errors  go on past damaged or truncated input (and unreadable images of a\n"
        "                         folder) with a warning; default: an error, exit 1, no output\n"
        "      --benchmark        decode and upscale without encoding; print fps per stage\n"
        "  -q, --quiet            no progress output\n"
        "      --no-partial       on Ctrl-C or SIGTERM remove the partial output (default: keep it,\n"
        "                         playable)\n",
        default_clip_path().string().c_str());
}

UpscaleArgs parse_upscale_args(Args args) {
    UpscaleArgs r;
    fs::path& input = r.input;
    fs::path& output = r.output;
    ModelChoice& model = r.model;
    media::TranscodeDesc& desc = r.desc;
    desc.log_name = "vkml upscale";
    desc.tolerate_hint = " (--tolerate-errors upscales what can be read)";
    auto value = [&](size_t& i, std::string_view opt) -> std::string_view {
        if (i + 1 >= args.size()) bad_usage(std::string(opt) + " needs a value");
        return args[++i];
    };
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h") {
            r.help = true;
            return r;
        } else if (a == "-o" || a == "--output") {
            output = std::string(value(i, a));
        } else if (a == "-m" || a == "--model") {
            model.name = value(i, a);
        } else if (a == "-s" || a == "--scale") {
            model.scale = to_int(value(i, a), "--scale", 1, 16);
        } else if (a == "--input-range") {
            const std::string_view v = value(i, a);
            if (v != "1" && v != "255") bad_usage("--input-range: 1 or 255, not '" + std::string(v) + "'");
            model.input_range = v == "255" ? 255.f : 1.f;
        } else if (a == "--fp32") {
            model.fp32 = true;
        } else if (a == "-t" || a == "--tile") {
            desc.tile = to_int(value(i, a), "--tile", 0, 65536);
            model.tile = desc.tile;
        } else if (a == "-c" || a == "--codec") {
            desc.codec = value(i, a);
        } else if (a == "--crf") {
            desc.crf = to_int(value(i, a), "--crf", 0, 63);
        } else if (a == "--preset") {
            desc.preset = value(i, a);
        } else if (a == "--pix-fmt") {
            desc.pix_fmt = value(i, a);
        } else if (a == "-e" || a == "--encoder-option") {
            const std::string_view kv = value(i, a);
            const size_t eq = kv.find('=');
            if (eq == std::string_view::npos || eq == 0)
                bad_usage("-e takes KEY=VALUE, not '" + std::string(kv) + "'");
            desc.encoder_options.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
        } else if (a == "-j" || a == "--threads") {
            desc.threads = media::parse_thread_counts(value(i, a));
        } else if (a == "--frames") {
            desc.max_frames = to_int(value(i, a), "--frames", 1, 1 << 30);
        } else if (a == "--tolerate-errors") {
            desc.tolerate_errors = true;
        } else if (a == "--benchmark") {
            desc.benchmark = true;
        } else if (a == "-q" || a == "--quiet") {
            desc.quiet = true;
        } else if (a == "--no-partial") {
            desc.no_partial = true;
        } else if (!a.empty() && a[0] == '-' && a != "-") {
            bad_usage("unknown option '" + std::string(a) + "'");
        } else if (input.empty()) {
            input = std::string(a);
        } else {
            bad_usage("more than one input ('" + input.string() + "', '" + std::string(a) + "')");
        }
    }
    return r;
}

} // namespace vkml::tool
