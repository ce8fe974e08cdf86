// passes::Overlay in a frame graph on a real device (lavapipe in CI), validation and
// synchronization validation on: random backgrounds uploaded into a transient image, random items
// (different every frame) blended by the overlay pass, the image read back; 4 frames with 2 in
// flight. RGBA8 must equal the CPU drawing of the same items bit for bit; RGBA16F must equal the
// double-precision reference within f16 precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "reference.hpp"
#include "vkml/error.hpp"
#include "vkml/fg/executor.hpp"
#include "vkml/fg/frame_graph.hpp"
#include "vkml/gpu/half.hpp"
#include "vkml/passes/overlay.hpp"

namespace vkml::passes::test {
namespace {

using vkml::test::GpuTest;

constexpr int width = 83, height = 45; // not multiples of the 16-pixel tiles

void queue(Overlay& overlay, const std::vector<TestItem>& items) {
    overlay.clear();
    for (const TestItem& it : items) {
        switch (it.kind) {
        case Kind::Text:
            overlay.text(it.x0, it.y0, it.text, it.color, it.scale, it.background);
            break;
        case Kind::Rect:
            overlay.rect(it.x0, it.y0, it.x1, it.y1, it.color, it.thickness);
            break;
        case Kind::Fill:
            overlay.fill(it.x0, it.y0, it.x1, it.y1, it.color);
            break;
        }
    }
}

// One frame: upload `src` into a transient image, the overlay pass, read the image back into `dst`.
struct OverlayFrame {
    fg::FrameGraph graph{{.name = "overlay test"}};
    fg::BufferHandle src, dst;
};

std::unique_ptr<OverlayFrame> build(Overlay& overlay, VkFormat format, uint32_t texel, VkBuffer src0,
                                    VkBuffer dst0) {
    auto f = std::make_unique<OverlayFrame>();
    fg::FrameGraph& g = f->graph;
    const uint64_t bytes = uint64_t(width) * height * texel;
    f->src = g.import_buffer("background", {.buffer = src0, .size = bytes});
    f->dst = g.import_buffer("readback", {.buffer = dst0, .size = bytes});
    fg::ImageHandle image = g.create_image("target", {.format = format, .width = width, .height = height});
    const VkBufferImageCopy region{
        0, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, {0, 0, 0}, {width, height, 1}};

    fg::PassBuilder up = g.add_transfer_pass("upload");
    up.read(f->src, fg::BufferRead::TransferSrc);
    image = up.write(image, fg::ImageWrite::TransferDst);
    up.record([src = f->src, image, region](fg::PassContext& ctx) {
        vkCmdCopyBufferToImage(ctx.vk(), ctx.buffer(src).buffer, ctx.image(image), ctx.layout(image), 1,
                               &region);
    });

    image = overlay.add_pass(g, image);

    fg::PassBuilder down = g.add_transfer_pass("readback");
    down.read(image, fg::ImageRead::TransferSrc);
    const fg::BufferHandle dst = down.write(f->dst, fg::BufferWrite::TransferDst);
    down.side_effect();
    down.record([dst, image, region](fg::PassContext& ctx) {
        vkCmdCopyImageToBuffer(ctx.vk(), ctx.image(image), ctx.layout(image), ctx.buffer(dst).buffer, 1,
                               &region);
    });
    return f;
}

std::vector<uint8_t> random_background(uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> v(size_t(width) * height * 4);
    for (auto& b : v) b = uint8_t(rng() & 0xff);
    return v;
}

// Runs `frames` frames with 2 in flight on `device`, each with its own background and items, and
// checks each frame's readback.
void check_frames(gpu::Device& device, VkFormat format, int frames, int items_per_frame) {
    const bool half = format == VK_FORMAT_R16G16B16A16_SFLOAT;
    const uint32_t texel = half ? 8 : 4;
    const uint64_t bytes = uint64_t(width) * height * texel;
    std::vector<std::unique_ptr<gpu::Buffer>> ups, downs;
    std::vector<std::vector<uint8_t>> backgrounds;
    std::vector<std::vector<TestItem>> items;
    for (int i = 0; i < frames; ++i) {
        ups.push_back(std::make_unique<gpu::Buffer>(
            device, gpu::BufferDesc{.size = bytes,
                                    .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                    .memory = gpu::MemoryUsage::Upload,
                                    .name = "background " + std::to_string(i)}));
        downs.push_back(
            std::make_unique<gpu::Buffer>(device, gpu::BufferDesc{.size = bytes,
                                                                  .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                                                  .memory = gpu::MemoryUsage::Readback,
                                                                  .name = "readback " + std::to_string(i)}));
        backgrounds.push_back(random_background(uint32_t(100 + i)));
        items.push_back(random_items(uint32_t(500 + i + (half ? 1000 : 0)), width, height, items_per_frame));
        if (half) {
            auto* h = reinterpret_cast<uint16_t*>(ups[size_t(i)]->mapped());
            for (size_t k = 0; k < backgrounds[size_t(i)].size(); ++k)
                h[k] = gpu::float_to_half(float(backgrounds[size_t(i)][k] / 255.0));
        } else {
            std::memcpy(ups[size_t(i)]->mapped(), backgrounds[size_t(i)].data(), bytes);
        }
    }

    Overlay overlay(device, 2);
    auto frame = build(overlay, format, texel, ups[0]->vk(), downs[0]->vk());
    {
        fg::Executor exec(device, {.frames_in_flight = 2, .name = "overlay"});
        for (int i = 0; i < frames; ++i) {
            // The items are read when the pass records, so queueing right before run() is enough
            // even while the previous frame is still on the GPU.
            queue(overlay, items[size_t(i)]);
            frame->graph.rebind(frame->src, ups[size_t(i)]->vk());
            frame->graph.rebind(frame->dst, downs[size_t(i)]->vk());
            exec.run(frame->graph);
        }
        exec.wait_idle();
    }

    for (int i = 0; i < frames; ++i) {
        const std::vector<uint8_t>& bg = backgrounds[size_t(i)];
        size_t bad = 0, changed = 0;
        if (!half) {
            std::vector<uint8_t> want = bg;
            library_draw({want.data(), width, height, width * 4, 4}, items[size_t(i)]);
            const auto* got = reinterpret_cast<const uint8_t*>(downs[size_t(i)]->mapped());
            for (size_t k = 0; k < want.size(); ++k) {
                bad += got[k] != want[k];
                changed += want[k] != bg[k];
            }
        } else {
            // Double-precision "over" on the f16 background, no rounding between layers.
            const auto* got = reinterpret_cast<const uint16_t*>(downs[size_t(i)]->mapped());
            for (int y = 0; y < height; ++y)
                for (int x = 0; x < width; ++x) {
                    const size_t p = (size_t(y) * width + x) * 4;
                    double v[4];
                    for (int c = 0; c < 4; ++c)
                        v[c] = gpu::half_to_float(gpu::float_to_half(float(bg[p + c] / 255.0)));
                    for (const TestItem& it : items[size_t(i)])
                        for (const Rgba& col : layers(it, x, y)) {
                            const double src[4] = {col.r / 255.0, col.g / 255.0, col.b / 255.0, 1.0};
                            const double a = col.a / 255.0;
                            for (int c = 0; c < 4; ++c) v[c] = src[c] * a + v[c] * (1 - a);
                        }
                    for (int c = 0; c < 4; ++c) {
                        const double g = gpu::half_to_float(got[p + size_t(c)]);
                        if (std::abs(g - v[c]) > 1.5e-3) {
                            if (bad < 5)
                                ADD_FAILURE() << "frame " << i << " pixel " << x << "," << y << " channel "
                                              << c << ": " << g << " vs " << v[c];
                            ++bad;
                        }
                        changed += std::abs(v[c] - bg[p + size_t(c)] / 255.0) > 2e-3;
                    }
                }
        }
        EXPECT_EQ(bad, 0u) << "frame " << i;
        EXPECT_GT(changed, size_t(width) * height / 4)
            << "frame " << i << ": the items must cover a good part";
    }
}

class OverlayGpu : public GpuTest {};

TEST_F(OverlayGpu, Rgba8EqualsCpuDrawingWithFramesInFlight) {
    check_frames(dev(), VK_FORMAT_R8G8B8A8_UNORM, 4, 12);
}

TEST_F(OverlayGpu, Rgba16fMatchesDoublePrecisionReference) {
    check_frames(dev(), VK_FORMAT_R16G16B16A16_SFLOAT, 4, 12);
}

// Descriptor sets instead of push descriptors (hosts that lack VK_KHR_push_descriptor).
TEST_F(OverlayGpu, WithoutPushDescriptors) {
    gpu::DeviceDesc desc = vkml::test::device_desc();
    desc.use_push_descriptors = false;
    auto device = gpu::Device::create(desc);
    ASSERT_FALSE(device->caps().push_descriptors);
    check_frames(*device, VK_FORMAT_R8G8B8A8_UNORM, 3, 8);
}

// Nothing queued, or nothing visible: the image passes through unchanged.
TEST_F(OverlayGpu, NoVisibleItemsLeavesTheImage) {
    const uint64_t bytes = uint64_t(width) * height * 4;
    gpu::Buffer up(
        dev(),
        {.size = bytes, .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT, .memory = gpu::MemoryUsage::Upload});
    gpu::Buffer down(
        dev(),
        {.size = bytes, .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT, .memory = gpu::MemoryUsage::Readback});
    const std::vector<uint8_t> bg = random_background(7);
    std::memcpy(up.mapped(), bg.data(), bytes);
    Overlay overlay(dev());
    auto frame = build(overlay, VK_FORMAT_R8G8B8A8_UNORM, 4, up.vk(), down.vk());
    fg::Executor exec(dev(), {.frames_in_flight = 2, .name = "overlay empty"});
    exec.run(frame->graph);
    overlay.fill(-50, -50, -1, -1, {255, 0, 0, 255});                   // left of and above the image
    overlay.text(width, 0, "right of it", {255, 0, 0, 255}, 1, Rgba{}); // right of the image
    overlay.rect(0, height, width, height + 40, {255, 0, 0, 255}, 3);   // below it
    EXPECT_EQ(overlay.item_count(), 4u);
    exec.run(frame->graph);
    exec.wait_idle();
    EXPECT_EQ(std::memcmp(down.mapped(), bg.data(), bytes), 0);
}

TEST_F(OverlayGpu, UnsupportedFormatIsAClearError) {
    Overlay overlay(dev());
    overlay.fill(0, 0, 4, 4, {255, 0, 0, 255});
    fg::FrameGraph g({.name = "overlay r32f"});
    fg::ImageHandle image = g.create_image("r32f", {.format = VK_FORMAT_R32_SFLOAT, .width = 8, .height = 8});
    fg::PassBuilder clear = g.add_transfer_pass("clear");
    image = clear.write(image, fg::ImageWrite::TransferDst);
    clear.record([image](fg::PassContext& ctx) {
        const VkClearColorValue zero{};
        const VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
        vkCmdClearColorImage(ctx.vk(), ctx.image(image), ctx.layout(image), &zero, 1, &range);
    });
    image = overlay.add_pass(g, image);
    fg::PassBuilder sink = g.add_compute_pass("sink");
    sink.read(image, fg::ImageRead::Storage);
    sink.side_effect().record([](fg::PassContext&) {});
    fg::Executor exec(dev(), {.frames_in_flight = 1, .name = "overlay r32f"});
    try {
        exec.run(g);
        ADD_FAILURE() << "an R32_SFLOAT target must be refused";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_NE(std::string(e.what()).find("VK_FORMAT_R8G8B8A8_UNORM"), std::string::npos) << e.what();
    }
    exec.wait_idle();
}

} // namespace
} // namespace vkml::passes::test
