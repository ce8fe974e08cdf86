#pragma once
// passes::Stylizer: a fast-neural-style network (the ONNX model zoo's candy / mosaic / udnie /
// rain-princess / pointilism layout, or vkml's own styles in assets/models/style/) applied to an RGB
// image of any size, blended with the original by a strength in 0..1.
//
//     passes::Stylizer style(device, {.model = "assets/models/style/starry.onnx"});
//     style.set_strength(0.8f);
//     // standalone, on the host: RGB [1, 3, H, W] f32 in 0..1 -> the same, stylized
//     graph::TensorData out = style.run(rgb);
//     // on the GPU, into the caller's command buffer (a video frame processor): f32 or f16 tensors
//     style.prepare(w, h);
//     style.record(cmd, rgb_tensor, out_tensor);
//     // in a frame graph: the scene's colour image in, a new RGBA8 image out
//     fg::ImageHandle styled = style.add_passes(graph, scene_color, w, h, {.queue =
//     fg::Queue::AsyncCompute});
//
// The models take and give RGB in 0..255 (input `input1` [1, 3, H, W] in the zoo's files) and are
// declared for one size (the zoo's say 224x224): the stylizer creates one vkml::Session per input
// size it meets, with the input shape overridden, and keeps them. The networks round odd sizes up
// at their two stride-2 convolutions (a 1080-row input stays 1080 rows, a 37-row one comes back
// with 40), with the picture anchored at the top-left corner, so the extra rows and columns are
// cropped away.
//
// Strength is read when the work is recorded (record(), or when the frame graph records the
// passes), so a graph built once follows a slider. At strength 0 the model is not run at all.
//
// Synchronization: as for single ops and sessions, the caller orders its writes of the input before
// record() and its reads of the output after it. record() starts with a compute barrier (an earlier
// record on the same queue is done with the stylizer's buffers and the session's arena), so frames
// in flight on one queue are safe; two records must not run at the same time on two queues.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <vulkan/vulkan_core.h>

#include "vkml/fg/frame_graph.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/tensor.hpp"
#include "vkml/graph/graph.hpp"
#include "vkml/graph/tensor_data.hpp"

namespace vkml {
class Session;
namespace gpu {
class Device;
class Profiler;
} // namespace gpu
} // namespace vkml

namespace vkml::passes {

struct StylizerDesc {
    // A fast-neural-style model in any format import::load_model reads (ONNX in practice): one
    // float input [1, 3, H, W] and one output [1, 3, H', W'] with H' >= H, W' >= W.
    std::filesystem::path model;
    // Shown in messages and samples; empty: the model file's stem ("candy-9").
    std::string name;
    // f32 storage for the whole model (reference runs); otherwise f16 where the device has it.
    bool fp32 = false;
    // pixel (0..1) * pixel_scale is the model's input, output / pixel_scale is a pixel: 255 for the
    // zoo's models and vkml's (they were trained on 0..255 images).
    float pixel_scale = 255.f;
    // Initial blend with the original: 0 = original, 1 = fully stylized.
    float strength = 1.f;
};

struct StylizerPassDesc {
    // The queue of all the stylizer's passes; AsyncCompute overlaps them with rendering.
    fg::Queue queue = fg::Queue::Graphics;
    // The input image's format (read as a sampled image): R8G8B8A8_UNORM / _SRGB, B8G8R8A8_UNORM or
    // R16G16B16A16_SFLOAT. sRGB images are read as their stored bytes, as the models were trained.
    VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
    // Pass names start with this ("style in", "style model", "style blend", "style out"), so a
    // sample sums their GPU times by prefix.
    std::string name = "style";
};

class Stylizer {
public:
    // Loads and checks the model (throws vkml::Error naming the file: missing, unreadable, not one
    // RGB input and one output); sessions are created per size on first use.
    Stylizer(gpu::Device& device, StylizerDesc desc);
    ~Stylizer();
    Stylizer(const Stylizer&) = delete;
    Stylizer& operator=(const Stylizer&) = delete;

    const std::string& name() const { return name_; }
    const std::filesystem::path& model_path() const { return desc_.model; }
    // The model's input name ("input1" in the zoo's files).
    const std::string& input_name() const { return input_name_; }

    void set_strength(float strength); // clamped to 0..1
    float strength() const { return strength_; }

    // The session that runs the model on a width x height input (created on first use, kept).
    Session& session(uint32_t width, uint32_t height);
    size_t session_count() const { return sizes_.size(); }

    // Standalone: an RGB tensor [1, 3, H, W] (f32 or f16 data, values 0..1) stylized and blended
    // at the current strength, clamped to 0..1, returned as f32 [1, 3, H, W]. Blocks.
    graph::TensorData run(const graph::TensorData& rgb);

    // GPU: creates what record() needs for width x height (the session, the model's input and
    // output tensors). Done by record() too, but creating a session takes a while: call it up
    // front (a FrameProcessor's prepare()).
    void prepare(uint32_t width, uint32_t height);
    // Records `rgb` [1, 3, H, W] (f32 or f16, values 0..1) -> `out` (same shape and dtype, not
    // overlapping `rgb`): out = clamp(mix(rgb, model(rgb * 255) / 255, strength), 0, 1).
    void record(gpu::CommandBuffer& cmd, const gpu::Tensor& rgb, const gpu::Tensor& out,
                gpu::Profiler* profiler = nullptr);

    // Frame graph: adds the passes that stylize `color` (a sampled image of `desc.format`, width x
    // height) and returns a new R8G8B8A8_UNORM image of the same size with the result (alpha 1).
    // The session is created here, so call it when declaring the graph, not per frame. The passes
    // record through this stylizer: it must outlive the graph's executions.
    fg::ImageHandle add_passes(fg::FrameGraph& graph, fg::ImageHandle color, uint32_t width, uint32_t height,
                               const StylizerPassDesc& desc = {});

    struct PerSize;

private:
    PerSize& per_size(uint32_t width, uint32_t height);
    void record_blend(gpu::CommandBuffer& cmd, const gpu::Tensor& original, const gpu::Tensor& styled,
                      const gpu::Tensor& out, float original_scale) const;

    gpu::Device& device_;
    StylizerDesc desc_;
    std::string name_;
    graph::Graph graph_;
    std::string input_name_;
    float strength_ = 1.f;
    std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<PerSize>> sizes_;
};

} // namespace vkml::passes
