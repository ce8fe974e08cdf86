// Frame-graph compile() without a GPU: fake imported handles, estimated memory sizes. Each test
// builds a small frame and checks the plan's culling, order, lifetimes, aliasing, barrier lists
// and cross-queue hand-offs against what they must be.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fg/plan.hpp"
#include "vkml/error.hpp"
#include "vkml/fg/executor.hpp"
#include "vkml/fg/frame_graph.hpp"
#include "vkml/fg/history.hpp"
#include "vkml/fg/ml_pass.hpp"

namespace vkml::fg {
namespace {

using Strings = std::vector<std::string>;

const RecordFn nop = [](PassContext&) {};

// A single-family device: async compute requests fall back to graphics.
const CompileOptions one_queue{};
// A device with an async compute family (1) beside the graphics family (0).
const CompileOptions two_queues{.graphics_family = 0, .compute_family = 1, .separate_compute_queue = true};

template <class T>
T fake(uintptr_t value) {
    return reinterpret_cast<T>(value);
}

ImportedImageDesc swapchain_image(uint32_t w = 64, uint32_t h = 32) {
    return {.image = fake<VkImage>(0x100),
            .view = fake<VkImageView>(0x101),
            .format = VK_FORMAT_B8G8R8A8_UNORM,
            .width = w,
            .height = h,
            .incoming = {.stages = VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT},
            .outgoing = ResourceState{.layout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR}};
}

Strings names(const Plan& plan) {
    Strings out;
    for (const PlannedPass& p : plan.passes) out.push_back(p.name);
    return out;
}

Strings before(const Plan& plan, const std::string& pass) {
    const uint32_t pos = plan.position(pass);
    EXPECT_NE(pos, no_index) << pass << " is not in the plan";
    return pos == no_index ? Strings{} : plan.describe(plan.passes[pos].before);
}

Strings after(const Plan& plan, const std::string& pass) {
    const uint32_t pos = plan.position(pass);
    EXPECT_NE(pos, no_index) << pass << " is not in the plan";
    return pos == no_index ? Strings{} : plan.describe(plan.passes[pos].after);
}

std::string compile_error(FrameGraph& graph, const CompileOptions& options = one_queue) {
    try {
        graph.compile(options);
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        return e.what();
    }
    ADD_FAILURE() << "compile() accepted the graph";
    return {};
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// --- culling --------------------------------------------------------------------------------

TEST(FgPlan, CullsPassesWhoseResultsNobodyReads) {
    FrameGraph g({.output_width = 64, .output_height = 32});
    ImageHandle unused = g.create_image("unused", {});
    BufferHandle stats = g.create_buffer("stats", {.size = 256});
    ImageHandle lit = g.create_image("lit", {});
    ImageHandle out = g.import_image("swapchain", swapchain_image());

    auto dead = g.add_compute_pass("dead");
    unused = dead.write(unused);
    dead.record(nop);
    auto shade = g.add_compute_pass("shade");
    lit = shade.write(lit);
    shade.record(nop);
    auto readback = g.add_transfer_pass("readback"); // kept: marked as having side effects
    stats = readback.write(stats, BufferWrite::TransferDst);
    readback.side_effect().record(nop);
    auto present = g.add_raster_pass("composite"); // kept: writes an imported image
    present.read(lit);
    out = present.color(out);
    present.record(nop);

    const Plan& plan = g.compile(one_queue);
    EXPECT_EQ(plan.culled, Strings{"dead"});
    EXPECT_EQ(names(plan), (Strings{"shade", "readback", "composite", "(departure on graphics)"}));
    EXPECT_FALSE(plan.resources[unused.index].used) << "only culled passes touch it: never created";
    EXPECT_TRUE(plan.resources[lit.index].used);
}

TEST(FgPlan, AWriteThatReplacesContentsDoesNotKeepTheEarlierWriter) {
    for (bool read_modify_write : {false, true}) {
        FrameGraph g({.output_width = 16, .output_height = 16});
        BufferHandle acc = g.create_buffer("acc", {.size = 1024});
        BufferHandle result = g.create_buffer("result", {.size = 1024});
        auto first = g.add_compute_pass("first");
        acc = first.write(acc);
        first.record(nop);
        auto second = g.add_compute_pass("second");
        acc = second.write(acc, read_modify_write ? BufferWrite::StorageReadWrite : BufferWrite::Storage);
        second.record(nop);
        auto use = g.add_compute_pass("use");
        use.read(acc);
        result = use.write(result);
        use.side_effect().record(nop);
        const Plan& plan = g.compile();
        EXPECT_EQ(plan.culled, read_modify_write ? Strings{} : Strings{"first"}) << read_modify_write;
    }
}

// --- declaration errors -----------------------------------------------------------------------

TEST(FgPlan, StaleHandleIsAnErrorNamingTheWriter) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    const ImageHandle v0 = g.import_image("history", swapchain_image());
    auto update = g.add_compute_pass("update");
    const ImageHandle v1 = update.write(v0);
    update.record(nop);
    EXPECT_EQ(v1.version, 1u);
    EXPECT_EQ(v1.index, v0.index);
    auto late = g.add_compute_pass("late reader");
    try {
        late.read(v0, ImageRead::Storage);
        FAIL() << "a stale handle was accepted";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_TRUE(contains(m, "pass 'late reader' uses a stale handle to 'history'")) << m;
        EXPECT_TRUE(contains(m, "pass 'update' wrote version 1")) << m;
    }
    late.read(v1, ImageRead::Storage); // the current one is fine
}

TEST(FgPlan, ReadingATransientNobodyWroteIsAnError) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    const ImageHandle t = g.create_image("fresh", {});
    auto p = g.add_raster_pass("sampler");
    try {
        p.read(t);
        FAIL() << "read of an unwritten transient accepted";
    } catch (const Error& e) {
        EXPECT_TRUE(contains(e.what(), "'fresh' before any pass wrote it")) << e.what();
    }
}

TEST(FgPlan, MisusesAreRejectedWhereTheyAreDeclared) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    ImageHandle color = g.create_image("color", {});
    ImageHandle depth = g.create_image("depth", {.format = VK_FORMAT_D32_SFLOAT});
    auto compute = g.add_compute_pass("compute");
    EXPECT_THROW((void)compute.color(color), Error) << "attachments belong to raster passes";
    auto raster = g.add_raster_pass("raster");
    EXPECT_THROW((void)raster.depth(color), Error) << "colour image as depth";
    EXPECT_THROW((void)raster.color(depth), Error) << "depth image as colour";
    EXPECT_THROW(raster.queue(Queue::AsyncCompute), Error) << "raster work needs the graphics queue";
    auto copy = g.add_transfer_pass("copy");
    EXPECT_THROW((void)copy.write(color, ImageWrite::Storage), Error) << "transfer passes only copy";
    EXPECT_THROW(g.create_image("color", {}), Error) << "duplicate name";
    EXPECT_THROW(compute.read(ImageHandle{}), Error) << "invalid handle";
}

TEST(FgPlan, ValidateReportsEveryProblemAtOnce) {
    FrameGraph g({.name = "broken"}); // no output extent
    ImageHandle a = g.create_image("a", {.width = 16, .height = 16});
    ImageHandle b = g.create_image("b", {.width = 32, .height = 32});
    ImageHandle rel = g.create_image("relative", {.scale = 0.5f});
    auto mismatched = g.add_raster_pass("mismatched");
    a = mismatched.color(a);
    b = mismatched.color(b);
    mismatched.side_effect().record(nop);
    auto silent = g.add_compute_pass("silent"); // no record()
    rel = silent.write(rel);
    silent.side_effect();
    const std::string m = compile_error(g);
    EXPECT_TRUE(contains(m, "frame graph 'broken' is invalid")) << m;
    EXPECT_TRUE(contains(m, "pass 'mismatched''s attachments differ in size")) << m;
    EXPECT_TRUE(contains(m, "pass 'silent' has no record() callback")) << m;
    EXPECT_TRUE(contains(m, "'relative' is sized relative to the output")) << m;
}

// --- order ----------------------------------------------------------------------------------

TEST(FgPlan, OrderIsStableAndStartsAsyncComputeEarly) {
    FrameGraph g({.output_width = 64, .output_height = 32});
    ImageHandle scene = g.create_image("scene", {});
    ImageHandle ui = g.create_image("ui", {});
    BufferHandle boxes = g.create_buffer("boxes", {.size = 4096});
    ImageHandle out = g.import_image("swapchain", swapchain_image());

    auto render = g.add_raster_pass("scene");
    scene = render.color(scene);
    render.record(nop);
    auto overlay = g.add_raster_pass("ui"); // independent of the detector
    ui = overlay.color(ui);
    overlay.record(nop);
    auto detect = g.add_ml_pass("detect");
    detect.read(scene);
    boxes = detect.write(boxes);
    detect.queue(Queue::AsyncCompute).record(nop);
    auto composite = g.add_raster_pass("composite");
    composite.read(scene);
    composite.read(ui);
    composite.read(boxes, BufferRead::Storage);
    out = composite.color(out);
    composite.record(nop);

    // One queue: declaration order.
    EXPECT_EQ(names(g.compile(one_queue)),
              (Strings{"scene", "ui", "detect", "composite", "(departure on graphics)"}));
    // Two queues: the detector moves up to start as soon as the scene is drawn.
    EXPECT_EQ(names(g.compile(two_queues)),
              (Strings{"scene", "detect", "ui", "composite", "(departure on graphics)"}));
}

TEST(FgPlan, AWriterWaitsForTheReadersOfTheVersionItReplaces) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    BufferHandle shared = g.import_buffer("shared", {.buffer = fake<VkBuffer>(0x10), .size = 64});
    BufferHandle copy = g.create_buffer("copy", {.size = 64});
    auto reader = g.add_transfer_pass("reader");
    reader.read(shared, BufferRead::TransferSrc);
    copy = reader.write(copy, BufferWrite::TransferDst);
    reader.side_effect().record(nop);
    auto writer = g.add_compute_pass("writer");
    shared = writer.write(shared);
    writer.queue(Queue::AsyncCompute).record(nop);
    // Async priority would put the writer first, but it must not overwrite what the reader reads.
    EXPECT_EQ(names(g.compile(two_queues))[0], "reader");
    const Plan& plan = g.plan();
    ASSERT_EQ(plan.batches.size(), 2u);
    EXPECT_EQ(plan.batches[1].queue, Queue::AsyncCompute);
    EXPECT_EQ(plan.batches[1].waits, (std::vector<BatchWait>{{0, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT}}));
}

// --- lifetimes and aliasing ------------------------------------------------------------------

// A chain of passes, each reading the previous transient and writing the next one.
FrameGraph chain(int links, TransientImageDesc desc = {}) {
    FrameGraph g({.output_width = 256, .output_height = 256});
    ImageHandle prev = g.create_image("t0", desc);
    auto first = g.add_compute_pass("p0");
    prev = first.write(prev);
    first.record(nop);
    for (int i = 1; i <= links; ++i) {
        ImageHandle next = g.create_image("t" + std::to_string(i), desc);
        auto p = g.add_compute_pass("p" + std::to_string(i));
        p.read(prev, ImageRead::Storage);
        next = p.write(next);
        p.record(nop);
        prev = next;
    }
    auto sink = g.add_compute_pass("sink");
    sink.read(prev, ImageRead::Storage);
    sink.side_effect().record(nop);
    return g;
}

TEST(FgPlan, LifetimesSpanFirstToLastUse) {
    FrameGraph g = chain(3);
    const Plan& plan = g.compile();
    for (uint32_t i = 0; i <= 3; ++i) {
        const PlannedResource& r = plan.resources[i];
        EXPECT_EQ(r.first, i) << r.name;
        EXPECT_EQ(r.last, i + 1) << r.name;
        EXPECT_EQ(r.image_usage, VkImageUsageFlags(VK_IMAGE_USAGE_STORAGE_BIT)) << r.name;
    }
}

TEST(FgPlan, TransientsThatAreNeverLiveTogetherShareMemory) {
    FrameGraph g = chain(5, {.width = 128, .height = 128}); // 64 KiB each, six of them
    const Plan& plan = g.compile();
    // t0 [0,1], t1 [1,2], t2 [2,3], ...: every other one can share, so two heaps serve all six.
    EXPECT_EQ(plan.heaps.size(), 2u);
    EXPECT_EQ(plan.transient_bytes, 6u * 65536);
    EXPECT_EQ(plan.allocated_bytes, 2u * 65536);
    EXPECT_EQ(plan.memory_saved(), 4u * 65536);
    EXPECT_EQ(plan.heaps[plan.resources[0].heap].resources, (std::vector<uint32_t>{0, 2, 4}));
    EXPECT_EQ(plan.heaps[plan.resources[1].heap].resources, (std::vector<uint32_t>{1, 3, 5}));
    EXPECT_TRUE(contains(plan.summary(), "saved")) << plan.summary();

    CompileOptions no_alias;
    no_alias.alias_memory = false;
    EXPECT_EQ(g.compile(no_alias).memory_saved(), 0u);
}

TEST(FgPlan, NoTwoSimultaneouslyLiveResourcesShareAHeap) {
    // A wider graph: resources of different sizes with overlapping lifetimes, on both queues.
    FrameGraph g({.output_width = 320, .output_height = 200});
    std::vector<ImageHandle> images;
    std::vector<BufferHandle> buffers;
    for (int i = 0; i < 6; ++i) {
        images.push_back(g.create_image("img" + std::to_string(i), {.scale = 1.f / float(1 + i % 3)}));
        buffers.push_back(g.create_buffer("buf" + std::to_string(i), {.size = 1024u << i}));
    }
    for (int i = 0; i < 6; ++i) {
        auto p = g.add_compute_pass("w" + std::to_string(i));
        images[i] = p.write(images[i]);
        buffers[i] = p.write(buffers[i]);
        if (i > 0) p.read(images[i - 1], ImageRead::Storage);
        if (i > 1) p.read(buffers[i - 2]);
        if (i % 2) p.queue(Queue::AsyncCompute);
        p.record(nop);
    }
    auto sink = g.add_compute_pass("sink");
    sink.read(images[5], ImageRead::Storage);
    sink.read(buffers[5]);
    sink.read(buffers[4]);
    sink.side_effect().record(nop);
    for (const CompileOptions& options : {one_queue, two_queues}) {
        const Plan& plan = g.compile(options);
        for (const AliasHeap& heap : plan.heaps)
            for (uint32_t a : heap.resources)
                for (uint32_t b : heap.resources) {
                    if (a == b) continue;
                    const PlannedResource &ra = plan.resources[a], &rb = plan.resources[b];
                    EXPECT_TRUE(ra.last < rb.first || rb.last < ra.first)
                        << ra.name << " [" << ra.first << "," << ra.last << "] and " << rb.name << " ["
                        << rb.first << "," << rb.last << "] share a heap";
                    EXPECT_EQ(ra.kind, rb.kind);
                    EXPECT_LE(ra.memory.size, heap.size);
                }
        for (const PlannedResource& r : plan.resources)
            if (r.queues == 3) {
                EXPECT_EQ(r.heap, no_index) << r.name << " is used on both queues";
            }
        EXPECT_GT(plan.memory_saved(), 0u);
    }
}

// --- barriers on one queue --------------------------------------------------------------------

TEST(FgPlan, ReadAfterWrite) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    ImageHandle img = g.create_image("img", {});
    BufferHandle buf = g.create_buffer("buf", {.size = 64});
    auto produce = g.add_compute_pass("produce");
    img = produce.write(img);
    buf = produce.write(buf, BufferWrite::TransferDst);
    produce.record(nop);
    auto consume = g.add_compute_pass("consume");
    consume.read(img, ImageRead::Storage);
    consume.read(buf, BufferRead::Uniform);
    consume.side_effect().record(nop);
    const Plan& plan = g.compile();
    // First use of a fresh image: just its layout; a fresh buffer needs nothing.
    EXPECT_EQ(before(plan, "produce"),
              Strings{"img: TOP_OF_PIPE/NONE -> COMPUTE_SHADER/SHADER_STORAGE_WRITE, UNDEFINED -> GENERAL"});
    EXPECT_EQ(
        before(plan, "consume"),
        (Strings{"img: COMPUTE_SHADER/SHADER_STORAGE_WRITE -> COMPUTE_SHADER/SHADER_STORAGE_READ, GENERAL",
                 "buf: TRANSFER/TRANSFER_WRITE -> COMPUTE_SHADER/UNIFORM_READ"}));
    ASSERT_EQ(plan.batches.size(), 1u);
    EXPECT_TRUE(plan.batches[0].waits.empty());
}

TEST(FgPlan, ConsecutiveReadsShareOneBarrier) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    ImageHandle color = g.create_image("color", {});
    ImageHandle a = g.create_image("a", {}), b = g.create_image("b", {});
    auto draw = g.add_raster_pass("draw");
    color = draw.color(color);
    draw.record(nop);
    auto blur = g.add_raster_pass("blur"); // samples in the fragment shader
    blur.read(color);
    a = blur.color(a);
    blur.record(nop);
    auto luma = g.add_compute_pass("luma"); // samples in a compute shader, same layout
    luma.read(color);
    b = luma.write(b);
    luma.record(nop);
    auto sink = g.add_compute_pass("sink");
    sink.read(a, ImageRead::Storage);
    sink.read(b, ImageRead::Storage);
    sink.side_effect().record(nop);
    const Plan& plan = g.compile();
    EXPECT_EQ(before(plan, "blur"),
              (Strings{"color: COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE -> "
                       "FRAGMENT_SHADER|COMPUTE_SHADER/SHADER_SAMPLED_READ, "
                       "COLOR_ATTACHMENT_OPTIMAL -> SHADER_READ_ONLY_OPTIMAL",
                       "a: TOP_OF_PIPE/NONE -> COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE, "
                       "UNDEFINED -> COLOR_ATTACHMENT_OPTIMAL"}));
    // The second reader is covered by the first one's barrier: only its own output's layout.
    EXPECT_EQ(before(plan, "luma"),
              Strings{"b: TOP_OF_PIPE/NONE -> COMPUTE_SHADER/SHADER_STORAGE_WRITE, UNDEFINED -> GENERAL"});
}

TEST(FgPlan, WriteAfterReadIsAnExecutionDependency) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    BufferHandle data = g.import_buffer("data", {.buffer = fake<VkBuffer>(0x20), .size = 256});
    BufferHandle copy = g.create_buffer("copy", {.size = 256});
    auto read = g.add_compute_pass("read");
    read.read(data);
    copy = read.write(copy);
    read.record(nop);
    auto overwrite = g.add_transfer_pass("overwrite");
    data = overwrite.write(data, BufferWrite::TransferDst);
    overwrite.record(nop);
    auto sink = g.add_compute_pass("sink");
    sink.read(copy);
    sink.side_effect().record(nop);
    const Plan& plan = g.compile();
    EXPECT_EQ(before(plan, "read"), Strings{}) << "imported with nothing pending: nothing to wait for";
    EXPECT_EQ(before(plan, "overwrite"), Strings{"data: COMPUTE_SHADER/NONE -> TRANSFER/NONE"})
        << "the reads only have to finish (fg::transition's rule)";
}

TEST(FgPlan, WriteAfterWrite) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    ImageHandle img = g.create_image("img", {});
    auto clear = g.add_transfer_pass("clear");
    img = clear.write(img, ImageWrite::TransferDst);
    clear.record(nop);
    auto splat = g.add_compute_pass("splat");
    img = splat.write(img, ImageWrite::StorageReadWrite);
    splat.record(nop);
    auto again = g.add_compute_pass("again");
    img = again.write(img, ImageWrite::StorageReadWrite);
    again.side_effect().record(nop);
    const Plan& plan = g.compile();
    EXPECT_EQ(
        before(plan, "splat"),
        Strings{"img: TRANSFER/TRANSFER_WRITE -> COMPUTE_SHADER/SHADER_STORAGE_READ|SHADER_STORAGE_WRITE, "
                "TRANSFER_DST_OPTIMAL -> GENERAL"});
    EXPECT_EQ(before(plan, "again"),
              Strings{"img: COMPUTE_SHADER/SHADER_STORAGE_READ|SHADER_STORAGE_WRITE -> "
                      "COMPUTE_SHADER/SHADER_STORAGE_READ|SHADER_STORAGE_WRITE, GENERAL"});
}

TEST(FgPlan, LayoutChangesBetweenReadsAndImportedStates) {
    FrameGraph g({.output_width = 64, .output_height = 32});
    ImageHandle color = g.create_image("color", {});
    ImageHandle out = g.import_image("swapchain", swapchain_image());
    BufferHandle pixels = g.create_buffer("pixels", {.size = 64 * 32 * 4});
    auto draw = g.add_raster_pass("draw");
    color = draw.color(color);
    draw.record(nop);
    auto post = g.add_raster_pass("post");
    post.read(color);
    out = post.color(out, {.load = LoadOp::DontCare});
    post.record(nop);
    auto save = g.add_transfer_pass("save"); // same image, now as a copy source
    save.read(color, ImageRead::TransferSrc);
    pixels = save.write(pixels, BufferWrite::TransferDst);
    save.side_effect().record(nop);
    const Plan& plan = g.compile();
    EXPECT_EQ(
        before(plan, "post"),
        (Strings{
            "color: COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE -> FRAGMENT_SHADER/SHADER_SAMPLED_READ, "
            "COLOR_ATTACHMENT_OPTIMAL -> SHADER_READ_ONLY_OPTIMAL",
            // The swapchain image arrives after the host's colour output (its acquire).
            "swapchain: COLOR_ATTACHMENT_OUTPUT/NONE -> COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE, "
            "UNDEFINED -> COLOR_ATTACHMENT_OPTIMAL"}));
    // A read in another layout still needs a transition, after the earlier reads only.
    EXPECT_EQ(before(plan, "save"), Strings{"color: FRAGMENT_SHADER/NONE -> TRANSFER/TRANSFER_READ, "
                                            "SHADER_READ_ONLY_OPTIMAL -> TRANSFER_SRC_OPTIMAL"});
    // And it leaves for presentation.
    EXPECT_EQ(before(plan, "(departure on graphics)"),
              Strings{"swapchain: COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE -> NONE/NONE, "
                      "COLOR_ATTACHMENT_OPTIMAL -> PRESENT_SRC"});
}

TEST(FgPlan, AliasedMemoryIsHandedOverWithABarrier) {
    FrameGraph g = chain(2, {.width = 64, .height = 64});
    const Plan& plan = g.compile();
    ASSERT_EQ(plan.resources[2].heap, plan.resources[0].heap);
    // t2 takes t0's memory at p2: after p1's last read of t0.
    EXPECT_EQ(
        before(plan, "p2"),
        (Strings{"t1: COMPUTE_SHADER/SHADER_STORAGE_WRITE -> COMPUTE_SHADER/SHADER_STORAGE_READ, GENERAL",
                 "t2: COMPUTE_SHADER/NONE -> COMPUTE_SHADER/SHADER_STORAGE_WRITE, UNDEFINED -> GENERAL"}));
}

// --- across queues ----------------------------------------------------------------------------

// scene (raster) -> upscale (ML, async) -> composite (raster) into an imported image.
FrameGraph render_ml_composite(bool exclusive_output, bool ml_writes_output) {
    FrameGraph g({.output_width = 64, .output_height = 32});
    ImageHandle scene = g.create_image("scene", {.scale = 0.5f});
    BufferHandle features = g.create_buffer("features", {.bytes_per_pixel = 16});
    ImportedImageDesc desc = swapchain_image();
    desc.exclusive = exclusive_output;
    desc.incoming = {};
    desc.outgoing = ResourceState{.stages = VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT,
                                  .access = VK_ACCESS_2_SHADER_SAMPLED_READ_BIT,
                                  .layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
    ImageHandle out = g.import_image("output", desc);

    auto draw = g.add_raster_pass("scene");
    scene = draw.color(scene);
    draw.record(nop);
    auto ml = g.add_ml_pass("upscale");
    ml.read(scene, ImageRead::Storage);
    features = ml.write(features);
    if (ml_writes_output) out = ml.write(out);
    ml.queue(Queue::AsyncCompute).record(nop);
    auto composite = g.add_raster_pass("composite");
    composite.read(features, BufferRead::Storage);
    if (!ml_writes_output)
        out = composite.color(out);
    else
        composite.read(out);
    if (ml_writes_output) {
        ImageHandle hud = g.create_image("hud", {});
        hud = composite.color(hud);
        composite.side_effect();
    }
    composite.record(nop);
    return g;
}

TEST(FgPlan, CrossQueueHandOffWithConcurrentSharing) {
    FrameGraph g = render_ml_composite(false, false);
    const Plan& plan = g.compile(two_queues);
    EXPECT_TRUE(plan.uses_async_compute);
    ASSERT_EQ(plan.batches.size(), 3u) << plan.summary();
    EXPECT_EQ(plan.batches[0].queue, Queue::Graphics);
    EXPECT_EQ(plan.batches[1].queue, Queue::AsyncCompute);
    EXPECT_EQ(plan.batches[2].queue, Queue::Graphics);
    EXPECT_EQ(plan.batches[1].waits, (std::vector<BatchWait>{{0, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT}}));
    EXPECT_EQ(plan.batches[2].waits, (std::vector<BatchWait>{{1, VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT}}));
    // The compute queue changes the layout itself, chained to its semaphore wait; the buffer
    // needs no barrier at all (the semaphore makes the writes visible).
    EXPECT_EQ(before(plan, "upscale"),
              Strings{"scene: COMPUTE_SHADER/NONE -> COMPUTE_SHADER/SHADER_STORAGE_READ, "
                      "COLOR_ATTACHMENT_OPTIMAL -> GENERAL"});
    EXPECT_EQ(before(plan, "composite"),
              Strings{"output: TOP_OF_PIPE/NONE -> COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE, "
                      "UNDEFINED -> COLOR_ATTACHMENT_OPTIMAL"});
    for (const PlannedPass& p : plan.passes)
        for (const Barrier& b : p.before) EXPECT_EQ(b.src_family, b.dst_family) << "concurrent: no transfers";
    // The features buffer lives on both queues: its memory is its own.
    EXPECT_EQ(plan.resources[1].heap, no_index);
}

TEST(FgPlan, CrossQueueHandOffTransfersOwnershipOfExclusiveResources) {
    FrameGraph g = render_ml_composite(true, true);
    const Plan& plan = g.compile(two_queues);
    // The output arrives (undefined, nothing pending) on graphics, is written by the ML pass on
    // the compute family, read by the composite on graphics, and leaves on graphics.
    EXPECT_EQ(names(plan), (Strings{"(arrival on graphics)", "scene", "upscale", "composite"}));
    EXPECT_EQ(after(plan, "(arrival on graphics)"),
              Strings{"output: NONE/NONE -> NONE/NONE, UNDEFINED -> GENERAL, family 0 -> 1"});
    EXPECT_EQ(
        before(plan, "upscale"),
        (Strings{"scene: COMPUTE_SHADER/NONE -> COMPUTE_SHADER/SHADER_STORAGE_READ, "
                 "COLOR_ATTACHMENT_OPTIMAL -> GENERAL",
                 "output: COMPUTE_SHADER/NONE -> COMPUTE_SHADER/SHADER_STORAGE_WRITE, UNDEFINED -> GENERAL, "
                 "family 0 -> 1"}));
    EXPECT_EQ(after(plan, "upscale"),
              Strings{"output: COMPUTE_SHADER/SHADER_STORAGE_WRITE -> NONE/NONE, GENERAL -> "
                      "SHADER_READ_ONLY_OPTIMAL, family 1 -> 0"});
    EXPECT_EQ(before(plan, "composite"),
              (Strings{"output: FRAGMENT_SHADER/NONE -> FRAGMENT_SHADER/SHADER_SAMPLED_READ, GENERAL -> "
                       "SHADER_READ_ONLY_OPTIMAL, family 1 -> 0",
                       "hud: TOP_OF_PIPE/NONE -> COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE, "
                       "UNDEFINED -> COLOR_ATTACHMENT_OPTIMAL"}));
    // Outgoing state = the composite's own read: no further barrier.
    EXPECT_EQ(plan.position("(departure on graphics)"), no_index) << plan.summary();
    ASSERT_EQ(plan.batches.size(), 3u) << plan.summary();
    EXPECT_EQ(plan.batches[1].waits, (std::vector<BatchWait>{{0, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT}}));
    EXPECT_EQ(plan.batches[2].waits, (std::vector<BatchWait>{{1, VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT}}));
}

TEST(FgPlan, WithoutAnAsyncQueueEverythingRunsOnGraphics) {
    FrameGraph g = render_ml_composite(true, true);
    const Plan& plan = g.compile(one_queue);
    EXPECT_FALSE(plan.uses_async_compute);
    ASSERT_EQ(plan.batches.size(), 1u);
    EXPECT_TRUE(plan.batches[0].waits.empty());
    for (const PlannedPass& p : plan.passes) {
        EXPECT_EQ(p.queue, Queue::Graphics);
        EXPECT_TRUE(p.after.empty()) << p.name;
        for (const Barrier& b : p.before) EXPECT_EQ(b.src_family, b.dst_family) << p.name;
    }
    ASSERT_EQ(plan.notes.size(), 1u);
    EXPECT_TRUE(contains(plan.notes[0], "pass 'upscale' asked for async compute")) << plan.notes[0];
    EXPECT_EQ(
        before(plan, "upscale"),
        (Strings{
            "scene: COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE -> COMPUTE_SHADER/SHADER_STORAGE_READ, "
            "COLOR_ATTACHMENT_OPTIMAL -> GENERAL",
            "output: TOP_OF_PIPE/NONE -> COMPUTE_SHADER/SHADER_STORAGE_WRITE, UNDEFINED -> GENERAL"}));
    // Async compute turned off on a two-queue device: the same single submission.
    CompileOptions off = two_queues;
    off.async_compute = false;
    EXPECT_EQ(g.compile(off).batches.size(), 1u);
}

TEST(FgPlan, ImportedWorkFromTheGraphicsQueueIsWaitedForByAsyncCompute) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    ImageHandle frame =
        g.import_image("host frame", {.image = fake<VkImage>(0x300),
                                      .view = fake<VkImageView>(0x301),
                                      .format = VK_FORMAT_R8G8B8A8_UNORM,
                                      .width = 8,
                                      .height = 8,
                                      .incoming = {.stages = VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT,
                                                   .access = VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT,
                                                   .layout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL}});
    BufferHandle boxes = g.create_buffer("boxes", {.size = 1024});
    auto detect = g.add_ml_pass("detect");
    detect.read(frame);
    boxes = detect.write(boxes);
    detect.queue(Queue::AsyncCompute).side_effect().record(nop);
    const Plan& plan = g.compile(two_queues);
    EXPECT_EQ(names(plan), (Strings{"(arrival on graphics)", "detect"}));
    ASSERT_EQ(plan.batches.size(), 2u);
    EXPECT_EQ(plan.batches[1].waits, (std::vector<BatchWait>{{0, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT}}));
    EXPECT_EQ(before(plan, "detect"),
              Strings{"host frame: COMPUTE_SHADER/NONE -> COMPUTE_SHADER/SHADER_SAMPLED_READ, "
                      "COLOR_ATTACHMENT_OPTIMAL -> SHADER_READ_ONLY_OPTIMAL"});
}

TEST(FgPlan, WaitsDelayOnlyTheWorkThatNeedsThem) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    BufferHandle a = g.create_buffer("a", {.size = 64}), b = g.create_buffer("b", {.size = 64});
    BufferHandle c = g.create_buffer("c", {.size = 64});
    auto produce = g.add_compute_pass("produce");
    a = produce.write(a);
    produce.record(nop);
    auto ml = g.add_ml_pass("ml");
    ml.read(a);
    b = ml.write(b);
    ml.queue(Queue::AsyncCompute).record(nop);
    auto independent = g.add_compute_pass("independent");
    c = independent.write(c);
    independent.record(nop);
    auto consume = g.add_compute_pass("consume");
    consume.read(b);
    consume.read(c);
    consume.side_effect().record(nop);
    const Plan& plan = g.compile(two_queues);
    EXPECT_EQ(names(plan), (Strings{"produce", "ml", "independent", "consume"}));
    ASSERT_EQ(plan.batches.size(), 4u) << plan.summary();
    // produce | ml (waits produce) | independent (no wait) | consume (waits ml)
    EXPECT_EQ(plan.batches[0].passes, std::vector<uint32_t>{0});
    EXPECT_EQ(plan.batches[1].passes, std::vector<uint32_t>{1});
    EXPECT_EQ(plan.batches[2].passes, std::vector<uint32_t>{2});
    EXPECT_TRUE(plan.batches[2].waits.empty());
    EXPECT_EQ(plan.batches[3].passes, std::vector<uint32_t>{3});
    EXPECT_EQ(plan.batches[3].waits, (std::vector<BatchWait>{{1, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT}}));
    EXPECT_EQ(before(plan, "consume"),
              Strings{"c: COMPUTE_SHADER/SHADER_STORAGE_WRITE -> COMPUTE_SHADER/SHADER_STORAGE_READ"});
}

TEST(FgPlan, ReadersOnBothQueuesShareTheWritersTransition) {
    FrameGraph g({.output_width = 8, .output_height = 8});
    ImageHandle scene = g.create_image("scene", {});
    BufferHandle tensor = g.create_buffer("tensor", {.size = 768});
    ImageHandle out = g.import_image("swapchain", swapchain_image(8, 8));
    auto draw = g.add_raster_pass("scene");
    scene = draw.color(scene);
    draw.record(nop);
    auto detect = g.add_ml_pass("detect"); // samples the scene on the compute queue
    detect.read(scene);
    tensor = detect.write(tensor);
    detect.queue(Queue::AsyncCompute).side_effect().record(nop);
    auto composite = g.add_raster_pass("composite"); // and so does the graphics queue
    composite.read(scene);
    out = composite.color(out);
    composite.record(nop);
    const Plan& plan = g.compile(two_queues);
    // One transition, on the graphics queue right after the write, for both readers.
    EXPECT_EQ(
        after(plan, "scene"),
        Strings{
            "scene: COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE -> FRAGMENT_SHADER/SHADER_SAMPLED_READ, "
            "COLOR_ATTACHMENT_OPTIMAL -> SHADER_READ_ONLY_OPTIMAL"});
    EXPECT_EQ(before(plan, "detect"), Strings{});
    EXPECT_EQ(
        before(plan, "composite"),
        Strings{"swapchain: COLOR_ATTACHMENT_OUTPUT/NONE -> COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE, "
                "UNDEFINED -> COLOR_ATTACHMENT_OPTIMAL"});
    // The composite does not wait for the detector: the two overlap.
    for (const Batch& b : plan.batches)
        if (b.queue == Queue::Graphics) {
            EXPECT_TRUE(b.waits.empty()) << plan.summary();
        }
    EXPECT_EQ(plan.batches.size(), 3u) << plan.summary();
}

TEST(FgPlan, LeavingForPresentationAfterAsyncComputeWaitsOnTheGraphicsQueue) {
    for (bool exclusive : {false, true}) {
        FrameGraph g({.output_width = 64, .output_height = 32});
        ImportedImageDesc desc = swapchain_image();
        desc.exclusive = exclusive;
        desc.incoming = {};
        ImageHandle out = g.import_image("swapchain", desc);
        auto post = g.add_compute_pass("post"); // writes the swapchain image on the compute queue
        out = post.write(out);
        post.queue(Queue::AsyncCompute).record(nop);
        const Plan& plan = g.compile(two_queues);
        // The host presents from the graphics queue: the departure waits for the compute queue at
        // every stage (it names none), and the layout changes there.
        ASSERT_EQ(plan.batches.size(), exclusive ? 3u : 2u) << plan.summary();
        const Batch& last = plan.batches.back();
        EXPECT_EQ(last.queue, Queue::Graphics);
        EXPECT_EQ(last.waits, (std::vector<BatchWait>{{uint32_t(plan.batches.size() - 2),
                                                       VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT}}));
        const std::string family = exclusive ? ", family 1 -> 0" : "";
        EXPECT_EQ(before(plan, "(departure on graphics)"),
                  Strings{"swapchain: ALL_COMMANDS/NONE -> NONE/NONE, GENERAL -> PRESENT_SRC" + family});
        if (exclusive) {
            EXPECT_EQ(after(plan, "post"),
                      Strings{"swapchain: COMPUTE_SHADER/SHADER_STORAGE_WRITE -> NONE/NONE, "
                              "GENERAL -> PRESENT_SRC, family 1 -> 0"});
        }
    }
}

// --- history (an image carried from one frame to the next) ------------------------------------

const HistoryStorage history_image{.image = fake<VkImage>(0x500),
                                   .view = fake<VkImageView>(0x501),
                                   .format = VK_FORMAT_R8G8B8A8_UNORM,
                                   .width = 16,
                                   .height = 8};

// render -> (history) -> ML on the async queue -> composite, as a sample declares it.
FrameGraph history_frame(History& history) {
    FrameGraph g({.output_width = 16, .output_height = 8});
    ImageHandle color = g.create_image("color", {.width = 16, .height = 8});
    ImageHandle out = g.create_image("out", {.width = 16, .height = 8});
    BufferHandle result = g.create_buffer("result", {.size = 1024});
    auto render = g.add_raster_pass("render");
    color = render.color(color);
    render.record(nop);
    const ImageHandle input = history.begin(g, color, 16, 8, VK_FORMAT_R8G8B8A8_UNORM);
    auto ml = g.add_ml_pass("ml");
    ml.read(input);
    result = ml.write(result);
    ml.queue(Queue::AsyncCompute).record(nop);
    history.end(g);
    auto composite = g.add_raster_pass("composite");
    composite.read(color);
    composite.read(result, BufferRead::Storage);
    out = composite.color(out);
    composite.side_effect().record(nop);
    return g;
}

TEST(FgHistory, FirstFramePrimesSameFrameThenAsksForTheSteadyGraph) {
    History history({.name = "history"});
    history.set_storage(history_image);
    FrameGraph g = history_frame(history);
    EXPECT_TRUE(history.priming());
    const Plan& plan = g.compile(two_queues);
    // Nothing to read yet: the store comes first (this frame's render), the ML pass reads it.
    EXPECT_EQ(names(plan), (Strings{"render", "history store", "ml", "composite", "(departure on graphics)"}))
        << plan.summary();
    EXPECT_EQ(
        before(plan, "history store"),
        (Strings{"color: COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE -> TRANSFER/TRANSFER_READ, "
                 "COLOR_ATTACHMENT_OPTIMAL -> TRANSFER_SRC_OPTIMAL",
                 "history: TOP_OF_PIPE/NONE -> TRANSFER/TRANSFER_WRITE, UNDEFINED -> TRANSFER_DST_OPTIMAL"}));
    EXPECT_TRUE(history.take_rebuild());
    EXPECT_FALSE(history.take_rebuild()) << "once";
}

TEST(FgHistory, SteadyFrameReadsThePreviousFrameBesideTheRender) {
    History history({.name = "history"});
    history.set_storage(history_image);
    FrameGraph first = history_frame(history);
    ASSERT_TRUE(history.take_rebuild());
    FrameGraph g = history_frame(history);
    EXPECT_FALSE(history.priming());
    EXPECT_FALSE(history.take_rebuild());
    const Plan& plan = g.compile(two_queues);
    // The ML pass reads last frame's image on the async queue, waiting for nothing of this frame;
    // the store replaces it after that read, then the composite.
    EXPECT_EQ(names(plan), (Strings{"ml", "render", "history store", "composite", "(departure on graphics)"}))
        << plan.summary();
    ASSERT_EQ(plan.batches.size(), 3u) << plan.summary();
    EXPECT_EQ(plan.batches[0].queue, Queue::AsyncCompute);
    EXPECT_TRUE(plan.batches[0].waits.empty()) << "the ML pass waits for nothing of this frame";
    EXPECT_TRUE(before(plan, "ml").empty()) << "it arrives in the state the readers use";
    EXPECT_EQ(plan.batches[1].queue, Queue::Graphics);
    EXPECT_TRUE(plan.batches[1].waits.empty()) << "the render runs beside it";
    // Write after read across queues: the store waits for the ML pass (semaphore), then replaces
    // the image; the composite follows.
    EXPECT_EQ(plan.batches[2].passes.front(), plan.position("history store"));
    EXPECT_EQ(plan.batches[2].waits, (std::vector<BatchWait>{{0, VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT |
                                                                     VK_PIPELINE_STAGE_2_TRANSFER_BIT}}));
    EXPECT_EQ(before(plan, "history store"),
              (Strings{"color: COLOR_ATTACHMENT_OUTPUT/COLOR_ATTACHMENT_WRITE -> TRANSFER/TRANSFER_READ, "
                       "COLOR_ATTACHMENT_OPTIMAL -> TRANSFER_SRC_OPTIMAL",
                       "history: TRANSFER/NONE -> TRANSFER/TRANSFER_WRITE, "
                       "SHADER_READ_ONLY_OPTIMAL -> TRANSFER_DST_OPTIMAL"}));
    // It rests for the next frame in the readers' state.
    EXPECT_EQ(
        before(plan, "(departure on graphics)"),
        Strings{"history: TRANSFER/TRANSFER_WRITE -> COMPUTE_SHADER/SHADER_SAMPLED_READ|SHADER_STORAGE_READ, "
                "TRANSFER_DST_OPTIMAL -> SHADER_READ_ONLY_OPTIMAL"});
}

TEST(FgHistory, OnOneQueueTheStoreWaitsForTheRead) {
    History history;
    history.set_storage(history_image);
    FrameGraph first = history_frame(history);
    history.take_rebuild();
    FrameGraph g = history_frame(history);
    const Plan& plan = g.compile(one_queue);
    EXPECT_EQ(names(plan), (Strings{"render", "ml", "history store", "composite", "(departure on graphics)"}))
        << plan.summary();
    ASSERT_EQ(plan.batches.size(), 1u);
    EXPECT_TRUE(before(plan, "ml").empty());
    // Write after read on one queue: an execution dependency on the ML pass's shader.
    const Strings store = before(plan, "history store");
    ASSERT_EQ(store.size(), 2u);
    EXPECT_EQ(store[1], "history: COMPUTE_SHADER/NONE -> TRANSFER/TRANSFER_WRITE, "
                        "SHADER_READ_ONLY_OPTIMAL -> TRANSFER_DST_OPTIMAL");
}

TEST(FgHistory, InvalidatedOrNewStoragePrimesAgain) {
    History history;
    history.set_storage(history_image);
    FrameGraph a = history_frame(history);
    EXPECT_TRUE(history.priming());
    FrameGraph b = history_frame(history);
    EXPECT_FALSE(history.priming());
    history.invalidate(); // a frame that did not use it
    FrameGraph c = history_frame(history);
    EXPECT_TRUE(history.priming());
    FrameGraph d = history_frame(history);
    EXPECT_FALSE(history.priming());
    history.set_storage(history_image); // another image: nothing in it
    FrameGraph e = history_frame(history);
    EXPECT_TRUE(history.priming());
}

TEST(FgHistory, MisusesAreErrors) {
    History none;
    FrameGraph g({.output_width = 16, .output_height = 8});
    ImageHandle color = g.create_image("color", {.width = 16, .height = 8});
    EXPECT_THROW(none.begin(g, color, 16, 8, VK_FORMAT_R8G8B8A8_UNORM), Error); // no image
    History history({.name = "taa"});
    history.set_storage(history_image);
    try {
        history.begin(g, color, 32, 8, VK_FORMAT_R8G8B8A8_UNORM);
        ADD_FAILURE() << "a size the image does not have";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_TRUE(contains(e.what(), "history 'taa'")) << e.what();
    }
    EXPECT_THROW(history.end(g), Error); // without begin()
}

TEST(FgPlan, GraphvizShowsPassesResourcesAndThePlan) {
    FrameGraph g = render_ml_composite(false, false);
    g.compile(two_queues);
    const std::string dot = g.dump_graphviz();
    EXPECT_TRUE(contains(dot, "digraph")) << dot;
    EXPECT_TRUE(contains(dot, "upscale\\nml, async compute")) << dot;
    EXPECT_TRUE(contains(dot, "peripheries=2")) << "ML passes are drawn apart";
    EXPECT_TRUE(contains(dot, "features v1")) << dot;
}

// The integration guide's snippet (docs/frame_graph.md), kept compiling here.
void my_image_to_tensor(VkCommandBuffer, VkImageView, const gpu::BufferRange&) {}
void my_composite(VkCommandBuffer, const gpu::BufferRange&) {}
[[maybe_unused]] void docs_snippet(Executor& executor, const ops::Op& upscale_op,
                                   VkCommandBuffer my_command_buffer, VkImage scene_img,
                                   VkImageView scene_view, VkImage sc_img, VkImageView sc_view,
                                   VkFormat sc_format) {
    namespace fg = vkml::fg;
    // clang-format off
fg::FrameGraph graph({.name = "upscale", .output_width = 1920, .output_height = 1080});
auto color = graph.import_image("scene", {.image = scene_img, .view = scene_view, .format = VK_FORMAT_R8G8B8A8_UNORM,
    .width = 960, .height = 540, .incoming = {.stages = VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT,
    .access = VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT, .layout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL}});
auto out = graph.import_image("swapchain", {.image = sc_img, .view = sc_view, .format = sc_format, .width = 1920,
    .height = 1080, .outgoing = fg::ResourceState{.layout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR}});
auto x = graph.create_buffer("x", {.size = 3 * 960 * 540 * 4}), y = graph.create_buffer("y", {.bytes_per_pixel = 12});
auto pre = graph.add_compute_pass("to tensor"); pre.read(color, fg::ImageRead::Storage); x = pre.write(x);
pre.record([&, color, x](fg::PassContext& c) { my_image_to_tensor(c.vk(), c.view(color), c.buffer(x)); });
y = fg::add_op_pass(graph, "upscale", upscale_op, std::array{x}, std::array{y})[0];
auto post = graph.add_raster_pass("composite"); post.read(y); out = post.color(out, {.load = fg::LoadOp::DontCare});
post.record([&, y](fg::PassContext& c) { my_composite(c.vk(), c.buffer(y)); });
executor.record(graph, my_command_buffer); // fg::Executor executor(device); created once
                                               // clang-format on
}

} // namespace
} // namespace vkml::fg
