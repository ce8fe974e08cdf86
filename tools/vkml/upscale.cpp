// `vkml upscale [INPUT] [-o OUTPUT] [--model NAME|PATH] [--scale N] ...`: videos, images and
// folders of images through a super-resolution model on the GPU (media::transcode does the
// pipeline). With no arguments it upscales the bundled default clip.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "commands.hpp"
#include "upscale_args.hpp"
#include "upscale_model.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/media/transcode.hpp"

namespace vkml::tool {

namespace fs = std::filesystem;

int upscale_make_clip_main(Args args); // upscale_clip.cpp

namespace {

// ./<stem>_x<scale><ext> for files, ./<name>_x<scale> for folders.
fs::path default_output(const fs::path& input, int scale, bool folder) {
    const fs::path in = input.has_filename() ? input : input.parent_path();
    const std::string tag = "_x" + std::to_string(scale);
    if (folder) return fs::path(".") / (in.filename().string() + tag);
    std::string ext = in.extension().string();
    if (!media::is_image_path(in)) {
        // Containers we cannot write (e.g. .avi with H.264 is poor) become .mp4.
        std::string e = ext;
        std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        if (e != ".mp4" && e != ".mkv" && e != ".mov" && e != ".webm") ext = ".mp4";
    }
    return fs::path(".") / (in.stem().string() + tag + ext);
}

} // namespace

int upscale_main(Args args) {
    if (!args.empty() && args[0] == "--make-clip") return upscale_make_clip_main(args.subspan(1));
    UpscaleArgs parsed = parse_upscale_args(args);
    if (parsed.help) {
        upscale_usage(stdout);
        return 0;
    }
    fs::path& input = parsed.input;
    fs::path& output = parsed.output;
    ModelChoice& model = parsed.model;
    media::TranscodeDesc& desc = parsed.desc;
    const bool bundled = input.empty();
    if (bundled) {
        input = default_clip_path();
        if (!fs::exists(input))
            throw Error(ErrorCode::Io, "the bundled clip '" + input.string() +
                                           "' is missing (set VKML_CLIP or pass an input file)");
    }
    std::error_code ec;
    const bool folder = fs::is_directory(input, ec);
    const bool images = folder || media::is_image_path(input);
    if (model.name.empty()) model.name = images ? "esrgan-slim" : "anime4k-m";
    if (model.scale == 0) model.scale = 2;
    if (output.empty() && !desc.benchmark) output = default_output(input, model.scale, folder);
    desc.input = input;
    desc.output = output;

    // The device outlives the processor, whose sessions hold GPU memory.
    const std::unique_ptr<gpu::Device> device = gpu::Device::create();
    desc.device = device.get();
    ModelProcessor processor(model);
    if (!desc.quiet)
        std::fprintf(stderr, "vkml upscale: %s -> %s with %s\n", input.c_str(),
                     desc.benchmark ? "(benchmark, nothing written)" : output.c_str(),
                     processor.name().c_str());
    const media::TranscodeStats st = media::transcode(desc, processor);
    if (st.cancelled) {
        const char* by = st.signal == SIGTERM ? " by SIGTERM" : st.signal == SIGINT ? " by Ctrl-C" : "";
        if (st.partial_kept)
            std::fprintf(
                stderr,
                "vkml upscale: interrupted%s after %lld frames; the partial result (playable) is %s\n", by,
                static_cast<long long>(st.frames), st.output.c_str());
        else
            std::fprintf(stderr,
                         "vkml upscale: interrupted%s after %lld frames; the partial output was removed\n",
                         by, static_cast<long long>(st.frames));
        return 128 + (st.signal ? st.signal : SIGINT); // 130 for Ctrl-C, 143 for SIGTERM, as shells report
    }
    if (desc.benchmark || !desc.quiet) std::printf("vkml upscale: %s\n", st.summary().c_str());
    if (!desc.benchmark) {
        if (st.input_size.width)
            std::printf("vkml upscale: wrote %s (%dx%d -> %dx%d, %.1f KB)\n", st.output.c_str(),
                        st.input_size.width, st.input_size.height, st.output_size.width,
                        st.output_size.height, st.output_bytes / 1024.0);
        else
            std::printf("vkml upscale: wrote %s\n", st.output.c_str());
    }
    return 0;
}

} // namespace vkml::tool
