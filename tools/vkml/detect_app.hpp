#pragma once
// The object-detection application shared by `vkml detect` and samples/detect: options, running
// a passes::Detector over images, folders and videos, drawing labelled boxes with vkml's own font
// (vkml/passes/text.hpp) and writing the annotated files plus a JSON list of detections.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vkml/passes/detector.hpp"
#include "vkml/passes/text.hpp"

namespace vkml::detect_app {

struct Options {
    std::vector<std::filesystem::path> inputs;
    std::optional<std::filesystem::path> output; // -o: a file (one image or video) or a folder
    std::optional<std::filesystem::path> json;   // --json FILE ("-": stdout)
    passes::DetectorDesc detector;
    bool quiet = false;
    int64_t max_frames = 0;       // videos: stop after this many frames (0: all)
    bool tolerate_errors = false; // videos: go on past damaged or truncated input with a warning
    int repeat = 1;               // images: run the detector this many times and print the median time
    bool profile = false;         // images, with repeat: also the median GPU time of each stage
};

// Parses `vkml detect`'s arguments (after the subcommand). Returns nullopt after printing the
// help for --help; throws vkml::Error(InvalidArgument) with a one-line message on bad usage.
std::optional<Options> parse_args(std::span<const std::string_view> args, std::string_view program);
void print_usage(FILE* out, std::string_view program);

// A palette colour per class, distinct for neighbouring class ids.
passes::Rgba class_color(int class_id);
// Draws each detection's box and a "name 0.87" label (scaled to the image size) into `image`.
void draw_detections(const passes::PixelView& image, std::span<const passes::Detection> dets);

// {"class": "dog", "class_id": 16, "score": 0.91, "box": [x0, y0, x1, y1]} entries.
std::string detections_json(std::span<const passes::Detection> dets, int indent = 0);

// Runs the whole command: returns the process exit code (errors throw vkml::Error).
int run(const Options& options);

} // namespace vkml::detect_app
