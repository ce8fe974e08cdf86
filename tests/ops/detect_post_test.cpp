// The detector ops against double-precision CPU references (tests/ops/ref/detect_post_ref.cpp):
// Letterbox at odd sizes (wide, tall, up- and downscaling, f32/f16/u8 inputs, BGR, transforms),
// YoloDecode (v5 rows, v8 columns) and NanoDetDecode on random tensors, the whole post-processing
// chain (decode -> NonMaxSuppression -> GatherDetections) against a plain per-class greedy NMS on
// crowded random boxes, CompositeOver, and the descriptor errors.
#include <cmath>
#include <random>

#include "op_test.hpp"
#include "ref/detect_post_ref.hpp"
#include "vkml/ops/detect.hpp"

namespace vkml::test {
namespace {

using namespace vkml::ops;

class DetectPost : public GpuTest {};

TEST_F(DetectPost, GeometryMatchesYoloLetterbox) {
    // 810x1080 into 640x640: r = 0.5926, content 480x640, 80 pixels of padding left and right.
    const LetterboxGeometry g = letterbox_geometry(810, 1080, 640, 640);
    EXPECT_EQ(g.content_width, 480u);
    EXPECT_EQ(g.content_height, 640u);
    EXPECT_EQ(g.left, 80u);
    EXPECT_EQ(g.top, 0u);
    // Odd padding: 101x50 into 64x64: content 64x32 (rounded), top 16.
    const LetterboxGeometry h = letterbox_geometry(101, 50, 64, 64);
    EXPECT_EQ(h.content_width, 64u);
    EXPECT_EQ(h.content_height, 32u);
    EXPECT_EQ(h.left, 0u);
    EXPECT_EQ(h.top, 16u);
    const LetterboxGeometry k = letterbox_geometry(10, 7, 33, 33); // 33x23: padding 5 above, 5 below
    EXPECT_EQ(k.content_height, 23u);
    EXPECT_EQ(k.top, 5u);
}

TEST_F(DetectPost, LetterboxFloatInputs) {
    struct Case {
        int64_t h, w;
        uint32_t oh, ow;
        bool bgr;
    };
    const Case cases[] = {
        {37, 53, 32, 32, false}, {29, 11, 40, 24, true}, {7, 5, 33, 31, false}, {61, 97, 17, 29, false}};
    uint32_t seed = 1;
    for (DType in_dt : float_dtypes(dev()))
        for (DType out_dt : float_dtypes(dev()))
            for (const Case& c : cases) {
                const HostTensor src = random_tensor({1, 3, c.h, c.w}, in_dt, seed++, 0.0, 1.0, 0.001);
                PixelTransform t{{1.f}, {0.1f, 0.2f, 0.3f}, {0.5f, 0.25f, 2.f}};
                auto op = Letterbox::create(dev(), {.input = {src.shape(), in_dt},
                                                    .width = c.ow,
                                                    .height = c.oh,
                                                    .dtype = out_dt,
                                                    .order = c.bgr ? ChannelOrder::BGR : ChannelOrder::RGB,
                                                    .transform = t});
                const auto out = run_op(dev(), *op, {src}, 2);
                const auto want = ref_post::letterbox(src, c.ow, c.oh, 114.0 / 255.0, t, c.bgr, out_dt);
                expect_close(out[0], want, tolerance(out_dt, 2e-5, 2e-3),
                             "Letterbox " + src.shape().str() + " -> " + std::to_string(c.ow) + "x" +
                                 std::to_string(c.oh));
            }
}

TEST_F(DetectPost, LetterboxPackedPixels) {
    // u8 [1, H, W, C] with H * W * C a multiple of 4 (the kernel reads words).
    struct Case {
        int64_t h, w, c;
        uint32_t oh, ow;
    };
    const Case cases[] = {{12, 37, 3, 64, 64}, {41, 9, 4, 30, 45}, {4, 3, 4, 16, 16}};
    uint32_t seed = 10;
    for (DType out_dt : float_dtypes(dev()))
        for (const Case& c : cases) {
            const HostTensor src = random_ints({1, c.h, c.w, c.c}, DType::u8, seed++, 0, 255);
            auto op = Letterbox::create(dev(), {.input = {src.shape(), DType::u8},
                                                .width = c.ow,
                                                .height = c.oh,
                                                .dtype = out_dt,
                                                .pad_value = 0.5f});
            const auto out = run_op(dev(), *op, {src});
            const auto want = ref_post::letterbox(src, c.ow, c.oh, 0.5, {}, false, out_dt);
            expect_close(out[0], want, tolerance(out_dt, 2e-6, 2e-3), "Letterbox u8 " + src.shape().str());
        }
}

TEST_F(DetectPost, LetterboxErrors) {
    expect_error(
        [&] {
            Letterbox::create(dev(), {.input = {{1, 4, 8, 8}, DType::f32}, .width = 8, .height = 8});
        },
        {"Letterbox", "input"});
    expect_error(
        [&] {
            Letterbox::create(dev(), {.input = {{1, 8, 8, 2}, DType::u8}, .width = 8, .height = 8});
        },
        {"Letterbox", "input"});
    expect_error(
        [&] {
            Letterbox::create(dev(), {.input = {{1, 3, 8, 8}, DType::f32}, .width = 0, .height = 8});
        },
        {"Letterbox", "width"});
    expect_error(
        [&] {
            Letterbox::create(
                dev(), {.input = {{1, 3, 8, 8}, DType::f32}, .width = 8, .height = 8, .dtype = DType::i32});
        },
        {"Letterbox", "dtype"});
    expect_error(
        [&] {
            Letterbox::create(dev(), {.input = {{1, 3, 8, 8}, DType::f32},
                                      .width = 8,
                                      .height = 8,
                                      .transform = {{1.f}, {0.f, 0.f}, {1.f}}});
        },
        {"Letterbox", "transform.mean"});
}

// Random YOLO outputs: boxes with even integer sizes and integer centres (exact in f16, and the
// corners integers), scores in (0, 1).
HostTensor random_yolo(YoloFormat f, int64_t batches, int64_t n, int64_t classes, DType dt, uint32_t seed) {
    const bool v8 = f == YoloFormat::V8;
    const int64_t k = classes + (v8 ? 4 : 5);
    HostTensor t(v8 ? gpu::Shape{batches, k, n} : gpu::Shape{batches, n, k}, dt);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pos(0, 120), half(2, 30);
    std::uniform_real_distribution<double> score(0.01, 0.99);
    auto at = [&](int64_t b, int64_t i, int64_t j) -> double& {
        return v8 ? t.data[size_t((b * k + j) * n + i)] : t.data[size_t((b * n + i) * k + j)];
    };
    for (int64_t b = 0; b < batches; ++b)
        for (int64_t i = 0; i < n; ++i) {
            at(b, i, 0) = pos(rng);
            at(b, i, 1) = pos(rng);
            at(b, i, 2) = 2 * half(rng);
            at(b, i, 3) = 2 * half(rng);
            for (int64_t j = 4; j < k; ++j) at(b, i, j) = round_to(score(rng), dt);
        }
    return t;
}

HostTensor candidates_tensor(const std::vector<std::vector<ref_post::Candidate>>& batches, double offset) {
    const int64_t n = int64_t(batches[0].size());
    HostTensor t({int64_t(batches.size()), n, 6}, DType::f32);
    (void)offset;
    for (size_t b = 0; b < batches.size(); ++b)
        for (int64_t i = 0; i < n; ++i) {
            const auto& c = batches[b][size_t(i)];
            const double v[6] = {c.x0, c.y0, c.x1, c.y1, c.score, double(c.cls)};
            for (int k = 0; k < 6; ++k) t[size_t((int64_t(b) * n + i) * 6 + k)] = v[k];
        }
    return t;
}

TEST_F(DetectPost, YoloDecode) {
    uint32_t seed = 100;
    for (DType dt : float_dtypes(dev()))
        for (YoloFormat f : {YoloFormat::V5, YoloFormat::V8})
            for (auto [b, n, c] :
                 {std::tuple<int64_t, int64_t, int64_t>{1, 37, 3}, {2, 131, 80}, {1, 600, 1}}) {
                const HostTensor in = random_yolo(f, b, n, c, dt, seed++);
                auto op = YoloDecode::create(
                    dev(), {.input = {in.shape(), dt}, .format = f, .class_offset = 1000.f});
                const auto out = run_op(dev(), *op, {in});
                std::vector<std::vector<ref_post::Candidate>> cands;
                for (int64_t k = 0; k < b; ++k) cands.push_back(ref_post::yolo_decode(in, f, k));
                const HostTensor want = candidates_tensor(cands, 1000);
                expect_close(out[0], want, 1e-6, "YoloDecode candidates " + in.shape().str());
                HostTensor boxes({b, n, 4}, DType::f32), scores({b, 1, n}, DType::f32);
                for (int64_t i = 0; i < b * n; ++i) {
                    for (int k = 0; k < 4; ++k)
                        boxes[size_t(i * 4 + k)] = want[size_t(i * 6 + k)] + 1000 * want[size_t(i * 6 + 5)];
                    scores[size_t(i)] = want[size_t(i * 6 + 4)];
                }
                expect_close(out[1], boxes, 1e-7, "YoloDecode nms boxes");
                expect_close(out[2], scores, 1e-6, "YoloDecode scores");
            }
}

TEST_F(DetectPost, YoloDecodeErrors) {
    expect_error(
        [&] {
            YoloDecode::create(dev(), {.input = {{1, 4, 10}, DType::f32}, .format = YoloFormat::V8});
        },
        {"YoloDecode", "input", "no class scores"});
    expect_error(
        [&] {
            YoloDecode::create(dev(), {.input = {{1, 10, 5}, DType::f32}, .format = YoloFormat::V5});
        },
        {"YoloDecode", "input"});
    expect_error(
        [&] {
            YoloDecode::create(dev(), {.input = {{10, 85}, DType::f32}});
        },
        {"YoloDecode", "input"});
    expect_error(
        [&] {
            YoloDecode::create(dev(), {.input = {{1, 84, 10}, DType::i32}});
        },
        {"YoloDecode", "input"});
    expect_error(
        [&] {
            YoloDecode::create(dev(), {.input = {{1, 84, 10}, DType::f32}, .class_offset = 0.f});
        },
        {"YoloDecode", "class_offset"});
}

TEST_F(DetectPost, NanoDetDecode) {
    // A 52x36 input at strides 8, 16, 32: grids 7x5, 4x3, 2x2; 3 classes, 5 bins.
    const uint32_t w = 52, h = 36;
    const std::vector<uint32_t> strides = {8, 16, 32};
    uint32_t seed = 200;
    for (DType dt : float_dtypes(dev()))
        for (float center : {0.f, 0.5f}) {
            std::vector<HostTensor> scores, boxes;
            NanoDetDecodeDesc d{.width = w, .height = h, .center_offset = center, .class_offset = 500.f};
            for (uint32_t s : strides) {
                const int64_t cells = int64_t((w + s - 1) / s) * ((h + s - 1) / s);
                scores.push_back(random_tensor({2, cells, 3}, dt, seed++, 0.0, 1.0, 0.001));
                boxes.push_back(random_tensor({2, cells, 20}, dt, seed++, -3.0, 3.0));
                d.scores.push_back({scores.back().shape(), dt});
                d.boxes.push_back({boxes.back().shape(), dt});
            }
            auto op = NanoDetDecode::create(dev(), d);
            std::vector<HostTensor> in = scores;
            in.insert(in.end(), boxes.begin(), boxes.end());
            const auto out = run_op(dev(), *op, in);
            std::vector<std::vector<ref_post::Candidate>> cands;
            for (int64_t b = 0; b < 2; ++b)
                cands.push_back(ref_post::nanodet_decode(scores, boxes, strides, w, center, b));
            expect_close(out[0], candidates_tensor(cands, 500), 1e-5, "NanoDetDecode candidates");
        }
}

TEST_F(DetectPost, NanoDetDecodeErrors) {
    NanoDetDecodeDesc d{.scores = {{{1, 35, 3}, DType::f32}},
                        .boxes = {{{1, 35, 20}, DType::f32}},
                        .strides = {8},
                        .width = 52,
                        .height = 36};
    EXPECT_NO_THROW(NanoDetDecode::create(dev(), d));
    auto bad = d;
    bad.scores[0].shape = {1, 34, 3};
    expect_error([&] { NanoDetDecode::create(dev(), bad); }, {"NanoDetDecode", "scores[0]", "cells"});
    bad = d;
    bad.boxes[0].shape = {1, 35, 21};
    expect_error([&] { NanoDetDecode::create(dev(), bad); }, {"NanoDetDecode", "boxes[0]"});
    bad = d;
    bad.strides = {8, 16};
    expect_error([&] { NanoDetDecode::create(dev(), bad); }, {"NanoDetDecode", "scores"});
    bad = d;
    bad.center_offset = 2.f;
    expect_error([&] { NanoDetDecode::create(dev(), bad); }, {"NanoDetDecode", "center_offset"});
}

// decode -> NMS (one class-aware group) -> gather, against a per-class greedy NMS on the CPU.
TEST_F(DetectPost, ChainMatchesPerClassNms) {
    struct Case {
        YoloFormat f;
        int64_t n, classes;
        float score, iou;
        int64_t max_out;
    };
    const Case cases[] = {{YoloFormat::V8, 300, 3, 0.3f, 0.45f, 100},
                          {YoloFormat::V5, 200, 2, 0.1f, 0.3f, 100},
                          {YoloFormat::V8, 700, 5, 0.5f, 0.6f, 7},
                          {YoloFormat::V5, 64, 1, 0.0f, 0.5f, 64}};
    uint32_t seed = 300;
    for (DType dt : float_dtypes(dev()))
        for (const Case& c : cases) {
            const HostTensor in = random_yolo(c.f, 1, c.n, c.classes, dt, seed++);
            const auto cands = ref_post::yolo_decode(in, c.f);
            double margin = 1;
            const auto kept = ref_post::class_nms(cands, c.score, c.iou, size_t(c.max_out), &margin);
            // Decisions too close to the threshold could differ between f32 and double.
            if (margin < 1e-5) continue;
            auto decode =
                YoloDecode::create(dev(), {.input = {in.shape(), dt}, .format = c.f, .class_offset = 512.f});
            auto nms = NonMaxSuppression::create(dev(), {.boxes = {{1, c.n, 4}, DType::f32},
                                                         .scores = {{1, 1, c.n}, DType::f32},
                                                         .max_output_boxes_per_class = c.max_out,
                                                         .iou_threshold = c.iou,
                                                         .score_threshold = c.score,
                                                         .index_dtype = DType::i32});
            // A mapping as for a 2x upscaled letterbox with a 3-pixel left margin, clipped.
            GatherDetectionsDesc gd{.candidates = {{1, c.n, 6}, DType::f32},
                                    .selected_indices = {nms->outputs()[0].shape, DType::i32},
                                    .scale_x = 2.f,
                                    .scale_y = 2.f,
                                    .offset_x = 3.f,
                                    .offset_y = 0.f,
                                    .clip_width = 60.f,
                                    .clip_height = 70.f};
            auto gather = GatherDetections::create(dev(), gd);
            const auto dec = run_op(dev(), *decode, {in});
            const auto sel = run_op(dev(), *nms, {dec[1], dec[2]});
            const auto got = run_op(dev(), *gather, {dec[0], sel[0], sel[1]});
            const std::string what = "chain " + in.shape().str() + " " + gpu::dtype_name(dt);
            ASSERT_EQ(int64_t(got[1][0]), int64_t(kept.size())) << what;
            const int64_t rows = got[0].shape()[0];
            for (int64_t r = 0; r < rows; ++r) {
                double want[6] = {0, 0, 0, 0, 0, 0};
                if (r < int64_t(kept.size())) {
                    const auto& k = cands[size_t(kept[size_t(r)])];
                    want[0] = std::clamp((k.x0 - 3) / 2, 0.0, 60.0);
                    want[1] = std::clamp(k.y0 / 2, 0.0, 70.0);
                    want[2] = std::clamp((k.x1 - 3) / 2, 0.0, 60.0);
                    want[3] = std::clamp(k.y1 / 2, 0.0, 70.0);
                    want[4] = k.score;
                    want[5] = k.cls;
                }
                for (int j = 0; j < 6; ++j)
                    ASSERT_NEAR(got[0][size_t(r * 6 + j)], want[j], 1e-5 * (1 + std::fabs(want[j])))
                        << what << " row " << r << " column " << j;
            }
        }
}

TEST_F(DetectPost, GatherDetectionsErrors) {
    expect_error(
        [&] {
            GatherDetections::create(
                dev(), {.candidates = {{1, 10, 5}, DType::f32}, .selected_indices = {{4, 3}, DType::i32}});
        },
        {"GatherDetections", "candidates"});
    expect_error(
        [&] {
            GatherDetections::create(
                dev(), {.candidates = {{1, 10, 6}, DType::f32}, .selected_indices = {{4, 2}, DType::i32}});
        },
        {"GatherDetections", "selected_indices"});
    expect_error(
        [&] {
            GatherDetections::create(dev(), {.candidates = {{1, 10, 6}, DType::f32},
                                             .selected_indices = {{4, 3}, DType::i32},
                                             .scale_x = 0.f});
        },
        {"GatherDetections", "scale"});
}

TEST_F(DetectPost, CompositeOver) {
    uint32_t seed = 400;
    for (DType dt : float_dtypes(dev()))
        for (auto [h, w] : {std::pair<int64_t, int64_t>{7, 13}, {31, 17}}) {
            const HostTensor img = random_tensor({1, 3, h, w}, dt, seed++, 0.0, 1.0, 0.001);
            // Premultiplied overlay: colour bytes at most alpha.
            HostTensor ov = random_ints({1, h, w, 4}, DType::u8, seed++, 0, 255);
            for (int64_t p = 0; p < h * w; ++p)
                for (int c = 0; c < 3; ++c)
                    ov[size_t(p * 4 + c)] = std::min(ov[size_t(p * 4 + c)], ov[size_t(p * 4 + 3)]);
            auto op = CompositeOver::create(dev(),
                                            {.image = {img.shape(), dt}, .overlay = {ov.shape(), DType::u8}});
            const auto out = run_op(dev(), *op, {img, ov});
            expect_close(out[0], ref_post::composite_over(img, ov), tolerance(dt, 1e-6, 2e-3),
                         "CompositeOver");
        }
    expect_error(
        [&] {
            CompositeOver::create(
                dev(), {.image = {{1, 3, 4, 4}, DType::f32}, .overlay = {{1, 4, 5, 4}, DType::u8}});
        },
        {"CompositeOver", "overlay"});
}

} // namespace
} // namespace vkml::test
