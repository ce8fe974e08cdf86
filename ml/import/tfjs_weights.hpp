#pragma once
// TF.js weight manifests: groups of weights stored back to back in a group's shard files
// ("group1-shard1of3.bin", ...), each weight float32, int32 or bool, optionally quantized to
// uint8 / uint16 (value = min + scale * q) or float16. Both TF.js importers use this.
#include <filesystem>
#include <map>
#include <string>

#include "json_view.hpp"
#include "vkml/graph/tensor_data.hpp"

namespace vkml::import {

class TfjsWeights {
public:
    // Reads every weight of `manifest` (the "weightsManifest" array), with shards resolved beside
    // `model_json`. Quantized floats are dequantized to f32 (exactly for float16); quantized int32
    // weights are rounded back to integers, as TF.js does.
    TfjsWeights(const JsonView& manifest, const std::filesystem::path& model_json);

    bool has(const std::string& name) const { return weights_.count(name) != 0; }
    const graph::TensorData* find(const std::string& name) const;
    const std::map<std::string, graph::TensorData>& all() const { return weights_; }

private:
    std::map<std::string, graph::TensorData> weights_;
};

// TensorFlow convolution filters [kh, kw, in, out] to ONNX's [out, in, kh, kw]; depthwise filters
// [kh, kw, in, multiplier] to [in * multiplier, 1, kh, kw] (TF numbers the outputs in-major).
graph::TensorData hwio_to_oihw(const graph::TensorData& filter, bool depthwise);

} // namespace vkml::import
