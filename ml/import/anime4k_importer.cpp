#include <algorithm>
#include <map>
#include <set>

#include "graph_builder.hpp"
#include "import_util.hpp"
#include "json_view.hpp"
#include "vkml/import/anime4k.hpp"

namespace vkml::import {

using graph::Graph;
using graph::TensorData;
using graph::ValueId;

namespace {

constexpr const char* input_name = "input_image";

struct Layer {
    std::string name, type, output;
    std::vector<std::string> inputs;
    std::vector<float> weights, bias;
    JsonView json;
};

std::vector<float> floats_of(const JsonView& v) {
    std::vector<float> out;
    for (double d : v.as_numbers()) out.push_back(static_cast<float>(d));
    return out;
}

class Anime4kImporter {
public:
    Anime4kImporter(const std::filesystem::path& path, const nlohmann::json& root)
        : file_(path.string()), root_(root, "", file_), b_(g_) {}

    Graph run();

private:
    ValueId conv(const Layer& l);
    ValueId crelu(const std::vector<std::string>& inputs, const std::string& name);
    ValueId value_of(const std::string& name, const JsonView& where) {
        auto it = values_.find(name);
        if (it == values_.end()) where.fail("input '" + name + "' is produced by no earlier layer");
        return it->second;
    }

    std::string file_;
    JsonView root_;
    Graph g_;
    GraphBuilder b_;
    std::map<std::string, ValueId> values_; // layer outputs by name
    int width_ = 1;                         // feature blocks per layer step (2 for the L networks)
};

ValueId Anime4kImporter::crelu(const std::vector<std::string>& inputs, const std::string& name) {
    // One CReLU per group of `width_` inputs: [relu(group), relu(-group)], groups concatenated.
    std::vector<ValueId> parts;
    for (size_t k = 0; k < inputs.size(); k += static_cast<size_t>(width_)) {
        std::vector<ValueId> group;
        for (size_t j = k; j < k + static_cast<size_t>(width_); ++j) group.push_back(values_.at(inputs[j]));
        const std::string base = name + "/crelu" + std::to_string(k / static_cast<size_t>(width_));
        const ValueId x =
            group.size() == 1 ? group[0] : b_.node("Concat", group, base + "/in", {{"axis", int64_t{1}}});
        parts.push_back(b_.node("Relu", {x}, base + "/pos"));
        parts.push_back(b_.node("Relu", {b_.node("Neg", {x}, base + "/neg_in")}, base + "/neg"));
    }
    return b_.node("Concat", parts, name + "/crelu", {{"axis", int64_t{1}}});
}

ValueId Anime4kImporter::conv(const Layer& l) {
    if (l.bias.size() != 4)
        l.json.at("bias").fail("expected 4 bias values, found " + std::to_string(l.bias.size()));
    std::vector<std::string> features;
    for (const std::string& in : l.inputs)
        if (in != input_name) features.push_back(in);
    std::vector<float> bias = l.bias;
    std::vector<float> w;
    int64_t in_channels, taps;
    ValueId x;
    if (features.empty()) {
        // The first layer: 3x3 over RGBA.
        if (l.weights.size() != 9 * 16)
            l.json.at("weights").fail("a layer reading the image needs 144 weights, found " +
                                      std::to_string(l.weights.size()));
        taps = 9;
        in_channels = 3;
        w.resize(4 * 3 * 9);
        for (int i = 0; i < 9; ++i)
            for (int o = 0; o < 4; ++o) {
                for (int c = 0; c < 3; ++c)
                    w[static_cast<size_t>((o * 3 + c) * 9 + (i % 3) * 3 + i / 3)] =
                        l.weights[static_cast<size_t>(i * 16 + c * 4 + o)];
                bias[static_cast<size_t>(o)] += l.weights[static_cast<size_t>(i * 16 + 12 + o)]; // alpha is 1
            }
        x = values_.at(input_name);
    } else {
        if (features.size() % static_cast<size_t>(width_))
            l.json.at("inputs").fail("expected a multiple of " + std::to_string(width_) + " feature inputs");
        for (const std::string& f : features) (void)value_of(f, l.json.at("inputs"));
        const size_t blocks = 2 * features.size(); // CReLU doubles
        if (l.weights.size() == blocks * 16 * 9)
            taps = 9;
        else if (l.weights.size() == blocks * 16)
            taps = 1;
        else
            l.json.at("weights").fail("expected " + std::to_string(blocks * 16 * 9) + " (3x3) or " +
                                      std::to_string(blocks * 16) + " (1x1) weights for " +
                                      std::to_string(features.size()) + " inputs, found " +
                                      std::to_string(l.weights.size()));
        in_channels = static_cast<int64_t>(blocks) * 4;
        w.resize(static_cast<size_t>(4 * in_channels * taps));
        for (size_t b = 0; b < blocks; ++b)
            for (int64_t i = 0; i < taps; ++i)
                for (int c = 0; c < 4; ++c)
                    for (int o = 0; o < 4; ++o) {
                        // Offsets run x-major (i = 3 * (dx + 1) + (dy + 1)); ONNX kernels are [.., ky, kx].
                        const int64_t spatial = taps == 9 ? (i % 3) * 3 + i / 3 : 0;
                        const int64_t ic = static_cast<int64_t>(b) * 4 + c;
                        w[static_cast<size_t>((o * in_channels + ic) * taps + spatial)] =
                            l.weights[(b * static_cast<size_t>(taps) + static_cast<size_t>(i)) * 16 +
                                      static_cast<size_t>(c * 4 + o)];
                    }
        x = crelu(features, l.name);
    }
    const int64_t k = taps == 9 ? 3 : 1, pad = taps == 9 ? 1 : 0;
    const ValueId wid = b_.constant(l.name + "/kernel", TensorData::from_floats({4, in_channels, k, k}, w));
    const ValueId bid = b_.constant(l.name + "/bias", TensorData::from_floats({4}, bias));
    return b_.node(
        "Conv", {x, wid, bid}, l.name,
        {{"kernel_shape", std::vector<int64_t>{k, k}}, {"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
}

Graph Anime4kImporter::run() {
    g_.source = file_;
    g_.format = "anime4k";
    g_.name = root_.at("name").as_string();
    g_.opsets.push_back({"", 17});
    g_.metadata["input_range"] = "RGB in [0, 1]";
    const ValueId input =
        g_.add_value(input_name, graph::DType::f32,
                     graph::Shape({graph::Dim::symbolic("batch"), graph::Dim::known(3),
                                   graph::Dim::symbolic("height"), graph::Dim::symbolic("width")}));
    g_.inputs().push_back(input);
    values_[input_name] = input;

    std::vector<Layer> layers;
    for (const auto& [key, lj] : root_.at("layers").members()) {
        Layer l{lj.string_or("name", key),
                lj.at("type").as_string(),
                lj.string_or("output", key),
                lj.at("inputs").as_strings(),
                {},
                {},
                lj};
        if (l.type == "conv") {
            l.weights = floats_of(lj.at("weights"));
            l.bias = floats_of(lj.at("bias"));
        } else if (l.type != "pixel_shuffle") {
            lj.at("type").fail("layer type '" + l.type + "' is not supported (conv, pixel_shuffle are)");
        }
        if (l.inputs.empty()) lj.at("inputs").fail("a layer needs inputs");
        layers.push_back(std::move(l));
    }
    int first_layers = 0;
    for (const Layer& l : layers)
        if (l.inputs == std::vector<std::string>{input_name}) ++first_layers;
    width_ = std::max(1, first_layers);

    // The file's object is unordered; emit each layer once all its inputs exist.
    std::set<size_t> done;
    ValueId output = graph::no_value;
    while (done.size() < layers.size()) {
        bool progress = false;
        for (size_t i = 0; i < layers.size(); ++i) {
            const Layer& l = layers[i];
            if (done.count(i)) continue;
            bool ready = true;
            for (const std::string& in : l.inputs) ready = ready && values_.count(in);
            if (!ready) continue;
            done.insert(i);
            progress = true;
            if (l.type == "conv") {
                const ValueId y = conv(l);
                if (l.output == "MAIN") { // restore networks: a residual on the input image
                    if (output != graph::no_value) l.json.fail("a second network output");
                    const ValueId rgb =
                        b_.node("Slice",
                                {y, b_.ints(l.name + "/starts", {0}), b_.ints(l.name + "/ends", {3}),
                                 b_.ints(l.name + "/axes", {1})},
                                l.name + "/rgb");
                    output = b_.node("Add", {input, rgb}, "output");
                } else {
                    if (values_.count(l.output))
                        l.json.at("output").fail("output '" + l.output + "' is produced twice");
                    values_[l.output] = y;
                }
            } else { // pixel_shuffle
                if (output != graph::no_value) l.json.fail("a second network output");
                if (l.inputs.size() != 1 && l.inputs.size() != 3)
                    l.json.at("inputs").fail("a pixel shuffle takes 1 (luma) or 3 (RGB) inputs");
                std::vector<ValueId> in;
                for (const std::string& s : l.inputs) in.push_back(values_.at(s));
                const ValueId cat =
                    in.size() == 1 ? in[0] : b_.node("Concat", in, l.name + "/in", {{"axis", int64_t{1}}});
                const ValueId residual =
                    b_.node("DepthToSpace", {cat}, l.name, {{"blocksize", int64_t{2}}, {"mode", "CRD"}});
                const ValueId up = b_.node(
                    "Resize",
                    {input, graph::no_value,
                     b_.constant("upscale/scales",
                                 TensorData::from_floats({4}, std::vector<float>{1, 1, 2, 2}))},
                    "upscale", {{"mode", "linear"}, {"coordinate_transformation_mode", "half_pixel"}});
                output = b_.node("Add", {up, residual}, "output");
            }
        }
        if (!progress) {
            for (size_t i = 0; i < layers.size(); ++i)
                if (!done.count(i))
                    for (const std::string& in : layers[i].inputs)
                        if (!values_.count(in))
                            layers[i].json.at("inputs").fail("input '" + in +
                                                             "' is produced by no layer (or by a cycle)");
        }
    }
    if (output == graph::no_value)
        import::fail(
            file_,
            "no layer produces the network's output (a pixel_shuffle, or a conv with output \"MAIN\")");
    g_.outputs().push_back(output);
    g_.validate();
    return std::move(g_);
}

} // namespace

Graph load_anime4k(const std::filesystem::path& json) {
    const nlohmann::json root = parse_json_file(json);
    return Anime4kImporter(json, root).run();
}

} // namespace vkml::import
