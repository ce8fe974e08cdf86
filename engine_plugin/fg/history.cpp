#include "vkml/fg/history.hpp"

#include <string>
#include <utility>

#include "vkml/error.hpp"
#include "vkml/gpu/image.hpp"

namespace vkml::fg {

History::History(gpu::Device& device, HistoryDesc desc) : device_(&device), desc_(std::move(desc)) {}
History::History(HistoryDesc desc) : desc_(std::move(desc)) {}
History::~History() = default;
History::History(History&&) noexcept = default;
History& History::operator=(History&&) noexcept = default;

void History::set_storage(const HistoryStorage& storage) {
    storage_ = storage;
    valid_ = false;
}

ImageHandle History::begin(FrameGraph& graph, ImageHandle current, uint32_t width, uint32_t height,
                           VkFormat format) {
    if (device_) {
        if (!image_ || image_->width() != width || image_->height() != height || image_->format() != format) {
            // The old image, if any, is retired against the work that may still read it.
            image_ = std::make_unique<gpu::Image>(
                *device_, gpu::ImageDesc{.width = width,
                                         .height = height,
                                         .format = format,
                                         .usage = desc_.usage | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                                         .name = desc_.name});
            set_storage({image_->vk(), image_->view(), format, width, height});
        }
    } else if (!storage_.image) {
        throw Error(ErrorCode::InvalidArgument,
                    "history '" + desc_.name +
                        "': no image (History::set_storage, or a History of a device)");
    } else if (storage_.width != width || storage_.height != height || storage_.format != format) {
        throw Error(ErrorCode::InvalidArgument,
                    "history '" + desc_.name + "': its image is " + std::to_string(storage_.width) + "x" +
                        std::to_string(storage_.height) + ", format " + std::to_string(int(storage_.format)) +
                        "; the frame's is " + std::to_string(width) + "x" + std::to_string(height) +
                        ", format " + std::to_string(int(format)));
    }
    current_ = current;
    priming_ = !valid_;
    begun_ = true;
    // Between frames the history rests in the state its readers use it in: the graph's departure
    // transition (on the graphics queue, after the store) leaves it there.
    const ResourceState rest{.stages = desc_.reader_stages,
                             .access = desc_.reader_access,
                             .layout = desc_.reader_layout,
                             .queue = Queue::Graphics};
    // Steady: it arrives on the readers' queue, where it is read first, so the executor's
    // cross-frame wait (on the previous frame's store) lands on that queue's submission and the
    // graphics queue's render does not wait for anything. Priming: no contents yet.
    const ResourceState arrive =
        priming_ ? ResourceState{.layout = VK_IMAGE_LAYOUT_UNDEFINED, .queue = Queue::Graphics}
                 : ResourceState{.layout = desc_.reader_layout, .queue = desc_.reader_queue};
    handle_ = graph.import_image(desc_.name, {.image = storage_.image,
                                              .view = storage_.view,
                                              .format = format,
                                              .width = width,
                                              .height = height,
                                              .incoming = arrive,
                                              .outgoing = rest});
    if (priming_) {
        handle_ = add_store(graph);
        valid_ = true; // this frame fills it
        declared_priming_ = true;
    }
    return handle_;
}

ImageHandle History::end(FrameGraph& graph) {
    if (!begun_)
        throw Error(ErrorCode::InvalidArgument, "history '" + desc_.name + "': end() without begin()");
    begun_ = false;
    if (!priming_) handle_ = add_store(graph);
    return handle_;
}

bool History::take_rebuild() {
    return std::exchange(declared_priming_, false);
}

ImageHandle History::add_store(FrameGraph& graph) {
    PassBuilder store = graph.add_transfer_pass(desc_.name + " store");
    const ImageHandle src = current_;
    store.read(src, ImageRead::TransferSrc);
    const ImageHandle dst = store.write(handle_, ImageWrite::TransferDst);
    store.record([src, dst](PassContext& ctx) {
        const VkExtent2D e = ctx.extent(src);
        VkImageCopy region{};
        region.srcSubresource = region.dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        region.extent = {e.width, e.height, 1};
        vkCmdCopyImage(ctx.vk(), ctx.image(src), ctx.layout(src), ctx.image(dst), ctx.layout(dst), 1,
                       &region);
    });
    return dst;
}

} // namespace vkml::fg
