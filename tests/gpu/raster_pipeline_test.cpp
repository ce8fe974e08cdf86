// Raster pipelines of the core (gpu::GraphicsPipelineDesc): built and cached by the PipelineCache
// like compute ones, drawn with CommandBuffer::draw inside dynamic rendering. A vertex-less
// fullscreen triangle in one colour, then another with alpha blending over it; exact bytes.
#include <array>
#include <span>
#include <vector>

#include "gpu_test.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::test {
namespace {

TEST_F(GpuTest, RasterPipelineDrawsVertexlessAndBlends) {
    gpu::Device& d = dev();
    constexpr uint32_t width = 8, height = 6;
    const gpu::Image target(d,
                            {.width = width,
                             .height = height,
                             .usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                             .name = "raster target"});
    gpu::GraphicsPipelineDesc desc{.vertex = gpu::ShaderId::fg_fullscreen_vs_f32,
                                   .fragment = gpu::ShaderId::solid_fs_f32,
                                   .push_constant_bytes = 16,
                                   .color_formats = {VK_FORMAT_R8G8B8A8_UNORM}};
    const gpu::Pipeline& opaque = d.pipeline(desc);
    desc.blend = gpu::Blend::Alpha;
    const gpu::Pipeline& blended = d.pipeline(desc);
    EXPECT_NE(&opaque, &blended);
    EXPECT_EQ(&blended, &d.pipeline(desc)); // cached
    EXPECT_EQ(opaque.bind_point(), VK_PIPELINE_BIND_POINT_GRAPHICS);

    gpu::Buffer readback(d, {.size = width * height * 4, .name = "raster readback"});
    d.run_now(gpu::QueueRole::Graphics, [&](gpu::CommandBuffer& cmd) {
        gpu::barrier::image(cmd, target.vk(), VK_IMAGE_LAYOUT_UNDEFINED,
                            VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_PIPELINE_STAGE_2_NONE,
                            VK_ACCESS_2_NONE, VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT,
                            VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_2_COLOR_ATTACHMENT_READ_BIT);
        VkRenderingAttachmentInfo color{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
        color.imageView = target.view();
        color.imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
        color.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
        color.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
        VkRenderingInfo ri{VK_STRUCTURE_TYPE_RENDERING_INFO};
        ri.renderArea = {{0, 0}, {width, height}};
        ri.layerCount = 1;
        ri.colorAttachmentCount = 1;
        ri.pColorAttachments = &color;
        vkCmdBeginRendering(cmd.vk(), &ri);
        const VkViewport viewport{0, 0, float(width), float(height), 0, 1};
        vkCmdSetViewport(cmd.vk(), 0, 1, &viewport);
        vkCmdSetScissor(cmd.vk(), 0, 1, &ri.renderArea);
        cmd.draw(opaque, {}, std::array<float, 4>{0.2f, 0.4f, 0.8f, 1.f}, 3);
        cmd.draw(blended, {}, std::array<float, 4>{1.f, 0.f, 0.f, 0.5f}, 3);
        vkCmdEndRendering(cmd.vk());
        gpu::barrier::image(
            cmd, target.vk(), VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
            VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT, VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT,
            VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
        cmd.copy(target, readback.range());
        gpu::barrier::compute_to_transfer(cmd);
    });
    std::vector<uint8_t> pixels(width * height * 4);
    gpu::download(d, readback.range(), std::as_writable_bytes(std::span(pixels)));
    // (1, 0, 0) at alpha 0.5 over (0.2, 0.4, 0.8, 1): (0.6, 0.2, 0.4, 1).
    const int want[4] = {153, 51, 102, 255};
    for (size_t i = 0; i < pixels.size(); ++i) EXPECT_NEAR(int(pixels[i]), want[i % 4], 1) << "byte " << i;

    // A raster pipeline is drawn, not dispatched.
    gpu::CommandBuffer cmd(d, gpu::QueueRole::Graphics);
    cmd.begin();
    EXPECT_THROW(cmd.dispatch(opaque, std::span<const gpu::Binding>{}, std::array<float, 4>{}, {1, 1, 1}),
                 Error);
    cmd.end();
}

TEST_F(GpuTest, RasterPipelineNeedsAnAttachment) {
    EXPECT_THROW(dev().pipeline(gpu::GraphicsPipelineDesc{.vertex = gpu::ShaderId::fg_fullscreen_vs_f32,
                                                          .fragment = gpu::ShaderId::solid_fs_f32,
                                                          .push_constant_bytes = 16}),
                 Error);
}

} // namespace
} // namespace vkml::test
