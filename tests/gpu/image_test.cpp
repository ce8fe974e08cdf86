#include "gpu_test.hpp"

namespace vkml::test {
namespace {

// Pixels go buffer -> image -> buffer through layout transitions and come back unchanged, for an
// odd-sized image in two formats; images and buffers also alias one allocation correctly.
TEST_F(GpuTest, ImageRoundTripThroughLayoutTransitions) {
    for (VkFormat format : {VK_FORMAT_R8G8B8A8_UNORM, VK_FORMAT_R16G16B16A16_SFLOAT}) {
        const uint32_t w = 37, h = 11, texel = gpu::format_texel_size(format);
        gpu::Image image(dev(), {.width = w, .height = h, .format = format, .name = "round trip"});
        EXPECT_EQ(image.width(), w);
        EXPECT_NE(image.view(), VK_NULL_HANDLE);
        std::vector<std::byte> in(size_t(w) * h * texel), out(in.size());
        for (size_t i = 0; i < in.size(); ++i) in[i] = std::byte((i * 29 + 3) & 0x7f); // finite halves too
        gpu::Buffer src(dev(), {.size = in.size()}), dst(dev(), {.size = in.size()});
        gpu::upload(dev(), src.range(), in);
        dev().run_now(gpu::QueueRole::Graphics, [&](gpu::CommandBuffer& cmd) {
            gpu::barrier::image(cmd, image.vk(), VK_IMAGE_LAYOUT_UNDEFINED,
                                VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_PIPELINE_STAGE_2_NONE,
                                VK_ACCESS_2_NONE, VK_PIPELINE_STAGE_2_COPY_BIT,
                                VK_ACCESS_2_TRANSFER_WRITE_BIT);
            cmd.copy(src.range(), image);
            gpu::barrier::image(cmd, image.vk(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_PIPELINE_STAGE_2_COPY_BIT,
                                VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_2_COPY_BIT,
                                VK_ACCESS_2_TRANSFER_READ_BIT);
            cmd.copy(image, dst.range());
        });
        gpu::download(dev(), dst.range(), out);
        EXPECT_EQ(in, out) << "format " << format;
    }
}

// Depth images get a depth view; images only copied to and from get none (Vulkan allows none).
TEST_F(GpuTest, ImageViewsFollowFormatAndUsage) {
    gpu::Image depth(dev(), {.width = 17,
                             .height = 9,
                             .format = VK_FORMAT_D32_SFLOAT,
                             .usage = VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                             .name = "depth"});
    EXPECT_NE(depth.view(), VK_NULL_HANDLE);
    EXPECT_EQ(gpu::image_aspect(VK_FORMAT_D32_SFLOAT), VkImageAspectFlags(VK_IMAGE_ASPECT_DEPTH_BIT));
    EXPECT_EQ(gpu::image_aspect(VK_FORMAT_D24_UNORM_S8_UINT),
              VkImageAspectFlags(VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT));
    EXPECT_EQ(gpu::image_aspect(VK_FORMAT_R8G8B8A8_UNORM), VkImageAspectFlags(VK_IMAGE_ASPECT_COLOR_BIT));
    gpu::Image staging(dev(), {.width = 5,
                               .height = 3,
                               .usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                               .name = "copies only"});
    EXPECT_TRUE(staging);
    EXPECT_EQ(staging.view(), VK_NULL_HANDLE);
}

TEST_F(GpuTest, ImageRejectsZeroSize) {
    try {
        gpu::Image bad(dev(), {.width = 0, .height = 4, .name = "empty"});
        ADD_FAILURE() << "a 0x4 image was created";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos);
    }
}

} // namespace
} // namespace vkml::test
