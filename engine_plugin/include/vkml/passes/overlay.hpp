#pragma once
// passes::Overlay: text, rectangle outlines and fills blended into a frame-graph image on the GPU
// by one compute pass, with the built-in font of text.hpp. The result matches the CPU drawing of
// text.hpp (same items, same order, same blending) within 1 LSB.
//
//     passes::Overlay overlay(device);                 // once; keep it alive while frames run
//     ...                                              // every frame:
//     overlay.clear();
//     overlay.text(16, 16, std::format("frame {:.2f} ms", ms), {255, 255, 255, 255}, 2,
//                  passes::Rgba{0, 0, 0, 160});
//     overlay.rect(box.x0, box.y0, box.x1, box.y1, {0, 255, 0, 255}, 2);
//     color = overlay.add_pass(graph, color);          // color: an RGBA8 / RGBA16F storage image
//
// Items are drawn in the order they were queued, each over the previous ones. The pass reads the
// queued items when the frame graph records it (not when add_pass is called), so a graph compiled
// once and executed every frame shows each frame's items; they are copied into a host-visible
// buffer of the frame slot being recorded (PassContext::frame_slot()), so frames in flight never
// share one. The font lives in a device-local buffer uploaded once.
//
// Cost: the CPU bins the items into 16x16-pixel tiles at record time and the pass dispatches one
// workgroup per touched tile only, so an overlay of a few lines of text and boxes costs little
// even at 4K.
//
// Target formats: VK_FORMAT_R8G8B8A8_UNORM and VK_FORMAT_R16G16B16A16_SFLOAT (the image needs
// VK_IMAGE_USAGE_STORAGE_BIT). Other formats throw vkml::Error(Unsupported) when the pass records.
// For RGBA16F the blend runs in float on values in 0..1 (the 8-bit colours divided by 255).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkml/fg/frame_graph.hpp"
#include "vkml/passes/text.hpp"

namespace vkml::gpu {
class Device;
class Buffer;
} // namespace vkml::gpu

namespace vkml::passes {

class Overlay {
public:
    // `frames_in_flight`: the number of frame slots to prepare buffers for (more are added if the
    // executor reports a higher slot).
    explicit Overlay(gpu::Device& device, uint32_t frames_in_flight = 2);
    ~Overlay();
    Overlay(const Overlay&) = delete;
    Overlay& operator=(const Overlay&) = delete;

    // Forget all queued items.
    void clear();
    // The same arguments and meaning as draw_text / draw_rect / fill_rect in text.hpp.
    void text(int x, int y, std::string_view text, Rgba color, int scale = 1,
              std::optional<Rgba> background = {});
    void rect(int x0, int y0, int x1, int y1, Rgba color, int thickness = 2);
    void fill(int x0, int y0, int x1, int y1, Rgba color);

    // Adds a compute pass named `name` that blends the queued items into `target` (declared
    // StorageReadWrite) and returns target's new version. Nothing queued: the pass still exists
    // but dispatches nothing.
    [[nodiscard]] fg::ImageHandle add_pass(fg::FrameGraph& graph, fg::ImageHandle target,
                                           std::string name = "overlay");

    // Items queued now (after text() splits lines and adds its background); for tests.
    size_t item_count() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

} // namespace vkml::passes
