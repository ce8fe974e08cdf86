#pragma once
// One entry point for every model format vkml reads, chosen from the file itself: ONNX protobuf,
// TF.js layers or graph model.json, or Anime4K weights JSON. `vkml run MODEL` and the session
// use this; the per-format functions stay available for callers that know what they have.
#include <filesystem>

#include "vkml/graph/graph.hpp"

namespace vkml::import {

graph::Graph load_model(const std::filesystem::path& path);

} // namespace vkml::import
