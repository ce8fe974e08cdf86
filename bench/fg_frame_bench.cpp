// One frame of "render at 960x540 -> ML 2x upscale to 1920x1080 -> composite" through the frame
// graph, with the ML work (image to tensor, upscale) on the graphics queue, then on the async
// compute queue. As an engine pipelines ML, the composite of frame N uses the upscale of frame
// N-1 (the host keeps the two upscaled tensors and swaps them), so on two queues the upscale of
// frame N overlaps the composite of frame N and the start of frame N+1.
//
//   vkml_fg_bench [--frames 200] [--work 420] [--taps 1] [--trace <prefix>] [--model PATH]
//
// --model runs a real 2x super-resolution model (e.g. Anime4K's cnn-2x-m-rl.json, or esrgan-slim's
// model.json) as the ML pass, through a vkml::Session recorded by the graph; without it the
// upscale is a synthetic kernel whose cost --work sets.
//
// Prints, per mode: the frame time (steady state, frames in flight), GPU busy time per queue, the
// time both queues were busy at once, and the per-pass timings of the last frame.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "fg/plan.hpp"
#include "host_renderer.hpp"
#include "vkml/fg/executor.hpp"
#include "vkml/fg/ml_pass.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"

namespace vkml::fg::bench {
namespace {

using test::Host;
using test::Pipelines;
using test::Upscale;

struct Options {
    int frames = 200;
    int warmup = 30;
    uint32_t work = 420; // with taps = 1, upscale and composite cost about the same on an H200
    int taps = 1;
    std::string trace;
    std::string model; // a 2x model file; empty: the synthetic upscale
};

// The model as a Session for a 960x540 RGB input; its I/O must be f32 NCHW 3x540x960 -> 3x1080x1920,
// the layout the bench's to-tensor and composite passes use.
std::unique_ptr<Session> load_upscaler(gpu::Device& device, const std::string& path, VkExtent2D low) {
    graph::Graph g = import::load_model(path);
    SessionOptions options;
    options.input_shapes[g.value(g.inputs().at(0)).name] = {1, 3, int64_t(low.height), int64_t(low.width)};
    auto s = std::make_unique<Session>(device, g, options);
    const gpu::Shape want_in{1, 3, int64_t(low.height), int64_t(low.width)};
    const gpu::Shape want_out{1, 3, 2 * int64_t(low.height), 2 * int64_t(low.width)};
    if (s->inputs().size() != 1 || s->outputs().size() != 1 || s->inputs()[0].shape != want_in ||
        s->outputs()[0].shape != want_out || s->inputs()[0].storage != gpu::DType::f32 ||
        s->outputs()[0].storage != gpu::DType::f32)
        throw std::runtime_error(path + " is not a 2x RGB upscaler with f32 NCHW input and output");
    return s;
}

struct Result {
    bool async = false;
    double frame_ms = 0;
    double busy_ms[2] = {0, 0};
    double span_ms = 0, overlap_ms = 0;
    std::string table, trace, plan;
};

// Time during which both queues had a pass running.
double overlap_us(const std::vector<gpu::TimingRecord>& t) {
    double total = 0;
    for (const auto& a : t)
        for (const auto& b : t) {
            if (a.queue != gpu::QueueRole::Graphics || b.queue != gpu::QueueRole::Compute) continue;
            const double lo = std::max(a.start_us, b.start_us);
            const double hi = std::min(a.start_us + a.duration_us, b.start_us + b.duration_us);
            total += std::max(0.0, hi - lo);
        }
    return total;
}

Result run(Host& host, const Pipelines& pipelines, bool async, const Options& o) {
    gpu::Device& device = host.device();
    const VkExtent2D low{960, 540}, high{1920, 1080};
    Upscale upscale(device, low, high, o.work);
    const std::unique_ptr<Session> model = o.model.empty() ? nullptr : load_upscaler(device, o.model, low);
    const gpu::Image output(device,
                            {.width = high.width,
                             .height = high.height,
                             .format = Pipelines::color_format,
                             .usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                             .name = "bench output"});
    const uint64_t upscaled_bytes = 3ull * high.width * high.height * sizeof(float);
    std::shared_ptr<gpu::Buffer> upscaled[2] = {
        std::make_shared<gpu::Buffer>(device, gpu::BufferDesc{.size = upscaled_bytes, .name = "upscaled A"}),
        std::make_shared<gpu::Buffer>(device, gpu::BufferDesc{.size = upscaled_bytes, .name = "upscaled B"})};
    const Queue ml_queue = async ? Queue::AsyncCompute : Queue::Graphics;

    FrameGraph g({.name = async ? "bench async" : "bench graphics",
                  .output_width = high.width,
                  .output_height = high.height});
    ImageHandle scene = g.create_image("scene", {.format = Pipelines::color_format, .scale = 0.5f});
    ImageHandle depth = g.create_image("depth", {.format = Pipelines::depth_format, .scale = 0.5f});
    BufferHandle x = g.create_buffer("x", {.bytes_per_pixel = 3 * sizeof(float), .scale = 0.5f});
    ImageHandle out =
        g.import_image("output", {.image = output.vk(),
                                  .view = output.view(),
                                  .format = output.format(),
                                  .width = high.width,
                                  .height = high.height,
                                  .incoming = {.stages = VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT}});
    // This frame's upscale writes one tensor; the composite reads the other, written last frame.
    BufferHandle next =
        g.import_buffer("upscaled next", {.vkml_buffer = upscaled[0],
                                          .incoming = {.stages = VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT}});
    BufferHandle prev =
        g.import_buffer("upscaled prev", {.vkml_buffer = upscaled[1],
                                          .incoming = {.stages = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                                       .access = VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                                                       .queue = ml_queue}});

    PassBuilder draw = g.add_raster_pass("scene");
    scene = draw.color(scene, {.clear = {{0.1f, 0.1f, 0.15f, 1.f}}});
    depth = draw.depth(depth, {.store = false});
    draw.record([&](PassContext& ctx) { pipelines.scene(ctx.cmd(), ctx.render_area().extent, 0.f); });

    PassBuilder tensor = g.add_compute_pass("to tensor");
    tensor.read(scene);
    x = tensor.write(x);
    tensor.queue(ml_queue).record([&, scene, x](PassContext& ctx) {
        pipelines.to_tensor(ctx.cmd(), ctx.view(scene), ctx.layout(scene), ctx.buffer(x), ctx.extent(scene));
    });
    if (model) {
        // The whole model as one ML pass. Its arena (intermediate tensors) is imported and
        // read-written, so consecutive frames' runs of the model are ordered on the ML queue.
        PassBuilder ml = g.add_ml_pass("upscale");
        ml.read(x);
        if (model->arena()) {
            BufferHandle arena = g.import_buffer(
                "model arena", {.vkml_buffer = model->arena(),
                                .incoming = {.stages = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                             .access = VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                                             .queue = ml_queue}});
            arena = ml.write(arena, BufferWrite::StorageReadWrite);
        }
        next = ml.write(next);
        ml.queue(ml_queue).record([&model, x, next](PassContext& ctx) {
            const gpu::Tensor ins[] = {ctx.tensor(x, model->inputs()[0].shape, model->inputs()[0].storage)};
            const gpu::Tensor outs[] = {ctx.tensor(next, model->outputs()[0].shape, model->outputs()[0].storage)};
            model->record(ctx.cmd(), {ins, outs});
        });
    } else {
        const BufferHandle in[] = {x}, outs[] = {next};
        next = add_op_pass(g, "upscale", upscale, in, outs, {.queue = ml_queue})[0];
    }

    PassBuilder comp = g.add_raster_pass("composite");
    comp.read(scene);
    comp.read(prev, BufferRead::Storage);
    out = comp.color(out, {.load = LoadOp::DontCare});
    comp.record([&, scene, prev, taps = o.taps](PassContext& ctx) {
        pipelines.upscale_composite(ctx.cmd(), ctx.view(scene), ctx.layout(scene), ctx.buffer(prev),
                                    ctx.render_area().extent, taps);
    });

    Executor exec(device, {.frames_in_flight = 2, .name = "bench"});
    auto frame = [&](int i) {
        g.rebind(next, upscaled[i % 2]);
        g.rebind(prev, upscaled[(i + 1) % 2]);
        exec.run(g);
    };
    for (int i = 0; i < o.warmup; ++i) frame(i);
    exec.wait_idle();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.frames; ++i) frame(o.warmup + i);
    exec.wait_idle();
    const auto t1 = std::chrono::steady_clock::now();

    Result r;
    r.async = g.plan().uses_async_compute;
    r.frame_ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / o.frames;
    const std::vector<gpu::TimingRecord>& t = exec.timings();
    double begin = 1e300, end = 0;
    for (const auto& rec : t) {
        r.busy_ms[rec.queue == gpu::QueueRole::Graphics ? 0 : 1] += rec.duration_us / 1000.0;
        begin = std::min(begin, rec.start_us);
        end = std::max(end, rec.start_us + rec.duration_us);
    }
    r.span_ms = t.empty() ? 0 : (end - begin) / 1000.0;
    r.overlap_ms = overlap_us(t) / 1000.0;
    r.table = exec.timing_table();
    r.trace = exec.chrome_trace();
    r.plan = g.plan().summary();
    return r;
}

} // namespace
} // namespace vkml::fg::bench

int main(int argc, char** argv) {
    using namespace vkml::fg;
    bench::Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--frames")
            o.frames = std::atoi(argv[i + 1]);
        else if (a == "--work")
            o.work = uint32_t(std::atoi(argv[i + 1]));
        else if (a == "--taps")
            o.taps = std::atoi(argv[i + 1]);
        else if (a == "--trace")
            o.trace = argv[i + 1];
        else if (a == "--model")
            o.model = argv[i + 1];
        else {
            std::fprintf(stderr, "usage: %s [--frames N] [--work N] [--taps N] [--trace prefix] [--model PATH]\n", argv[0]);
            return 2;
        }
    }
    try {
        test::Host host({});
        const test::Pipelines pipelines(host.device());
        std::printf("device: %s, async compute queue: %s\n", host.device().caps().device_name.c_str(),
                    host.has_async_compute() ? "yes" : "no");
        const std::string upscaler = o.model.empty() ? "synthetic, work " + std::to_string(o.work) : o.model;
        std::printf("frame: scene 960x540 -> to tensor -> upscale x2 (%s) -> composite 1920x1080 (taps %d), "
                    "%d frames, 2 in flight\n\n",
                    upscaler.c_str(), o.taps, o.frames);
        std::vector<bench::Result> results;
        for (bool async : {false, true}) results.push_back(bench::run(host, pipelines, async, o));
        std::printf("%-22s %10s %14s %14s %12s %12s\n", "ML pass on", "frame ms", "graphics ms", "compute ms",
                    "GPU span ms", "overlap ms");
        for (const auto& r : results)
            std::printf("%-22s %10.3f %14.3f %14.3f %12.3f %12.3f\n",
                        r.async ? "async compute queue" : "graphics queue", r.frame_ms, r.busy_ms[0],
                        r.busy_ms[1], r.span_ms, r.overlap_ms);
        for (const auto& r : results) {
            std::printf("\n%s, last frame:\n%s", r.async ? "async compute" : "graphics only",
                        r.table.c_str());
            std::printf("plan:\n%s", r.plan.c_str());
            if (!o.trace.empty()) {
                std::ofstream(o.trace + (r.async ? "_async.json" : "_graphics.json")) << r.trace;
            }
        }
        if (!host.has_async_compute())
            std::printf("\nnote: this device has no async compute family; both rows ran on one queue\n");
        for (const std::string& m : host.take_messages()) std::printf("validation: %s\n", m.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkml_fg_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
