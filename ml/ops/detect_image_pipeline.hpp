#pragma once
// A compute pipeline whose set 0 is (binding 0: an image, binding 1: a storage buffer), for the
// image <-> tensor ops. The core's gpu::ComputePipelineDesc and CommandBuffer::dispatch know only
// storage buffers, so this owns its own descriptor-set layout, pipeline layout and pipeline, and
// records with raw Vulkan calls. Descriptors are pushed (VK_KHR_push_descriptor) when the device
// has it; otherwise it writes one of a ring of descriptor sets preallocated at creation, so that
// dispatch() allocates nothing.
#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::ops::detail {

struct DetectImagePipelineDesc {
    gpu::ShaderId shader{};
    // VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE (read with texelFetch) or VK_DESCRIPTOR_TYPE_STORAGE_IMAGE.
    VkDescriptorType image_type = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE;
    uint32_t push_constant_bytes = 0;
    std::array<uint32_t, 3> workgroup{8, 8, 1};
    std::vector<uint32_t> specialization; // constant_id 0, 1, ...; 100..102 get the workgroup
    std::string name;
};

class DetectImagePipeline {
public:
    // Descriptor sets in the ring used without push descriptors: a set is rewritten every
    // `ring_size`-th dispatch, so at most this many dispatches of one op may be pending
    // (recorded and not yet completed) at once.
    static constexpr uint32_t ring_size = 64;

    DetectImagePipeline(gpu::Device& device, const DetectImagePipelineDesc& desc);
    ~DetectImagePipeline();
    DetectImagePipeline(const DetectImagePipeline&) = delete;
    DetectImagePipeline& operator=(const DetectImagePipeline&) = delete;

    const std::array<uint32_t, 3>& workgroup() const { return workgroup_; }
    // Binds the pipeline, `view` in `layout` at binding 0 and `buffer` at binding 1, pushes
    // `push` (push_constant_bytes of it) and dispatches `groups`.
    void dispatch(gpu::CommandBuffer& cmd, VkImageView view, VkImageLayout layout,
                  const gpu::BufferRange& buffer, const void* push, std::array<uint32_t, 3> groups) const;

private:
    void destroy();

    gpu::Device& device_;
    VkDescriptorType image_type_;
    uint32_t push_bytes_ = 0;
    std::array<uint32_t, 3> workgroup_{};
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipeline pipeline_ = VK_NULL_HANDLE;
    VkDescriptorPool pool_ = VK_NULL_HANDLE; // only without push descriptors
    std::vector<VkDescriptorSet> sets_;
    mutable std::atomic<uint32_t> next_set_{0};
};

} // namespace vkml::ops::detail
