// Typed bindings (gpu::BindingType): one compute pipeline with a uniform buffer, a sampled image
// with its sampler, a sampled image, a storage image and a storage buffer (shaders/bindings.comp),
// dispatched through CommandBuffer::dispatch: pushed, or pooled sets of the command buffer's arena
// (the nopush.* run). Descriptors that do not match the pipeline are errors naming the binding.
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "gpu_test.hpp"
#include "image_upload.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::test {
namespace {

constexpr uint32_t width = 5, height = 3; // not a multiple of the 8x8 workgroup

const gpu::Pipeline& bindings_pipeline(gpu::Device& dev) {
    using T = gpu::BindingType;
    return dev.pipeline({.shader = gpu::ShaderId::bindings_f32,
                         .binding_types = {T::UniformBuffer, T::SampledImageSampler, T::SampledImage,
                                           T::StorageImage, T::StorageBuffer},
                         .push_constant_bytes = 8,
                         .workgroup = {8, 8, 1}});
}

gpu::Image texture(gpu::Device& dev, const std::vector<uint8_t>& texels, const char* name) {
    gpu::Image image(dev, {.width = width,
                           .height = height,
                           .usage = VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                           .name = name});
    upload_texels(dev, image, texels);
    return image;
}

// A nearest-filtering sampler the test owns (destroyed after the work is done).
struct Sampler {
    gpu::Device& dev;
    VkSampler vk = VK_NULL_HANDLE;
    explicit Sampler(gpu::Device& d) : dev(d) {
        VkSamplerCreateInfo si{VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO};
        si.magFilter = si.minFilter = VK_FILTER_NEAREST;
        si.mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST;
        si.addressModeU = si.addressModeV = si.addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
        EXPECT_EQ(vkCreateSampler(dev.vk(), &si, nullptr, &vk), VK_SUCCESS);
    }
    ~Sampler() {
        dev.wait_idle();
        vkDestroySampler(dev.vk(), vk, nullptr);
    }
};

TEST_F(GpuTest, TypedBindingsReachTheShader) {
    gpu::Device& d = dev();
    std::vector<uint8_t> ta(size_t(width) * height * 4), tb(ta.size());
    for (size_t i = 0; i < ta.size(); ++i) {
        ta[i] = uint8_t(i * 37 % 256);
        tb[i] = uint8_t(255 - i * 11 % 256);
    }
    const gpu::Image a = texture(d, ta, "a"), b = texture(d, tb, "b");
    const gpu::Image c(d, {.width = width,
                           .height = height,
                           .usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                           .name = "c"});
    const float scale[4] = {0.5f, 2.f, 1.f, -1.f};
    gpu::Buffer params(d, {.size = sizeof scale,
                           .usage = VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                           .name = "params"});
    gpu::upload(d, params.range(), std::as_bytes(std::span(scale)));
    gpu::Buffer out(d, {.size = ta.size() * sizeof(float), .name = "out"});
    gpu::Buffer readback(d, {.size = ta.size(), .name = "c readback"});
    const Sampler sampler(d);
    const gpu::Pipeline& pipeline = bindings_pipeline(d);
    EXPECT_EQ(pipeline.bindings(), 5u);
    EXPECT_FALSE(pipeline.buffers_only());

    d.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        gpu::barrier::image(cmd, c.vk(), VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL,
                            VK_PIPELINE_STAGE_2_NONE, VK_ACCESS_2_NONE,
                            VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
        const gpu::Binding bindings[] = {
            gpu::Binding::uniform_buffer(params.range()),
            gpu::Binding::sampled_image(a.view(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, sampler.vk),
            gpu::Binding::sampled_image(b.view(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL),
            gpu::Binding::storage_image(c.view()), gpu::Binding::storage_buffer(out.range())};
        const uint32_t push[2] = {width, height};
        cmd.dispatch(pipeline, bindings, push, {1, 1, 1});
        gpu::barrier::image(cmd, c.vk(), VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                            VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                            VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
        cmd.copy(c, readback.range());
        gpu::barrier::compute_to_transfer(cmd);
    });
    std::vector<float> got(ta.size());
    gpu::download(d, out.range(), std::as_writable_bytes(std::span(got)));
    std::vector<uint8_t> copied(ta.size());
    gpu::download(d, readback.range(), std::as_writable_bytes(std::span(copied)));
    EXPECT_EQ(copied, tb); // b's texels stored into c unchanged
    for (size_t i = 0; i < got.size(); ++i) {
        const float want = float(ta[i]) / 255.f * scale[i % 4] + float(tb[i]) / 255.f;
        EXPECT_NEAR(got[i], want, 1e-5f) << "element " << i;
    }
}

TEST_F(GpuTest, TypedBindingsMustMatchThePipeline) {
    gpu::Device& d = dev();
    const gpu::Pipeline& pipeline = bindings_pipeline(d);
    gpu::Buffer buf(d, {.size = 256, .name = "buf"});
    const uint32_t push[2] = {1, 1};
    gpu::CommandBuffer cmd(d, gpu::QueueRole::Compute);
    cmd.begin();
    auto error_of = [&](auto&& record) -> std::string {
        try {
            record();
        } catch (const Error& e) {
            return e.what();
        }
        return "no error";
    };
    const gpu::Binding wrong[] = {
        gpu::Binding::uniform_buffer(buf.range()), gpu::Binding::storage_buffer(buf.range()),
        gpu::Binding::storage_buffer(buf.range()), gpu::Binding::storage_buffer(buf.range()),
        gpu::Binding::storage_buffer(buf.range())};
    EXPECT_NE(error_of([&] {
                  cmd.dispatch(pipeline, wrong, push, {1, 1, 1});
              }).find("binding 1 is a sampled image with sampler, given a storage buffer"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  cmd.dispatch(pipeline, std::span(wrong, 2), push, {1, 1, 1});
              }).find("2 bindings given, the pipeline has 5"),
              std::string::npos);
    const gpu::BufferRange buffers[] = {buf.range(), buf.range(), buf.range(), buf.range(), buf.range()};
    EXPECT_NE(error_of([&] {
                  cmd.dispatch(pipeline, buffers, push, {1, 1, 1});
              }).find("not all storage buffers"),
              std::string::npos);
    const gpu::Binding no_sampler[] = {
        gpu::Binding::uniform_buffer(buf.range()),
        {.type = gpu::BindingType::SampledImageSampler, .layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL},
        gpu::Binding::storage_buffer(buf.range()),
        gpu::Binding::storage_buffer(buf.range()),
        gpu::Binding::storage_buffer(buf.range())};
    EXPECT_NE(error_of([&] {
                  cmd.dispatch(pipeline, no_sampler, push, {1, 1, 1});
              }).find("binding 1 needs a sampler"),
              std::string::npos);
    cmd.end();
    // Storage-buffer pipelines are unchanged: `bindings` buffers, dispatched with BufferRanges.
    const gpu::Pipeline& fill =
        d.pipeline({.shader = gpu::ShaderId::fill_f32, .bindings = 1, .push_constant_bytes = 8});
    EXPECT_TRUE(fill.buffers_only());
    ASSERT_EQ(fill.binding_types().size(), 1u);
    EXPECT_EQ(fill.binding_types()[0], gpu::BindingType::StorageBuffer);
}

} // namespace
} // namespace vkml::test
