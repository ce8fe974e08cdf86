// The Anime4K importer against the real @websr/websr weight files: graph structure, and outputs
// compared on a small random image with a transcription of websr's WGSL layers (the source of
// truth for what the JSON means), written independently of the importer.
#include "vkml/import/anime4k.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "import/ref_eval.hpp"
#include "import/test_paths.hpp"

using namespace vkml;
using namespace vkml::graph;
using vkml::test::Image;
namespace fs = std::filesystem;

namespace {

fs::path anime4k_dir() {
    return test::model_cache() / "websr" / "weights" / "anime4k";
}

// (K[m] * v)[o] for WGSL's column-major mat4x4f built from 16 floats per block.
float mat(const std::vector<float>& k, size_t m, int o, const float v[4]) {
    float s = 0;
    for (int c = 0; c < 4; ++c) s += k[m * 16 + static_cast<size_t>(c * 4 + o)] * v[c];
    return s;
}

// websr's networks, layer by layer as its WGSL shaders compute them (zero padding at the border,
// as the importer chooses; the shaders clamp).
Image websr_reference(const nlohmann::json& model, const Image& rgb) {
    std::map<std::string, Image> buf;
    Image rgba = Image::zeros(4, rgb.h, rgb.w);
    for (int64_t c = 0; c < 3; ++c)
        for (int64_t y = 0; y < rgb.h; ++y)
            for (int64_t x = 0; x < rgb.w; ++x) rgba.at(c, y, x) = rgb.get(c, y, x);
    for (int64_t y = 0; y < rgb.h; ++y)
        for (int64_t x = 0; x < rgb.w; ++x) rgba.at(3, y, x) = 1.f;
    auto pixel = [](const Image& im, int64_t y, int64_t x, float out[4], float sign) {
        for (int c = 0; c < 4; ++c) out[c] = std::max(sign * im.get(c, y, x), 0.f);
    };
    std::set<std::string> done;
    Image result;
    while (done.size() < model["layers"].size()) {
        for (const auto& [key, l] : model["layers"].items()) {
            if (done.count(key)) continue;
            std::vector<std::string> inputs = l["inputs"].get<std::vector<std::string>>(), features;
            bool ready = true;
            for (const auto& in : inputs) {
                if (in != "input_image") features.push_back(in);
                ready = ready && (in == "input_image" || buf.count(in));
            }
            if (!ready) continue;
            done.insert(key);
            if (l["type"] == "pixel_shuffle") {
                const Image up = test::upscale2_linear(rgb);
                result = up;
                for (int64_t c = 0; c < 3; ++c)
                    for (int64_t y = 0; y < up.h; ++y)
                        for (int64_t x = 0; x < up.w; ++x) {
                            const Image& b =
                                buf.at(features[features.size() == 1 ? 0 : static_cast<size_t>(c)]);
                            result.at(c, y, x) += b.get((x % 2) + 2 * (y % 2), y / 2, x / 2);
                        }
                continue;
            }
            const auto k = l["weights"].get<std::vector<float>>();
            const auto bias = l["bias"].get<std::vector<float>>();
            Image out = Image::zeros(4, rgb.h, rgb.w);
            for (int64_t y = 0; y < rgb.h; ++y)
                for (int64_t x = 0; x < rgb.w; ++x) {
                    float r[4] = {bias[0], bias[1], bias[2], bias[3]};
                    float p[4], q[4];
                    auto add = [&](size_t m, const float v[4]) {
                        for (int o = 0; o < 4; ++o) r[o] += mat(k, m, o, v);
                    };
                    for (size_t i = 0; i < 9; ++i) { // kernel_offsets: x-major
                        const int64_t dx = static_cast<int64_t>(i / 3) - 1,
                                      dy = static_cast<int64_t>(i % 3) - 1;
                        if (features.empty() && k.size() == 144) { // Anime4KConv3x4
                            for (int c = 0; c < 4; ++c) p[c] = rgba.get(c, y + dy, x + dx);
                            add(i, p);
                        } else if (features.size() == 1 && k.size() == 288) { // Anime4KConv8x4
                            pixel(buf.at(features[0]), y + dy, x + dx, p, 1);
                            pixel(buf.at(features[0]), y + dy, x + dx, q, -1);
                            add(i, p);
                            add(i + 9, q);
                        } else if (features.size() == 2 && k.size() == 576) { // Anime4KConv16x4
                            float p1[4], q1[4];
                            pixel(buf.at(features[0]), y + dy, x + dx, p, 1);
                            pixel(buf.at(features[1]), y + dy, x + dx, p1, 1);
                            pixel(buf.at(features[0]), y + dy, x + dx, q, -1);
                            pixel(buf.at(features[1]), y + dy, x + dx, q1, -1);
                            add(i, p);
                            add(i + 9, p1);
                            add(i + 18, q);
                            add(i + 27, q1);
                        }
                    }
                    if (features.size() == 7 && k.size() == 224) { // Anime4KConv56x4
                        for (size_t i = 0; i < 7; ++i) {
                            pixel(buf.at(features[i]), y, x, p, 1);
                            pixel(buf.at(features[i]), y, x, q, -1);
                            add(2 * i, p);
                            add(2 * i + 1, q);
                        }
                    } else if (features.size() == 14 && k.size() == 448) { // two Anime4KConv112x4 + Concat2
                        for (size_t i = 0; i < 7; ++i) {
                            pixel(buf.at(features[2 * i]), y, x, p, 1);
                            pixel(buf.at(features[2 * i]), y, x, q, -1);
                            add(4 * i, p);
                            add(4 * i + 2, q);
                            pixel(buf.at(features[2 * i + 1]), y, x, p, 1);
                            pixel(buf.at(features[2 * i + 1]), y, x, q, -1);
                            add(4 * i + 1, p);
                            add(4 * i + 3, q);
                        }
                    }
                    for (int o = 0; o < 4; ++o) out.at(o, y, x) = r[o];
                }
            if (l.value("output", key) == "MAIN") {
                result = rgb;
                for (int64_t c = 0; c < 3; ++c)
                    for (int64_t y = 0; y < rgb.h; ++y)
                        for (int64_t x = 0; x < rgb.w; ++x) result.at(c, y, x) += out.get(c, y, x);
            } else {
                buf[l.value("output", key)] = std::move(out);
            }
        }
    }
    return result;
}

} // namespace

TEST(Anime4k, WebsrNetworksMatchTheirShaders) {
    VKML_REQUIRE_PATH(anime4k_dir(), "run tools/fetch-models (or set VKML_MODELS)");
    const std::map<std::string, std::map<std::string, int>> expected_convs = {
        {"anime4k/cnn-2x-s", {{"Conv", 4}, {"DepthToSpace", 1}, {"Resize", 1}}},
        {"anime4k/cnn-2x-m", {{"Conv", 10}, {"DepthToSpace", 1}, {"Resize", 1}}},
        {"anime4k/cnn-2x-l", {{"Conv", 17}, {"DepthToSpace", 1}, {"Resize", 1}}},
        {"anime4k/cnn-restore-s", {{"Conv", 4}, {"Slice", 1}}},
        {"anime4k/cnn-restore-m", {{"Conv", 8}, {"Slice", 1}}},
        {"anime4k/cnn-restore-l", {{"Conv", 9}, {"Slice", 1}}},
    };
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    Image img = Image::zeros(3, 5, 7); // odd sizes, so a row/column mix-up shows
    for (float& f : img.v) f = u(rng);
    int files = 0;
    for (const auto& e : fs::directory_iterator(anime4k_dir())) {
        if (e.path().extension() != ".json") continue;
        ++files;
        const Graph g = import::load_anime4k(e.path());
        EXPECT_EQ(g.format, "anime4k");
        const auto hist = op_histogram(g);
        for (const auto& [op, n] : expected_convs.at(g.name))
            EXPECT_EQ(hist.at(op), n) << e.path() << " " << op;
        EXPECT_EQ(to_string(*g.value(g.inputs()[0]).shape), "[batch,3,height,width]");
        EXPECT_EQ(g.value(g.outputs()[0]).name, "output");

        std::ifstream f(e.path());
        const nlohmann::json model = nlohmann::json::parse(f);
        const Image want = websr_reference(model, img);
        const Image got = test::evaluate(g, img);
        ASSERT_EQ(got.c, want.c) << e.path();
        ASSERT_EQ(got.h, want.h);
        ASSERT_EQ(got.w, want.w);
        float worst = 0;
        for (size_t i = 0; i < got.v.size(); ++i) worst = std::max(worst, std::fabs(got.v[i] - want.v[i]));
        EXPECT_LT(worst, 1e-4f) << e.path();
    }
    EXPECT_EQ(files, 12);
}

TEST(Anime4k, BrokenFilesAreRejectedWithTheirName) {
    const fs::path src = anime4k_dir() / "cnn-2x-s-an.json";
    VKML_REQUIRE_PATH(src, "run tools/fetch-models (or set VKML_MODELS)");
    std::ifstream f(src);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const fs::path d = test::scratch_dir("anime4k");
    auto error_for = [&](const std::string& t) -> std::string {
        std::ofstream(d / "net.json", std::ios::trunc) << t;
        try {
            (void)import::load_anime4k(d / "net.json");
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    };
    for (size_t n = 0; n < text.size(); n += 211) {
        const std::string m = error_for(text.substr(0, n));
        ASSERT_NE(m.find("net.json"), std::string::npos) << n << ": " << m;
    }
    auto replaced = [&](const std::string& from, const std::string& to) {
        std::string t = text;
        t.replace(t.find(from), from.size(), to);
        return error_for(t);
    };
    EXPECT_NE(replaced("\"type\": \"conv\"", "\"type\": \"dense\"").find("dense"), std::string::npos);
    EXPECT_NE(replaced("\"inputs\": [\"conv2d_tf\"]", "\"inputs\": [\"nowhere\"]").find("'nowhere'"),
              std::string::npos);
    EXPECT_NE(replaced("\"bias\": [", "\"bias\": [1.0, ").find("bias"), std::string::npos);
    EXPECT_NE(replaced("\"weights\": [", "\"weights\": [1.0, ").find("weights"), std::string::npos);
}

// A number past a double ("1e999") made nlohmann's parser throw its out_of_range, which reached
// the tool as an "internal error" (found by tests/fuzz/anime4k_fuzz.cpp); it is invalid JSON
// naming the file, like any other syntax error. The same parser reads TF.js model.json files.
TEST(Anime4k, NumberOverflowIsInvalidJsonNamingTheFile) {
    const fs::path d = test::scratch_dir("anime4k-overflow");
    std::ofstream(d / "net.json", std::ios::trunc)
        << "{\"name\": \"x\", \"layers\": {\"a\": {\"bias\": [250e1250]}}}";
    try {
        (void)import::load_anime4k(d / "net.json");
        ADD_FAILURE() << "a number past a double was accepted";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << m;
        EXPECT_NE(m.find("net.json"), std::string::npos) << m;
        EXPECT_NE(m.find("invalid JSON"), std::string::npos) << m;
        EXPECT_NE(m.find("250e1250"), std::string::npos) << m;
    }
}
