// The samples' one-frame-behind schedule (--async-compute, fg::History), run
// headless as a user runs them, on lavapipe with validation on (the samples exit non-zero on any
// validation message). lavapipe has one queue, so the graphs run there with the same data flow
// (history image, copy after the ML read) on a single queue. With a deterministic time step,
// frame N of the one-frame-behind run must show what frame N-1 of the same-frame run shows.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/image_io.hpp"
#include "vkml/passes/super_resolution.hpp"

namespace fs = std::filesystem;
using namespace vkml;

namespace {

// CTest runs this suite twice, maybe at the same time: as it is and as nopush.* with
// VKML_DISABLE_PUSH_DESCRIPTOR=1. Each run writes under a folder of its own.
fs::path work_root() {
    const char* nopush = std::getenv("VKML_DISABLE_PUSH_DESCRIPTOR");
    return fs::path(VKML_SCHEDULE_WORK_DIR) / (nopush && std::string(nopush) == "1" ? "nopush" : "push");
}

std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Runs `exe args` writing into a fresh WORK/name/out; fails the test on a non-zero exit.
fs::path run(const std::string& exe, const std::string& name, const std::string& args) {
    const fs::path dir = work_root() / name;
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

// The detector's boxes are drawn by a raster pass straight from its GPU output in the same frame
// graph, so frame N draws the boxes its own detector run found: on render N in the same-frame run,
// on render N-1 one frame behind (render 0 in the priming frame 0). Both runs write every frame,
// so this also checks that each frame's PNG shows the outlines of the boxes its JSON lists.
namespace {

// tools/vkml/detect_app.cpp's class colours, written out again: hues 137.508 degrees apart from
// 20, full saturation and value, channels 40 + 215 * v.
std::array<int, 3> class_rgb(int id) {
    const double h = std::fmod(id * 137.508 + 20.0, 360.0) / 60.0;
    const double x = 1.0 - std::fabs(std::fmod(h, 2.0) - 1.0);
    const std::array<std::array<double, 3>, 6> sextant = {
        {{1, x, 0}, {x, 1, 0}, {0, 1, x}, {0, x, 1}, {x, 0, 1}, {1, 0, x}}};
    const auto& c = sextant[size_t(std::min(int(h), 5))];
    return {int(std::lround(40 + c[0] * 215)), int(std::lround(40 + c[1] * 215)),
            int(std::lround(40 + c[2] * 215))};
}

// Paints the frame's boxes on the CPU as the sample's rule says (corners truncated to pixels and
// clamped into the image, outlines max(2, min(W, H) / 300) pixels wide, in list order so later
// boxes cover earlier ones) and returns the fraction of the painted pixels whose colour in the
// frame's PNG is the painted one.
double outlines_match(const samples::Image8& img, const nlohmann::json& boxes) {
    const int W = img.width, H = img.height, t = std::max(2, std::min(W, H) / 300);
    std::vector<int> painted(size_t(W) * size_t(H), -1); // class id per pixel
    for (const auto& box : boxes) {
        const int x0 = std::clamp(int(box[2].get<double>()), 0, W - 1),
                  y0 = std::clamp(int(box[3].get<double>()), 0, H - 1);
        const int x1 = std::clamp(int(box[4].get<double>()), x0 + 1, W),
                  y1 = std::clamp(int(box[5].get<double>()), y0 + 1, H);
        auto rect = [&](int rx, int ry, int rw, int rh) {
            for (int y = ry; y < std::min(ry + rh, H); ++y)
                for (int x = rx; x < std::min(rx + rw, W); ++x)
                    painted[size_t(y) * size_t(W) + size_t(x)] = box[0];
        };
        rect(x0, y0, x1 - x0, t);
        rect(x0, std::max(y0, y1 - t), x1 - x0, t);
        rect(x0, y0, t, y1 - y0);
        rect(std::max(x0, x1 - t), y0, t, y1 - y0);
    }
    int hits = 0, total = 0;
    for (size_t i = 0; i < painted.size(); ++i) {
        if (painted[i] < 0) continue;
        const auto rgb = class_rgb(painted[i]);
        bool ok = true;
        for (size_t c = 0; c < 3; ++c) ok &= std::abs(int(img.pixels[i * 4 + c]) - rgb[c]) <= 2;
        hits += ok;
        ++total;
    }
    return total ? double(hits) / total : 1.0;
}

// Every frame's PNG shows the outlines of the boxes its detections.json entry lists. (Rounding of
// the printed coordinates can move an edge by a pixel: 98% of the painted pixels must match.)
void expect_boxes_drawn(const fs::path& out, const nlohmann::json& log) {
    for (const auto& f : log["frames"]) {
        const auto img = samples::read_image((out / frame_png(f["frame"].get<int>())).string());
        EXPECT_GE(outlines_match(img, f["boxes"]), 0.98) << out << " frame " << f["frame"];
    }
}

} // namespace

TEST(MlSchedule, DetectOneFrameBehind) {
    const int frames = 5;
    const std::string args = "--scene --headless --frames " + std::to_string(frames) +
                             " --size 160x96 --fps 2 --score 0.15 --write all --no-labels";
    const fs::path same = run(VKML_DETECT_SAMPLE, "detect_same", args);
    const fs::path behind = run(VKML_DETECT_SAMPLE, "detect_behind", args + " --async-compute");
    const auto s = nlohmann::json::parse(slurp(same / "detections.json"));
    const auto b = nlohmann::json::parse(slurp(behind / "detections.json"));
    EXPECT_EQ(s["ml_schedule"], "same-frame");
    EXPECT_EQ(b["ml_schedule"], "one-frame-behind");
    ASSERT_EQ(s["frames"].size(), size_t(frames));
    ASSERT_EQ(b["frames"].size(), size_t(frames));
    int with_boxes = 0;
    bool boxes_change = false;
    for (int n = 0; n < frames; ++n) {
        const auto& sn = s["frames"][n];
        const auto& bn = b["frames"][n];
        ASSERT_EQ(sn["frame"], n);
        ASSERT_EQ(bn["frame"], n);
        // Same frame: the boxes come from this frame's render. One frame behind: from the
        // previous frame's (frame 0 primes the history and runs same-frame).
        EXPECT_EQ(sn["source"], n) << "frame " << n;
        EXPECT_EQ(bn["source"], std::max(n - 1, 0)) << "frame " << n;
        // So one-frame-behind frame N draws what same-frame frame N-1 draws.
        const auto& x = bn["boxes"];
        const auto& y = s["frames"][std::max(n - 1, 0)]["boxes"];
        ASSERT_EQ(x.size(), y.size()) << "frame " << n << ": " << x.dump() << " vs " << y.dump();
        for (size_t i = 0; i < x.size(); ++i) {
            EXPECT_EQ(x[i][0], y[i][0]) << "frame " << n << " box " << i;
            for (int k = 1; k < 6; ++k)
                EXPECT_NEAR(x[i][k].get<double>(), y[i][k].get<double>(), k == 1 ? 2e-3 : 0.25)
                    << "frame " << n << " box " << i << " value " << k;
        }
        with_boxes += !x.empty();
        if (n > 0) boxes_change |= sn["boxes"] != s["frames"][n - 1]["boxes"];
    }
    EXPECT_GE(with_boxes, 3) << "too few boxes for the comparison to mean anything";
    EXPECT_TRUE(boxes_change)
        << "the boxes never change from frame to frame: the test cannot tell frames apart";
    expect_boxes_drawn(same, s);
    expect_boxes_drawn(behind, b);
}
