#pragma once
// The samples' 3D scene, drawn by a pass of a frame graph (dynamic rendering, depth test, MSAA):
// a ground plane and a wall of procedurally textured panels (checkerboards, fine line grids,
// text-like glyph rows), a rotating sign, orbiting lit cubes and alpha-tested foliage cards,
// lit by a sun and an ambient term. Everything is generated in code (meshes on the CPU, textures
// as functions in the fragment shader, integrated over the pixel's footprint so minification does
// not alias) and depends only on the time passed in, so a frame is reproducible: the same time and
// size give the same pixels on the same driver. Edges are antialiased with MSAA (4x by default,
// foliage through alpha to coverage) in the scene's own multisampled targets, resolved into the
// graph's image, as a renderer would feed an upscaler an antialiased frame.
//
//     samples::Scene scene(device);                        // once: pipelines and meshes
//     fg::ImageHandle color = scene.add_passes(graph, 960, 540, [&] { return time; });
//
// The image is R8G8B8A8_UNORM (sampled + storage + transfer-source usable), `width` x `height`.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "vkml/fg/frame_graph.hpp"

namespace vkml::gpu {
class Device;
}

namespace vkml::samples {

struct SceneDesc {
    uint32_t samples = 4; // MSAA sample count: 1, 2, 4 or 8 (clamped to what the device supports)
    // Camera zoom (focal length multiplier, >= 1): the view is the centre 1/zoom of the default
    // view, i.e. exactly the centre crop of a zoom-times-larger render. A small render with
    // zoom = full height / its height shows the scene's detail at the pixel scale of the full-size
    // render (a window of that frame), which is what image-quality comparisons at small sizes need:
    // at zoom 1 a 128x96 frame squeezes the whole scene's texture detail far below a pixel.
    // The environment variable VKML_SCENE_ZOOM, when set, overrides it (samples have no flag).
    float zoom = 1;
};

class Scene {
public:
    static constexpr VkFormat color_format = VK_FORMAT_R8G8B8A8_UNORM;
    static constexpr VkFormat depth_format = VK_FORMAT_D32_SFLOAT;

    explicit Scene(gpu::Device& device, const SceneDesc& desc = {});
    ~Scene();
    Scene(const Scene&) = delete;
    Scene& operator=(const Scene&) = delete;

    // Adds the scene's pass (named `name`, on the graphics queue) rendering at width x height and
    // returns the colour image (a transient). `time` is read when the pass records (every executed frame), so
    // a graph built once animates; the overload with a number renders that fixed time.
    fg::ImageHandle add_passes(fg::FrameGraph& graph, uint32_t width, uint32_t height,
                               std::function<double()> time, std::string name = "scene");
    fg::ImageHandle add_passes(fg::FrameGraph& graph, uint32_t width, uint32_t height, double time,
                               std::string name = "scene");

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

} // namespace vkml::samples
