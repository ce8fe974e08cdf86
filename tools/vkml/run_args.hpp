#pragma once
// `vkml run`'s command line, parsed without touching a device or the model, so it can be tested
// and fuzzed on its own (tests/fuzz/cli_fuzz.cpp).
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "image_file.hpp"
#include "vkml/graph/session.hpp"

namespace vkml::tool {

struct RunArgs {
    bool help = false; // --help: print run_usage and do nothing else
    std::filesystem::path model, out_dir;
    std::vector<std::pair<std::string, std::filesystem::path>> inputs; // (input name or "", file)
    SessionOptions session;
    ImageOptions image;
    bool profile = false, describe = false;
};

// Throws vkml::Error(InvalidArgument) "run: <what> (vkml run --help)" on bad usage, including a
// missing model or --output-dir.
RunArgs parse_run_args(Args args);
void run_usage(FILE* out);

} // namespace vkml::tool
