#pragma once
// samples::HistoryImage: the standard async-compute pattern for an ML pass that consumes the
// rendered frame. Within one frame the ML pass reads the render and the composite reads the ML
// result, so with the ML pass on the async compute queue the graphics queue still waits for it
// every frame (render N -> ML N -> composite N is a serial chain). Run one frame behind instead:
//
//   [async]    ML reads the history (= render N-1) and writes its result
//   [graphics] render N, in parallel with it
//   [graphics] copy render N into the history, after the ML pass read it (write after read: the
//              graph orders it and adds the async -> graphics semaphore)
//   [graphics] composite with the ML result (of frame N-1)
//
//     fg::ImageHandle color = scene.add_passes(graph, w, h, time);
//     fg::ImageHandle input = history.begin(graph, color, w, h);  // what ML passes read
//     ... ML passes reading `input` ...
//     history.end(graph);                                         // after every reader of `input`
//   and in update(): history.update(app);
//
// The history is one persistent image imported into every frame's graph. Frames in flight stay
// correct because each frame's accesses to it are ordered by the graph (ML read before the copy)
// and across frames by the executor, which remembers an imported image's last use (the copy, on
// the graphics queue) and makes the next frame's first use (the ML read, on the async queue)
// wait for it. So copy(N) -> ML(N+1) -> copy(N+1), and copy(N+1) never overwrites what ML(N)
// still reads (ML(N) -> copy(N) -> ML(N+1) -> copy(N+1)).
//
// When the history holds nothing yet (first frame, new size, after frames that did not use it)
// begin() declares a priming graph: the copy first and the ML passes reading it, i.e. one
// same-frame frame; update() then asks the host to declare the steady graph for the next frame.
// So with a deterministic time step, frame N >= 1 shows the same-frame result of frame N-1.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <vulkan/vulkan_core.h>

#include "common/app.hpp"
#include "vkml/error.hpp"
#include "vkml/fg/frame_graph.hpp"
#include "vkml/gpu/image.hpp"

namespace vkml::samples {

// How a sample schedules its ML pass against the render, for overlays and timing.json.
enum class MlSchedule : uint8_t { SameFrame, OneFrameBehind };

inline const char* schedule_name(MlSchedule s) {
    return s == MlSchedule::OneFrameBehind ? "one-frame-behind" : "same-frame";
}

// One frame behind whenever the sample is asked for async compute (also where the device has no
// separate compute queue, so the data flow is the same everywhere and testable on one queue).
inline MlSchedule schedule_for(const App& app) {
    return app.async_compute() ? MlSchedule::OneFrameBehind : MlSchedule::SameFrame;
}

class HistoryImage {
public:
    explicit HistoryImage(gpu::Device& device, std::string name = "history")
        : device_(&device), name_(std::move(name)) {}

    // Declares the history in `graph`; `current` is this frame's image (width x height, `format`,
    // readable as a transfer source). Returns the image the ML passes read: the previous frame's,
    // or this frame's while priming. Call it after the pass writing `current`.
    fg::ImageHandle begin(fg::FrameGraph& graph, fg::ImageHandle current, uint32_t width, uint32_t height,
                          VkFormat format = VK_FORMAT_R8G8B8A8_UNORM) {
        if (!image_ || image_->width() != width || image_->height() != height || image_->format() != format) {
            // build() runs with the GPU idle (the host waits before re-declaring), so the old one
            // may go.
            image_ = std::make_unique<gpu::Image>(*device_,
                                                  gpu::ImageDesc{.width = width,
                                                                 .height = height,
                                                                 .format = format,
                                                                 .usage = VK_IMAGE_USAGE_SAMPLED_BIT |
                                                                          VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
                                                                          VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                                                                 .name = name_});
            valid_ = false;
        }
        current_ = current;
        priming_ = !valid_;
        // Between frames the history rests in the layout the ML passes sample it in: the graph's
        // departure transition (on the graphics queue, after the copy) leaves it there.
        const fg::ResourceState rest{.stages = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                     .access = VK_ACCESS_2_SHADER_SAMPLED_READ_BIT |
                                               VK_ACCESS_2_SHADER_STORAGE_READ_BIT,
                                     .layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                                     .queue = fg::Queue::Graphics};
        // Steady: it arrives on the async compute queue, where the ML pass reads it first, so the
        // executor's cross-frame wait (on last frame's copy) lands on the async submission and the
        // graphics queue's render does not wait for anything.
        const fg::ResourceState arrive =
            priming_ ? fg::ResourceState{.layout = VK_IMAGE_LAYOUT_UNDEFINED, .queue = fg::Queue::Graphics}
                     : fg::ResourceState{.layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                                         .queue = fg::Queue::AsyncCompute};
        handle_ = graph.import_image(name_, {.image = image_->vk(),
                                             .view = image_->view(),
                                             .format = format,
                                             .width = width,
                                             .height = height,
                                             .incoming = arrive,
                                             .outgoing = rest});
        if (priming_) {
            handle_ = add_copy(graph);
            valid_ = true; // this frame fills it
            declared_priming_ = true;
        }
        return handle_;
    }

    // Steady graphs: copies this frame's image into the history, ordered after every pass that
    // read begin()'s image (declare them first). Nothing to do while priming.
    void end(fg::FrameGraph& graph) {
        if (!priming_) handle_ = add_copy(graph);
    }

    // A graph that does not use the history (same-frame mode): what it holds grows stale.
    void invalidate() { valid_ = false; }

    // From the sample's update(): after the priming frame is declared, the next frame needs the
    // steady graph.
    void update(App& app) {
        if (declared_priming_) {
            declared_priming_ = false;
            app.rebuild();
        }
    }

    bool priming() const { return priming_; }

private:
    fg::ImageHandle add_copy(fg::FrameGraph& graph) {
        fg::PassBuilder copy = graph.add_transfer_pass(name_ + " store");
        const fg::ImageHandle src = current_;
        copy.read(src, fg::ImageRead::TransferSrc);
        const fg::ImageHandle dst = copy.write(handle_, fg::ImageWrite::TransferDst);
        copy.record([src, dst](fg::PassContext& ctx) {
            const VkExtent2D e = ctx.extent(src);
            VkImageCopy region{};
            region.srcSubresource = region.dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
            region.extent = {e.width, e.height, 1};
            vkCmdCopyImage(ctx.vk(), ctx.image(src), ctx.layout(src), ctx.image(dst), ctx.layout(dst), 1,
                           &region);
        });
        return dst;
    }

    gpu::Device* device_;
    std::string name_;
    std::unique_ptr<gpu::Image> image_;
    fg::ImageHandle current_, handle_;
    bool valid_ = false, priming_ = false, declared_priming_ = false;
};

} // namespace vkml::samples
