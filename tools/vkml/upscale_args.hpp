#pragma once
// `vkml upscale`'s command line, parsed without touching a device, a model or a file, so it can be
// tested and fuzzed on its own (tests/fuzz/upscale_fuzz.cpp). The defaults that need the file
// system (the bundled clip, the model for images or video, the output name) are upscale_main's.
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "vkml/media/transcode.hpp"
#include "upscale_model.hpp"

namespace vkml::tool {

struct UpscaleArgs {
    bool help = false;                   // --help: print upscale_usage and do nothing else
    std::filesystem::path input, output; // empty: the bundled clip; the default output name
    ModelChoice model;                   // name empty: chosen by the input (images or video)
    media::TranscodeDesc desc;           // input, output and device left for upscale_main
};

// Throws vkml::Error(InvalidArgument) "upscale: <what> (vkml upscale --help)" on bad usage.
UpscaleArgs parse_upscale_args(Args args);
void upscale_usage(FILE* out);

} // namespace vkml::tool
