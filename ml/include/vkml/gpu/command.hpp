#pragma once
// CommandBuffer: records vkml's work. It either owns a command pool and buffer, or wraps a
// command buffer the host is recording (then vkml only appends commands to it). Descriptors are
// pushed (VK_KHR_push_descriptor) where supported, else written into sets from a DescriptorArena:
// the buffer's own, or one the caller passes to wrap().
//
// Lifetime: Device::submit notes the timeline value the buffer's work signals and closes its own
// arena's sets against it. Re-recording (begin/reset) waits for that work; destruction never
// frees a pool the GPU may still execute: it is retired against that value (Device::retire) and
// freed once the work is done. A wrapped host buffer that the host submits itself needs an arena
// whose owner says when that work is done (fg::Executor::record does); without one, sets still
// open when the wrapper goes are kept until the Device goes, with a warning.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/descriptors.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/image.hpp"

namespace vkml::gpu {

class Pipeline;
enum class BindingType : uint8_t;

// One descriptor of a typed dispatch, for a pipeline whose binding_types say what each binding is.
struct Binding {
    BindingType type;
    BufferRange buffer{};                           // StorageBuffer, UniformBuffer
    VkImageView view = VK_NULL_HANDLE;              // the image kinds
    VkImageLayout layout = VK_IMAGE_LAYOUT_GENERAL; // the layout the image is in while the work runs
    VkSampler sampler = VK_NULL_HANDLE;             // SampledImageSampler

    static Binding storage_buffer(const BufferRange& range);
    static Binding uniform_buffer(const BufferRange& range);
    static Binding storage_image(VkImageView view, VkImageLayout layout = VK_IMAGE_LAYOUT_GENERAL);
    static Binding sampled_image(VkImageView view, VkImageLayout layout);
    static Binding sampled_image(VkImageView view, VkImageLayout layout, VkSampler sampler);
};

class CommandBuffer {
public:
    // Owns its pool and buffer, for `role`'s queue family.
    CommandBuffer(Device& device, QueueRole role);
    // Wraps a host command buffer in the recording state; nothing of it is owned. Descriptor sets
    // (devices without push descriptors) come from `arena` when given; its owner closes them
    // (DescriptorArena::close) once it knows how the host's submission ends.
    static CommandBuffer wrap(Device& device, VkCommandBuffer cmd, QueueRole role,
                              DescriptorArena* arena = nullptr);
    ~CommandBuffer();
    CommandBuffer(CommandBuffer&&) noexcept;
    CommandBuffer& operator=(CommandBuffer&&) noexcept;
    CommandBuffer(const CommandBuffer&) = delete;
    CommandBuffer& operator=(const CommandBuffer&) = delete;

    void begin(); // one-time-submit recording; resets first
    void end();
    // The command buffer and its descriptor sets; waits first when its last submission is still
    // running (Device::wait).
    void reset();
    // Whether the work of its last submission may still be running.
    bool in_flight() const;
    VkCommandBuffer vk() const { return cmd_; }
    QueueRole role() const { return role_; }
    Device& device() const { return *device_; }

    // Binds `pipeline`, its buffers (one range per binding) and push constants, and dispatches
    // `groups` workgroups.
    void dispatch(const Pipeline& pipeline, std::span<const BufferRange> buffers, const void* push,
                  uint32_t push_bytes, std::array<uint32_t, 3> groups);
    template <class Push>
    void dispatch(const Pipeline& pipeline, std::span<const BufferRange> buffers, const Push& push,
                  std::array<uint32_t, 3> groups) {
        dispatch(pipeline, buffers, &push, sizeof(Push), groups);
    }
    // The same for a pipeline of any binding types: one Binding per binding, of the type the
    // pipeline declares for it (a mismatch is an InvalidArgument error naming the binding).
    void dispatch(const Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
                  uint32_t push_bytes, std::array<uint32_t, 3> groups);
    template <class Push>
    void dispatch(const Pipeline& pipeline, std::span<const Binding> bindings, const Push& push,
                  std::array<uint32_t, 3> groups) {
        dispatch(pipeline, bindings, &push, sizeof(Push), groups);
    }
    // Inside dynamic rendering the caller began (with viewport and scissor set, as the frame
    // graph's raster passes are): binds a raster pipeline, its descriptors and push constants, and
    // draws `vertices` vertices (no vertex buffer bound: a vertex-less pipeline, or the caller's).
    void draw(const Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
              uint32_t push_bytes, uint32_t vertices, uint32_t instances = 1);
    template <class Push>
    void draw(const Pipeline& pipeline, std::span<const Binding> bindings, const Push& push,
              uint32_t vertices, uint32_t instances = 1) {
        draw(pipeline, bindings, &push, sizeof(Push), vertices, instances);
    }
    // Workgroups to cover `invocations` one-dimensional work items with `pipeline`'s workgroup
    // size, folded into y when x would exceed the device's limit.
    std::array<uint32_t, 3> groups_for(const Pipeline& pipeline, uint64_t invocations) const;

    void copy(const BufferRange& src, const BufferRange& dst, uint64_t bytes);
    // Whole-image copies between a tightly packed buffer and mip level 0 of a colour image in
    // TRANSFER_DST_OPTIMAL / TRANSFER_SRC_OPTIMAL layout.
    void copy(const BufferRange& src, const Image& dst);
    void copy(const Image& src, const BufferRange& dst);
    void fill(const BufferRange& dst, uint32_t value, uint64_t bytes);

    void begin_label(std::string_view name);
    void end_label();

private:
    friend class Device;
    CommandBuffer() = default;
    VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);
    void bind(const Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
              uint32_t push_bytes);
    void destroy();
    void submitted(QueueRole queue, uint64_t value) {
        submitted_queue_ = queue;
        submitted_value_ = value;
        if (own_arena_) own_arena_->close(queue, value);
    }

    Device* device_ = nullptr;
    QueueRole role_ = QueueRole::Compute;
    VkCommandPool pool_ = VK_NULL_HANDLE; // null when wrapping a host command buffer
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    std::unique_ptr<DescriptorArena> own_arena_; // created on the first pooled set
    DescriptorArena* arena_ = nullptr;           // own_arena_, or the one given to wrap()
    QueueRole submitted_queue_ = QueueRole::Compute;
    uint64_t submitted_value_ = 0; // timeline value of the last submission (0: none)
};

// sync2 barrier helpers. The caller owns barriers between its ops, as in DirectML's layer API;
// these name the common cases.
namespace barrier {
void memory(CommandBuffer& cmd, VkPipelineStageFlags2 src_stage, VkAccessFlags2 src_access,
            VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access);
// A compute shader's writes visible to the next compute shader's reads and writes.
void compute_to_compute(CommandBuffer& cmd);
void transfer_to_compute(CommandBuffer& cmd);
void compute_to_transfer(CommandBuffer& cmd);
// GPU writes (compute or transfer) visible to the host after the submission's fence/semaphore.
void to_host(CommandBuffer& cmd);
void buffer(CommandBuffer& cmd, const BufferRange& range, VkPipelineStageFlags2 src_stage,
            VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access);
void image(CommandBuffer& cmd, VkImage image, VkImageLayout old_layout, VkImageLayout new_layout,
           VkPipelineStageFlags2 src_stage, VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stage,
           VkAccessFlags2 dst_access, VkImageAspectFlags aspect = VK_IMAGE_ASPECT_COLOR_BIT);
} // namespace barrier

} // namespace vkml::gpu
