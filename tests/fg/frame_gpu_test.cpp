// The frame graph on a real device (lavapipe in CI) with validation and synchronization
// validation: a frame of raster -> compute -> ML -> raster -> compute -> transfer passes must give
// the same pixels as the same work recorded step by step without the graph, with and without a
// request for async compute, through the executor's own submissions and through a command buffer
// the host hands over. Any validation message fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "host_renderer.hpp"
#include "json_check.hpp"
#include "fg/plan.hpp"
#include "vkml/fg/executor.hpp"
#include "vkml/fg/history.hpp"

namespace vkml::fg::test {
namespace {

std::unique_ptr<Host> shared_host;

// The host device outlives every test and goes before the process ends.
class HostEnvironment : public ::testing::Environment {
public:
    void TearDown() override { shared_host.reset(); }
};
[[maybe_unused]] ::testing::Environment* const host_environment =
    ::testing::AddGlobalTestEnvironment(new HostEnvironment);

Host& host() {
    if (!shared_host)
        shared_host = std::make_unique<Host>(HostDesc{.on_message = vkml::test::device_desc().on_message});
    return *shared_host;
}

class FgGpu : public ::testing::Test {
protected:
    void SetUp() override { host().take_messages(); }
    void TearDown() override {
        for (const std::string& m : host().take_messages()) ADD_FAILURE() << "validation: " << m;
    }
    gpu::Device& dev() { return host().device(); }
};

std::unique_ptr<gpu::Buffer> readback_buffer(gpu::Device& device, const FrameOptions& o, int i) {
    return std::make_unique<gpu::Buffer>(device, gpu::BufferDesc{.size = uint64_t(o.width) * o.height * 4,
                                                                 .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                                                 .memory = gpu::MemoryUsage::Readback,
                                                                 .name = "readback " + std::to_string(i)});
}

gpu::Image output_image(gpu::Device& device, const FrameOptions& o) {
    return gpu::Image(device, {.width = o.width,
                               .height = o.height,
                               .format = Pipelines::color_format,
                               .usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                               .name = "host output"});
}

std::vector<uint8_t> bytes(const gpu::Buffer& b) {
    const auto* p = reinterpret_cast<const uint8_t*>(b.mapped());
    return {p, p + b.size()};
}

// The picture has content: the two triangles, the background and the vignette differ.
size_t distinct_pixels(const std::vector<uint8_t>& rgba) {
    std::set<uint32_t> seen;
    for (size_t i = 0; i + 3 < rgba.size(); i += 4)
        seen.insert(uint32_t(rgba[i]) | uint32_t(rgba[i + 1]) << 8 | uint32_t(rgba[i + 2]) << 16);
    return seen.size();
}

// Runs frames with frames in flight, a readback buffer per frame (rebound each frame), and checks
// every frame against the step-by-step reference.
void check_frames(gpu::Device& device, bool async) {
    const float shifts[] = {0.f, 0.05f, -0.1f, 0.15f};
    float shift = 0;
    const FrameOptions o{.async_compute = async, .shift = &shift};
    Pipelines pipelines(device);
    ChannelMix op(device, o.width, o.height);
    const gpu::Image output = output_image(device, o);
    std::vector<std::unique_ptr<gpu::Buffer>> readbacks;
    for (int i = 0; i < 4; ++i) readbacks.push_back(readback_buffer(device, o, i));

    Frame frame = build_frame(pipelines, op, output, *readbacks[0], o);
    Executor exec(device, {.frames_in_flight = 2, .name = async ? "async" : "graphics"});
    for (int i = 0; i < 4; ++i) {
        shift = shifts[i];
        frame.graph.rebind(frame.readback, readbacks[i]->vk());
        const FrameSubmission s = exec.run(frame.graph);
        EXPECT_EQ(s.frame, uint64_t(i));
        EXPECT_GT(s.values[size_t(Queue::Graphics)], 0u);
    }
    exec.wait_idle();

    const Plan& plan = frame.graph.plan();
    const bool two_queues = host().has_async_compute();
    EXPECT_EQ(plan.uses_async_compute, async && two_queues) << plan.summary();
    if (async && !two_queues) {
        EXPECT_EQ(plan.batches.size(), 1u) << "one queue: one submission\n" << plan.summary();
        EXPECT_EQ(plan.notes.size(), 2u) << "the tensor and ML passes fell back to graphics";
    }
    if (async && two_queues) {
        EXPECT_GE(plan.batches.size(), 3u) << plan.summary();
    }
    EXPECT_TRUE(plan.culled.empty());
    EXPECT_GT(plan.memory_saved(), 0u) << "depth and composite never live together\n" << plan.summary();
    EXPECT_EQ(exec.resource_sets_created(), 2u) << "one set per frame in flight, reused after";

    for (int i = 0; i < 4; ++i) {
        const std::vector<uint8_t> expected = reference_frame(device, pipelines, op, o, shifts[i]);
        const std::vector<uint8_t> got = bytes(*readbacks[i]);
        EXPECT_GT(distinct_pixels(expected), 10u);
        EXPECT_EQ(got, expected) << "frame " << i << " (shift " << shifts[i] << ")";
    }
}

TEST_F(FgGpu, FrameMatchesStepByStepWork) {
    check_frames(dev(), false);
}

TEST_F(FgGpu, AsyncComputeRequestMatchesStepByStepWork) {
    // Lavapipe has one queue family: the request falls back to the graphics queue. On a GPU with
    // an async compute family the same frame runs on two queues with semaphores between them.
    check_frames(dev(), true);
}

// The host's own command pool, command buffers and fences, as an engine has them: `frames`
// frames recorded by Executor::record into the host's command buffers, two in flight. Each command
// buffer is submitted only after record() has returned, and the next frame is recorded while the
// previous one may still run. The host tells the executor when a frame is done through its
// fences (Executor::frame_finished) or, with `timeline`, through a timeline semaphore of its own
// that each submission signals. Every frame's pixels must match the step-by-step reference.
void check_host_recording(Host& h, const std::string& name, int frames, bool timeline) {
    gpu::Device& device = h.device();
    const float shifts[] = {0.f, 0.05f, -0.1f, 0.15f};
    float shift = 0;
    const FrameOptions o{.async_compute = true, .shift = &shift}; // a host command buffer is one queue
    Pipelines pipelines(device);
    ChannelMix op(device, o.width, o.height);
    const gpu::Image output = output_image(device, o);
    std::vector<std::unique_ptr<gpu::Buffer>> readbacks;
    for (int i = 0; i < frames; ++i) readbacks.push_back(readback_buffer(device, o, i));
    Frame frame = build_frame(pipelines, op, output, *readbacks[0], o);
    Executor exec(device, {.frames_in_flight = 2, .name = name});

    constexpr int in_flight = 2;
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = h.graphics_family();
    VkCommandPool pool;
    ASSERT_EQ(vkCreateCommandPool(h.vk(), &pi, nullptr, &pool), VK_SUCCESS);
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool,
                                   VK_COMMAND_BUFFER_LEVEL_PRIMARY, in_flight};
    VkCommandBuffer cmds[in_flight];
    ASSERT_EQ(vkAllocateCommandBuffers(h.vk(), &ai, cmds), VK_SUCCESS);
    VkFence fences[in_flight];
    for (VkFence& f : fences) {
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        fi.flags = VK_FENCE_CREATE_SIGNALED_BIT;
        ASSERT_EQ(vkCreateFence(h.vk(), &fi, nullptr, &f), VK_SUCCESS);
    }
    VkSemaphore semaphore = VK_NULL_HANDLE;
    if (timeline) {
        VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr,
                                       VK_SEMAPHORE_TYPE_TIMELINE, 0};
        VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type, 0};
        ASSERT_EQ(vkCreateSemaphore(h.vk(), &sci, nullptr, &semaphore), VK_SUCCESS);
    }
    uint64_t recorded[in_flight] = {~0ull, ~0ull};
    // Nothing of vkml's own is in flight: whatever vkml would free "once its own work is done" goes
    // at once, while the host has not even submitted the frame.
    device.wait_idle();
    for (int i = 0; i < frames; ++i) {
        const int c = i % in_flight;
        // The host's fence for this command buffer tells it the frame recorded in_flight calls
        // earlier is complete, as Executor::record asks.
        ASSERT_EQ(vkWaitForFences(h.vk(), 1, &fences[c], VK_TRUE, 60'000'000'000ull), VK_SUCCESS);
        if (!timeline && recorded[c] != ~0ull) exec.frame_finished(recorded[c]);
        vkResetFences(h.vk(), 1, &fences[c]);
        vkResetCommandBuffer(cmds[c], 0);
        shift = shifts[i % 4];
        frame.graph.rebind(frame.readback, readbacks[i]->vk());
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        ASSERT_EQ(vkBeginCommandBuffer(cmds[c], &bi), VK_SUCCESS);
        const uint64_t signal = uint64_t(i) + 1;
        recorded[c] = timeline ? exec.record(frame.graph, cmds[c], semaphore, signal)
                               : exec.record(frame.graph, cmds[c]);
        EXPECT_EQ(recorded[c], uint64_t(i));
        ASSERT_EQ(vkEndCommandBuffer(cmds[c]), VK_SUCCESS);
        VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
        ti.signalSemaphoreValueCount = 1;
        ti.pSignalSemaphoreValues = &signal;
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, timeline ? &ti : nullptr};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmds[c];
        si.signalSemaphoreCount = timeline ? 1 : 0;
        si.pSignalSemaphores = &semaphore;
        ASSERT_EQ(vkQueueSubmit(h.graphics_queue(), 1, &si, fences[c]), VK_SUCCESS);
    }
    ASSERT_EQ(vkWaitForFences(h.vk(), in_flight, fences, VK_TRUE, 60'000'000'000ull), VK_SUCCESS);
    for (uint64_t f : recorded) exec.frame_finished(f); // the semaphore may go now
    if (device.caps().timestamps) {
        // The per-pass times of the host's last frame, read without waiting (gpu::Profiler::poll):
        // the host's work is done, so they are there, all on the host's graphics queue.
        std::set<std::string> names;
        for (const gpu::TimingRecord& r : exec.timings()) {
            names.insert(r.name);
            EXPECT_EQ(r.queue, gpu::QueueRole::Graphics) << r.name;
        }
        EXPECT_TRUE(names.contains("channel mix")) << exec.timing_table();
    }
    const Plan& plan = frame.graph.plan();
    EXPECT_FALSE(plan.uses_async_compute);
    EXPECT_EQ(plan.batches.size(), 1u);
    for (int i = 0; i < frames; ++i)
        EXPECT_EQ(bytes(*readbacks[i]), reference_frame(device, pipelines, op, o, shifts[i % 4])) << "frame " << i;

    for (VkFence f : fences) vkDestroyFence(h.vk(), f, nullptr);
    if (semaphore) vkDestroySemaphore(h.vk(), semaphore, nullptr);
    vkDestroyCommandPool(h.vk(), pool, nullptr);
}

TEST_F(FgGpu, RecordsIntoTheHostsCommandBuffer) {
    check_host_recording(host(), "host", 4, false);
    check_host_recording(host(), "host timeline", 4, true);
}

TEST_F(FgGpu, HostRecordingOutlivesTheCallWithoutPushDescriptors) {
    // Issue 15: without VK_KHR_push_descriptor the ML pass's descriptor sets come from pools; they
    // must live until the host's submission is done, not only until record() returns.
    Host h(HostDesc{.on_message = vkml::test::device_desc().on_message, .vkml_push_descriptors = false});
    ASSERT_FALSE(h.device().caps().push_descriptors);
    check_host_recording(h, "host pooled", 6, false);
    check_host_recording(h, "host pooled timeline", 6, true);
}

// scene -> to tensor (async compute) -> readback of the tensor; with a history the tensor pass
// reads the previous frame's render (fg::History), without it this frame's.
struct TensorFrame {
    FrameGraph graph;
    BufferHandle readback;
};
TensorFrame tensor_frame(const Pipelines& pipelines, History* history, const gpu::Buffer& readback,
                         const FrameOptions& o) {
    TensorFrame f{FrameGraph({.name = "history frame", .output_width = o.width, .output_height = o.height}),
                  {}};
    FrameGraph& g = f.graph;
    const ImageHandle scene = add_scene_pass(g, pipelines, o.shift);
    BufferHandle x = g.create_buffer("x", {.bytes_per_pixel = 3 * sizeof(float)});
    f.readback = import_readback(g, readback);
    const ImageHandle input =
        history ? history->begin(g, scene, o.width, o.height, Pipelines::color_format) : scene;
    PassBuilder tensor = g.add_compute_pass("to tensor");
    tensor.read(input);
    x = tensor.write(x);
    tensor.queue(Queue::AsyncCompute).record([&pipelines, input, x](PassContext& ctx) {
        pipelines.to_tensor(ctx.cmd(), ctx.view(input), ctx.layout(input), ctx.buffer(x), ctx.extent(input));
    });
    if (history) history->end(g);
    PassBuilder copy = g.add_transfer_pass("readback");
    copy.read(x, BufferRead::TransferSrc);
    f.readback = copy.write(f.readback, BufferWrite::TransferDst);
    copy.record([x, rb = f.readback](PassContext& ctx) {
        ctx.cmd().copy(ctx.buffer(x), ctx.buffer(rb), ctx.buffer(x).size);
    });
    return f;
}

TEST_F(FgGpu, HistoryCarriesTheRenderIntoTheNextFrame) {
    const float shifts[] = {0.f, 0.05f, -0.1f, 0.15f, 0.1f, -0.05f};
    constexpr int frames = int(std::size(shifts));
    float shift = 0;
    const FrameOptions o{.async_compute = true, .shift = &shift};
    Pipelines pipelines(dev());
    const auto make_readback = [&](int i) {
        return std::make_unique<gpu::Buffer>(
            dev(), gpu::BufferDesc{.size = uint64_t(o.width) * o.height * 3 * sizeof(float),
                                   .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                   .memory = gpu::MemoryUsage::Readback,
                                   .name = "history readback " + std::to_string(i)});
    };
    // Each render's own tensor, one frame at a time.
    std::vector<std::vector<uint8_t>> same;
    {
        const auto readback = make_readback(-1);
        TensorFrame f = tensor_frame(pipelines, nullptr, *readback, o);
        Executor exec(dev(), {.frames_in_flight = 1, .name = "same frame"});
        for (float s : shifts) {
            shift = s;
            exec.run(f.graph);
            exec.wait_idle();
            same.push_back(bytes(*readback));
        }
    }
    ASSERT_NE(same[0], same[1]) << "the shifts move the scene";

    // One frame behind, two frames in flight: frame 0 primes (same-frame), frame i >= 1 reads
    // render i - 1.
    History history(dev(), {.name = "render history"});
    Executor exec(dev(), {.frames_in_flight = 2, .name = "history"});
    std::vector<std::unique_ptr<gpu::Buffer>> readbacks;
    for (int i = 0; i < frames; ++i) readbacks.push_back(make_readback(i));
    std::optional<TensorFrame> f;
    for (int i = 0; i < frames; ++i) {
        if (!f || history.take_rebuild()) {
            exec.wait_idle(); // as a host re-declaring its graph
            f.reset();
            f.emplace(tensor_frame(pipelines, &history, *readbacks[size_t(i)], o));
            EXPECT_EQ(history.priming(), i == 0);
        }
        f->graph.rebind(f->readback, readbacks[size_t(i)]->vk());
        shift = shifts[i];
        exec.run(f->graph);
    }
    exec.wait_idle();
    for (int i = 0; i < frames; ++i)
        EXPECT_EQ(bytes(*readbacks[size_t(i)]), same[size_t(std::max(i - 1, 0))]) << "frame " << i;
}

TEST_F(FgGpu, PerPassTimestampsTableAndTrace) {
    if (!dev().caps().timestamps) GTEST_SKIP() << "no timestamps on this device";
    float shift = 0;
    const FrameOptions o{.async_compute = true, .shift = &shift};
    Pipelines pipelines(dev());
    ChannelMix op(dev(), o.width, o.height);
    const gpu::Image output = output_image(dev(), o);
    const auto readback = readback_buffer(dev(), o, 0);
    Frame frame = build_frame(pipelines, op, output, *readback, o);
    Executor exec(dev(), {.frames_in_flight = 2, .name = "timed"});
    for (int i = 0; i < 3; ++i) exec.run(frame.graph);
    exec.wait_idle();

    const std::vector<gpu::TimingRecord>& t = exec.timings();
    std::set<std::string> names;
    for (const gpu::TimingRecord& r : t) {
        names.insert(r.name);
        EXPECT_GE(r.start_us, 0.0) << r.name;
        EXPECT_GE(r.duration_us, 0.0) << r.name;
        const bool compute_pass = r.name == "to tensor" || r.name == "channel mix";
        const bool on_compute = frame.graph.plan().uses_async_compute && compute_pass;
        EXPECT_EQ(r.queue, on_compute ? gpu::QueueRole::Compute : gpu::QueueRole::Graphics) << r.name;
    }
    EXPECT_EQ(names,
              (std::set<std::string>{"scene", "to tensor", "channel mix", "composite", "post", "readback"}));
    EXPECT_NE(exec.timing_table().find("channel mix"), std::string::npos) << exec.timing_table();
    const auto trace = vkml::test::JsonParser::parse(exec.chrome_trace());
    ASSERT_TRUE(trace.has_value()) << exec.chrome_trace();
    const vkml::test::Json* events = trace->find("traceEvents");
    ASSERT_NE(events, nullptr);
    size_t complete = 0;
    for (const vkml::test::Json& e : events->items)
        if (const auto* ph = e.find("ph"); ph && ph->string == "X") ++complete;
    EXPECT_EQ(complete, 6u);
    const std::string dot = frame.graph.dump_graphviz();
    EXPECT_NE(dot.find("channel mix"), std::string::npos);
}

TEST_F(FgGpu, NewShapesRebuildResourcesAndStaleGraphsRecompile) {
    const FrameOptions small{.width = 24, .height = 16};
    const FrameOptions large{.width = 40, .height = 24};
    Pipelines pipelines(dev());
    Executor exec(dev(), {.frames_in_flight = 2, .name = "resize"});
    for (const FrameOptions& o : {small, small, large}) {
        ChannelMix op(dev(), o.width, o.height);
        const gpu::Image output = output_image(dev(), o);
        const auto readback = readback_buffer(dev(), o, 0);
        Frame frame = build_frame(pipelines, op, output, *readback, o); // a new graph each time
        for (int i = 0; i < 2; ++i) exec.run(frame.graph);
        exec.wait_idle();
        EXPECT_EQ(bytes(*readback), reference_frame(dev(), pipelines, op, o, 0.f))
            << o.width << "x" << o.height;
    }
    // Two slots for the small frames (reused by the second graph of the same shape), two more for
    // the large one.
    EXPECT_EQ(exec.resource_sets_created(), 4u);
}

// A buffer created with VK_SHARING_MODE_EXCLUSIVE, as an engine's own buffers often are.
struct ExclusiveBuffer {
    gpu::Device& device;
    VkBuffer buffer = VK_NULL_HANDLE;
    gpu::AllocationPtr memory;
    ExclusiveBuffer(gpu::Device& d, uint64_t size) : device(d) {
        VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        ci.size = size;
        ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
        EXPECT_EQ(vkCreateBuffer(d.vk(), &ci, nullptr, &buffer), VK_SUCCESS);
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(d.vk(), buffer, &req);
        memory = d.allocator().allocate(req, gpu::MemoryUsage::DeviceLocal, gpu::ResourceTiling::Linear);
        EXPECT_EQ(vkBindBufferMemory(d.vk(), buffer, memory->memory(), memory->offset()), VK_SUCCESS);
    }
    ~ExclusiveBuffer() { vkDestroyBuffer(device.vk(), buffer, nullptr); }
};

TEST_F(FgGpu, ExclusiveResourcesMoveBetweenQueueFamilies) {
    // An ML pass on the async compute queue writes the host's exclusive buffer; a copy on the
    // graphics queue reads it. With two families the graph transfers ownership there and back.
    const uint32_t w = 40, h = 24, plane = w * h;
    const uint64_t bytes = 3ull * plane * sizeof(float);
    ChannelMix op(dev(), w, h);
    auto x = std::make_shared<gpu::Buffer>(dev(), gpu::BufferDesc{.size = bytes, .name = "x"});
    const std::vector<float> input = vkml::test::random_floats(3 * plane, 7, 0.f, 1.f);
    gpu::upload(dev(), x->range(), std::as_bytes(std::span(input)));
    ExclusiveBuffer y(dev(), bytes);
    const auto readback =
        std::make_unique<gpu::Buffer>(dev(), gpu::BufferDesc{.size = bytes,
                                                             .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                                             .memory = gpu::MemoryUsage::Readback,
                                                             .name = "readback"});
    FrameGraph g({.name = "ownership"});
    BufferHandle in = g.import_buffer("x", {.vkml_buffer = x});
    // Owned by the graphics family between frames, last read by the previous frame's copy.
    BufferHandle out = g.import_buffer("y", {.buffer = y.buffer,
                                             .size = bytes,
                                             .exclusive = true,
                                             .incoming = {.stages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
                                                          .access = VK_ACCESS_2_TRANSFER_READ_BIT}});
    BufferHandle rb =
        g.import_buffer("readback", {.buffer = readback->vk(),
                                     .size = bytes,
                                     .incoming = {.stages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
                                                  .access = VK_ACCESS_2_TRANSFER_WRITE_BIT},
                                     .outgoing = ResourceState{.stages = VK_PIPELINE_STAGE_2_HOST_BIT,
                                                               .access = VK_ACCESS_2_HOST_READ_BIT}});
    PassBuilder ml = g.add_ml_pass("channel mix");
    ml.read(in);
    out = ml.write(out);
    ml.queue(Queue::AsyncCompute).record([&op, in, out](PassContext& ctx) {
        op.record_raw(ctx.cmd(), ctx.buffer(in), ctx.buffer(out));
    });
    PassBuilder copy = g.add_transfer_pass("copy out");
    copy.read(out, BufferRead::TransferSrc);
    rb = copy.write(rb, BufferWrite::TransferDst);
    copy.record(
        [out, rb, bytes](PassContext& ctx) { ctx.cmd().copy(ctx.buffer(out), ctx.buffer(rb), bytes); });

    Executor exec(dev(), {.name = "ownership"});
    for (int i = 0; i < 3; ++i) exec.run(g); // the buffer goes back and forth every frame
    exec.wait_idle();

    const Plan& plan = g.plan();
    size_t transfers = 0;
    for (const PlannedPass& p : plan.passes) {
        for (const Barrier& b : p.before) transfers += b.src_family != b.dst_family;
        for (const Barrier& b : p.after) transfers += b.src_family != b.dst_family;
    }
    const bool families = host().has_async_compute();
    EXPECT_EQ(transfers, families ? 4u : 0u) << "two release/acquire pairs per frame\n" << plan.summary();
    std::vector<float> expected(3 * plane), got(3 * plane);
    ChannelMix::reference(input.data(), expected.data(), plane);
    std::memcpy(got.data(), readback->mapped(), bytes);
    for (uint32_t i = 0; i < 3 * plane; ++i) ASSERT_NEAR(got[i], expected[i], 1e-5f) << "element " << i;
}

} // namespace
} // namespace vkml::fg::test
