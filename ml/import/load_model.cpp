#include "vkml/import/model.hpp"

#include <fstream>

#include "import_util.hpp"
#include "json_view.hpp"
#include "vkml/import/anime4k.hpp"
#include "vkml/import/onnx.hpp"
#include "vkml/import/tfjs.hpp"

namespace vkml::import {

namespace {

enum class JsonKind { TfjsLayers, TfjsGraph, Anime4k };

JsonKind json_kind(const std::filesystem::path& path) {
    const nlohmann::json root = parse_json_file(path);
    const std::string file = path.string();
    const JsonView r(root, "", file);
    if (!r.is_object()) r.fail("a model file must hold a JSON object");
    if (r.has("modelTopology")) {
        const std::string format = r.string_or("format", "");
        if (format == "graph-model") return JsonKind::TfjsGraph;
        if (format == "layers-model") return JsonKind::TfjsLayers;
        // Older converters write no format: a GraphDef has nodes, a Keras topology a class.
        return r.at("modelTopology").has("node") ? JsonKind::TfjsGraph : JsonKind::TfjsLayers;
    }
    if (r.has("layers") && r.at("layers").is_object() && r.has("name")) return JsonKind::Anime4k;
    r.fail("not a model vkml knows: expected a TF.js model.json (with modelTopology) or Anime4K weights "
           "(name, layers)");
}

} // namespace

graph::Graph load_tfjs(const std::filesystem::path& model_json) {
    switch (json_kind(model_json)) {
    case JsonKind::TfjsGraph:
        return load_tfjs_graph(model_json);
    case JsonKind::TfjsLayers:
        return load_tfjs_layers(model_json);
    case JsonKind::Anime4k:
        break;
    }
    fail(model_json.string(), "is Anime4K weights, not a TF.js model");
}

graph::Graph load_model(const std::filesystem::path& path) {
    // The first non-blank byte tells JSON ('{') from protobuf, whatever the file is called.
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path.string(), "no such file or not readable", ErrorCode::Io);
    char c = 0;
    while (in.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
    }
    if (in && c == '{') {
        switch (json_kind(path)) {
        case JsonKind::TfjsGraph:
            return load_tfjs_graph(path);
        case JsonKind::TfjsLayers:
            return load_tfjs_layers(path);
        case JsonKind::Anime4k:
            return load_anime4k(path);
        }
    }
    return load_onnx(path);
}

} // namespace vkml::import
