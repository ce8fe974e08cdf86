// The samples' one-frame-behind schedule (--async-compute, samples/common/history.hpp), run
// headless as a user runs them, on lavapipe with validation on (the samples exit non-zero on any
// validation message). lavapipe has one queue, so the graphs run there with the same data flow
// (history image, copy after the ML read) on a single queue. With a deterministic time step,
// frame N of the one-frame-behind run must show what frame N-1 of the same-frame run shows.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/image_io.hpp"
#include "vkml/passes/super_resolution.hpp"

namespace fs = std::filesystem;
using namespace vkml;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Runs `exe args` writing into a fresh WORK/name/out; fails the test on a non-zero exit.
fs::path run(const std::string& exe, const std::string& name, const std::string& args) {
    const fs::path dir = fs::path(VKML_SCHEDULE_WORK_DIR) / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string cmd = "\"" + exe + "\" " + args + " --out \"" + (dir / "out").string() + "\" >\"" +
                            (dir / "stdout.txt").string() + "\" 2>\"" + (dir / "stderr.txt").string() + "\"";
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    EXPECT_EQ(code, 0) << cmd << "\nstdout:\n"
                       << slurp(dir / "stdout.txt") << "\nstderr:\n"
                       << slurp(dir / "stderr.txt");
    return dir / "out";
}

std::string frame_png(int i) {
    char name[32];
    std::snprintf(name, sizeof name, "frame_%04d.png", i);
    return name;
}

nlohmann::json timing(const fs::path& out) {
    return nlohmann::json::parse(slurp(out / "timing.json"));
}

// Largest per-channel difference between two frames (RGB; the alpha is 1 everywhere).
int max_diff(const samples::Image8& a, const samples::Image8& b) {
    EXPECT_EQ(a.width, b.width);
    EXPECT_EQ(a.height, b.height);
    if (a.pixels.size() != b.pixels.size()) return 256;
    int worst = 0;
    for (size_t i = 0; i < a.pixels.size(); ++i)
        if (i % 4 != 3) worst = std::max(worst, std::abs(int(a.pixels[i]) - int(b.pixels[i])));
    return worst;
}

// Same-frame run vs one-frame-behind run of the same frames: behind N == same N-1 (N >= 1),
// behind 0 == same 0 (the priming frame), and consecutive frames differ (the scene moves, so the
// comparison could fail).
void expect_one_frame_behind(const fs::path& same, const fs::path& behind, int frames, int tolerance) {
    // The one-frame-behind claim only means something when the frames change.
    const int moving = max_diff(samples::read_image((same / frame_png(1)).string()),
                                samples::read_image((same / frame_png(2)).string()));
    EXPECT_GT(moving, 8 * tolerance + 8) << "the scene did not move between frames 1 and 2";
    EXPECT_LE(max_diff(samples::read_image((behind / frame_png(0)).string()),
                       samples::read_image((same / frame_png(0)).string())),
              tolerance)
        << "the priming frame runs same-frame";
    for (int n = 1; n < frames; ++n) {
        const auto b = samples::read_image((behind / frame_png(n)).string());
        EXPECT_LE(max_diff(b, samples::read_image((same / frame_png(n - 1)).string())), tolerance)
            << "one-frame-behind frame " << n << " vs same-frame frame " << n - 1;
        EXPECT_GT(max_diff(b, samples::read_image((same / frame_png(n)).string())), tolerance)
            << "one-frame-behind frame " << n << " equals same-frame frame " << n << ": not behind";
    }
}

// Same computation on the same bytes: f16 rounding differences at most (in practice none).
constexpr int f16_tolerance = 2;

} // namespace

TEST(MlSchedule, SuperResolutionOneFrameBehind) {
    if (!fs::exists(passes::SuperResolution::model_path("anime4k-s")))
        GTEST_SKIP() << "model cache missing: " << passes::SuperResolution::model_path("anime4k-s");
    const int frames = 4;
    const std::string args = "--headless --frames " + std::to_string(frames) +
                             " --size 96x64 --model anime4k-s --no-overlay --fps 4 --write all";
    const fs::path same = run(VKML_SR_SAMPLE, "sr_same", args);
    const fs::path behind = run(VKML_SR_SAMPLE, "sr_behind", args + " --async-compute");
    EXPECT_EQ(timing(same)["info"]["ml_schedule"], "same-frame");
    EXPECT_EQ(timing(behind)["info"]["ml_schedule"], "one-frame-behind");
    expect_one_frame_behind(same, behind, frames, f16_tolerance);
}

TEST(MlSchedule, StyleTransferOneFrameBehind) {
    const int frames = 4;
    const std::string args = "--headless --frames " + std::to_string(frames) +
                             " --size 64x48 --style starry_night --fps 4 --write all";
    const fs::path same = run(VKML_STYLE_SAMPLE, "style_same", args);
    const fs::path behind = run(VKML_STYLE_SAMPLE, "style_behind", args + " --async-compute");
    EXPECT_EQ(timing(same)["info"]["ml_schedule"], "same-frame");
    EXPECT_EQ(timing(behind)["info"]["ml_schedule"], "one-frame-behind");
    expect_one_frame_behind(same, behind, frames, f16_tolerance);
}

// Boxes are read back at record time, frames_in_flight frames after their detector ran, in both
// schedules; one frame behind, that detector analysed the render one frame earlier still. So the
// boxes drawn in frame N of the one-frame-behind run are the same-frame run's of frame N-1, and
// each frame's boxes come from the render one frame older than in the same-frame run.
TEST(MlSchedule, DetectOneFrameBehind) {
    const int frames = 7;
    const std::string args = "--scene --headless --frames " + std::to_string(frames) +
                             " --size 160x96 --fps 2 --score 0.05 --write none";
    const fs::path same = run(VKML_DETECT_SAMPLE, "detect_same", args);
    const fs::path behind = run(VKML_DETECT_SAMPLE, "detect_behind", args + " --async-compute");
    const auto s = nlohmann::json::parse(slurp(same / "detections.json"));
    const auto b = nlohmann::json::parse(slurp(behind / "detections.json"));
    EXPECT_EQ(s["ml_schedule"], "same-frame");
    EXPECT_EQ(b["ml_schedule"], "one-frame-behind");
    ASSERT_EQ(s["frames"].size(), size_t(frames));
    ASSERT_EQ(b["frames"].size(), size_t(frames));
    int compared = 0, with_boxes = 0;
    bool sources_differ = false;
    // Frame 0 of the one-frame-behind run primes the history (its detector reads that frame's own
    // render), and its boxes are drawn frames_in_flight (2) frames later: compare from frame 3 on.
    for (int n = 3; n < frames; ++n) {
        const auto& bn = b["frames"][n];
        const auto& sp = s["frames"][n - 1];
        ASSERT_EQ(bn["frame"], n);
        EXPECT_EQ(bn["source"], sp["source"]) << "frame " << n;
        if (bn["source"].get<int>() < 0) continue;
        // One frame behind, the boxes drawn in frame N were detected on an older render.
        EXPECT_LT(bn["source"].get<int>(), s["frames"][n]["source"].get<int>()) << "frame " << n;
        sources_differ |= s["frames"][n]["boxes"] != bn["boxes"];
        const auto& x = bn["boxes"];
        const auto& y = sp["boxes"];
        ASSERT_EQ(x.size(), y.size()) << "frame " << n << ": " << x.dump() << " vs " << y.dump();
        for (size_t i = 0; i < x.size(); ++i) {
            EXPECT_EQ(x[i][0], y[i][0]) << "frame " << n << " box " << i;
            for (int k = 1; k < 6; ++k)
                EXPECT_NEAR(x[i][k].get<double>(), y[i][k].get<double>(), k == 1 ? 2e-3 : 0.25)
                    << "frame " << n << " box " << i << " value " << k;
        }
        ++compared;
        with_boxes += !x.empty();
    }
    EXPECT_GE(compared, 3);
    EXPECT_GE(with_boxes, 2) << "too few boxes for the comparison to mean anything";
    EXPECT_TRUE(sources_differ)
        << "the boxes never change from frame to frame: the test cannot tell frames apart";
}
