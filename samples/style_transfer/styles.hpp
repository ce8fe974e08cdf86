#pragma once
// Which style models a run uses: --style NAME (assets/models/style/NAME.onnx, or $VKML_STYLE_DIR)
// or --style PATH (any fast-neural-style model, e.g. the ONNX model zoo's candy-9.onnx); without
// --style, every committed style.
#include <filesystem>
#include <string>
#include <vector>

namespace vkml::style_sample {

// $VKML_STYLE_DIR, else the source tree's assets/models/style.
std::filesystem::path style_dir();
// The model files for the --style arguments, in order (all of style_dir() when empty). Throws
// vkml::Error with one line naming what is missing and what to do.
std::vector<std::filesystem::path> resolve_styles(const std::vector<std::string>& args);
// "0.75" -> 0.75 in [0, 1]; throws samples::UsageError naming --strength.
float parse_strength(const std::string& text);

} // namespace vkml::style_sample
