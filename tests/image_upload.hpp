#pragma once
// Test images filled from the host: the texels go through a staging buffer into mip 0 of the
// image, which is left in `layout` with the copy made visible to compute-shader sampled reads
// (what ImageToTensor, Letterbox and the frame-graph tests read). One submission on `role`'s queue.
#include <cstdint>
#include <cstring>
#include <span>

#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/image.hpp"

namespace vkml::test {

inline void upload_texels(gpu::Device& dev, const gpu::Image& image, std::span<const uint8_t> texels,
                          VkImageLayout layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                          gpu::QueueRole role = gpu::QueueRole::Compute) {
    gpu::Buffer staging(dev, gpu::BufferDesc{.size = texels.size(),
                                             .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                             .memory = gpu::MemoryUsage::Upload,
                                             .name = "texels"});
    std::memcpy(staging.mapped(), texels.data(), texels.size());
    dev.run_now(role, [&](gpu::CommandBuffer& cmd) {
        gpu::barrier::image(cmd, image.vk(), VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                            VK_PIPELINE_STAGE_2_NONE, VK_ACCESS_2_NONE, VK_PIPELINE_STAGE_2_COPY_BIT,
                            VK_ACCESS_2_TRANSFER_WRITE_BIT);
        cmd.copy(staging.range(), image);
        gpu::barrier::image(cmd, image.vk(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, layout,
                            VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
                            VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT);
    });
}

} // namespace vkml::test
