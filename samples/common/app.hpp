#pragma once
// The sample host: what a renderer around vkml would own. It creates the Vulkan instance and
// device itself (graphics queue plus an async compute queue when the device has one, dynamic
// rendering, synchronization2, the 16/8-bit storage and float16 features vkml uses), hands them to
// vkml with gpu::Device::from_host, and runs a frame loop that executes a frame graph the sample
// declares:
//   - in a GLFW window: the frame's image is blitted into the acquired swapchain image by the
//     graph's last pass (the swapchain image is imported and rebound every frame), then presented;
//   - headless (--headless): no window, surface or display at all; every frame's image is copied
//     to a host-visible buffer and written as DIR/frame_NNNN.png, and DIR/timing.json gets the
//     per-pass GPU times (fg::Executor timestamps) when the run ends.
//
//     int main(int argc, char** argv) {
//         return samples::run_sample(argc, argv, {.name = "my_sample", ...}, [](samples::App& app) {
//             return std::make_unique<MySample>(app);           // a samples::Sample
//         });
//     }
//
// The shared command line: --headless, --frames N, --out DIR, --size WxH, --device NAME,
// --async-compute, --fps F, --write all|last|none, --help; the sample adds its own options.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/fg/executor.hpp"
#include "vkml/fg/frame_graph.hpp"
#include "vkml/gpu/device.hpp"

namespace vkml::samples {

// A command-line mistake: printed as "<sample>: <message>" plus a hint to run --help; exit 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Which headless frames are written as PNG.
enum class WriteFrames : uint8_t { All, Last, None };

struct CommonOptions {
    bool headless = false;
    int frames = 0;                 // frames to run; 0: until the window closes (headless: 1)
    std::string out_dir = "out";    // headless output directory (created)
    uint32_t width = 0, height = 0; // the frame's output size; 0: AppDesc's default
    std::string device;             // device index or name substring; empty: $VKML_DEVICE or the best
    bool async_compute = false;     // samples put their ML passes on the async compute queue
    double fps = 30;                // headless: frame i shows scene time i / fps (deterministic)
    WriteFrames write = WriteFrames::All;
    bool help = false;
    bool validation = false; // also on with VKML_VALIDATION=1
};

// A sample's own command-line option. `apply` receives the value (empty for flags) and throws
// UsageError on a bad one.
struct OptionSpec {
    std::string name;    // "--model"
    std::string metavar; // "NAME" (empty: a flag without value)
    std::string help;    // one line
    std::function<void(const std::string& value)> apply;
};

struct AppDesc {
    std::string name;    // program name in messages and the window title
    std::string summary; // one line for --help
    uint32_t default_width = 1920, default_height = 1080;
    std::vector<OptionSpec> options; // the sample's own options
    std::string keys_help;           // lines describing the sample's keys, for --help
};

// Parses argv against the shared options and desc.options; throws UsageError.
CommonOptions parse_options(int argc, char** argv, const AppDesc& desc);
std::string usage(const AppDesc& desc);
// "960x540" -> {960, 540}; throws UsageError naming `what`.
VkExtent2D parse_size(std::string_view text, std::string_view what = "--size");

// Time and size of the frame being declared or run.
struct FrameState {
    uint64_t index = 0;  // frames run so far
    double time = 0;     // scene time in seconds (headless: index / fps; window: wall clock)
    VkExtent2D extent{}; // the output size
};

// GPU timestamps of the latest completed frame, summed by pass name (fg::Executor::timings()).
struct FrameTimes {
    std::vector<gpu::TimingRecord> passes;
    double gpu_frame_ms = 0; // first pass start to last pass end, both queues
    // Sum of the passes whose name starts with `prefix`.
    double sum_ms(std::string_view prefix) const;
};

class App;

// What a sample implements. The host calls build() when the graph must be (re)declared — at the
// start and after App::rebuild() — and update() before every frame.
class Sample {
public:
    virtual ~Sample() = default;
    // Declares the frame's passes into `graph` and returns the image to show: R8G8B8A8_UNORM at
    // state.extent, with TRANSFER_SRC usage (transient images have it). The host adds the last
    // pass (blit to the swapchain, or copy to the readback buffer).
    virtual fg::ImageHandle build(fg::FrameGraph& graph, const FrameState& state) = 0;
    // Before every frame's execution (update per-frame values that record callbacks read).
    virtual void update(const FrameState& state, const FrameTimes& last) {
        (void)state;
        (void)last;
    }
    // A key press in the window (GLFW_KEY_*). Escape and Q quit; the host handles those.
    virtual void on_key(int key) { (void)key; }
    // Extra key/values for headless timing.json (e.g. "model": "anime4k-m").
    virtual std::map<std::string, std::string> info() const { return {}; }
    // After the last frame, before the host shuts down (e.g. --compare work). Returns the exit code.
    virtual int finish() { return 0; }
};

class App {
public:
    App(const AppDesc& desc, const CommonOptions& options);
    ~App();
    App(const App&) = delete;
    App& operator=(const App&) = delete;

    gpu::Device& device() { return *device_; }
    const CommonOptions& options() const { return options_; }
    const AppDesc& desc() const { return desc_; }
    bool headless() const { return options_.headless; }
    VkExtent2D extent() const { return {options_.width, options_.height}; }
    fg::Executor& executor() { return *executor_; }
    bool has_async_compute() const;
    // The queue samples should put their ML passes on (toggled by the sample's key handler).
    bool async_compute() const { return async_compute_; }
    void set_async_compute(bool on);
    // The graph is declared again before the next frame.
    void rebuild() { rebuild_ = true; }
    void quit() { quit_ = true; }
    // A line on stdout and, in a window, in the title bar.
    void status(const std::string& line);

    // Runs frames until --frames are done or the window closes. Returns the exit code.
    int run(Sample& sample);

    // Validation messages since the last call (the host collects them; headless runs print them
    // and fail at the end when there were any).
    std::vector<std::string> take_messages();

    struct Impl;

private:
    struct FrameLoop; // run()'s steps (app.cpp)
    AppDesc desc_;
    CommonOptions options_;
    bool async_compute_ = false, rebuild_ = true, quit_ = false;
    std::unique_ptr<Impl> impl_;
    std::unique_ptr<gpu::Device> device_;
    std::unique_ptr<fg::Executor> executor_;
};

// The whole main(): parses options, prints --help, creates the App and the sample, runs it, and
// turns every error into one line "<name>: error: <what>" with exit code 1 (2 for usage errors).
int run_sample(int argc, char** argv, AppDesc desc,
               const std::function<std::unique_ptr<Sample>(App&)>& make_sample);

// Reads back an R8G8B8A8 image of the graph into host memory at the end of the frame: call from
// a build() to get extra images out (e.g. --compare's panels). The returned buffer is filled when
// the frame has completed (App::run waits for it before the sample's finish()).
class Readback {
public:
    Readback(gpu::Device& device, uint32_t width, uint32_t height);
    ~Readback();
    // Adds a transfer pass copying `image` (RGBA8, width x height) into the host buffer.
    void add_pass(fg::FrameGraph& graph, fg::ImageHandle image, std::string name = "readback");
    // Tightly packed RGBA8 rows (valid after the frame that copied has completed).
    std::vector<uint8_t> rgba() const;
    uint32_t width() const { return width_; }
    uint32_t height() const { return height_; }

private:
    std::shared_ptr<gpu::Buffer> buffer_;
    uint32_t width_, height_;
};

} // namespace vkml::samples
