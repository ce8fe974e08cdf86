#pragma once
// fg::FrameGraph: a renderer describes its frame as passes that declare what they read and write;
// compile() works out order, lifetimes, memory aliasing, every barrier and layout transition, and
// the semaphores between the graphics and async compute queues. Passes never record barriers.
//
//     fg::FrameGraph graph({.name = "frame", .output_width = 1920, .output_height = 1080});
//     fg::ImageHandle hdr = graph.create_image("hdr", {.format = VK_FORMAT_R16G16B16A16_SFLOAT});
//     fg::PassBuilder scene = graph.add_raster_pass("scene");
//     hdr = scene.color(hdr, {.load = fg::LoadOp::Clear});
//     scene.record([=](fg::PassContext& ctx) { /* bind, draw */ });
//
// Setup / compile / execute, as in Frostbite's frame graph: declaring is cheap, so a renderer may
// rebuild the graph every frame; the executor keeps physical resources while their shapes stay.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <vulkan/vulkan_core.h>

#include "vkml/fg/types.hpp"
#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/profiler.hpp"
#include "vkml/gpu/tensor.hpp"

namespace vkml::gpu {
class CommandBuffer;
class Device;
} // namespace vkml::gpu

namespace vkml::fg {

class FrameGraph;
class PassContext;
class Executor;
struct Plan; // what compile() worked out: internal (engine_plugin/fg/plan.hpp)
using RecordFn = std::function<void(PassContext&)>;

// Declares one pass's uses. Write methods return the resource's next version: keep it, because
// the handle you passed in is stale from then on.
class PassBuilder {
public:
    void read(ImageHandle image, ImageRead use = ImageRead::Sampled, VkPipelineStageFlags2 stages = 0);
    [[nodiscard]] ImageHandle write(ImageHandle image, ImageWrite use = ImageWrite::Storage,
                                    VkPipelineStageFlags2 stages = 0);
    // Raster passes: attachments, in the order the fragment shader's outputs expect them.
    [[nodiscard]] ImageHandle color(ImageHandle image, const ColorAttachment& attachment = {});
    [[nodiscard]] ImageHandle depth(ImageHandle image, const DepthAttachment& attachment = {});

    void read(BufferHandle buffer, BufferRead use = BufferRead::Storage, VkPipelineStageFlags2 stages = 0);
    [[nodiscard]] BufferHandle write(BufferHandle buffer, BufferWrite use = BufferWrite::Storage,
                                     VkPipelineStageFlags2 stages = 0);

    // Keep the pass even when nothing reads what it writes (readbacks, host-visible results).
    PassBuilder& side_effect();
    // Ask for the async compute queue (compute, ML and transfer passes). Worth it when the pass
    // can overlap graphics work it does not depend on; the graph adds the semaphores.
    PassBuilder& queue(Queue queue);
    // The commands of the pass. Called once per executed frame with the graph's command buffer.
    PassBuilder& record(RecordFn fn);

    uint32_t index() const { return pass_; }

private:
    friend class FrameGraph;
    PassBuilder(FrameGraph& graph, uint32_t pass) : graph_(&graph), pass_(pass) {}
    FrameGraph* graph_;
    uint32_t pass_;
};

struct FrameGraphDesc {
    std::string name = "frame";
    // The extent output-relative transients are sized against (usually the swapchain's).
    uint32_t output_width = 0, output_height = 0;
};

class FrameGraph {
public:
    explicit FrameGraph(FrameGraphDesc desc = {});
    ~FrameGraph();
    FrameGraph(FrameGraph&&) noexcept;
    FrameGraph& operator=(FrameGraph&&) noexcept;
    FrameGraph(const FrameGraph&) = delete;
    FrameGraph& operator=(const FrameGraph&) = delete;

    // Transients: version 0 has no contents, so the first use must be a write.
    ImageHandle create_image(std::string name, const TransientImageDesc& desc);
    BufferHandle create_buffer(std::string name, const TransientBufferDesc& desc);
    // Imported: version 0 is what the host hands over, in `desc.incoming` state.
    ImageHandle import_image(std::string name, const ImportedImageDesc& desc);
    BufferHandle import_buffer(std::string name, const ImportedBufferDesc& desc);
    // Points an imported resource at another object of the same shape and states (the next
    // swapchain image) without recompiling.
    void rebind(ImageHandle image, VkImage vk_image, VkImageView view);
    void rebind(BufferHandle buffer, VkBuffer vk_buffer, uint64_t offset = 0, uint64_t size = VK_WHOLE_SIZE);
    void rebind(BufferHandle buffer, std::shared_ptr<gpu::Buffer> vkml_buffer, uint64_t offset = 0);

    PassBuilder add_raster_pass(std::string name);
    PassBuilder add_compute_pass(std::string name);
    // A compute pass whose callback records vkml operators (ops::Op::record, a Session's record).
    PassBuilder add_ml_pass(std::string name);
    PassBuilder add_transfer_pass(std::string name);

    // Validates, culls, orders, plans memory, barriers and queue submissions. Throws vkml::Error
    // (InvalidArgument) listing every problem found.
    const Plan& compile(const CompileOptions& options = {});
    bool compiled() const;
    const Plan& plan() const; // the last compile()'s plan; throws if there is none
    // Whether the last compile() put passes on the async compute queue (false before one).
    bool uses_async_compute() const;

    // The declared graph in Graphviz dot: passes (by queue and kind, culled ones dashed), resource
    // versions, reads and writes; with the plan's order and batches once compiled.
    std::string dump_graphviz() const;

    const FrameGraphDesc& desc() const;

    struct Impl; // the declared graph (engine_plugin/fg/graph_impl.hpp)

private:
    friend class PassBuilder;
    friend class Executor;
    const Impl& impl() const { return *impl_; }
    std::unique_ptr<Impl> impl_;
};

// What a pass's callback gets: the command buffer and its resources' physical objects.
class PassContext {
public:
    gpu::CommandBuffer& cmd() const { return *cmd_; }
    VkCommandBuffer vk() const;
    gpu::Device& device() const;
    const std::string& name() const;
    Queue queue() const; // where the pass actually runs
    uint32_t frame_slot() const { return slot_; }
    uint64_t frame_index() const { return frame_; }

    // The pass must have declared the resource (any version); anything else is an error.
    VkImage image(ImageHandle image) const;
    VkImageView view(ImageHandle image) const;
    VkFormat format(ImageHandle image) const;
    VkExtent2D extent(ImageHandle image) const;
    VkImageLayout layout(ImageHandle image) const; // the layout the pass sees it in (descriptors)
    gpu::BufferRange buffer(BufferHandle buffer) const;
    // A tensor view of a transient buffer or of an imported vkml buffer.
    gpu::Tensor tensor(BufferHandle buffer, const gpu::Shape& shape, gpu::DType dtype,
                       uint64_t byte_offset = 0) const;
    // Raster passes: the attachments' extent; viewport and scissor are already set to it.
    VkRect2D render_area() const;
    // The executor's per-pass timestamps, when it takes them (ExecutorDesc::timestamps), else
    // null: a pass may time parts of itself as scopes nested in its own (name them
    // "<pass>/<part>"; the frame's results list them after the pass, in recording order).
    gpu::Profiler* profiler() const { return profiler_; }

    struct Frame; // the executor's physical resources for one frame slot

private:
    friend class Executor;
    PassContext(const FrameGraph::Impl& graph, const Frame& frame, uint32_t pass, Queue queue,
                gpu::CommandBuffer& cmd, uint32_t slot, uint64_t frame_index, gpu::Profiler* profiler)
        : graph_(&graph), resources_(&frame), pass_(pass), queue_(queue), cmd_(&cmd), slot_(slot),
          frame_(frame_index), profiler_(profiler) {}
    uint32_t checked(uint32_t resource, ResourceKind kind) const;

    const FrameGraph::Impl* graph_;
    const Frame* resources_;
    uint32_t pass_;
    Queue queue_;
    gpu::CommandBuffer* cmd_;
    uint32_t slot_;
    uint64_t frame_;
    gpu::Profiler* profiler_;
};

} // namespace vkml::fg
