// `vkml upscale --make-clip OUT [...]` (hidden): writes a short clip with libavcodec, either cut and
// resampled from another video (--from) or a synthetic pattern, with a synthetic audio track. It
// made the bundled default clip (assets/clips/README.md has the exact command) and makes the
// large clips for GPU timings.
extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "vkml/media/testclip.hpp"
#include "vkml/error.hpp"

namespace vkml::tool {

namespace fs = std::filesystem;

namespace {

void usage(FILE* out) {
    std::fprintf(
        out,
        "usage: vkml upscale --make-clip OUT [--from VIDEO] [--start N] [--size WxH] [--frames N]\n"
        "                    [--fps N] [--codec NAME] [--crf N] [--preset P] [--pix-fmt F] [--no-audio]\n\n"
        "Writes a clip: frames of VIDEO from frame N on (looping when it runs out), resampled to\n"
        "WxH (area average when shrinking, bilinear when growing), or a synthetic pattern; with a\n"
        "synthetic plucked-string audio track (AAC) unless --no-audio.\n");
}

[[noreturn]] void bad(const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, "upscale --make-clip: " + what);
}

// One 8-bit plane resampled: each output sample averages a k x k grid of bilinear taps over its
// footprint in the source (k = 1 when growing), so shrinking does not alias.
void resample_plane(const uint8_t* src, int sw, int sh, int sstride, uint8_t* dst, int dw, int dh,
                    int dstride) {
    const double fx = double(sw) / dw, fy = double(sh) / dh;
    const int kx = std::max(1, static_cast<int>(std::ceil(fx))),
              ky = std::max(1, static_cast<int>(std::ceil(fy)));
    auto at = [&](int x, int y) {
        return double(src[int64_t(std::clamp(y, 0, sh - 1)) * sstride + std::clamp(x, 0, sw - 1)]);
    };
    for (int y = 0; y < dh; ++y)
        for (int x = 0; x < dw; ++x) {
            double acc = 0;
            for (int j = 0; j < ky; ++j)
                for (int i = 0; i < kx; ++i) {
                    const double sx = (x + (i + 0.5) / kx) * fx - 0.5, sy = (y + (j + 0.5) / ky) * fy - 0.5;
                    const int x0 = static_cast<int>(std::floor(sx)), y0 = static_cast<int>(std::floor(sy));
                    const double ax = sx - x0, ay = sy - y0;
                    acc += (1 - ay) * ((1 - ax) * at(x0, y0) + ax * at(x0 + 1, y0)) +
                           ay * ((1 - ax) * at(x0, y0 + 1) + ax * at(x0 + 1, y0 + 1));
                }
            dst[int64_t(y) * dstride + x] =
                static_cast<uint8_t>(std::clamp(std::lround(acc / (kx * ky)), 0l, 255l));
        }
}

} // namespace

int upscale_make_clip_main(Args args) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        usage(args.empty() ? stderr : stdout);
        return args.empty() ? 2 : 0;
    }
    media::TestClipDesc d;
    d.path = std::string(args[0]);
    d.size = {192, 144};
    d.frames = 20;
    d.options = {{"crf", "26"}, {"preset", "veryslow"}};
    fs::path from;
    int start = 0, fps = 0;
    auto value = [&](size_t& i) -> std::string {
        if (i + 1 >= args.size()) bad(std::string(args[i]) + " needs a value");
        return std::string(args[++i]);
    };
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "--from")
            from = value(i);
        else if (a == "--start")
            start = std::stoi(value(i));
        else if (a == "--frames")
            d.frames = std::stoi(value(i));
        else if (a == "--fps")
            fps = std::stoi(value(i));
        else if (a == "--codec") {
            d.codec = value(i);
            d.options.clear();
        } else if (a == "--crf") {
            std::erase_if(d.options, [](const auto& kv) { return kv.first == "crf"; });
            d.options.emplace_back("crf", value(i));
        } else if (a == "--preset") {
            std::erase_if(d.options, [](const auto& kv) { return kv.first == "preset"; });
            d.options.emplace_back("preset", value(i));
        } else if (a == "--pix-fmt")
            d.pix_fmt = value(i);
        else if (a == "--no-audio")
            d.audio_codec.clear();
        else if (a == "--size") {
            const std::string s = value(i);
            if (std::sscanf(s.c_str(), "%dx%d", &d.size.width, &d.size.height) != 2 || d.size.width < 2 ||
                d.size.height < 2 || d.size.width % 2 || d.size.height % 2)
                bad("--size wants even WxH, not '" + s + "'");
        } else
            bad("unknown option '" + std::string(a) + "'");
    }
    if (d.frames < 1) bad("--frames must be at least 1");

    std::unique_ptr<media::VideoReader> reader;
    auto open = [&] {
        reader = std::make_unique<media::VideoReader>(media::ReaderDesc{from, 0});
        for (int k = 0; k < start; ++k)
            if (!reader->read_frame())
                bad("'" + from.string() + "' has fewer than " + std::to_string(start) + " frames");
    };
    if (!from.empty()) {
        open();
        const auto& in = reader->info();
        if (in.pix_fmt != "yuv420p" && in.pix_fmt != "yuvj420p")
            bad("'" + from.string() + "' decodes to " + in.pix_fmt + "; --from takes yuv420p video");
        if (d.pix_fmt != "yuv420p") bad("--from writes yuv420p");
        const media::Rational r = in.frame_rate.num > 0 ? in.frame_rate : media::Rational{25, 1};
        d.frame_rate = fps > 0 ? media::Rational{fps, 1} : r;
        d.time_base = {d.frame_rate.den, d.frame_rate.num};
        d.metadata["comment"] =
            "frames from " + from.filename().string() + ", resampled by vkml upscale --make-clip";
        d.paint = [&](int64_t, AVFrame& f) {
            media::FramePtr src = reader->read_frame();
            if (!src) { // loop
                open();
                src = reader->read_frame();
                if (!src) bad("'" + from.string() + "' has no frames after --start");
            }
            for (int p = 0; p < 3; ++p) {
                const int sh = p ? 1 : 0;
                resample_plane(src->data[p], (src->width + sh) >> sh, (src->height + sh) >> sh,
                               src->linesize[p], f.data[p], (f.width + sh) >> sh, (f.height + sh) >> sh,
                               f.linesize[p]);
            }
        };
    } else if (fps > 0) {
        d.frame_rate = {fps, 1};
        d.time_base = {1, fps};
    }
    media::write_test_clip(d);
    std::printf("vkml upscale: wrote %s (%dx%d, %d frames at %d/%d fps%s)\n", d.path.c_str(), d.size.width,
                d.size.height, d.frames, d.frame_rate.num, d.frame_rate.den,
                d.audio_codec.empty() ? "" : ", AAC audio");
    return 0;
}

} // namespace vkml::tool
