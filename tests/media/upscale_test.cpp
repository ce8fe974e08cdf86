// `vkml upscale` as a user runs it (the built binary) on clips and images the test writes: output
// size, frame count, timestamps, copied audio, rotation and metadata, and pixels against the same
// model run through a Session on the decoded input; errors as one line and a non-zero exit.
#include <gtest/gtest.h>
#include <stb_image.h>
#include <stb_image_write.h>

extern "C" {
#include <libavutil/frame.h>
}

#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "gpu_test.hpp"
#include "vkml/media/testclip.hpp"
#include "media_util.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"

using namespace vkml;
using namespace vkml::test;
namespace fs = std::filesystem;

namespace {

class UpscaleTest : public GpuTest {};

#define REQUIRE_MODEL(path)                                                                                  \
    do {                                                                                                     \
        if (!fs::exists(path)) {                                                                             \
            if (std::getenv("CI")) FAIL() << (path) << " missing: run tools/fetch-models";                   \
            GTEST_SKIP() << (path) << " missing: run tools/fetch-models (or set VKML_MODELS)";               \
        }                                                                                                    \
    } while (0)

fs::path anime4k_s() {
    return model_cache() / "websr/weights/anime4k/cnn-2x-s-rl.json";
}

// The model run through a Session on interleaved RGB values 0..1 (f16 storage as the tool uses):
// the 2x image, interleaved RGB clamped to 0..1.
std::vector<float> session_upscale01(gpu::Device& device, const fs::path& model,
                                     const std::vector<float>& rgb, int w, int h, float range = 1.f) {
    const graph::Graph g = import::load_model(model);
    const size_t plane = size_t(w) * h;
    std::vector<float> x(plane * 3);
    for (size_t i = 0; i < plane; ++i)
        for (size_t c = 0; c < 3; ++c) x[c * plane + i] = rgb[i * 3 + c] * range;
    Session s(device, g, {.input_shapes = {{g.value(g.inputs()[0]).name, {1, 3, h, w}}}});
    const auto out = s.run(std::vector<graph::TensorData>{graph::TensorData::from_floats({1, 3, h, w}, x)});
    const auto y = out[0].to_floats();
    const size_t oplane = plane * 4;
    std::vector<float> px(oplane * 3);
    for (size_t i = 0; i < oplane; ++i)
        for (size_t c = 0; c < 3; ++c) px[i * 3 + c] = std::clamp(y[c * oplane + i] / range, 0.f, 1.f);
    return px;
}

// The same on RGB24 pixels, back to RGB24 with rounding.
std::vector<uint8_t> session_upscale(gpu::Device& device, const fs::path& model,
                                     const std::vector<uint8_t>& rgb, int w, int h, float range = 1.f) {
    std::vector<float> x(rgb.size());
    for (size_t i = 0; i < rgb.size(); ++i) x[i] = rgb[i] / 255.f;
    const std::vector<float> y = session_upscale01(device, model, x, w, h, range);
    std::vector<uint8_t> px(y.size());
    for (size_t i = 0; i < y.size(); ++i) px[i] = static_cast<uint8_t>(std::lround(y[i] * 255.f));
    return px;
}

std::vector<uint8_t> load_png(const fs::path& p, int& w, int& h) {
    int c = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> d(stbi_load(p.c_str(), &w, &h, &c, 3), stbi_image_free);
    if (!d) return {};
    return {d.get(), d.get() + size_t(w) * h * 3};
}

std::vector<uint8_t> pattern(int w, int h, int seed) {
    std::vector<uint8_t> v(size_t(w) * h * 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < 3; ++c)
                v[(size_t(y) * w + x) * 3 + c] =
                    static_cast<uint8_t>((x * (7 + c) + y * (3 + seed) + ((x / 4 + y / 4) % 2) * 90) % 256);
    return v;
}

} // namespace

// A 4:4:4 lossless clip with AAC audio through anime4k-s into lossless RGB: twice the size, the
// same frames at the same times, the audio packets bit-identical, and every frame within rounding
// of the model run through a Session on the decoded input frame.
TEST_F(UpscaleTest, VideoMatchesTheModelOnDecodedFrames) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("video");
    media::TestClipDesc d;
    d.path = dir / "in.mkv";
    d.size = {40, 24};
    d.frames = 4;
    d.codec = "ffv1";
    d.pix_fmt = "yuv444p";
    media::write_test_clip(d);
    int status = 0;
    const std::string log = run_tool("upscale " + d.path.string() + " -o " + (dir / "out.mkv").string() +
                                         " --model anime4k-s --codec ffv1 --pix-fmt bgr0 -j 1:2:1",
                                     status);
    ASSERT_EQ(status, 0) << log;
    EXPECT_NE(log.find("gpu"), std::string::npos) << log; // the stats line
    const DecodedClip in = decode_clip(d.path), out = decode_clip(dir / "out.mkv");
    EXPECT_EQ(out.info.size, (media::Size{80, 48}));
    ASSERT_EQ(out.rgb.size(), in.rgb.size());
    EXPECT_EQ(out.seconds, in.seconds);
    ASSERT_FALSE(in.others.empty());
    EXPECT_EQ(out.others, in.others);
    for (size_t i = 0; i < in.rgb.size(); ++i) {
        const auto want = session_upscale(dev(), anime4k_s(), in.rgb[i], 40, 24);
        const Diff df = diff(out.rgb[i], want);
        EXPECT_LT(df.mean, 1.0) << "frame " << i;
        EXPECT_LE(df.max, 12) << "frame " << i;
    }
    // Forced small tiles (12-pixel cores with the runner's overlap): no seams, the same frames.
    const std::string tiled_log =
        run_tool("upscale " + d.path.string() + " -o " + (dir / "tiled.mkv").string() +
                     " --model anime4k-s --codec ffv1 --pix-fmt bgr0 --tile 12 -q",
                 status);
    ASSERT_EQ(status, 0) << tiled_log;
    const DecodedClip tiled = decode_clip(dir / "tiled.mkv");
    ASSERT_EQ(tiled.rgb.size(), out.rgb.size());
    for (size_t i = 0; i < out.rgb.size(); ++i)
        EXPECT_LE(diff(tiled.rgb[i], out.rgb[i]).max, 2) << "frame " << i;
    fs::remove_all(dir);
}

// H.264 in MP4 with AAC, a 90-degree rotation tag and a title, through the default model and
// encoder: size doubled, frames and timestamps kept, rotation, title and audio kept.
TEST_F(UpscaleTest, Mp4KeepsRotationMetadataAudioAndTimestamps) {
    REQUIRE_MODEL(model_cache() / "websr/weights/anime4k/cnn-2x-m-rl.json");
    const fs::path dir = scratch_dir("mp4");
    media::TestClipDesc d;
    d.path = dir / "phone.mp4";
    d.frames = 6;
    d.rotation = 90;
    d.metadata["title"] = "holiday";
    media::write_test_clip(d);
    int status = 0;
    const std::string log =
        run_tool("upscale " + d.path.string() + " -o " + (dir / "big.mp4").string() + " -q", status);
    ASSERT_EQ(status, 0) << log;
    const DecodedClip in = decode_clip(d.path), out = decode_clip(dir / "big.mp4");
    EXPECT_EQ(out.info.size, (media::Size{128, 96}));
    EXPECT_EQ(out.rgb.size(), 6u);
    EXPECT_EQ(out.seconds, in.seconds);
    EXPECT_EQ(out.info.rotation, in.info.rotation);
    EXPECT_NE(out.info.rotation, 0);
    EXPECT_EQ(out.metadata.count("title") ? out.metadata.at("title") : "", "holiday");
    EXPECT_EQ(out.others, in.others);
    fs::remove_all(dir);
}

// Variable frame rate: irregular timestamps come out unchanged.
TEST_F(UpscaleTest, VariableFrameRateTimestampsAreKept) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("vfr");
    media::TestClipDesc d;
    d.path = dir / "vfr.mkv";
    d.size = {32, 16};
    d.frames = 5;
    d.time_base = {1, 1000};
    d.pts = {0, 33, 50, 117, 300};
    d.audio_codec = "";
    media::write_test_clip(d);
    int status = 0;
    const std::string log = run_tool(
        "upscale " + d.path.string() + " -o " + (dir / "out.mkv").string() + " -m anime4k-s -q", status);
    ASSERT_EQ(status, 0) << log;
    const DecodedClip out = decode_clip(dir / "out.mkv");
    EXPECT_EQ(out.seconds, (std::vector<double>{0, 0.033, 0.05, 0.117, 0.3}));
    fs::remove_all(dir);
}

// A PNG, and a folder of a PNG and a JPEG: outputs twice the size, the PNG equal to the model run
// through a Session within rounding.
TEST_F(UpscaleTest, ImagesAndFolders) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("images");
    fs::create_directories(dir / "photos");
    const auto a = pattern(20, 14, 1), b = pattern(16, 12, 2);
    ASSERT_TRUE(stbi_write_png((dir / "photos/a.png").c_str(), 20, 14, 3, a.data(), 60));
    ASSERT_TRUE(stbi_write_jpg((dir / "photos/b.jpg").c_str(), 16, 12, 3, b.data(), 95));
    int status = 0;
    std::string log = run_tool("upscale " + (dir / "photos/a.png").string() + " -o " +
                                   (dir / "a2.png").string() + " -m anime4k-s -q",
                               status);
    ASSERT_EQ(status, 0) << log;
    int w = 0, h = 0;
    const auto got = load_png(dir / "a2.png", w, h);
    ASSERT_EQ(w, 40);
    ASSERT_EQ(h, 28);
    const Diff df = diff(got, session_upscale(dev(), anime4k_s(), a, 20, 14));
    EXPECT_LT(df.mean, 1.0);
    EXPECT_LE(df.max, 12);

    log = run_tool("upscale " + (dir / "photos").string() + " -o " + (dir / "big").string() +
                       " -m anime4k-s -q",
                   status);
    ASSERT_EQ(status, 0) << log;
    load_png(dir / "big/a.png", w, h);
    EXPECT_EQ(w, 40);
    load_png(dir / "big/b.jpg", w, h);
    EXPECT_EQ(w, 32);
    EXPECT_EQ(h, 24);
    fs::remove_all(dir);
}

// Issue 14, item 1: a GPU wait that gives up (a 1 ms no-progress limit here; a fixed 60 s before,
// then a segfault as the error path freed command buffers the driver still ran) is one clean
// error line and exit 1: no crash, no validation message, no output and no partial file left.
TEST_F(UpscaleTest, AGpuWaitThatGivesUpIsACleanError) {
    REQUIRE_MODEL(model_cache() / "websr/weights/anime4k/cnn-2x-m-rl.json");
    const fs::path dir = scratch_dir("wait-timeout");
    media::TestClipDesc d;
    d.path = dir / "in.mp4";
    d.size = {64, 48};
    d.frames = 3;
    media::write_test_clip(d);
    ::setenv("VKML_WAIT_TIMEOUT", "0.001", 1);
    int status = 0;
    const std::string log =
        run_tool("upscale " + d.path.string() + " -o " + (dir / "out.mp4").string() + " -q", status);
    ::unsetenv("VKML_WAIT_TIMEOUT");
    EXPECT_EQ(status, 1) << log;
    EXPECT_NE(log.find("completed no work"), std::string::npos) << log;
    EXPECT_NE(log.find("VKML_WAIT_TIMEOUT"), std::string::npos) << log;
    EXPECT_EQ(log.find("validation"), std::string::npos) << log;
    EXPECT_EQ(log.find("internal error"), std::string::npos) << log;
    EXPECT_EQ(log.find("left allocated"), std::string::npos) << "the teardown waited for the GPU: " << log;
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "only the input";
    fs::remove_all(dir);
}

namespace {

// Channel `c` of a PNG against values 0..1 (one per pixel): mean and max difference in steps of
// the PNG's depth.
struct ChannelDiff {
    double mean = 0;
    double max = 0;
};
ChannelDiff channel_diff(const Png& png, int c, const std::vector<float>& want) {
    ChannelDiff d;
    const double scale = png.bits == 16 ? 65535.0 : 255.0;
    const size_t n = size_t(png.width) * png.height;
    if (want.size() != n) return {1e9, 1e9};
    for (size_t i = 0; i < n; ++i) {
        const double e = std::abs(png.samples[i * png.channels + c] - want[i] * scale);
        d.mean += e / double(n);
        d.max = std::max(d.max, e);
    }
    return d;
}

// One channel of interleaved RGB (c = 0, 1, 2), or its BT.601 luma (c = -1), as 0..1 values.
std::vector<float> channel(const std::vector<float>& rgb, int c) {
    std::vector<float> v(rgb.size() / 3);
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = c >= 0 ? rgb[i * 3 + size_t(c)]
                      : 0.299f * rgb[i * 3] + 0.587f * rgb[i * 3 + 1] + 0.114f * rgb[i * 3 + 2];
    return v;
}

// Grey values 0..1 as interleaved RGB (R = G = B).
std::vector<float> grey_rgb(const std::vector<float>& grey) {
    std::vector<float> v(grey.size() * 3);
    for (size_t i = 0; i < grey.size(); ++i) v[i * 3] = v[i * 3 + 1] = v[i * 3 + 2] = grey[i];
    return v;
}

} // namespace

// Issue 14, item 4: images keep what they have. An RGBA PNG comes out RGBA, its alpha upscaled by
// the model as a grey image; a 16-bit grey + alpha PNG and a 16-bit RGB PNG come out 16-bit with
// the same channels, with more than 8 bits of precision (f16 storage keeps about 11); each channel
// as the model run through a Session makes it. A JPEG output says in one note what it drops.
// Before, every output was 8-bit RGB without a word.
TEST_F(UpscaleTest, ImagesKeepAlphaChannelsAndBitDepth) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("image-formats");
    const int w = 20, h = 14;
    const auto rgb8 = pattern(w, h, 1);
    Png rgba{w, h, 4, 8, {}}, ga16{w, h, 2, 16, {}}, rgb16{w, h, 3, 16, {}};
    std::vector<float> rgb01, alpha01, grey01, alpha16_01, rgb16_01;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const size_t i = size_t(y) * w + x;
            const uint16_t a = uint16_t((x * 13 + y * 7) % 256);
            for (int c = 0; c < 3; ++c) rgba.samples.push_back(rgb8[i * 3 + size_t(c)]);
            rgba.samples.push_back(a);
            for (int c = 0; c < 3; ++c) rgb01.push_back(rgb8[i * 3 + size_t(c)] / 255.f);
            alpha01.push_back(a / 255.f);
            const uint16_t g = uint16_t((x * 2903 + y * 1709 + 311) % 65536),
                           a16 = uint16_t(std::min(65535, x * 3301 + y * 911 + 17));
            ga16.samples.insert(ga16.samples.end(), {g, a16});
            grey01.push_back(g / 65535.f);
            alpha16_01.push_back(a16 / 65535.f);
            for (int c = 0; c < 3; ++c) {
                const uint16_t v = uint16_t((x * 1999 + y * 2503 + c * 7001 + 123) % 65536);
                rgb16.samples.push_back(v);
                rgb16_01.push_back(v / 65535.f);
            }
        }
    write_png(dir / "rgba.png", rgba);
    write_png(dir / "ga16.png", ga16);
    write_png(dir / "rgb16.png", rgb16);
    auto upscale = [&](const std::string& in, const std::string& out) {
        int status = 0;
        const std::string log = run_tool(
            "upscale " + (dir / in).string() + " -o " + (dir / out).string() + " -m anime4k-s -q", status);
        EXPECT_EQ(status, 0) << log;
        return log;
    };
    auto model = [&](const std::vector<float>& rgb) {
        return session_upscale01(dev(), anime4k_s(), rgb, w, h);
    };
    // More than 8 bits: most 16-bit samples are not an 8-bit value times 257.
    auto finer_than_8_bits = [](const Png& p) {
        return std::count_if(p.samples.begin(), p.samples.end(), [](uint16_t v) { return v % 257 != 0; }) >
               std::ptrdiff_t(p.samples.size() / 2);
    };

    EXPECT_EQ(upscale("rgba.png", "rgba2.png").find("note"), std::string::npos);
    Png got = read_png(dir / "rgba2.png");
    ASSERT_EQ(got.width, 2 * w);
    EXPECT_EQ(got.channels, 4);
    EXPECT_EQ(got.bits, 8);
    const auto want_rgb = model(rgb01), want_alpha = channel(model(grey_rgb(alpha01)), 1);
    for (int c = 0; c < 3; ++c) {
        const ChannelDiff d = channel_diff(got, c, channel(want_rgb, c));
        EXPECT_LT(d.mean, 1.0) << "channel " << c;
        EXPECT_LE(d.max, 12) << "channel " << c;
    }
    ChannelDiff d = channel_diff(got, 3, want_alpha);
    EXPECT_LT(d.mean, 1.0) << "alpha";
    EXPECT_LE(d.max, 12) << "alpha";

    EXPECT_EQ(upscale("ga16.png", "ga2.png").find("note"), std::string::npos);
    got = read_png(dir / "ga2.png");
    ASSERT_EQ(got.width, 2 * w);
    EXPECT_EQ(got.channels, 2);
    EXPECT_EQ(got.bits, 16);
    EXPECT_TRUE(finer_than_8_bits(got));
    d = channel_diff(got, 0, channel(model(grey_rgb(grey01)), -1));
    EXPECT_LT(d.mean, 257.0) << "grey";
    EXPECT_LE(d.max, 12 * 257.0) << "grey";
    d = channel_diff(got, 1, channel(model(grey_rgb(alpha16_01)), 1));
    EXPECT_LT(d.mean, 257.0) << "alpha";
    EXPECT_LE(d.max, 12 * 257.0) << "alpha";

    EXPECT_EQ(upscale("rgb16.png", "rgb2.png").find("note"), std::string::npos);
    got = read_png(dir / "rgb2.png");
    ASSERT_EQ(got.width, 2 * w);
    EXPECT_EQ(got.channels, 3);
    EXPECT_EQ(got.bits, 16);
    EXPECT_TRUE(finer_than_8_bits(got));
    const auto want16 = model(rgb16_01);
    for (int c = 0; c < 3; ++c) {
        d = channel_diff(got, c, channel(want16, c));
        EXPECT_LT(d.mean, 257.0) << "channel " << c;
        EXPECT_LE(d.max, 12 * 257.0) << "channel " << c;
    }

    // JPEG keeps neither: one note says so.
    const std::string log = upscale("rgba.png", "rgba2.jpg");
    EXPECT_NE(log.find("note: '" + (dir / "rgba2.jpg").string() + "': JPEG has no alpha channel"),
              std::string::npos)
        << log;
    EXPECT_EQ(log.find("note", log.find("note") + 1), std::string::npos) << "one note: " << log;
    int jw = 0, jh = 0, jc = 0;
    ASSERT_TRUE(stbi_info((dir / "rgba2.jpg").c_str(), &jw, &jh, &jc));
    EXPECT_EQ(jw, 2 * w);
    EXPECT_EQ(jc, 3);
    fs::remove_all(dir);
}

// Issue 14, item 4: a 16-bit image keeps its 16 bits, not only the 11 that f16 storage holds: inputs
// of more than 10 bits run the model in f32. Through a model that repeats each pixel 2x2 (TF.js
// UpSampling2D, nearest), every output sample equals its input sample exactly, for RGB and for grey
// + alpha. Before, f16 storage rounded samples by up to 16 of 65535.
TEST_F(UpscaleTest, SixteenBitImagesKeepEveryBit) {
    const fs::path dir = scratch_dir("image-16bit");
    fs::create_directories(dir / "repeat");
    std::ofstream(dir / "repeat/model.json")
        << R"({"format": "layers-model", "modelTopology": {"class_name": "Sequential", "config": {"name": "r",)"
           R"( "layers": [{"class_name": "UpSampling2D", "config": {"name": "up", "batch_input_shape": [null,)"
           R"( null, null, 3], "dtype": "float32", "size": [2, 2], "data_format": "channels_last",)"
           R"( "interpolation": "nearest"}}]}}, "weightsManifest": []})";
    const int w = 17, h = 11;
    Png rgb16{w, h, 3, 16, {}}, ga16{w, h, 2, 16, {}};
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            for (int c = 0; c < 3; ++c) rgb16.samples.push_back(uint16_t((x * 3851 + y * 2311 + c * 7001 + 5) % 65536));
            ga16.samples.push_back(uint16_t((x * 4093 + y * 1031 + 1) % 65536));
            ga16.samples.push_back(uint16_t(65535 - (x * 997 + y * 3001) % 65536));
        }
    write_png(dir / "rgb16.png", rgb16);
    write_png(dir / "ga16.png", ga16);
    for (const Png* in : {&rgb16, &ga16}) {
        const std::string name = in == &rgb16 ? "rgb16" : "ga16";
        int status = 0;
        const std::string log = run_tool("upscale " + (dir / (name + ".png")).string() + " -o " +
                                             (dir / (name + "_x2.png")).string() + " -m " +
                                             (dir / "repeat/model.json").string() + " -q",
                                         status);
        ASSERT_EQ(status, 0) << log;
        const Png got = read_png(dir / (name + "_x2.png"));
        ASSERT_EQ(got.width, 2 * w);
        ASSERT_EQ(got.channels, in->channels);
        ASSERT_EQ(got.bits, 16);
        int wrong = 0, worst = 0;
        for (int y = 0; y < 2 * h; ++y)
            for (int x = 0; x < 2 * w; ++x)
                for (int c = 0; c < in->channels; ++c) {
                    const int want = in->samples[(size_t(y / 2) * w + size_t(x / 2)) * size_t(in->channels) + size_t(c)];
                    const int d = std::abs(got.samples[(size_t(y) * got.width + size_t(x)) * size_t(in->channels) + size_t(c)] - want);
                    wrong += d != 0;
                    worst = std::max(worst, d);
                }
        EXPECT_EQ(wrong, 0) << name << ": largest difference " << worst << " of 65535";
    }
    fs::remove_all(dir);
}

// Issue 14, item 4, videos: the codec family, the bit depth and the alpha channel are kept by
// default. 10-bit HEVC comes out as 10-bit HEVC (before: H.264 High 10); ffv1 with alpha, packed
// (bgra) or planar (yuva420p), comes out with its alpha upscaled (before: none). Into MP4, which
// cannot hold ffv1, a 12-bit clip becomes 10-bit H.264 with a note for each change.
TEST_F(UpscaleTest, VideosKeepCodecBitDepthAndAlpha) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("video-formats");
    auto upscale = [&](const fs::path& in, const fs::path& out) {
        int status = 0;
        const std::string log =
            run_tool("upscale " + in.string() + " -o " + out.string() + " -m anime4k-s -q", status);
        EXPECT_EQ(status, 0) << log;
        return log;
    };
    auto facts = [](const fs::path& p, int& frames) {
        media::VideoReader r({p, 1});
        frames = 0;
        while (r.read_frame()) ++frames;
        return r.info().codec + " " + r.info().pix_fmt;
    };
    int frames = 0;
    media::TestClipDesc hevc;
    hevc.path = dir / "in10.mp4";
    hevc.size = {32, 24};
    hevc.frames = 4;
    hevc.codec = "libx265";
    hevc.pix_fmt = "yuv420p10le";
    hevc.options = {{"x265-params", "log-level=error"}};
    hevc.audio_codec = "";
    media::write_test_clip(hevc);
    EXPECT_EQ(upscale(hevc.path, dir / "out10.mp4").find("note"), std::string::npos);
    EXPECT_EQ(facts(dir / "out10.mp4", frames), "hevc yuv420p10le");
    EXPECT_EQ(frames, 4);

    // Alpha: the left half opaque, the right half transparent.
    for (const std::string pix_fmt : {"bgra", "yuva420p"}) {
        media::TestClipDesc d;
        d.path = dir / (pix_fmt + ".mkv");
        d.size = {32, 24};
        d.frames = 3;
        d.codec = "ffv1";
        d.pix_fmt = pix_fmt;
        d.audio_codec = "";
        const bool packed = pix_fmt == "bgra";
        d.paint = [&](int64_t, AVFrame& f) {
            std::vector<uint8_t> rgb(size_t(f.width) * f.height * 3);
            for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 37 % 251);
            media::fill_from_rgb(f, rgb.data(), f.width * 3);
            for (int y = 0; y < f.height; ++y)
                for (int x = 0; x < f.width; ++x) {
                    const uint8_t a = x < f.width / 2 ? 255 : 0;
                    if (packed)
                        f.data[0][int64_t(y) * f.linesize[0] + x * 4 + 3] = a;
                    else
                        f.data[3][int64_t(y) * f.linesize[3] + x] = a;
                }
        };
        media::write_test_clip(d);
        const fs::path out = dir / ("out-" + pix_fmt + ".mkv");
        EXPECT_EQ(upscale(d.path, out).find("note"), std::string::npos) << pix_fmt;
        media::VideoReader r({out, 1});
        EXPECT_EQ(r.info().codec, "ffv1");
        EXPECT_EQ(r.info().pix_fmt, pix_fmt);
        int n = 0;
        while (media::FramePtr f = r.read_frame()) {
            ++n;
            ASSERT_EQ(f->width, 64);
            int opaque = 0, clear = 0;
            for (int y = 0; y < f->height; ++y)
                for (int x = 0; x < f->width; ++x) {
                    const int a = packed ? f->data[0][int64_t(y) * f->linesize[0] + x * 4 + 3]
                                         : f->data[3][int64_t(y) * f->linesize[3] + x];
                    if (x < 28) opaque += a >= 245;
                    if (x >= 36) clear += a <= 10;
                }
            EXPECT_EQ(opaque, 28 * f->height) << pix_fmt << " frame " << n;
            EXPECT_EQ(clear, 28 * f->height) << pix_fmt << " frame " << n;
        }
        EXPECT_EQ(n, 3) << pix_fmt;
    }

    media::TestClipDesc deep;
    deep.path = dir / "in12.mkv";
    deep.size = {32, 24};
    deep.frames = 3;
    deep.codec = "ffv1";
    deep.pix_fmt = "yuv444p12le";
    deep.audio_codec = "";
    media::write_test_clip(deep);
    const std::string log = upscale(deep.path, dir / "out12.mp4");
    EXPECT_NE(log.find("note: the mp4 container cannot hold ffv1"), std::string::npos) << log;
    EXPECT_NE(log.find("note: '" + (dir / "out12.mp4").string() +
                       "': libx264 does not take yuv444p12le: writing yuv444p10le (fewer bits)"),
              std::string::npos)
        << log;
    EXPECT_EQ(log.find("note", log.rfind("(fewer bits)")), std::string::npos) << "two notes: " << log;
    EXPECT_EQ(facts(dir / "out12.mp4", frames), "h264 yuv444p10le");
    fs::remove_all(dir);
}

// Issue 14, item 2: an image with the default image model (esrgan-slim, the slowest path on
// lavapipe) goes through in bounded pieces and comes out as the model run through a Session.
TEST_F(UpscaleTest, TheDefaultImageModelFinishes) {
    const fs::path model = model_cache() / "esrgan-slim/models/x2/model.json";
    REQUIRE_MODEL(model);
    const fs::path dir = scratch_dir("default-image");
    const auto px = pattern(40, 30, 3);
    ASSERT_TRUE(stbi_write_png((dir / "in.png").c_str(), 40, 30, 3, px.data(), 120));
    int status = 0;
    const std::string log =
        run_tool("upscale " + (dir / "in.png").string() + " -o " + (dir / "out.png").string(), status);
    ASSERT_EQ(status, 0) << log;
    EXPECT_NE(log.find("esrgan-slim"), std::string::npos) << log;
    int w = 0, h = 0;
    const auto got = load_png(dir / "out.png", w, h);
    ASSERT_EQ(w, 80);
    ASSERT_EQ(h, 60);
    const Diff df = diff(got, session_upscale(dev(), model, px, 40, 30, 255.f));
    EXPECT_LT(df.mean, 1.0);
    EXPECT_LE(df.max, 12);
    fs::remove_all(dir);
}

// Issue 14, item 7: `--frames 3` of a 10-frame MP4 with AAC audio: 3 frames and the audio to their
// end (0.12 s, within one AAC packet), not the whole 0.4 s.
TEST_F(UpscaleTest, FramesCutsAudioAndVideoTogether) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("frames");
    media::TestClipDesc d;
    d.path = dir / "in.mp4";
    d.size = {32, 24};
    d.frames = 10;
    media::write_test_clip(d);
    int status = 0;
    const std::string log = run_tool("upscale " + d.path.string() + " -o " + (dir / "out.mp4").string() +
                                         " -m anime4k-s --frames 3 -q",
                                     status);
    ASSERT_EQ(status, 0) << log;
    const DecodedClip out = decode_clip(dir / "out.mp4");
    ASSERT_EQ(out.rgb.size(), 3u);
    EXPECT_NEAR(out.video_end, 0.12, 1e-3);
    ASSERT_FALSE(out.others.empty());
    EXPECT_LT(out.others.back().start, out.video_end);
    EXPECT_GE(out.others.back().end, out.video_end);
    EXPECT_LT(out.others.back().end, out.video_end + 0.03) << "one AAC packet (21 ms) at most past the video";
    fs::remove_all(dir);
}

// Issue 14, item 5, as a user meets it: a fast-start MP4 cut in half (which before came out as 8
// of its 20 frames with exit 0) is one error line naming it and exit 1, with no output; with
// --tolerate-errors a warning and the frames that could be read. A folder with a truncated PNG:
// the same, and the other image written when tolerated.
TEST_F(UpscaleTest, TruncatedInputFailsUnlessTolerated) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("truncated");
    media::TestClipDesc d;
    d.path = dir / "full.mp4";
    d.size = {32, 24};
    d.frames = 20;
    d.muxer_options = {{"movflags", "+faststart"}};
    media::write_test_clip(d);
    auto cut = [](const fs::path& from, const fs::path& to) {
        std::ifstream f(from, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        std::ofstream(to, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() / 2));
    };
    cut(d.path, dir / "cut.mp4");
    fs::remove(d.path);
    const std::string out = (dir / "out.mp4").string();
    int status = 0;
    std::string log =
        run_tool("upscale " + (dir / "cut.mp4").string() + " -o " + out + " -m anime4k-s -q", status);
    EXPECT_EQ(status, 1) << log;
    EXPECT_NE(log.find("cut.mp4"), std::string::npos) << log;
    EXPECT_NE(log.find("truncated"), std::string::npos) << log;
    EXPECT_NE(log.find("--tolerate-errors"), std::string::npos) << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"cut.mp4"}));
    log = run_tool("upscale " + (dir / "cut.mp4").string() + " -o " + out +
                       " -m anime4k-s -q --tolerate-errors",
                   status);
    EXPECT_EQ(status, 0) << log;
    EXPECT_NE(log.find("warning"), std::string::npos) << log;
    const size_t frames = decode_clip(out).rgb.size();
    EXPECT_GT(frames, 0u);
    EXPECT_LT(frames, 20u);

    fs::create_directories(dir / "photos");
    const auto a = pattern(16, 12, 1), b = pattern(16, 12, 2);
    ASSERT_TRUE(stbi_write_png((dir / "photos/a.png").c_str(), 16, 12, 3, a.data(), 48));
    ASSERT_TRUE(stbi_write_png((dir / "b.png").c_str(), 16, 12, 3, b.data(), 48));
    cut(dir / "b.png", dir / "photos/b.png");
    const std::string folder = (dir / "photos").string(), big = (dir / "big").string();
    log = run_tool("upscale " + folder + " -o " + big + " -m anime4k-s -q", status);
    EXPECT_EQ(status, 1) << log;
    EXPECT_NE(log.find("b.png"), std::string::npos) << log;
    EXPECT_FALSE(fs::exists(dir / "big/b.png"));
    log = run_tool("upscale " + folder + " -o " + big + " -m anime4k-s -q --tolerate-errors", status);
    EXPECT_EQ(status, 0) << log;
    EXPECT_NE(log.find("b.png"), std::string::npos) << log;
    EXPECT_EQ(list_dir(dir / "big"), (std::vector<std::string>{"a.png"}));
    fs::remove_all(dir);
}

// Issue 14, item 3: a disk that fills up (here a file size limit, RLIMIT_FSIZE, which fails writes
// past it with EFBIG as a full disk fails them with ENOSPC) is an error naming the output the user
// asked for, never the hidden temporary name, exit 1, and nothing half-written: not for a video,
// a PNG, a JPEG, nor the image of a folder that does not fit (the one before it is complete).
// Before, the PNG came out cut at the limit and the JPEG empty, both with "wrote" and exit 0.
TEST_F(UpscaleTest, AFullDiskIsAnErrorAndLeavesNoHalfWrittenOutput) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("full-disk");
    const uint64_t limit = 1500; // bytes any file may have
    media::TestClipDesc d;
    d.path = dir / "in.mp4";
    d.size = {64, 48};
    d.frames = 10;
    media::write_test_clip(d);
    const auto px = pattern(32, 24, 1), flat = std::vector<uint8_t>(8 * 8 * 3, 90);
    ASSERT_TRUE(stbi_write_png((dir / "in.png").c_str(), 32, 24, 3, px.data(), 96));
    fs::create_directories(dir / "photos");
    ASSERT_TRUE(stbi_write_png((dir / "photos/a.png").c_str(), 8, 8, 3, flat.data(), 24));
    ASSERT_TRUE(stbi_write_png((dir / "photos/b.png").c_str(), 32, 24, 3, px.data(), 96));
    const std::vector<std::string> inputs{d.path.string(), (dir / "in.png").string(),
                                          (dir / "in.png").string(), (dir / "photos").string()};
    const std::vector<std::string> outputs{"out.mp4", "out.png", "out.jpg", "big"};
    const std::vector<std::string> named{"out.mp4", "out.png", "out.jpg", "b.png"};
    for (size_t i = 0; i < inputs.size(); ++i) {
        const fs::path out = dir / "o" / outputs[i];
        fs::create_directories(dir / "o");
        int status = 0;
        std::string log = run_tool_limited(
            {"upscale", inputs[i], "-o", out.string(), "-m", "anime4k-s", "-q"}, limit, status);
        EXPECT_EQ(status, 1) << outputs[i] << ": " << log;
        EXPECT_NE(log.find(named[i] + "': cannot "), std::string::npos) << outputs[i] << ": " << log;
        EXPECT_NE(log.find("(File too large)"), std::string::npos) << outputs[i] << ": " << log;
        EXPECT_EQ(log.find(".partial"), std::string::npos) << log;
        EXPECT_EQ(log.find("wrote"), std::string::npos) << log;
        if (outputs[i] == "big") {
            EXPECT_EQ(list_dir(dir / "o"), (std::vector<std::string>{"big"}));
            EXPECT_EQ(list_dir(dir / "o/big"), (std::vector<std::string>{"a.png"}));
            int w = 0, h = 0;
            EXPECT_EQ(load_png(dir / "o/big/a.png", w, h).size(), 16u * 16 * 3)
                << "the image before is whole";
        } else {
            EXPECT_TRUE(list_dir(dir / "o").empty()) << outputs[i];
        }
        fs::remove_all(dir / "o");
    }
    fs::remove_all(dir);
}

// --benchmark: fps per stage, nothing written.
TEST_F(UpscaleTest, BenchmarkPrintsStagesAndWritesNothing) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("bench");
    media::TestClipDesc d;
    d.path = dir / "in.mp4";
    d.size = {32, 16};
    d.frames = 4;
    media::write_test_clip(d);
    int status = 0;
    const std::string log = run_tool("upscale " + d.path.string() + " -m anime4k-s --benchmark", status);
    ASSERT_EQ(status, 0) << log;
    EXPECT_NE(log.find("4 frames"), std::string::npos) << log;
    EXPECT_NE(log.find("decode"), std::string::npos) << log;
    EXPECT_NE(log.find("gpu"), std::string::npos) << log;
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
    fs::remove_all(dir);
}

// Missing, non-video, truncated inputs, an unknown codec or model, an unwritable output: one line
// naming the file, a non-zero exit, no crash, nothing under the output name.
TEST_F(UpscaleTest, ErrorsAreOneLineAndNonZero) {
    const fs::path dir = scratch_dir("errors");
    media::TestClipDesc d;
    d.path = dir / "ok.mp4";
    d.size = {32, 16};
    d.frames = 4;
    media::write_test_clip(d);
    {
        std::ifstream f(d.path, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        std::ofstream(dir / "cut.mp4", std::ios::binary)
            .write(bytes.data(), std::streamsize(bytes.size() / 2));
    }
    std::ofstream(dir / "text.mkv") << "hello\n";
    const fs::path out = dir / "out.mp4";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {(dir / "nope.mp4").string() + " -o " + out.string(), "nope.mp4"},
        {(dir / "text.mkv").string() + " -o " + out.string(), "text.mkv"},
        {(dir / "cut.mp4").string() + " -o " + out.string(), "cut.mp4"},
        {d.path.string() + " -o " + out.string() + " --codec frobnicator", "frobnicator"},
        {d.path.string() + " -o " + out.string() + " --model no-such-model", "no-such-model"},
        {d.path.string() + " -o " + (dir / "ok.mp4" / "x.mp4").string(), "x.mp4"},
        {d.path.string() + " -o " + out.string() + " --threads 1:2", "--threads"},
    };
    for (const auto& [args, name] : cases) {
        int status = 0;
        const std::string log = run_tool("upscale " + args + " -q", status);
        EXPECT_NE(status, 0) << args << "\n" << log;
        EXPECT_NE(log.find(name), std::string::npos) << args << "\n" << log;
        EXPECT_EQ(log.find("internal error"), std::string::npos) << log;
        EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << args << "\n" << log;
        EXPECT_FALSE(fs::exists(out)) << args;
    }
    fs::remove_all(dir);
}

namespace {

// Whether a hidden temporary file of `out` is in its folder, polling for up to `seconds`.
bool wait_for_partial(const fs::path& out, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    const std::string prefix = "." + out.stem().string() + ".partial-";
    while (std::chrono::steady_clock::now() < end) {
        for (const auto& e : fs::directory_iterator(out.parent_path()))
            if (e.path().filename().string().rfind(prefix, 0) == 0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

// A clip long enough (80 s at 25 fps, tiny frames) that a run is surely still going when the test
// signals it a second after it started writing.
media::TestClipDesc long_clip(const fs::path& path) {
    media::TestClipDesc d;
    d.path = path;
    d.size = {32, 24};
    d.frames = 2000;
    d.options = {{"preset", "ultrafast"}};
    d.audio_codec = "";
    return d;
}

} // namespace

// Issue 14, item 6: SIGTERM (what timeout, systemd and docker send) stops a run as Ctrl-C does:
// a prompt exit with 128 + the signal, one line saying so, the frames done so far as a playable
// file under the output name and no hidden temporary file; with --no-partial nothing is left.
// Before, SIGTERM killed the process on the spot and left `.out.partial-PID.mp4` behind.
TEST_F(UpscaleTest, SigtermAndCtrlCStopPromptlyAndLeaveNoTemporaryFile) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("signals");
    const media::TestClipDesc d = long_clip(dir / "in.mp4");
    media::write_test_clip(d);
    const fs::path out = dir / "out.mp4";
    struct Case {
        int sig;
        bool no_partial;
        int status;
        const char* says;
    };
    for (const Case& c : {Case{SIGTERM, false, 143, "interrupted by SIGTERM"},
                          Case{SIGINT, true, 130, "the partial output was removed"}}) {
        std::vector<std::string> args{"upscale", d.path.string(), "-o", out.string(),
                                      "-m",      "anime4k-s",     "-q"};
        if (c.no_partial) args.push_back("--no-partial");
        ToolProcess p(args);
        ASSERT_TRUE(wait_for_partial(out, 120)) << p.output();
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const auto t0 = std::chrono::steady_clock::now();
        p.signal(c.sig);
        ASSERT_TRUE(p.wait(60)) << "still running 60 s after the signal";
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::string log = p.output();
        EXPECT_EQ(p.status(), c.status) << log;
        EXPECT_LT(took, 5.0) << log;
        EXPECT_NE(log.find(c.says), std::string::npos) << log;
        EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
        if (c.no_partial) {
            EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"in.mp4"}));
        } else {
            EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"in.mp4", "out.mp4"}));
            const DecodedClip got = decode_clip(out);
            EXPECT_GE(got.rgb.size(), 1u);
            EXPECT_LT(got.rgb.size(), size_t(d.frames));
            fs::remove(out);
        }
    }
    fs::remove_all(dir);
}

// Issue 14, item 6: a run killed outright (SIGKILL: no handler runs) leaves its hidden temporary
// file; the next run on the same output removes it, and leaves alone the one of a process that
// still runs (here the test itself).
TEST_F(UpscaleTest, TheNextRunRemovesTemporaryFilesOfKilledRuns) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("stale");
    const media::TestClipDesc d = long_clip(dir / "in.mp4");
    media::write_test_clip(d);
    const fs::path out = dir / "out.mp4";
    {
        ToolProcess p({"upscale", d.path.string(), "-o", out.string(), "-m", "anime4k-s", "-q"});
        ASSERT_TRUE(wait_for_partial(out, 120)) << p.output();
        p.signal(SIGKILL);
        ASSERT_TRUE(p.wait(30));
        EXPECT_EQ(p.status(), 128 + SIGKILL);
    }
    ASSERT_EQ(list_dir(dir).size(), 2u) << "the killed run's temporary file stays until the next run";
    const std::string live = ".out.partial-" + std::to_string(::getpid()) + ".mp4";
    std::ofstream(dir / live) << "another run's file, still being written";
    // A file of another output, from a process that is gone: not this run's to remove.
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ::waitpid(dead, nullptr, 0);
    const std::string other = ".other.partial-" + std::to_string(dead) + ".mp4";
    std::ofstream(dir / other) << "not this output's";
    int status = 0;
    const std::string log = run_tool(
        "upscale " + d.path.string() + " -o " + out.string() + " -m anime4k-s --frames 2 -q", status);
    ASSERT_EQ(status, 0) << log;
    std::vector<std::string> want{other, live, "in.mp4", "out.mp4"};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(list_dir(dir), want);
    fs::remove_all(dir);
}

// Issue 14, fault tests: SIGKILL at several points of a run never leaves a file under an output's
// name that is not whole. Killed at once (before anything is written), nothing but the input is
// there; killed in the middle of a folder of images, the images written are whole PNGs and the one
// being written is a hidden temporary file; the next run on that folder removes it and writes
// every image.
TEST_F(UpscaleTest, SigkillAtSeveralPointsLeavesOnlyWholeOutputs) {
    REQUIRE_MODEL(anime4k_s());
    const fs::path dir = scratch_dir("sigkill");
    media::TestClipDesc d;
    d.path = dir / "in.mp4";
    d.size = {32, 24};
    d.frames = 4;
    media::write_test_clip(d);
    {
        ToolProcess p({"upscale", d.path.string(), "-o", (dir / "out.mp4").string(), "-m", "anime4k-s", "-q"});
        p.signal(SIGKILL);
        ASSERT_TRUE(p.wait(30));
        EXPECT_EQ(p.status(), 128 + SIGKILL);
    }
    EXPECT_EQ(list_dir(dir), std::vector<std::string>{"in.mp4"});

    // A folder of images, killed once some are written.
    fs::create_directories(dir / "photos");
    std::vector<std::string> names;
    for (int i = 0; i < 40; ++i) {
        names.push_back("p" + std::to_string(100 + i) + ".png");
        const auto px = pattern(48, 40, i);
        ASSERT_TRUE(stbi_write_png((dir / "photos" / names.back()).c_str(), 48, 40, 3, px.data(), 48 * 3));
    }
    const fs::path out = dir / "big";
    {
        ToolProcess p({"upscale", (dir / "photos").string(), "-o", out.string(), "-m", "anime4k-s", "-q"});
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (std::chrono::steady_clock::now() < end && (!fs::exists(out) || list_dir(out).size() < 3))
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        p.signal(SIGKILL);
        ASSERT_TRUE(p.wait(30));
        EXPECT_EQ(p.status(), 128 + SIGKILL) << "the run ended before the kill: " << p.output();
    }
    int whole = 0;
    for (const std::string& name : list_dir(out)) {
        if (name[0] == '.') {
            EXPECT_NE(name.find(".partial-"), std::string::npos) << name;
            continue;
        }
        int w = 0, h = 0;
        EXPECT_EQ(load_png(out / name, w, h).size(), size_t(96 * 80 * 3)) << name << " is not whole";
        ++whole;
    }
    EXPECT_GE(whole, 2);
    int status = 0;
    const std::string log =
        run_tool("upscale " + (dir / "photos").string() + " -o " + out.string() + " -m anime4k-s -q", status);
    ASSERT_EQ(status, 0) << log;
    EXPECT_EQ(list_dir(out), names) << "every image, and no temporary file left";
    fs::remove_all(dir);
}
