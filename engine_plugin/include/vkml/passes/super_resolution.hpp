#pragma once
// passes::SuperResolution: 2x upscaling of a frame-graph image by a trained network or a classic
// filter, through one interface, so a renderer can switch between them at run time:
//
//     passes::SuperResolution sr(device, {.model = "anime4k-m", .width = 960, .height = 540});
//     fg::ImageHandle hi = sr.add_passes(graph, low, fg::Queue::AsyncCompute);   // 1920x1080 RGBA8
//
// The passes: "<name> to tensor" (ImageToTensor: RGBA8 image -> f32 NCHW RGB 0..1), "<name> ml"
// (the model as one ML pass, a vkml::Session recorded by the graph; or ops::Resize for the
// filters) and "<name> to image" (TensorToImage: -> RGBA8 storage image, alpha 1). All three run
// on the queue asked for; the frame graph adds the barriers and cross-queue semaphores.
//
// Models, by name (the registry of vkml/passes/models.hpp: files under the model cache,
// $VKML_MODELS or ~/.cache/vkml/models; the same names `vkml upscale -m` takes):
//   anime4k-s, anime4k-m, anime4k-l   Anime4K CNN 2x S/M/L, "-rl" weights (trained on real-life
//                                     images: the right ones for a rendered scene); "-an"
//                                     (animation) or "-3d" variants as anime4k-m-an etc.
//   esrgan-slim, esrgan-medium        esrgan-thick too: the TF.js ESRGAN x2 models
//   bilinear, nearest                 no network: ONNX Resize (half_pixel) on the same tensors
// or a path to any 2x RGB model file import::load_model reads (ONNX, TF.js model.json, Anime4K
// JSON) whose input is [1, 3, H, W] and output [1, 3, 2H, 2W], values 0..1.
// A missing file or a model of another shape throws vkml::Error naming the file and the problem.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/fg/frame_graph.hpp"

namespace vkml {
class Session;
}
namespace vkml::gpu {
class Device;
class CommandBuffer;
class Tensor;
} // namespace vkml::gpu

namespace vkml::passes {

struct SuperResolutionDesc {
    std::string model = "anime4k-m"; // a name listed above, or a model file path
    uint32_t width = 0, height = 0;  // the low-resolution input's size
    // Input image format: R8G8B8A8_UNORM, B8G8R8A8_UNORM or R16G16B16A16_SFLOAT (read as sampled).
    VkFormat input_format = VK_FORMAT_R8G8B8A8_UNORM;
    // Output image format: R8G8B8A8_UNORM or R16G16B16A16_SFLOAT (written as storage).
    VkFormat output_format = VK_FORMAT_R8G8B8A8_UNORM;
    bool fp32 = false; // the model in f32 storage (default: f16 where the device has it)
    // The pixel value 1.0 maps to in the model's tensors: 0 = by model (255 for the ESRGAN
    // packages, whose TF.js models take 0..255; 1 for everything else).
    float value_range = 0;
    std::string models_dir; // empty: $VKML_MODELS, else ~/.cache/vkml/models
};

class SuperResolution {
public:
    SuperResolution(gpu::Device& device, const SuperResolutionDesc& desc);
    ~SuperResolution();
    SuperResolution(const SuperResolution&) = delete;
    SuperResolution& operator=(const SuperResolution&) = delete;

    // The built-in names, in the order a UI cycles through them.
    static std::vector<std::string> model_names();
    // The file a name stands for (passes::find_model at 2x; empty for bilinear and nearest; a path
    // is returned as is). Does not check that it exists.
    static std::string model_path(const std::string& model, const std::string& models_dir = {});

    const std::string& name() const; // the name or path given
    bool is_network() const;         // false for bilinear and nearest
    uint32_t scale() const { return 2; }
    uint32_t input_width() const;
    uint32_t input_height() const;
    uint32_t output_width() const { return scale() * input_width(); }
    uint32_t output_height() const { return scale() * input_height(); }

    // Adds the three passes reading `input` (an image of desc.input_format, width x height) and
    // returns the upscaled image: a transient of output_format, 2*width x 2*height, named
    // "<name> output". Every pass name starts with `name`, so per-pass timings group by it.
    [[nodiscard]] fg::ImageHandle add_passes(fg::FrameGraph& graph, fg::ImageHandle input,
                                             fg::Queue queue = fg::Queue::Graphics,
                                             const std::string& name = "upscale");

    // The upscaler alone on tensors, for callers with their own conversions (video, tiles):
    // `input` f32 [1, 3, H, W] in 0..value_range(), `output` f32 [1, 3, 2H, 2W], same range. Same
    // barrier contract as Session::record. Not concurrently with itself (one intermediate arena).
    float value_range() const;
    void record(gpu::CommandBuffer& cmd, const gpu::Tensor& input, const gpu::Tensor& output) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

} // namespace vkml::passes
