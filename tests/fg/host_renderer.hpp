#pragma once
// A small "host renderer" for the frame-graph GPU tests and bench: its own instance and device
// (validation with synchronization validation when VKML_VALIDATION=1, dynamic rendering on, an
// async compute queue when the device has one), handed to vkml through Device::from_host, and the
// pipelines of a tiny frame, built by vkml's pipeline cache (gpu::GraphicsPipelineDesc,
// gpu::ComputePipelineDesc) and recorded through gpu::CommandBuffer: scene (raster, depth-tested)
// -> to tensor (compute) -> channel mix (an ML operator) -> composite (raster) -> post (compute).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/fg/frame_graph.hpp"
#include "vkml/ops/op.hpp"
#include "vkml/vkml.hpp"

namespace vkml::fg::test {

struct HostDesc {
    bool validation = false; // also on when VKML_VALIDATION=1
    bool async_compute = true;
    std::string select; // device name substring; empty: $VKML_DEVICE, else the best device
    gpu::MessageCallback on_message;
    // Whether vkml may use VK_KHR_push_descriptor (the host always enables it); off, the host's
    // pipelines too take their descriptor sets from vkml's arenas.
    bool vkml_push_descriptors = true;
};

class Host {
public:
    explicit Host(const HostDesc& desc);
    ~Host();
    Host(const Host&) = delete;
    Host& operator=(const Host&) = delete;

    gpu::Device& device() { return *vkml_; }
    VkDevice vk() const { return device_; }
    uint32_t graphics_family() const { return graphics_family_; }
    VkQueue graphics_queue() const { return graphics_; }
    bool has_async_compute() const { return compute_ != VK_NULL_HANDLE; }
    // Validation messages since the last call.
    std::vector<std::string> take_messages();

private:
    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    VkPhysicalDevice phys_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    uint32_t graphics_family_ = 0, compute_family_ = VK_QUEUE_FAMILY_IGNORED;
    VkQueue graphics_ = VK_NULL_HANDLE, compute_ = VK_NULL_HANDLE;
    std::unique_ptr<gpu::Device> vkml_;
};

// y = relu(W x + b) over the 3 channels of a [1, 3, H, W] tensor: an ops::Op like any of vkml's.
class ChannelMix : public ops::Op {
public:
    ChannelMix(gpu::Device& device, uint32_t width, uint32_t height);
    const char* type() const override { return "ChannelMix"; }
    // The same work on raw buffer ranges (for buffers that are not vkml buffers), and on the CPU.
    void record_raw(gpu::CommandBuffer& cmd, const gpu::BufferRange& x, const gpu::BufferRange& y) const;
    static void reference(const float* x, float* y, uint32_t plane);

protected:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const gpu::Tensor> inputs,
                     std::span<const gpu::Tensor> outputs, const gpu::BufferRange& scratch) const override;

private:
    const gpu::Pipeline* pipeline_;
    uint32_t plane_;
};

// 2x upscaling with `work` rounds of a per-pixel network: the bench's stand-in for a model.
class Upscale : public ops::Op {
public:
    Upscale(gpu::Device& device, VkExtent2D in, VkExtent2D out, uint32_t work);
    const char* type() const override { return "Upscale"; }

protected:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const gpu::Tensor> inputs,
                     std::span<const gpu::Tensor> outputs, const gpu::BufferRange& scratch) const override;

private:
    const gpu::Pipeline* pipeline_;
    VkExtent2D in_, out_;
    uint32_t work_;
};

// The host's pipelines (owned by the device's pipeline cache; the samplers are the host's),
// recorded by the graph's pass callbacks and by the reference path.
class Pipelines {
public:
    static constexpr VkFormat color_format = VK_FORMAT_R8G8B8A8_UNORM;
    static constexpr VkFormat depth_format = VK_FORMAT_D32_SFLOAT;
    explicit Pipelines(gpu::Device& device);
    ~Pipelines();
    Pipelines(const Pipelines&) = delete;
    Pipelines& operator=(const Pipelines&) = delete;

    // Inside dynamic rendering with a colour and a depth attachment.
    void scene(gpu::CommandBuffer& cmd, VkExtent2D extent, float shift) const;
    void to_tensor(gpu::CommandBuffer& cmd, VkImageView src, VkImageLayout src_layout,
                   const gpu::BufferRange& dst, VkExtent2D extent) const;
    // Inside dynamic rendering with one colour attachment.
    void composite(gpu::CommandBuffer& cmd, VkImageView scene, VkImageLayout scene_layout,
                   const gpu::BufferRange& features, VkExtent2D extent) const;
    void post(gpu::CommandBuffer& cmd, VkImageView src, VkImageView dst, VkExtent2D extent) const;
    // Inside dynamic rendering with one colour attachment at output resolution (the bench).
    void upscale_composite(gpu::CommandBuffer& cmd, VkImageView scene, VkImageLayout scene_layout,
                           const gpu::BufferRange& features, VkExtent2D extent, int taps) const;

private:
    gpu::Device& device_;
    VkSampler sampler_ = VK_NULL_HANDLE, linear_ = VK_NULL_HANDLE;
    const gpu::Pipeline *scene_ = nullptr, *composite_ = nullptr, *to_tensor_ = nullptr, *post_ = nullptr,
                        *upscale_composite_ = nullptr;
};

struct FrameOptions {
    uint32_t width = 48, height = 32;
    bool async_compute = false;   // ask for the async compute queue for the tensor and ML passes
    const float* shift = nullptr; // read when the scene pass records (per frame)
};

// The frame as a graph: the output image and the readback buffer are the host's (imported).
struct Frame {
    FrameGraph graph;
    ImageHandle output;
    BufferHandle readback;
};
// The host's readback buffer, imported (arrives after a copy, leaves for the host to read).
BufferHandle import_readback(FrameGraph& graph, const gpu::Buffer& readback);
// A "scene" raster pass (colour and depth transients at the output size); returns the colour.
// `shift` (may be null: 0) is read when the pass records.
ImageHandle add_scene_pass(FrameGraph& graph, const Pipelines& pipelines, const float* shift);

Frame build_frame(const Pipelines& pipelines, const ChannelMix& op, const gpu::Image& output,
                  const gpu::Buffer& readback, const FrameOptions& options);

// The same work recorded step by step, without the graph, with hand-written barriers; returns the
// output image's bytes.
std::vector<uint8_t> reference_frame(gpu::Device& device, const Pipelines& pipelines, const ChannelMix& op,
                                     const FrameOptions& options, float shift);

} // namespace vkml::fg::test
