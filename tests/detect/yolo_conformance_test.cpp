// YOLO conformance: the YOLOv5n/YOLOv8n-architecture ONNX exports (seeded random weights, made by
// tools/models/yolo/make_yolo.py on the lent GPU) run by vkml against ONNX Runtime's outputs of the
// stored rows (f32 and f16 storage), and vkml's GPU decode + class-aware NMS against the reference
// NMS on ONNX Runtime's output (dets.json). The files are committed in assets/models/yolo: a missing
// one is a failure naming it (CI must never skip this silently).
//
// Cost on lavapipe is the 640x640 inference (seconds each): one storage type per raw-output case,
// and sessions/detectors are shared by the cases of one process (a plain run of the binary; CTest
// runs each case as a process of its own).
#include <gtest/gtest.h>
#include <stb_image.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

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
    bool fp32 = true; // OutputsMatchOnnxRuntime: the storage type compared
};
// Without it CTest's names carry the parameter's pointer bytes, which change from build to build.
[[maybe_unused]] void PrintTo(const Case& c, std::ostream* os) {
    *os << c.model << "/" << c.image << "/" << (c.fp32 ? "f32" : "f16");
}

const char* const models[] = {"yolov5n", "yolov8n"};
const char* const images[] = {"dog", "horses", "person", "kite"};

#define REQUIRE_ASSET(p)                                                                                     \
    ASSERT_TRUE(fs::exists(p)) << (p).string()                                                               \
                               << " is missing (assets/models/yolo is committed; regenerate it with "        \
                                  "tools/models/yolo/run_on_gpu.sh, see tools/models/yolo/README.md)"

// Every committed file, listed in one failure (the per-case tests also fail on their own files).
TEST(YoloAssets, AllCommitted) {
    std::vector<fs::path> want = {assets / "LICENSE.md", assets / "ref" / "README.md",
                                  assets / "ref" / "manifest.json"};
    for (const char* m : models) {
        want.push_back(assets / (std::string(m) + ".onnx"));
        for (const char* i : images)
            for (const char* suffix : {"_rows.npy", "_out.npy", "_dets.json"})
                want.push_back(assets / "ref" / (std::string(m) + "_" + i + suffix));
    }
    for (const char* i : images) want.push_back(assets / "ref" / (std::string(i) + ".png"));
    std::string missing;
    for (const auto& p : want)
        if (!fs::exists(p)) missing += "\n  " + p.string();
    EXPECT_TRUE(missing.empty()) << "missing from assets/models/yolo:" << missing;
}

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

class YoloConformance : public GpuTest, public ::testing::WithParamInterface<Case> {
protected:
    // Per model: its graph, a 640x640 Session per storage type and a Detector, built on first use
    // and shared by the photos; released before the shared device goes.
    struct ModelRuns {
        std::unique_ptr<graph::Graph> graph;
        std::map<bool, std::unique_ptr<Session>> sessions; // by fp32
        std::unique_ptr<passes::Detector> detector;
    };
    static ModelRuns& runs(const std::string& model) { return cache_[model]; }
    static const graph::Graph& graph_of(const std::string& model, const fs::path& onnx) {
        ModelRuns& r = runs(model);
        if (!r.graph) r.graph = std::make_unique<graph::Graph>(import::load_model(onnx));
        return *r.graph;
    }
    static Session& session(const std::string& model, const fs::path& onnx, bool fp32) {
        ModelRuns& r = runs(model);
        auto& s = r.sessions[fp32];
        if (!s) {
            SessionOptions o;
            o.fp32 = fp32;
            o.input_shapes["images"] = {1, 3, 640, 640};
            s = std::make_unique<Session>(device(), graph_of(model, onnx), o);
        }
        return *s;
    }
    static void TearDownTestSuite() { cache_.clear(); }
    static inline std::map<std::string, ModelRuns> cache_;
};

// Every photo's detections (f32), through vkml's decode and GPU NMS.
class YoloDetections : public YoloConformance {};

// The bounds, from the measurements printed below (lavapipe, f32 and f16 storage) with headroom
// for other devices' FMA contraction, reduction order and transcendental precision:
//  - rel L2: ||vkml - ORT|| / ||ORT|| over all stored rows and channels;
//  - boxes (cx, cy, w, h in input pixels): max |diff| / max(|ORT|, 8 px), i.e. relative to the
//    coordinate's magnitude (an f16 number near 640 is only stored to 0.25..0.5 px), and never
//    finer than the finest grid stride (8 px: v5's w/h = (2 sigmoid)^2 * anchor can be a fraction
//    of a pixel, where any logit error is a large relative one);
//  - scores (v5 objectness and class probabilities, v8 class probabilities, all sigmoids in 0..1):
//    max |diff|.
struct Tolerance {
    double rel_l2, box_rel, score_abs;
};
// These random-weight nets are ill-conditioned: ORT and torch, both f32, differ by up to 0.125 px
// (v5) / 0.011 (v8) on the full outputs (ref/manifest.json). Measured on lavapipe (4 cases each):
// f32: rel L2 1.7e-6..1.2e-5, boxes 8.7e-5..5.2e-4, scores 3e-5..8e-5.
constexpr Tolerance tol_f32{1e-4, 2e-3, 5e-4};
// f16 storage rounds every activation to 11 significant bits (2^13 times f32's unit roundoff).
// Measured: rel L2 2.6e-3..1.4e-2, boxes 0.15..0.44, scores 0.056..0.133, the same ~1200..1500 times
// the f32 error of the same case for every model and photo (an f16-specific bug would break that
// ratio; keeping single op types such as Sigmoid or Softmax in f32 does not change the error, so
// it is the activations' storage, accumulated through ~60 layers). rel L2 is the check with teeth;
// the max bounds catch a wrong or garbage channel.
constexpr Tolerance tol_f16{3e-2, 0.6, 0.25};

// ORT's stored rows vs vkml's rows of the same boxes, in f32 and in f16 storage.
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
    ASSERT_EQ(w, 640) << png;
    ASSERT_EQ(h, 640) << png;
    const auto rows = tool::read_npy(rows_f).to_floats();
    const graph::TensorData want = tool::read_npy(out_f);
    const auto ref = want.to_floats();
    ASSERT_EQ(want.dims().size(), 2u);
    const size_t channels = size_t(want.dims()[1]);
    ASSERT_EQ(rows.size(), size_t(want.dims()[0]));
    const bool v8 = std::string(c.model) == "yolov8n";
    ASSERT_EQ(channels, v8 ? 84u : 85u) << out_f;
    const bool fp32 = c.fp32;
    {
        if (!fp32 && !dev().caps().storage16)
            FAIL() << "the device has no 16-bit storage: the f16 comparison cannot run";
        Session& s = session(c.model, onnx, fp32);
        const auto out =
            s.run(std::vector<graph::TensorData>{graph::TensorData::from_floats({1, 3, h, w}, x)});
        const auto got = out[0].to_floats();
        const auto& dims = out[0].dims();
        ASSERT_EQ(dims.size(), 3u);
        const size_t n = size_t(v8 ? dims[2] : dims[1]);
        ASSERT_EQ(size_t(v8 ? dims[1] : dims[2]), channels);
        double num = 0, den = 0, box_rel = 0, score_abs = 0;
        size_t worst_row = 0, worst_ch = 0;
        std::pair<double, double> box_pair, score_pair; // (ORT, vkml) at the worst box / score
        for (size_t r = 0; r < rows.size(); ++r) {
            const size_t row = size_t(rows[r]);
            ASSERT_LT(row, n);
            for (size_t k = 0; k < channels; ++k) {
                const double g_v = v8 ? got[k * n + row] : got[row * channels + k];
                const double want_v = ref[r * channels + k];
                const double d = std::fabs(g_v - want_v);
                num += d * d;
                den += want_v * want_v;
                if (k < 4) {
                    const double e = d / std::max(std::fabs(want_v), 8.0);
                    if (e > box_rel) box_rel = e, worst_row = row, worst_ch = k, box_pair = {want_v, g_v};
                } else if (d > score_abs) {
                    score_abs = d, score_pair = {want_v, g_v};
                }
            }
        }
        const double rel = std::sqrt(num / den);
        const Tolerance& t = fp32 ? tol_f32 : tol_f16;
        std::printf("[yolo] %s %-6s %s: rel L2 %.3g (bound %.0e), boxes max |d|/max(|ref|,8) %.3g (bound "
                    "%.0e; row %zu "
                    "ch %zu: ORT %.4g vkml %.4g), scores max |d| %.3g (bound %.0e; ORT %.4g vkml %.4g); "
                    "%zu rows x %zu channels\n",
                    c.model, c.image, fp32 ? "f32" : "f16", rel, t.rel_l2, box_rel, t.box_rel, worst_row,
                    worst_ch, box_pair.first, box_pair.second, score_abs, t.score_abs, score_pair.first,
                    score_pair.second, rows.size(), channels);
        const char* tag = fp32 ? " f32" : " f16";
        EXPECT_LT(rel, t.rel_l2) << c.model << " " << c.image << tag << ": relative L2";
        EXPECT_LT(box_rel, t.box_rel) << c.model << " " << c.image << tag << ": box channels";
        EXPECT_LT(score_abs, t.score_abs) << c.model << " " << c.image << tag << ": score channels";
    }
}

// The detector (f32, letterbox of a 640x640 image is the identity) against dets.json.
TEST_P(YoloDetections, MatchReferenceNms) {
    const Case c = GetParam();
    const fs::path onnx = assets / (std::string(c.model) + ".onnx");
    const fs::path png = assets / "ref" / (std::string(c.image) + ".png");
    const fs::path dets_f = assets / "ref" / (std::string(c.model) + "_" + c.image + "_dets.json");
    REQUIRE_ASSET(onnx);
    REQUIRE_ASSET(png);
    REQUIRE_ASSET(dets_f);
    std::ifstream f(dets_f);
    const nlohmann::json ref = nlohmann::json::parse(f);
    // One detector per model: the thresholds are the same in every dets.json of the suite.
    auto& det_ptr = runs(c.model).detector;
    if (det_ptr) {
        ASSERT_EQ(det_ptr->desc().score_threshold, ref["score_threshold"].get<float>()) << dets_f;
        ASSERT_EQ(det_ptr->desc().iou_threshold, ref["iou_threshold"].get<float>()) << dets_f;
        ASSERT_EQ(det_ptr->desc().max_detections, ref["max_detections"].get<uint32_t>()) << dets_f;
    } else {
        det_ptr = std::make_unique<passes::Detector>(
            dev(), passes::DetectorDesc{.model = onnx.string(),
                                        .score_threshold = ref["score_threshold"].get<float>(),
                                        .iou_threshold = ref["iou_threshold"].get<float>(),
                                        .max_detections = ref["max_detections"].get<uint32_t>(),
                                        .fp32 = true});
    }
    passes::Detector& det = *det_ptr;
    EXPECT_EQ(det.format(), std::string(c.model) == "yolov8n" ? passes::DetectorFormat::YoloV8
                                                              : passes::DetectorFormat::YoloV5);
    int w = 0, h = 0, ch = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load(png.c_str(), &w, &h, &ch, 3), stbi_image_free);
    ASSERT_TRUE(px);
    const auto got = det.detect({px.get(), uint32_t(w), uint32_t(h), 3, 0});
    const auto& want = ref["detections"];
    std::printf("%s %s: %zu detections (reference %zu)\n", c.model, c.image, got.size(), want.size());
    ASSERT_EQ(got.size(), want.size());
    const auto score_tol = [](double s) { return 1e-4 + 1e-4 * s; };
    auto coord = [](const passes::Detection& d, int k) {
        return k == 0 ? d.x0 : k == 1 ? d.y0 : k == 2 ? d.x1 : d.y1;
    };
    // Reference boxes are not clipped; vkml's are clipped to the image.
    auto ref_coord = [&](const nlohmann::json& r, int k) {
        return std::clamp(r["box"][size_t(k)].get<double>(), 0.0, double(k % 2 == 0 ? w : h));
    };
    auto same = [&](const passes::Detection& d, const nlohmann::json& r) {
        if (d.class_id != r["class"].get<int>()) return false;
        if (std::abs(d.score - r["score"].get<double>()) > score_tol(r["score"].get<double>())) return false;
        for (int k = 0; k < 4; ++k)
            if (std::abs(coord(d, k) - ref_coord(r, k)) > 0.05) return false;
        return true;
    };
    // In order, except that detections whose scores lie within the tolerance of each other may
    // come in either order (yolov8n on kite: 0.5586776 and 0.5586703, a mouse and a traffic light,
    // swap places on an H200, whose f32 sums round differently from ONNX Runtime's).
    std::vector<char> used(want.size(), 0);
    for (size_t i = 0; i < got.size(); ++i) {
        size_t match = want.size();
        for (size_t j = 0; j < want.size() && match == want.size(); ++j)
            if (!used[j] && (j == i || std::abs(want[j]["score"].get<double>() - got[i].score) <=
                                           2 * score_tol(got[i].score)) &&
                same(got[i], want[j]))
                match = j;
        if (match < want.size()) {
            used[match] = 1;
            continue;
        }
        const auto& r = want[i]; // no match: the differences from the detection at this rank
        EXPECT_EQ(got[i].class_id, r["class"].get<int>()) << "detection " << i;
        EXPECT_NEAR(got[i].score, r["score"].get<double>(), score_tol(r["score"].get<double>())) << i;
        for (int k = 0; k < 4; ++k) EXPECT_NEAR(coord(got[i], k), ref_coord(r, k), 0.05) << i << " coord " << k;
        ADD_FAILURE() << "detection " << i << " matches no reference detection of a near-equal score";
    }
}

// Raw outputs: per model the two photos with the most boxes above the score threshold (v5: person 80,
// kite 29; v8: kite 167, dog 45), so that the stored rows hold the most confident boxes, in f32
// and in f16 storage (one storage type per test: each CTest case is a process of its own, and a
// 640x640 inference takes seconds on lavapipe). The other photos' outputs are checked through the
// detections below.
INSTANTIATE_TEST_SUITE_P(Raw, YoloConformance,
                         ::testing::Values(Case{"yolov5n", "person", true}, Case{"yolov5n", "person", false},
                                           Case{"yolov5n", "kite", true}, Case{"yolov5n", "kite", false},
                                           Case{"yolov8n", "kite", true}, Case{"yolov8n", "kite", false},
                                           Case{"yolov8n", "dog", true}, Case{"yolov8n", "dog", false}),
                         [](const auto& param_info) {
                             return std::string(param_info.param.model) + "_" + param_info.param.image + "_" +
                                    (param_info.param.fp32 ? "f32" : "f16");
                         });

INSTANTIATE_TEST_SUITE_P(Models, YoloDetections,
                         ::testing::Values(Case{"yolov5n", "dog"}, Case{"yolov5n", "horses"},
                                           Case{"yolov5n", "person"}, Case{"yolov5n", "kite"},
                                           Case{"yolov8n", "dog"}, Case{"yolov8n", "horses"},
                                           Case{"yolov8n", "person"}, Case{"yolov8n", "kite"}),
                         [](const auto& param_info) {
                             return std::string(param_info.param.model) + "_" + param_info.param.image;
                         });

} // namespace
} // namespace vkml::test
