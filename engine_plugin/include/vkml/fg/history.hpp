#pragma once
// fg::History: an image carried from one frame to the next (what Granite calls a history input),
// and with it the one-frame-behind schedule for a pass that consumes the rendered frame.
//
// Within one frame an ML pass that reads the render and a composite that reads the ML result form
// a serial chain (render N -> ML N -> composite N): with the ML pass on the async compute queue the
// graphics queue still waits for it every frame. Run it one frame behind instead:
//
//   [async]    the readers read the history (= render N-1)
//   [graphics] render N, in parallel with them
//   [graphics] store: copy render N into the history, after the readers (write after read: the
//              graph orders it and adds the async -> graphics semaphore)
//   [graphics] composite with the readers' result (of frame N-1)
//
//     fg::ImageHandle color = ...;                          // this frame's render
//     fg::ImageHandle input = history.begin(graph, color, w, h, format);  // what the readers read
//     ... passes reading `input` ...
//     history.end(graph);                          // after every reader of `input`
//   and once the graph is declared: if (history.take_rebuild()) declare the graph again next frame.
//
// The history is one persistent image imported into every frame's graph. Frames in flight stay
// correct because each frame's accesses to it are ordered by the graph (readers before the store)
// and across frames by the executor, which remembers an imported image's last use (the store, on
// the graphics queue) and makes the next frame's first use (a read, on the readers' queue) wait for
// it: store(N) -> read(N+1) -> store(N+1), never a store over what a reader still reads.
//
// When the history holds nothing yet (the first frame, a new size or format, after invalidate())
// begin() declares a priming graph: the store first and the readers after it, one same-frame
// frame; take_rebuild() then says the next frame needs the steady graph. So with a deterministic
// time step, frame N >= 1 shows the same-frame result of frame N-1.
#include <cstdint>
#include <memory>
#include <string>

#include <vulkan/vulkan_core.h>

#include "vkml/fg/frame_graph.hpp"

namespace vkml::gpu {
class Device;
class Image;
} // namespace vkml::gpu

namespace vkml::fg {

struct HistoryDesc {
    std::string name = "history"; // the imported image; its store pass is "<name> store"
    // How the readers use the previous frame's image. Between frames it rests in this state, so a
    // steady frame's first reader needs no transition, and it arrives on the readers' queue, so the
    // executor's wait for the previous frame's store lands there and the render does not wait.
    Queue reader_queue = Queue::AsyncCompute;
    VkPipelineStageFlags2 reader_stages = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT;
    VkAccessFlags2 reader_access = VK_ACCESS_2_SHADER_SAMPLED_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_READ_BIT;
    VkImageLayout reader_layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
    // Of the image History(device, ...) makes (the store adds TRANSFER_DST).
    VkImageUsageFlags usage = VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
};

// An image the caller owns (History without a device): colour, one mip level and layer, usable
// as a transfer destination and as the readers read it.
struct HistoryStorage {
    VkImage image = VK_NULL_HANDLE;
    VkImageView view = VK_NULL_HANDLE;
    VkFormat format = VK_FORMAT_UNDEFINED;
    uint32_t width = 0, height = 0;
};

class History {
public:
    // The history image comes from `device` (a gpu::Image), made again when begin() is given
    // another size or format. It goes when the History goes (gpu::Image retires it against the
    // work that may still use it).
    explicit History(gpu::Device& device, HistoryDesc desc = {});
    // The caller provides the image (set_storage): a host's own image, or fake handles in tests.
    explicit History(HistoryDesc desc = {});
    ~History();
    History(History&&) noexcept;
    History& operator=(History&&) noexcept;
    History(const History&) = delete;
    History& operator=(const History&) = delete;

    // A caller-provided image; what the history held is gone (the next frame primes).
    void set_storage(const HistoryStorage& storage);

    // Declares the history in `graph`; `current` is this frame's image (width x height, `format`),
    // written by an earlier pass and readable as a transfer source. Returns what the readers read:
    // the previous frame's image, or, while priming, this frame's (stored first).
    ImageHandle begin(FrameGraph& graph, ImageHandle current, uint32_t width, uint32_t height,
                      VkFormat format);
    // After every pass that reads begin()'s image: stores this frame's image for the next frame
    // (nothing to do while priming: begin() stored it already). Returns the stored version.
    ImageHandle end(FrameGraph& graph);

    // A graph that does not use the history this frame: what it holds grows stale.
    void invalidate() { valid_ = false; }
    // Whether the graph begin() last declared is a priming one.
    bool priming() const { return priming_; }
    // True once after a priming graph was declared: the next frame needs the steady graph, so the
    // host declares its graph again (a priming graph replayed would never read an older frame).
    bool take_rebuild();

    const HistoryDesc& desc() const { return desc_; }

private:
    ImageHandle add_store(FrameGraph& graph);

    gpu::Device* device_ = nullptr;
    HistoryDesc desc_;
    std::unique_ptr<gpu::Image> image_; // with a device
    HistoryStorage storage_;
    ImageHandle current_, handle_;
    bool valid_ = false, priming_ = false, declared_priming_ = false, begun_ = false;
};

} // namespace vkml::fg
