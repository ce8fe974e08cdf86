// The TF.js layers-model importer: generated fixtures for every weight encoding and the layout
// conversion, the real @upscalerjs ESRGAN packages (from tools/fetch-models), and corrupted copies.
#include "vkml/import/tfjs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>

#include "import/png_reader.hpp"
#include "import/ref_eval.hpp"
#include "import/test_paths.hpp"

using namespace vkml;
using namespace vkml::graph;
namespace fs = std::filesystem;

namespace {

const Node& node_named(const Graph& g, const std::string& name) {
    for (const Node& n : g.nodes())
        if (n.name == name) return n;
    throw std::runtime_error("no node " + name);
}

const TensorData& constant(const Graph& g, const std::string& name) {
    const Value& v = g.value(g.id(name));
    if (!v.data) throw std::runtime_error(name + " is not constant");
    return *v.data;
}

std::string text_of(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

void write_text(const fs::path& p, const std::string& s) {
    std::ofstream(p, std::ios::trunc) << s;
}

// Copies a model directory into a scratch directory for corrupting.
fs::path copy_model(const fs::path& dir, const std::string& name) {
    const fs::path d = test::scratch_dir(name);
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file()) fs::copy_file(e.path(), d / e.path().filename());
    return d;
}

template <class F>
std::string error_of(F f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

int64_t parameter_count(const Graph& g) {
    int64_t n = 0;
    for (ValueId v : g.constants()) n += g.value(v).data->elements();
    return n;
}

} // namespace

TEST(TfjsLayers, SmallFixtureTranslatesEveryLayer) {
    const Graph g = import::load_tfjs_layers(test::fixture("tfjs_small/model.json"));
    EXPECT_EQ(g.format, "tfjs-layers");
    EXPECT_EQ(g.name, "small");
    EXPECT_EQ(g.opset_version(), 17);
    const std::map<std::string, int> expected = {{"Add", 1},          {"BatchNormalization", 1},
                                                 {"Concat", 1},       {"Conv", 2},
                                                 {"DepthToSpace", 1}, {"LeakyRelu", 1},
                                                 {"Mul", 1},          {"Relu", 1},
                                                 {"Resize", 1},       {"Sigmoid", 1}};
    EXPECT_EQ(op_histogram(g), expected) << dump(g);
    ASSERT_EQ(g.inputs().size(), 1u);
    EXPECT_EQ(g.value(g.inputs()[0]).name, "img");
    EXPECT_EQ(to_string(*g.value(g.inputs()[0]).shape), "[batch,2,height,width]"); // NHWC declared, NCHW kept
    ASSERT_EQ(g.outputs().size(), 1u);
    EXPECT_EQ(g.value(g.outputs()[0]).name, "shuffle");

    // Conv2D 'same' with stride 1 becomes explicit pads; the activation is a separate node that
    // carries the layer's name.
    const Node& conv = node_named(g, "conv_q/conv");
    EXPECT_EQ(conv.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
    EXPECT_EQ(conv.get_ints("kernel_shape"), (std::vector<int64_t>{3, 3}));
    EXPECT_EQ(node_named(g, "conv_q").op_type, "Relu");
    EXPECT_EQ(node_named(g, "conv_h/conv").get_ints("pads"), (std::vector<int64_t>{0, 0, 0, 0}));
    EXPECT_EQ(node_named(g, "cat").get_int("axis", -1), 1); // Keras axis -1 (channels) is NCHW axis 1
    EXPECT_FLOAT_EQ(node_named(g, "lrelu").get_float("alpha", 0), 0.1f);
    EXPECT_EQ(node_named(g, "shuffle").get_string("mode", ""), "DCR");
    EXPECT_EQ(node_named(g, "shuffle").get_int("blocksize", 0), 2);
    EXPECT_EQ(node_named(g, "up").get_string("nearest_mode", ""), "floor");
    EXPECT_EQ(constant(g, "up/scales").to_floats(), (std::vector<float>{1, 1, 2, 2}));
    EXPECT_FLOAT_EQ(constant(g, "beta/beta").to_floats()[0], 0.2f);

    // uint8 quantized kernel: value = min + scale * q, transposed from [kh,kw,in,out] to [out,in,kh,kw].
    const TensorData& kq = constant(g, "conv_q/kernel");
    ASSERT_EQ(kq.dims(), (std::vector<int64_t>{4, 2, 3, 3}));
    const auto kqv = kq.to_floats();
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 3; ++x)
            for (int i = 0; i < 2; ++i)
                for (int o = 0; o < 4; ++o) {
                    const int flat = ((y * 3 + x) * 2 + i) * 4 + o;
                    const float want = -1.f + static_cast<float>((flat * 37) % 256) / 128.f;
                    ASSERT_FLOAT_EQ(kqv[((o * 2 + i) * 3 + y) * 3 + x], want) << y << x << i << o;
                }
    // float16 kernel (straddling the two shards).
    const auto kh = constant(g, "conv_h/kernel").to_floats();
    ASSERT_EQ(constant(g, "conv_h/kernel").dims(), (std::vector<int64_t>{4, 6, 1, 1}));
    for (int i = 0; i < 6; ++i)
        for (int o = 0; o < 4; ++o) ASSERT_FLOAT_EQ(kh[o * 6 + i], static_cast<float>(i * 4 + o - 12) / 16.f);
    EXPECT_EQ(constant(g, "conv_h/bias").to_floats(), (std::vector<float>{0.f, 0.25f, 0.5f, 0.75f}));
    // uint16 quantized.
    EXPECT_EQ(constant(g, "bn/gamma").to_floats(),
              (std::vector<float>{0.5f, 0.75f, 1.f, 0.5f + 0.25f * 65535.f}));
    EXPECT_FLOAT_EQ(node_named(g, "bn").get_float("epsilon", 0), 0.001f);
}

TEST(TfjsLayers, SequentialFlattenKeepsKerasOrder) {
    const Graph g = import::load_tfjs_layers(test::fixture("tfjs_sequential/model.json"));
    std::vector<std::string> ops;
    for (const Node& n : g.nodes()) ops.push_back(n.op_type);
    EXPECT_EQ(
        ops, (std::vector<std::string>{"Conv", "Clip", "MaxPool", "Transpose", "Flatten", "Gemm", "Softmax"}))
        << dump(g);
    EXPECT_EQ(g.value(g.inputs()[0]).name, "c_input");
    EXPECT_EQ(to_string(*g.value(g.inputs()[0]).shape), "[batch,1,6,6]");
    EXPECT_EQ(node_named(g, "f/nhwc").get_ints("perm"), (std::vector<int64_t>{0, 2, 3, 1}));
    EXPECT_EQ(node_named(g, "fc").get_int("axis", 0), 1);
    EXPECT_EQ(constant(g, "fc/kernel").dims(), (std::vector<int64_t>{8, 3})); // Gemm reads [in, out] as is
}

namespace {

struct Esrgan {
    const char* package;
    const char* scale;
    std::map<std::string, int> ops;
};

fs::path esrgan_model(const std::string& package, const std::string& scale) {
    return test::model_cache() / package / "models" / scale / "model.json";
}

} // namespace

TEST(TfjsLayers, UpscalerjsEsrganPackages) {
    const Esrgan cases[] = {
        {"esrgan-slim", "x2", {{"Add", 3}, {"Concat", 3}, {"Conv", 12}, {"Relu", 4}, {"Resize", 1}}},
        {"esrgan-slim", "x4", {{"Add", 3}, {"Concat", 3}, {"Conv", 12}, {"Relu", 4}, {"Resize", 1}}},
        {"esrgan-medium", "x2", {{"Add", 11}, {"Concat", 11}, {"Conv", 28}, {"Relu", 12}, {"Resize", 1}}},
        {"esrgan-medium", "x3", {{"Add", 11}, {"Concat", 11}, {"Conv", 28}, {"Relu", 12}, {"Resize", 1}}},
    };
    for (const Esrgan& c : cases) {
        const fs::path p = esrgan_model(c.package, c.scale);
        VKML_REQUIRE_PATH(p, "run tools/fetch-models (or set VKML_MODELS)");
        const Graph g = import::load_tfjs_layers(p);
        EXPECT_EQ(op_histogram(g), c.ops) << p;
        EXPECT_EQ(to_string(*g.value(g.inputs()[0]).shape), "[batch,3,height,width]");
        EXPECT_EQ(g.value(g.outputs()[0]).name, "SR");
        // Every weight in the shard became a constant (float32 weights: shard bytes / 4), plus the
        // Resize scales.
        int64_t shard_bytes = 0;
        for (const auto& e : fs::directory_iterator(p.parent_path()))
            if (e.path().extension() == ".bin") shard_bytes += static_cast<int64_t>(fs::file_size(e.path()));
        EXPECT_EQ(parameter_count(g), shard_bytes / 4 + 4) << p;
        const Node& up = node_named(g, "UPsample");
        const int s = c.scale[1] - '0';
        EXPECT_EQ(constant(g, g.value(up.inputs[2]).name).to_floats(),
                  (std::vector<float>{1, 1, static_cast<float>(s), static_cast<float>(s)}));
        EXPECT_EQ(constant(g, "UPN1/kernel").dims(), (std::vector<int64_t>{64, 64, 5, 5}));
        EXPECT_EQ(node_named(g, "UPN1").get_ints("pads"), (std::vector<int64_t>{2, 2, 2, 2})); // 5x5 same
        EXPECT_EQ(constant(g, "SR/kernel").dims(), (std::vector<int64_t>{3, 3 * s * s, 3, 3}));
        EXPECT_EQ(node_named(g, "SR").op_type, "Conv"); // linear activation: no extra node
    }
}

TEST(TfjsLayers, UpscalerjsEsrganThickCustomLayers) {
    const fs::path p = esrgan_model("esrgan-thick", "x2");
    VKML_REQUIRE_PATH(p, "run tools/fetch-models (or set VKML_MODELS)");
    const Graph g = import::load_tfjs_layers(p);
    const std::map<std::string, int> expected = {{"Add", 41},         {"Concat", 120}, {"Conv", 154},
                                                 {"DepthToSpace", 1}, {"Mul", 40},     {"Relu", 120}};
    EXPECT_EQ(op_histogram(g), expected);
    const Node& shuffle = node_named(g, "pixel_shuffle");
    EXPECT_EQ(shuffle.get_int("blocksize", 0), 2);
    EXPECT_EQ(shuffle.get_string("mode", ""), "DCR");
    EXPECT_FLOAT_EQ(constant(g, g.value(node_named(g, "multiply_beta").inputs[1]).name).to_floats()[0], 0.2f);
}

TEST(TfjsLayers, CorruptedModelJsonIsRejectedWithItsName) {
    const fs::path dir = copy_model(test::fixture("tfjs_small"), "tfjs-json");
    const std::string json = text_of(dir / "model.json");
    int rejected = 0;
    for (size_t n = 0; n < json.size(); n += 13) {
        write_text(dir / "model.json", json.substr(0, n));
        const std::string m = error_of([&] { (void)import::load_tfjs_layers(dir / "model.json"); });
        ASSERT_NE(m.find("model.json"), std::string::npos) << "cut at " << n << ": " << m;
        ++rejected;
    }
    EXPECT_GT(rejected, 200);
    // Flipped characters: accepted or rejected, never a crash or a foreign exception.
    for (size_t i = 0; i < json.size(); i += 7) {
        std::string bad = json;
        bad[i] = static_cast<char>(bad[i] ^ 0x21);
        write_text(dir / "model.json", bad);
        try {
            (void)import::load_tfjs_layers(dir / "model.json");
        } catch (const Error& e) {
            ASSERT_NE(std::string(e.what()).find("model.json"), std::string::npos) << e.what();
        }
    }
    write_text(dir / "model.json", "{\"modelTopology\": {\n  \"model_config\": [1, 2,]}}");
    const std::string syntax = error_of([&] { (void)import::load_tfjs_layers(dir / "model.json"); });
    EXPECT_NE(syntax.find("line 2"), std::string::npos) << syntax;
}

TEST(TfjsLayers, BrokenShardsAndManifests) {
    const fs::path src = test::fixture("tfjs_small");
    const std::string json = text_of(src / "model.json");
    auto fresh = [&](const char* name) { return copy_model(src, name); };
    {
        const fs::path d = fresh("tfjs-short-shard");
        auto bytes = test::read_bytes(d / "group1-shard2of2.bin");
        bytes.pop_back();
        test::write_bytes(d / "group1-shard2of2.bin", bytes);
        const std::string m = error_of([&] { (void)import::load_tfjs_layers(d / "model.json"); });
        EXPECT_NE(m.find("model.json"), std::string::npos) << m;
        EXPECT_NE(m.find("group1-shard2of2.bin"), std::string::npos) << m;
        EXPECT_NE(m.find("bn/moving_variance"), std::string::npos) << m; // the last weight runs short
    }
    {
        const fs::path d = fresh("tfjs-long-shard");
        auto bytes = test::read_bytes(d / "group1-shard2of2.bin");
        bytes.push_back(std::byte{0});
        test::write_bytes(d / "group1-shard2of2.bin", bytes);
        EXPECT_NE(error_of([&] {
                      (void)import::load_tfjs_layers(d / "model.json");
                  }).find("wrong or corrupted shard"),
                  std::string::npos);
    }
    {
        const fs::path d = fresh("tfjs-missing-shard");
        fs::remove(d / "group1-shard1of2.bin");
        const std::string m = error_of([&] { (void)import::load_tfjs_layers(d / "model.json"); });
        EXPECT_NE(m.find("group1-shard1of2.bin"), std::string::npos) << m;
    }
    auto with = [&](const char* name, const std::string& from, const std::string& to) {
        const fs::path d = fresh(name);
        std::string j = json;
        const auto at = j.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        j.replace(at, from.size(), to);
        write_text(d / "model.json", j);
        return error_of([&] { (void)import::load_tfjs_layers(d / "model.json"); });
    };
    EXPECT_NE(with("tfjs-shape", "\"shape\": [4]", "\"shape\": [5]").find("model.json"), std::string::npos);
    EXPECT_NE(with("tfjs-escape", "group1-shard1of2.bin", "../group1-shard1of2.bin").find("outside"),
              std::string::npos);
    EXPECT_NE(with("tfjs-class", "\"MultiplyBeta\"", "\"Lambda\"").find("layer 'beta' (Lambda)"),
              std::string::npos);
    EXPECT_NE(with("tfjs-missing-weight", "conv_h/bias", "conv_h/bias_renamed").find("'conv_h/bias'"),
              std::string::npos);
    EXPECT_NE(with("tfjs-dangling", "[\"bn\", 0, 0, {}]", "[\"nothing\", 0, 0, {}]").find("'nothing'"),
              std::string::npos);
    EXPECT_NE(with("tfjs-quant", "\"uint16\"", "\"int4\"").find("int4"), std::string::npos);
    EXPECT_NE(with("tfjs-filters", "\"filters\": 4", "\"filters\": \"4\"").find("expected an integer"),
              std::string::npos);
}

TEST(TfjsLayers, TruncatedRealShardIsRejected) {
    const fs::path p = esrgan_model("esrgan-slim", "x2");
    VKML_REQUIRE_PATH(p, "run tools/fetch-models (or set VKML_MODELS)");
    const fs::path d = copy_model(p.parent_path(), "slim-cut");
    auto bytes = test::read_bytes(d / "group1-shard1of1.bin");
    for (size_t keep : {size_t{0}, size_t{1000}, bytes.size() / 2, bytes.size() - 4}) {
        test::write_bytes(d / "group1-shard1of1.bin",
                          std::vector<std::byte>(bytes.begin(), bytes.begin() + keep));
        const std::string m = error_of([&] { (void)import::load_tfjs_layers(d / "model.json"); });
        EXPECT_NE(m.find("group1-shard1of1.bin"), std::string::npos) << m;
    }
}

// The translated esrgan-slim x2, run by the naive CPU evaluator on a crop of the package's own
// fixture.png, reproduces the package's assets/samples/2x/result.png there: the layout
// conversion, weight transposes, padding and upsampling are exact. (Only the crop's centre is
// compared: its border sees zero padding where the full image has pixels; the receptive field
// of the network reaches 9 input pixels.)
TEST(TfjsLayers, EsrganSlimReproducesThePackageGoldenImage) {
    const fs::path root = test::model_cache() / "esrgan-slim";
    VKML_REQUIRE_PATH(root / "assets/samples/2x/result.png", "run tools/fetch-models (or set VKML_MODELS)");
    const Graph g = import::load_tfjs_layers(root / "models/x2/model.json");
    const test::Image fixture = test::read_png_rgb(root / "assets/fixture.png");
    const test::Image golden = test::read_png_rgb(root / "assets/samples/2x/result.png");
    ASSERT_EQ(golden.w, 2 * fixture.w);
    const int64_t y0 = 40, x0 = 52, size = 36, margin = 10;
    const test::Image out = test::evaluate(g, test::crop(fixture, y0, x0, size, size)); // inputs 0..255
    ASSERT_EQ(out.h, 2 * size);
    double squared = 0;
    int64_t n = 0;
    float worst = 0;
    for (int64_t c = 0; c < 3; ++c)
        for (int64_t y = 2 * margin; y < 2 * (size - margin); ++y)
            for (int64_t x = 2 * margin; x < 2 * (size - margin); ++x) {
                const float v = std::round(std::clamp(out.get(c, y, x), 0.f, 255.f));
                const float d = v - golden.get(c, 2 * y0 + y, 2 * x0 + x);
                squared += static_cast<double>(d) * d;
                worst = std::max(worst, std::fabs(d));
                ++n;
            }
    const double psnr = 10 * std::log10(255.0 * 255.0 / std::max(squared / static_cast<double>(n), 1e-12));
    std::printf("esrgan-slim x2 on a %lldx%lld crop: PSNR %.1f dB against the package's result.png\n",
                static_cast<long long>(size), static_cast<long long>(size), psnr);
    EXPECT_GE(psnr, 60.0) << "worst difference " << worst;
    EXPECT_LE(worst, 1.f);
}

// The layers the upscalerjs models do not use, translated from a model written by the test.
TEST(TfjsLayers, MoreLayerTypes) {
    const fs::path d = test::scratch_dir("tfjs-more");
    std::vector<float> w;
    for (int i = 0; i < 18; ++i) w.push_back(static_cast<float>(i));        // dw/depthwise_kernel [3,3,2,1]
    for (float v : {0.5f, -0.5f}) w.push_back(v);                           // dw/bias
    for (int i = 0; i < 6; ++i) w.push_back(0.25f * static_cast<float>(i)); // dense/kernel [2,3]
    for (float v : {1.f, 2.f, 3.f}) w.push_back(v);                         // dense/bias
    for (float v : {0.1f, 0.2f, 0.3f}) w.push_back(v);                      // prelu/alpha [1,1,3]
    std::vector<std::byte> bytes(w.size() * 4);
    std::memcpy(bytes.data(), w.data(), bytes.size());
    test::write_bytes(d / "w.bin", bytes);
    auto layer = [](const std::string& cls, const std::string& name, const std::string& cfg,
                    const std::string& from) {
        return R"({"class_name": ")" + cls + R"(", "name": ")" + name + R"(", "config": {"name": ")" + name +
               "\"" + cfg + R"(}, "inbound_nodes": [[[")" + from + R"(", 0, 0, {}]]]})";
    };
    const std::string json =
        R"({"format": "layers-model", "modelTopology": {"model_config": {"class_name": "Model", "config": {"name": "more", "layers": [
        {"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 4, 4, 2]}, "inbound_nodes": []},)" +
        layer("ZeroPadding2D", "pad", R"(, "padding": [[1, 0], [0, 1]])", "in") + "," +
        layer("DepthwiseConv2D", "dw",
              R"(, "kernel_size": [3, 3], "depth_multiplier": 1, "padding": "valid", "activation": "swish")",
              "pad") +
        "," + layer("Dense", "dense", R"(, "units": 3, "activation": "linear")", "dw") + "," +
        layer("PReLU", "prelu", R"(, "shared_axes": [1, 2])", "dense") + "," +
        layer("GlobalAveragePooling2D", "gap", "", "prelu") + "," +
        layer("Reshape", "resh", R"(, "target_shape": [1, 1, 3])", "gap") +
        R"(], "input_layers": [["in", 0, 0]], "output_layers": [["resh", 0, 0]]}}},
        "weightsManifest": [{"paths": ["w.bin"], "weights": [
          {"name": "dw/depthwise_kernel", "shape": [3, 3, 2, 1], "dtype": "float32"},
          {"name": "dw/bias", "shape": [2], "dtype": "float32"},
          {"name": "dense/kernel", "shape": [2, 3], "dtype": "float32"},
          {"name": "dense/bias", "shape": [3], "dtype": "float32"},
          {"name": "prelu/alpha", "shape": [1, 1, 3], "dtype": "float32"}]}]})";
    write_text(d / "model.json", json);
    const Graph g = import::load_tfjs_layers(d / "model.json");
    std::vector<std::string> ops;
    for (const Node& n : g.nodes()) ops.push_back(n.op_type);
    EXPECT_EQ(ops, (std::vector<std::string>{"Pad", "Conv", "Sigmoid", "Mul", "Transpose", "MatMul", "Add",
                                             "Transpose", "PRelu", "GlobalAveragePool", "Flatten", "Reshape",
                                             "Transpose"}))
        << dump(g);
    EXPECT_EQ(constant(g, "pad/pads").to_int64s(), (std::vector<int64_t>{0, 0, 1, 0, 0, 0, 0, 1}));
    const Node& dw = node_named(g, "dw/conv");
    EXPECT_EQ(dw.get_int("group", 0), 2);
    const auto k = constant(g, "dw/depthwise_kernel").to_floats(); // [3,3,2,1] -> [2,1,3,3]
    ASSERT_EQ(constant(g, "dw/depthwise_kernel").dims(), (std::vector<int64_t>{2, 1, 3, 3}));
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 3; ++x)
            for (int c = 0; c < 2; ++c)
                EXPECT_EQ(k[static_cast<size_t>((c * 3 + y) * 3 + x)],
                          static_cast<float>((y * 3 + x) * 2 + c));
    EXPECT_EQ(node_named(g, "dense/nhwc").get_ints("perm"), (std::vector<int64_t>{0, 2, 3, 1}));
    EXPECT_EQ(node_named(g, "dense").get_ints("perm"), (std::vector<int64_t>{0, 3, 1, 2}));
    EXPECT_EQ(constant(g, "prelu/alpha").dims(), (std::vector<int64_t>{3, 1, 1})); // [H,W,C] -> [C,H,W]
    EXPECT_EQ(constant(g, "resh/shape").to_int64s(), (std::vector<int64_t>{0, 1, 1, 3}));
    EXPECT_EQ(g.value(g.outputs()[0]).name, "resh");
}
