// The super-resolution sample as a user runs it: headless on the test machine's Vulkan device
// (lavapipe in CI) with validation on (VKML_VALIDATION=1 from CTest: the sample exits non-zero when
// the layer reports anything), at 64x48 -> 128x96, for each model, with the scene's camera zoomed
// to a 1080p frame's pixel scale (kZoomEnv). Checks the frames it writes, its timing summary, the
// --compare panels and metrics (the ESRGAN models beat bilinear on PSNR and SSIM), and its
// one-line errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/image_io.hpp"
#include "common/metrics.hpp"
#include "vkml/passes/super_resolution.hpp"

namespace fs = std::filesystem;

namespace vkml::samples {
namespace {

// CTest runs this suite twice, maybe at the same time: as it is and as nopush.* with
// VKML_DISABLE_PUSH_DESCRIPTOR=1. Each run writes under a folder of its own.
fs::path work_root() {
    const char* nopush = std::getenv("VKML_DISABLE_PUSH_DESCRIPTOR");
    return fs::path(VKML_SR_WORK_DIR) / (nopush && std::string(nopush) == "1" ? "nopush" : "push");
}

struct Result {
    int code = -1;
    std::string out, err;
};

std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Runs the sample with `args` (and an optional environment prefix), capturing stdout and stderr.
Result run_sample(const std::string& name, const std::string& args, const std::string& env = "") {
    const fs::path dir = work_root() / name;
    fs::create_directories(dir);
    const std::string cmd = env + " \"" + std::string(VKML_SR_SAMPLE) + "\" " + args + " >\"" +
                            (dir / "stdout.txt").string() + "\" 2>\"" + (dir / "stderr.txt").string() + "\"";
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    r.out = slurp(dir / "stdout.txt");
    r.err = slurp(dir / "stderr.txt");
    return r;
}

int lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

bool models_present(const std::string& model) {
    const std::string path = passes::SuperResolution::model_path(model);
    return path.empty() || fs::exists(path);
}

#define REQUIRE_MODEL(model)                                                                                 \
    do {                                                                                                     \
        if (!models_present(model)) {                                                                        \
            if (std::getenv("CI"))                                                                           \
                FAIL() << "model cache missing: " << passes::SuperResolution::model_path(model);             \
            GTEST_SKIP() << "model cache missing (run tools/fetch-models or set VKML_MODELS): "              \
                         << passes::SuperResolution::model_path(model);                                      \
        }                                                                                                    \
    } while (0)

// Fraction of pixels whose RGB differ anywhere by more than 2, and the largest difference.
struct Diff {
    double fraction = 0;
    int max = 0;
};
Diff diff(const Image8& a, const Image8& b) {
    Diff d;
    size_t n = 0;
    for (int y = 0; y < a.height; ++y)
        for (int x = 0; x < a.width; ++x) {
            int m = 0;
            for (int c = 0; c < 3; ++c) m = std::max(m, std::abs(int(a.at(x, y)[c]) - int(b.at(x, y)[c])));
            d.max = std::max(d.max, m);
            n += m > 2;
        }
    d.fraction = double(n) / (double(a.width) * a.height);
    return d;
}

std::string file_name(const std::string& model) {
    return "compare_" + model + ".png";
}

// The comparison is made on a window of what a 1920x1080 frame shows, at that frame's pixel scale
// (SceneDesc::zoom through VKML_SCENE_ZOOM: the centre crop of a 1080-line render), so the test's
// small frames carry the scene's detail at the size a real 540p -> 1080p upscale sees it. At zoom 1
// a 128x96 frame squeezes the scene's glyphs and lines far below a pixel, a regime no 2x upscaler
// is made for, where the ESRGAN models score a lower PSNR than bilinear although at 1080p they
// score a higher one.
constexpr int kWidth = 128, kHeight = 96;
const std::string kZoomEnv = "VKML_SCENE_ZOOM=" + std::to_string(1080.0 / kHeight);

class Headless : public ::testing::TestWithParam<std::string> {};

// Two frames and --compare at 64x48 -> 128x96 without the overlay, so pixels are the model's, at
// scene time 2 s (as the sample's 1080p table).
TEST_P(Headless, WritesFramesTimingsAndComparison) {
    const std::string model = GetParam();
    REQUIRE_MODEL(model);
    std::string test = "headless_" + model;
    const fs::path dir = work_root() / test / "out";
    fs::remove_all(dir);
    // The ESRGAN models take seconds per frame on lavapipe: one frame for them.
    const int frames = model.rfind("esrgan", 0) == 0 ? 1 : 2;
    const std::string last = frames == 1 ? "frame_0000.png" : "frame_0001.png";
    const Result r =
        run_sample(test,
                   "--headless --frames " + std::to_string(frames) + " --size " + std::to_string(kWidth) +
                       "x" + std::to_string(kHeight) + " --time 2 --no-overlay --compare --model " + model +
                       " --out \"" + dir.string() + "\"",
                   kZoomEnv);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.err.find("validation"), std::string::npos) << r.err;

    // Frames: PNGs at the output size.
    for (int i = 0; i < frames; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "frame_%04d.png", i);
        const Image8 f = read_image((dir / name).string(), 4);
        EXPECT_EQ(f.width, kWidth);
        EXPECT_EQ(f.height, kHeight);
    }
    // Frames differ from one another: the scene moves.
    if (frames > 1) {
        EXPECT_GT(
            diff(read_image((dir / "frame_0000.png").string()), read_image((dir / "frame_0001.png").string()))
                .fraction,
            0.01);
    }

    // Timing summary: the render and the three upscale passes, with positive GPU times.
    const nlohmann::json t = nlohmann::json::parse(slurp(dir / "timing.json"));
    EXPECT_EQ(t["frames"], frames);
    EXPECT_EQ(t["info"]["model"], model);
    for (const char* pass : {"render", "upscale to tensor", "upscale ml", "upscale to image"}) {
        ASSERT_TRUE(t["passes"].contains(pass)) << pass << " missing in " << t.dump(2);
        EXPECT_GT(t["passes"][pass]["median_ms"].get<double>(), 0.0) << pass;
    }

    // The comparison: panels at the output size; the model's differs from bilinear's.
    const nlohmann::json c = nlohmann::json::parse(slurp(dir / "compare.json"));
    const Image8 native = read_image((dir / "compare_native.png").string());
    const Image8 bilinear = read_image((dir / "compare_bilinear.png").string());
    const Image8 mine = read_image((dir / file_name(model)).string());
    ASSERT_EQ(mine.width, kWidth);
    ASSERT_EQ(mine.height, kHeight);
    ASSERT_EQ(native.width, kWidth);
    const Diff vs_bilinear = diff(mine, bilinear);
    EXPECT_GT(vs_bilinear.fraction, 0.05) << model << " output is (nearly) bilinear's";
    // The frame path and the compare path run the same passes on the same scene time: the last
    // frame is the model's panel.
    EXPECT_LE(diff(read_image((dir / last).string()), mine).max, 1);
    // The metrics in compare.json are those of the written panels.
    const double psnr_model =
        psnr({mine.pixels.data(), kWidth, kHeight, 4}, {native.pixels.data(), kWidth, kHeight, 4});
    const double psnr_bilinear =
        psnr({bilinear.pixels.data(), kWidth, kHeight, 4}, {native.pixels.data(), kWidth, kHeight, 4});
    EXPECT_NEAR(c["methods"][model]["psnr"].get<double>(), psnr_model, 1e-6);
    EXPECT_NEAR(c["methods"]["bilinear"]["psnr"].get<double>(), psnr_bilinear, 1e-6);
    std::printf("%s: PSNR %.3f dB (bilinear %.3f dB), SSIM %.4f (bilinear %.4f)\n", model.c_str(), psnr_model,
                psnr_bilinear, c["methods"][model]["ssim"].get<double>(),
                c["methods"]["bilinear"]["ssim"].get<double>());
    // The ESRGAN models beat bilinear against the native render on both metrics (at 1080p and
    // 256x144 as here, by 0.1-0.45 dB and 0.04-0.05 SSIM).
    if (model.rfind("esrgan", 0) == 0) {
        EXPECT_GT(psnr_model, psnr_bilinear) << model << " does not beat bilinear on PSNR";
        EXPECT_GT(c["methods"][model]["ssim"].get<double>(), c["methods"]["bilinear"]["ssim"].get<double>())
            << model << " does not beat bilinear on SSIM";
    }
    // The side-by-side sheet: four panels and a label strip.
    const Image8 sheet = read_image((dir / "compare.png").string(), 3);
    EXPECT_EQ(sheet.width, 4 * kWidth);
    EXPECT_GT(sheet.height, kHeight);
}

INSTANTIATE_TEST_SUITE_P(Models, Headless,
                         ::testing::Values("anime4k-s", "anime4k-m", "anime4k-l", "esrgan-slim",
                                           "esrgan-medium", "nearest"),
                         [](const auto& param_info) {
                             std::string n = param_info.param;
                             for (char& ch : n)
                                 if (ch == '-') ch = '_';
                             return n;
                         });

// Nearest-neighbour 2x must be exact pixel replication of the low-res render.
TEST(HeadlessNearest, IsPixelReplicationOfTheLowResRender) {
    const fs::path dir = work_root() / "nearest_exact" / "out";
    fs::remove_all(dir);
    const Result r = run_sample("nearest_exact",
                                "--headless --frames 1 --size 96x64 --no-overlay --compare --model nearest "
                                "--out \"" +
                                    dir.string() + "\"");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const Image8 n = read_image((dir / "compare_nearest.png").string());
    for (int y = 0; y < n.height; y += 2)
        for (int x = 0; x < n.width; x += 2)
            for (int c = 0; c < 3; ++c) {
                ASSERT_EQ(n.at(x, y)[c], n.at(x + 1, y)[c]) << x << "," << y;
                ASSERT_EQ(n.at(x, y)[c], n.at(x, y + 1)[c]) << x << "," << y;
                ASSERT_EQ(n.at(x, y)[c], n.at(x + 1, y + 1)[c]) << x << "," << y;
            }
}

// Split screen with the ML passes on the async compute queue: left half bilinear's, right half
// the model's, the same pixels as the separate panels.
TEST(HeadlessSplit, ShowsBilinearLeftAndTheModelRightOnAsyncCompute) {
    REQUIRE_MODEL("anime4k-s");
    const fs::path dir = work_root() / "split" / "out";
    fs::remove_all(dir);
    const Result r =
        // One frame: with --async-compute the upscaler works one frame behind the render, and its
        // first frame (which primes the history) upscales that same frame's render, as --compare does.
        run_sample("split", "--headless --frames 1 --size 128x96 --no-overlay --split --async-compute "
                            "--compare --model anime4k-s --out \"" +
                                dir.string() + "\"");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const nlohmann::json t = nlohmann::json::parse(slurp(dir / "timing.json"));
    EXPECT_EQ(t["async_compute_requested"], true);
    const Image8 frame = read_image((dir / "frame_0000.png").string());
    const Image8 bilinear = read_image((dir / "compare_bilinear.png").string());
    const Image8 model = read_image((dir / "compare_anime4k-s.png").string());
    int worst_left = 0, worst_right = 0;
    for (int y = 0; y < 96; ++y)
        for (int x = 0; x < 128; ++x)
            for (int c = 0; c < 3; ++c) {
                const int ref = x < 64 ? bilinear.at(x, y)[c] : model.at(x, y)[c];
                (x < 64 ? worst_left : worst_right) =
                    std::max(x < 64 ? worst_left : worst_right, std::abs(int(frame.at(x, y)[c]) - ref));
            }
    EXPECT_LE(worst_left, 1);
    EXPECT_LE(worst_right, 1);
}

TEST(Errors, MissingModelFileIsOneLineAndExitCodeOne) {
    const Result r = run_sample("missing_model",
                                "--headless --size 64x48 --model /nonexistent/model.json --out \"" +
                                    (work_root() / "missing_model" / "out").string() + "\"");
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/model.json: model file not found"), std::string::npos) << r.err;
}

TEST(Errors, MissingModelCacheNamesTheModel) {
    const Result r = run_sample("missing_cache",
                                "--headless --size 64x48 --model esrgan-slim --out \"" +
                                    (work_root() / "missing_cache" / "out").string() + "\"",
                                "VKML_MODELS=/nonexistent-models");
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("model 'esrgan-slim'"), std::string::npos) << r.err;
}

TEST(Errors, NoDisplaySuggestsHeadless) {
    const Result r = run_sample("no_display", "--size 64x48 --model bilinear --frames 1",
                                "env -u DISPLAY -u WAYLAND_DISPLAY");
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("--headless"), std::string::npos) << r.err;
}

TEST(Errors, BadOptionsAreUsageErrors) {
    for (const char* args : {"--frobnicate", "--size 12", "--frames -3", "--size 65x48 --headless"}) {
        const Result r = run_sample("bad_option", args);
        EXPECT_NE(r.code, 0) << args;
        EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    }
}

TEST(Help, ListsTheOptionsAndKeys) {
    const Result r = run_sample("help", "--help");
    EXPECT_EQ(r.code, 0);
    for (const char* s : {"--headless", "--frames", "--out", "--model", "--compare", "--async-compute",
                          "--split", "split screen"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

} // namespace
} // namespace vkml::samples
