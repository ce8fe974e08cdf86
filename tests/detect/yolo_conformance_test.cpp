// YOLO conformance: the YOLOv5n/YOLOv8n-architecture ONNX exports (seeded random weights, made by
// tools/models/yolo/make_yolo.py on the lent GPU) run by vkml against ONNX Runtime's outputs of the
// stored rows (f32 and f16 storage), and vkml's GPU decode + class-aware NMS against the reference
// NMS on ONNX Runtime's output (dets.json). Each case is skipped, naming the missing file, until
// assets/models/yolo is committed.
#include <gtest/gtest.h>
#include <stb_image.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "gpu_test.hpp"
#include "npy.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"
#include "vkml/passes/detector.hpp"

namespace vkml::test {
namespace {

namespace fs = std::filesystem;

const fs::path assets = VKML_YOLO_ASSETS;

struct Case {
    const char* model;
    const char* image;
};

class YoloConformance : public GpuTest, public ::testing::WithParamInterface<Case> {};

#define REQUIRE_ASSET(p)                                                                                     \
    do {                                                                                                     \
        if (!fs::exists(p))                                                                                  \
            GTEST_SKIP() << (p).string()                                                                     \
                         << " is missing (run tools/models/yolo/make_yolo.py on a machine "                  \
                            "with onnxruntime and commit assets/models/yolo)";                               \
    } while (0)

std::vector<float> load_png_planes(const fs::path& p, int& w, int& h) {
    int c = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> d(stbi_load(p.c_str(), &w, &h, &c, 3), stbi_image_free);
    if (!d) throw std::runtime_error(p.string() + ": cannot read");
    std::vector<float> v(size_t(w) * h * 3);
    const size_t plane = size_t(w) * h;
    for (size_t i = 0; i < plane; ++i)
        for (size_t k = 0; k < 3; ++k) v[k * plane + i] = d.get()[i * 3 + k] / 255.f;
    return v;
}

// ORT's stored rows vs vkml's rows of the same boxes: relative L2 error over all their channels.
TEST_P(YoloConformance, OutputsMatchOnnxRuntime) {
    const Case c = GetParam();
    const fs::path onnx = assets / (std::string(c.model) + ".onnx");
    const fs::path png = assets / "ref" / (std::string(c.image) + ".png");
    const fs::path rows_f = assets / "ref" / (std::string(c.model) + "_" + c.image + "_rows.npy");
    const fs::path out_f = assets / "ref" / (std::string(c.model) + "_" + c.image + "_out.npy");
    REQUIRE_ASSET(onnx);
    REQUIRE_ASSET(png);
    REQUIRE_ASSET(rows_f);
    REQUIRE_ASSET(out_f);
    int w = 0, h = 0;
    const auto x = load_png_planes(png, w, h);
    const auto rows = tool::read_npy(rows_f).to_floats();
    const graph::TensorData want = tool::read_npy(out_f);
    const auto ref = want.to_floats();
    ASSERT_EQ(want.dims().size(), 2u);
    const size_t channels = size_t(want.dims()[1]);
    ASSERT_EQ(rows.size(), size_t(want.dims()[0]));
    const bool v8 = std::string(c.model) == "yolov8n";
    const graph::Graph g = import::load_model(onnx);
    for (bool fp32 : {true, false}) {
        SessionOptions o;
        o.fp32 = fp32;
        o.input_shapes["images"] = {1, 3, h, w};
        Session s(dev(), g, o);
        const auto out =
            s.run(std::vector<graph::TensorData>{graph::TensorData::from_floats({1, 3, h, w}, x)});
        const auto got = out[0].to_floats();
        const auto& dims = out[0].dims();
        ASSERT_EQ(dims.size(), 3u);
        const size_t n = size_t(v8 ? dims[2] : dims[1]);
        ASSERT_EQ(size_t(v8 ? dims[1] : dims[2]), channels);
        double num = 0, den = 0, worst = 0;
        for (size_t r = 0; r < rows.size(); ++r) {
            const size_t row = size_t(rows[r]);
            ASSERT_LT(row, n);
            for (size_t k = 0; k < channels; ++k) {
                const double g_v = v8 ? got[k * n + row] : got[row * channels + k];
                const double d = g_v - ref[r * channels + k];
                num += d * d;
                den += double(ref[r * channels + k]) * ref[r * channels + k];
                worst = std::max(worst, std::fabs(d));
            }
        }
        const double rel = std::sqrt(num / den);
        std::printf("%s %s %s: relative L2 %.3g, max |diff| %.3g over %zu rows x %zu channels\n", c.model,
                    c.image, fp32 ? "f32" : "f16", rel, worst, rows.size(), channels);
        EXPECT_LT(rel, fp32 ? 1e-4 : 2e-2) << c.model << " " << c.image << (fp32 ? " f32" : " f16");
    }
}

// The detector (f32, letterbox of a 640x640 image is the identity) against dets.json.
TEST_P(YoloConformance, DetectionsMatchReferenceNms) {
    const Case c = GetParam();
    const fs::path onnx = assets / (std::string(c.model) + ".onnx");
    const fs::path png = assets / "ref" / (std::string(c.image) + ".png");
    const fs::path dets_f = assets / "ref" / (std::string(c.model) + "_" + c.image + "_dets.json");
    REQUIRE_ASSET(onnx);
    REQUIRE_ASSET(png);
    REQUIRE_ASSET(dets_f);
    std::ifstream f(dets_f);
    const nlohmann::json ref = nlohmann::json::parse(f);
    passes::Detector det(dev(), {.model = onnx.string(),
                                 .score_threshold = ref["score_threshold"].get<float>(),
                                 .iou_threshold = ref["iou_threshold"].get<float>(),
                                 .max_detections = ref["max_detections"].get<uint32_t>(),
                                 .fp32 = true});
    EXPECT_EQ(det.format(), std::string(c.model) == "yolov8n" ? passes::DetectorFormat::YoloV8
                                                              : passes::DetectorFormat::YoloV5);
    int w = 0, h = 0, ch = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load(png.c_str(), &w, &h, &ch, 3), stbi_image_free);
    ASSERT_TRUE(px);
    const auto got = det.detect({px.get(), uint32_t(w), uint32_t(h), 3, 0});
    const auto& want = ref["detections"];
    std::printf("%s %s: %zu detections (reference %zu)\n", c.model, c.image, got.size(), want.size());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        const auto& r = want[i];
        EXPECT_EQ(got[i].class_id, r["class"].get<int>()) << "detection " << i;
        EXPECT_NEAR(got[i].score, r["score"].get<double>(), 1e-4 + 1e-4 * r["score"].get<double>()) << i;
        for (int k = 0; k < 4; ++k) {
            const double v = k == 0 ? got[i].x0 : k == 1 ? got[i].y0 : k == 2 ? got[i].x1 : got[i].y1;
            // Reference boxes are not clipped; vkml's are clipped to the image.
            const double lim = (k % 2 == 0) ? w : h;
            EXPECT_NEAR(v, std::clamp(r["box"][size_t(k)].get<double>(), 0.0, lim), 0.05)
                << i << " coord " << k;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Models, YoloConformance,
                         ::testing::Values(Case{"yolov5n", "dog"}, Case{"yolov5n", "horses"},
                                           Case{"yolov5n", "person"}, Case{"yolov5n", "kite"},
                                           Case{"yolov8n", "dog"}, Case{"yolov8n", "horses"},
                                           Case{"yolov8n", "person"}, Case{"yolov8n", "kite"}),
                         [](const auto& param_info) {
                             return std::string(param_info.param.model) + "_" + param_info.param.image;
                         });

} // namespace
} // namespace vkml::test
