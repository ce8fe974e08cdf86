#include "vkml/gpu/command.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "vkml/error.hpp"
#include "vkml/gpu/pipeline.hpp"

namespace vkml::gpu {

CommandBuffer::CommandBuffer(Device& device, QueueRole role) : device_(&device), role_(role) {
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pi.queueFamilyIndex = device.queue_family(role);
    check_vk(vkCreateCommandPool(device.vk(), &pi, nullptr, &pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool_,
                                   VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    const VkResult r = vkAllocateCommandBuffers(device.vk(), &ai, &cmd_);
    if (r < 0) destroy();
    check_vk(r, "vkAllocateCommandBuffers");
}

CommandBuffer CommandBuffer::wrap(Device& device, VkCommandBuffer cmd, QueueRole role,
                                  DescriptorArena* arena) {
    CommandBuffer c;
    c.device_ = &device;
    c.role_ = role;
    c.cmd_ = cmd;
    c.arena_ = arena;
    return c;
}

CommandBuffer::~CommandBuffer() {
    destroy();
}

CommandBuffer::CommandBuffer(CommandBuffer&& o) noexcept
    : device_(o.device_), role_(o.role_), pool_(std::exchange(o.pool_, VK_NULL_HANDLE)),
      cmd_(std::exchange(o.cmd_, VK_NULL_HANDLE)), own_arena_(std::move(o.own_arena_)),
      arena_(std::exchange(o.arena_, nullptr)), submitted_queue_(o.submitted_queue_),
      submitted_value_(std::exchange(o.submitted_value_, 0)) {}

CommandBuffer& CommandBuffer::operator=(CommandBuffer&& o) noexcept {
    if (this != &o) {
        destroy();
        device_ = o.device_;
        role_ = o.role_;
        pool_ = std::exchange(o.pool_, VK_NULL_HANDLE);
        cmd_ = std::exchange(o.cmd_, VK_NULL_HANDLE);
        own_arena_ = std::move(o.own_arena_);
        arena_ = std::exchange(o.arena_, nullptr);
        submitted_queue_ = o.submitted_queue_;
        submitted_value_ = std::exchange(o.submitted_value_, 0);
    }
    return *this;
}

void CommandBuffer::destroy() {
    if (own_arena_ && !pool_ && own_arena_->has_open()) {
        // A host buffer vkml did not submit: the host will, and nobody tells vkml when its work
        // ends. Freeing the sets now would leave the host's buffer pointing at freed sets.
        device_->message(Severity::Warning,
                         "a wrapped host command buffer went away holding descriptor sets whose "
                         "submission vkml is not told about (no push descriptors): they are kept "
                         "until the Device goes; pass a DescriptorArena to CommandBuffer::wrap and "
                         "close it when the host submits");
        own_arena_->abandon_open();
    }
    // The arena retires its closed sets against their submissions and frees the rest.
    own_arena_.reset();
    arena_ = nullptr;
    if (!device_ || !pool_) return;
    auto free = [vk = device_->vk(), pool = pool_] {
        vkDestroyCommandPool(vk, pool, nullptr); // frees the command buffer too
    };
    pool_ = VK_NULL_HANDLE;
    cmd_ = VK_NULL_HANDLE;
    if (submitted_value_)
        device_->retire(submitted_queue_, submitted_value_, std::move(free));
    else
        free();
}

bool CommandBuffer::in_flight() const {
    return submitted_value_ && !device_->is_complete(submitted_queue_, submitted_value_);
}

void CommandBuffer::reset() {
    if (submitted_value_) device_->wait(submitted_queue_, submitted_value_);
    submitted_value_ = 0;
    if (!pool_) return; // a host buffer: the host resets it, and its sets are the arena owner's
    check_vk(vkResetCommandPool(device_->vk(), pool_, 0), "vkResetCommandPool");
    // What was recorded and never submitted is gone with the reset; what was submitted is done.
    if (own_arena_) own_arena_->discard_open();
}

void CommandBuffer::begin() {
    if (!pool_)
        throw Error(ErrorCode::InvalidArgument,
                    "begin() on a wrapped host command buffer: the host records it");
    reset();
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check_vk(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
}

void CommandBuffer::end() {
    if (!pool_)
        throw Error(ErrorCode::InvalidArgument, "end() on a wrapped host command buffer: the host ends it");
    check_vk(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
}

VkDescriptorSet CommandBuffer::allocate_set(VkDescriptorSetLayout layout) {
    if (!arena_) {
        own_arena_ = std::make_unique<DescriptorArena>(*device_, "descriptor sets of a command buffer");
        arena_ = own_arena_.get();
    }
    return arena_->allocate(layout);
}

Binding Binding::storage_buffer(const BufferRange& range) {
    return {.type = BindingType::StorageBuffer, .buffer = range};
}
Binding Binding::uniform_buffer(const BufferRange& range) {
    return {.type = BindingType::UniformBuffer, .buffer = range};
}
Binding Binding::storage_image(VkImageView view, VkImageLayout layout) {
    return {.type = BindingType::StorageImage, .view = view, .layout = layout};
}
Binding Binding::sampled_image(VkImageView view, VkImageLayout layout) {
    return {.type = BindingType::SampledImage, .view = view, .layout = layout};
}
Binding Binding::sampled_image(VkImageView view, VkImageLayout layout, VkSampler sampler) {
    return {.type = BindingType::SampledImageSampler, .view = view, .layout = layout, .sampler = sampler};
}

void CommandBuffer::bind(const Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
                         uint32_t push_bytes) {
    constexpr size_t max_bindings = 32;
    if (bindings.size() != pipeline.bindings())
        throw Error(ErrorCode::InvalidArgument,
                    "dispatch of " + pipeline.name() + ": " + std::to_string(bindings.size()) +
                        " bindings given, the pipeline has " + std::to_string(pipeline.bindings()));
    if (bindings.size() > max_bindings)
        throw Error(ErrorCode::InvalidArgument, "dispatch of " + pipeline.name() + ": more than 32 bindings");
    if (push_bytes != pipeline.push_constant_bytes())
        throw Error(ErrorCode::InvalidArgument, "dispatch of " + pipeline.name() + ": " +
                                                    std::to_string(push_bytes) +
                                                    " bytes of push constants, the pipeline takes " +
                                                    std::to_string(pipeline.push_constant_bytes()));
    std::array<VkDescriptorBufferInfo, max_bindings> buffer_infos;
    std::array<VkDescriptorImageInfo, max_bindings> image_infos;
    std::array<VkWriteDescriptorSet, max_bindings> writes;
    for (uint32_t i = 0; i < bindings.size(); ++i) {
        const Binding& b = bindings[i];
        const BindingType want = pipeline.binding_types()[i];
        if (b.type != want)
            throw Error(ErrorCode::InvalidArgument,
                        "dispatch of " + pipeline.name() + ": binding " + std::to_string(i) + " is a " +
                            binding_type_name(want) + ", given a " + binding_type_name(b.type));
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = descriptor_type(b.type);
        if (b.type == BindingType::StorageBuffer || b.type == BindingType::UniformBuffer) {
            buffer_infos[i] = {b.buffer.buffer, b.buffer.offset, b.buffer.size};
            writes[i].pBufferInfo = &buffer_infos[i];
        } else {
            if (b.type == BindingType::SampledImageSampler && !b.sampler)
                throw Error(ErrorCode::InvalidArgument, "dispatch of " + pipeline.name() + ": binding " +
                                                            std::to_string(i) + " needs a sampler");
            image_infos[i] = {b.type == BindingType::SampledImageSampler ? b.sampler : VK_NULL_HANDLE, b.view,
                              b.layout};
            writes[i].pImageInfo = &image_infos[i];
        }
    }
    vkCmdBindPipeline(cmd_, pipeline.bind_point(), pipeline.vk());
    const auto n = uint32_t(bindings.size());
    if (n && device_->caps().push_descriptors) {
        device_->ext().cmd_push_descriptor_set(cmd_, pipeline.bind_point(), pipeline.layout(), 0, n,
                                               writes.data());
    } else if (n) {
        const VkDescriptorSet set = allocate_set(pipeline.set_layout());
        for (uint32_t i = 0; i < n; ++i) writes[i].dstSet = set;
        vkUpdateDescriptorSets(device_->vk(), n, writes.data(), 0, nullptr);
        vkCmdBindDescriptorSets(cmd_, pipeline.bind_point(), pipeline.layout(), 0, 1, &set, 0, nullptr);
    }
    if (push_bytes) vkCmdPushConstants(cmd_, pipeline.layout(), pipeline.stages(), 0, push_bytes, push);
}

void CommandBuffer::dispatch(const Pipeline& pipeline, std::span<const BufferRange> buffers, const void* push,
                             uint32_t push_bytes, std::array<uint32_t, 3> groups) {
    if (pipeline.bind_point() != VK_PIPELINE_BIND_POINT_COMPUTE)
        throw Error(ErrorCode::InvalidArgument,
                    "dispatch of " + pipeline.name() + ": a raster pipeline (draw it)");
    if (buffers.size() != pipeline.bindings() || !pipeline.buffers_only())
        throw Error(ErrorCode::InvalidArgument,
                    "dispatch of " + pipeline.name() + ": " + std::to_string(buffers.size()) +
                        " buffers bound, the pipeline has " + std::to_string(pipeline.bindings()) +
                        (pipeline.buffers_only() ? "" : " bindings, not all storage buffers"));
    std::array<Binding, 32> bindings;
    if (buffers.size() > bindings.size())
        throw Error(ErrorCode::InvalidArgument, "dispatch of " + pipeline.name() + ": more than 32 buffers");
    for (size_t i = 0; i < buffers.size(); ++i) bindings[i] = Binding::storage_buffer(buffers[i]);
    bind(pipeline, std::span(bindings.data(), buffers.size()), push, push_bytes);
    vkCmdDispatch(cmd_, groups[0], groups[1], groups[2]);
}

void CommandBuffer::dispatch(const Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
                             uint32_t push_bytes, std::array<uint32_t, 3> groups) {
    if (pipeline.bind_point() != VK_PIPELINE_BIND_POINT_COMPUTE)
        throw Error(ErrorCode::InvalidArgument,
                    "dispatch of " + pipeline.name() + ": a raster pipeline (draw it)");
    bind(pipeline, bindings, push, push_bytes);
    vkCmdDispatch(cmd_, groups[0], groups[1], groups[2]);
}

void CommandBuffer::draw(const Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
                         uint32_t push_bytes, uint32_t vertices, uint32_t instances) {
    if (pipeline.bind_point() != VK_PIPELINE_BIND_POINT_GRAPHICS)
        throw Error(ErrorCode::InvalidArgument,
                    "draw of " + pipeline.name() + ": a compute pipeline (dispatch it)");
    bind(pipeline, bindings, push, push_bytes);
    vkCmdDraw(cmd_, vertices, instances, 0, 0);
}

std::array<uint32_t, 3> CommandBuffer::groups_for(const Pipeline& pipeline, uint64_t invocations) const {
    const uint64_t wg = pipeline.workgroup()[0];
    const uint64_t groups = (invocations + wg - 1) / wg;
    const uint64_t max_x = device_->caps().max_workgroup_count[0];
    if (groups <= max_x) return {uint32_t(std::max<uint64_t>(groups, 1)), 1, 1};
    const uint64_t y = (groups + max_x - 1) / max_x;
    if (y > device_->caps().max_workgroup_count[1])
        throw Error(ErrorCode::InvalidArgument, "dispatch of " + pipeline.name() + ": " +
                                                    std::to_string(invocations) +
                                                    " invocations exceed the device's grid");
    return {uint32_t(max_x), uint32_t(y), 1};
}

void CommandBuffer::copy(const BufferRange& src, const BufferRange& dst, uint64_t bytes) {
    VkBufferCopy region{src.offset, dst.offset, bytes};
    vkCmdCopyBuffer(cmd_, src.buffer, dst.buffer, 1, &region);
}

namespace {
VkBufferImageCopy whole_image(const BufferRange& buffer, const Image& image) {
    VkBufferImageCopy region{};
    region.bufferOffset = buffer.offset;
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {image.width(), image.height(), 1};
    return region;
}
} // namespace

void CommandBuffer::copy(const BufferRange& src, const Image& dst) {
    const VkBufferImageCopy region = whole_image(src, dst);
    vkCmdCopyBufferToImage(cmd_, src.buffer, dst.vk(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
}

void CommandBuffer::copy(const Image& src, const BufferRange& dst) {
    const VkBufferImageCopy region = whole_image(dst, src);
    vkCmdCopyImageToBuffer(cmd_, src.vk(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst.buffer, 1, &region);
}

void CommandBuffer::fill(const BufferRange& dst, uint32_t value, uint64_t bytes) {
    vkCmdFillBuffer(cmd_, dst.buffer, dst.offset, bytes, value);
}

void CommandBuffer::begin_label(std::string_view name) {
    if (!device_->ext().cmd_begin_debug_label) return;
    const std::string n(name);
    VkDebugUtilsLabelEXT label{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT, nullptr, n.c_str(), {0, 0, 0, 0}};
    device_->ext().cmd_begin_debug_label(cmd_, &label);
}

void CommandBuffer::end_label() {
    if (device_->ext().cmd_end_debug_label) device_->ext().cmd_end_debug_label(cmd_);
}

namespace barrier {

void memory(CommandBuffer& cmd, VkPipelineStageFlags2 src_stage, VkAccessFlags2 src_access,
            VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access) {
    VkMemoryBarrier2 b{
        VK_STRUCTURE_TYPE_MEMORY_BARRIER_2, nullptr, src_stage, src_access, dst_stage, dst_access};
    VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
    dep.memoryBarrierCount = 1;
    dep.pMemoryBarriers = &b;
    vkCmdPipelineBarrier2(cmd.vk(), &dep);
}

void compute_to_compute(CommandBuffer& cmd) {
    memory(cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
           VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
           VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
}

void transfer_to_compute(CommandBuffer& cmd) {
    memory(cmd, VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
           VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
           VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
}

void compute_to_transfer(CommandBuffer& cmd) {
    memory(cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
           VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT);
}

void to_host(CommandBuffer& cmd) {
    memory(cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_TRANSFER_BIT,
           VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT,
           VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT);
}

void buffer(CommandBuffer& cmd, const BufferRange& range, VkPipelineStageFlags2 src_stage,
            VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access) {
    VkBufferMemoryBarrier2 b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2};
    b.srcStageMask = src_stage;
    b.srcAccessMask = src_access;
    b.dstStageMask = dst_stage;
    b.dstAccessMask = dst_access;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.buffer = range.buffer;
    b.offset = range.offset;
    b.size = range.size;
    VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
    dep.bufferMemoryBarrierCount = 1;
    dep.pBufferMemoryBarriers = &b;
    vkCmdPipelineBarrier2(cmd.vk(), &dep);
}

void image(CommandBuffer& cmd, VkImage image, VkImageLayout old_layout, VkImageLayout new_layout,
           VkPipelineStageFlags2 src_stage, VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stage,
           VkAccessFlags2 dst_access, VkImageAspectFlags aspect) {
    VkImageMemoryBarrier2 b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2};
    b.srcStageMask = src_stage;
    b.srcAccessMask = src_access;
    b.dstStageMask = dst_stage;
    b.dstAccessMask = dst_access;
    b.oldLayout = old_layout;
    b.newLayout = new_layout;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image;
    b.subresourceRange = {aspect, 0, VK_REMAINING_MIP_LEVELS, 0, VK_REMAINING_ARRAY_LAYERS};
    VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
    dep.imageMemoryBarrierCount = 1;
    dep.pImageMemoryBarriers = &b;
    vkCmdPipelineBarrier2(cmd.vk(), &dep);
}

} // namespace barrier
} // namespace vkml::gpu
