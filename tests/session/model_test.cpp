// Whole models through the Session, against what their packages ship: @upscalerjs ESRGAN x2 on the
// package's fixture.png must reproduce its samples/2x/result.png (PSNR >= 60 dB in f32, >= 40 dB in
// f16 storage), and NanoDet must find the dog and the bicycle in darknet's dog.jpg.
#include <gtest/gtest.h>
#include <stb_image.h>
#include <stb_image_resize.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "session/nanodet_decode.hpp"
#include "session/session_util.hpp"
#include "vkml/import/model.hpp"

using namespace vkml;
using namespace vkml::test;

namespace {

class ModelTest : public GpuTest {};

struct Rgb {
    int w = 0, h = 0;
    std::vector<uint8_t> px; // RGB, row-major
};

Rgb load_rgb(const std::filesystem::path& p) {
    int w = 0, h = 0, c = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load(p.c_str(), &w, &h, &c, 3), stbi_image_free);
    if (!data) throw std::runtime_error(p.string() + ": " + stbi_failure_reason());
    Rgb img{w, h, {}};
    img.px.assign(data.get(), data.get() + static_cast<size_t>(w) * h * 3);
    return img;
}

// NCHW planes, values 0..255 (what the ESRGAN models take).
TensorData to_nchw(const Rgb& img) {
    std::vector<float> v(img.px.size());
    const size_t plane = static_cast<size_t>(img.w) * img.h;
    for (size_t i = 0; i < plane; ++i)
        for (size_t c = 0; c < 3; ++c) v[c * plane + i] = img.px[i * 3 + c];
    return TensorData::from_floats({1, 3, img.h, img.w}, v);
}

double psnr_against(const TensorData& out, const Rgb& golden) {
    const auto v = out.to_floats();
    const size_t plane = static_cast<size_t>(golden.w) * golden.h;
    if (v.size() != plane * 3) return 0;
    double sq = 0;
    for (size_t i = 0; i < plane; ++i)
        for (size_t c = 0; c < 3; ++c) {
            const double got = std::round(std::clamp(v[c * plane + i], 0.f, 255.f));
            const double d = got - golden.px[i * 3 + c];
            sq += d * d;
        }
    const double mse = sq / static_cast<double>(plane * 3);
    return mse <= 0 ? 99.0 : 10 * std::log10(255.0 * 255.0 / mse);
}

void esrgan_golden(gpu::Device& device, const std::string& package, bool fp32) {
    const auto root = model_cache() / package;
    const auto model = root / "models/x2/model.json";
    const auto golden_png = root / "assets/samples/2x/result.png";
    VKML_REQUIRE_FILE(golden_png, "run tools/fetch-models (or set VKML_MODELS)");
    if (!fp32 && !device.caps().storage16)
        GTEST_SKIP() << "no 16-bit storage on " << device.caps().device_name;
    const graph::Graph g = import::load_model(model);
    const Rgb fixture = load_rgb(root / "assets/fixture.png");
    const Rgb golden = load_rgb(golden_png);
    ASSERT_EQ(golden.w, 2 * fixture.w);
    const TensorData x = to_nchw(fixture);
    const std::string in = g.value(g.inputs()[0]).name;
    Session s(device, g, {.fp32 = fp32, .input_shapes = {{in, x.dims()}}});
    const uint64_t before = device.last_submitted(gpu::QueueRole::Compute);
    const auto out = s.run(std::vector<TensorData>{x});
    // A model this large is several bounded submissions (issue 14), not one of a minute on a
    // loaded lavapipe: 8 chunks on the first run (the upload and download go to the compute queue
    // too where there is no transfer queue, as on lavapipe; an H100 has one).
    EXPECT_GE(device.last_submitted(gpu::QueueRole::Compute) - before, 8u);
    const double psnr = psnr_against(out[0], golden);
    std::printf("%s x2 on %dx%d (%s): PSNR %.1f dB against the package's result.png; arena %llu KiB\n",
                package.c_str(), fixture.w, fixture.h, fp32 ? "f32" : "f16 storage", psnr,
                static_cast<unsigned long long>(s.memory().arena >> 10));
    EXPECT_GE(psnr, fp32 ? 60.0 : 40.0) << package << (fp32 ? " f32" : " f16");
}

} // namespace

// One test per model and precision, so that ctest runs them in parallel.
TEST_F(ModelTest, EsrganSlimX2F32ReproducesThePackageResult) {
    esrgan_golden(dev(), "esrgan-slim", true);
}

TEST_F(ModelTest, EsrganSlimX2F16ReproducesThePackageResult) {
    esrgan_golden(dev(), "esrgan-slim", false);
}

TEST_F(ModelTest, EsrganMediumX2F32ReproducesThePackageResult) {
    esrgan_golden(dev(), "esrgan-medium", true);
}

TEST_F(ModelTest, EsrganMediumX2F16ReproducesThePackageResult) {
    esrgan_golden(dev(), "esrgan-medium", false);
}

// NanoDet (TF.js graph model, float16 weights) on darknet's dog.jpg, resized to its 416x416 input
// and scaled to 0..1 as @vladmandic/human feeds it: the dog and the bicycle are among the top
// detections after decoding the heads and NMS (f16 storage, the default).
TEST_F(ModelTest, NanodetFindsTheDogAndTheBicycle) {
    const auto model = model_cache() / "human-models/models/nanodet.json";
    const std::filesystem::path photo = "/usr/share/darknet/data/dog.jpg";
    VKML_REQUIRE_FILE(model, "run tools/fetch-models (or set VKML_MODELS)");
    VKML_REQUIRE_FILE(photo, "install Debian's darknet package");
    const graph::Graph g = import::load_model(model);
    Session s(dev(), g);
    const int size = 416;
    ASSERT_EQ(s.inputs()[0].shape, (gpu::Shape{1, 3, size, size}));
    const Rgb img = load_rgb(photo);
    std::vector<uint8_t> resized(static_cast<size_t>(size) * size * 3);
    ASSERT_TRUE(stbir_resize_uint8(img.px.data(), img.w, img.h, 0, resized.data(), size, size, 0, 3));
    std::vector<float> x(resized.size());
    const size_t plane = static_cast<size_t>(size) * size;
    for (size_t i = 0; i < plane; ++i)
        for (size_t c = 0; c < 3; ++c) x[c * plane + i] = resized[i * 3 + c] / 255.f;
    const auto out = s.run(std::vector<TensorData>{TensorData::from_floats({1, 3, size, size}, x)});
    ASSERT_EQ(out.size(), 6u);
    // Outputs: scores for strides 8, 16, 32, then the box distributions in the same order.
    std::vector<Detection> dets;
    const int strides[] = {8, 16, 32};
    for (int k = 0; k < 3; ++k) {
        ASSERT_EQ(out[static_cast<size_t>(k)].dims()[1], (size / strides[k]) * (size / strides[k]));
        decode_stride(out[static_cast<size_t>(k)], out[static_cast<size_t>(k + 3)], strides[k], size, 0.2f,
                      dets);
    }
    const auto top = nms(dets, 0.5f);
    static const char* names[] = {"person",       "bicycle",   "car",           "motorcycle", "airplane",
                                  "bus",          "train",     "truck",         "boat",       "traffic light",
                                  "fire hydrant", "stop sign", "parking meter", "bench",      "bird",
                                  "cat",          "dog"};
    bool dog = false, bicycle = false;
    for (size_t i = 0; i < top.size() && i < 5; ++i) {
        const Detection& d = top[i];
        std::printf("  %-10s %.2f  [%.0f, %.0f, %.0f, %.0f]\n", d.label < 17 ? names[d.label] : "other",
                    d.score, d.x1, d.y1, d.x2, d.y2);
        dog |= d.label == 16;
        bicycle |= d.label == 1;
    }
    EXPECT_TRUE(dog) << "no dog among the top 5 detections";
    EXPECT_TRUE(bicycle) << "no bicycle among the top 5 detections";
    // The dog sits in the lower left of the photo, the bicycle across the middle.
    for (const Detection& d : top)
        if (d.label == 16) {
            EXPECT_LT((d.x1 + d.x2) / 2, size / 2.f);
            EXPECT_GT((d.y1 + d.y2) / 2, size / 2.f);
            break;
        }
}
