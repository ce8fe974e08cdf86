#include "detect_image_pipeline.hpp"

#include "vkml/error.hpp"
#include "vkml/gpu/pipeline.hpp"

namespace vkml::ops::detail {

DetectImagePipeline::DetectImagePipeline(gpu::Device& device, const DetectImagePipelineDesc& desc)
    : device_(device), image_type_(desc.image_type), push_bytes_(desc.push_constant_bytes),
      workgroup_(desc.workgroup) {
    const VkDevice dev = device.vk();
    const bool push_descriptors = device.caps().push_descriptors;
    VkShaderModule module = VK_NULL_HANDLE;
    try {
        const VkDescriptorSetLayoutBinding bindings[] = {
            {0, image_type_, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr},
            {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr}};
        VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
        sl.flags = push_descriptors ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
        sl.bindingCount = 2;
        sl.pBindings = bindings;
        check_vk(vkCreateDescriptorSetLayout(dev, &sl, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");

        const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_};
        VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
        pl.setLayoutCount = 1;
        pl.pSetLayouts = &set_layout_;
        pl.pushConstantRangeCount = push_bytes_ ? 1 : 0;
        pl.pPushConstantRanges = &range;
        check_vk(vkCreatePipelineLayout(dev, &pl, nullptr, &layout_), "vkCreatePipelineLayout");

        const gpu::ShaderInfo& info = gpu::shader_info(desc.shader);
        VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        mi.codeSize = info.code.size_bytes();
        mi.pCode = info.code.data();
        check_vk(vkCreateShaderModule(dev, &mi, nullptr, &module), "vkCreateShaderModule");

        // The same convention as gpu::PipelineCache: constants 0.. then the workgroup at 100..102.
        std::vector<VkSpecializationMapEntry> entries;
        std::vector<uint32_t> values = desc.specialization;
        for (uint32_t i = 0; i < values.size(); ++i) entries.push_back({i, i * 4, 4});
        for (uint32_t i = 0; i < 3; ++i) {
            entries.push_back({100 + i, uint32_t(values.size() * 4), 4});
            values.push_back(workgroup_[i]);
        }
        const VkSpecializationInfo spec{uint32_t(entries.size()), entries.data(), values.size() * 4,
                                        values.data()};
        VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
        ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
        ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        ci.stage.module = module;
        ci.stage.pName = "main";
        ci.stage.pSpecializationInfo = &spec;
        ci.layout = layout_;
        // The device's persistent cache, so these pipelines load as fast as the core's.
        check_vk(vkCreateComputePipelines(dev, device.pipelines().vk(), 1, &ci, nullptr, &pipeline_),
                 "vkCreateComputePipelines");
        vkDestroyShaderModule(dev, module, nullptr);
        module = VK_NULL_HANDLE;
        device.set_debug_name(VK_OBJECT_TYPE_PIPELINE, pipeline_, desc.name);

        if (!push_descriptors) {
            const VkDescriptorPoolSize sizes[] = {{image_type_, ring_size},
                                                  {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, ring_size}};
            VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
            pi.maxSets = ring_size;
            pi.poolSizeCount = 2;
            pi.pPoolSizes = sizes;
            check_vk(vkCreateDescriptorPool(dev, &pi, nullptr, &pool_), "vkCreateDescriptorPool");
            const std::vector<VkDescriptorSetLayout> layouts(ring_size, set_layout_);
            VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, nullptr, pool_,
                                           ring_size, layouts.data()};
            sets_.resize(ring_size);
            check_vk(vkAllocateDescriptorSets(dev, &ai, sets_.data()), "vkAllocateDescriptorSets");
        }
    } catch (...) {
        if (module) vkDestroyShaderModule(dev, module, nullptr);
        destroy();
        throw;
    }
}

DetectImagePipeline::~DetectImagePipeline() {
    destroy();
}

void DetectImagePipeline::destroy() {
    // Work recorded with the pipeline may still run: destroyed once vkml's work so far is done.
    if (pool_ || pipeline_ || layout_ || set_layout_)
        device_.retire([dev = device_.vk(), pool = pool_, pipeline = pipeline_, layout = layout_,
                        set_layout = set_layout_] {
            if (pool) vkDestroyDescriptorPool(dev, pool, nullptr); // frees the sets
            if (pipeline) vkDestroyPipeline(dev, pipeline, nullptr);
            if (layout) vkDestroyPipelineLayout(dev, layout, nullptr);
            if (set_layout) vkDestroyDescriptorSetLayout(dev, set_layout, nullptr);
        });
    pool_ = VK_NULL_HANDLE;
    pipeline_ = VK_NULL_HANDLE;
    layout_ = VK_NULL_HANDLE;
    set_layout_ = VK_NULL_HANDLE;
    sets_.clear();
}

void DetectImagePipeline::dispatch(gpu::CommandBuffer& cmd, VkImageView view, VkImageLayout layout,
                                   const gpu::BufferRange& buffer, const void* push,
                                   std::array<uint32_t, 3> groups) const {
    const VkDescriptorImageInfo image_info{VK_NULL_HANDLE, view, layout};
    const VkDescriptorBufferInfo buffer_info{buffer.buffer, buffer.offset, buffer.size};
    VkWriteDescriptorSet writes[2] = {{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET},
                                      {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}};
    writes[0].dstBinding = 0;
    writes[0].descriptorCount = 1;
    writes[0].descriptorType = image_type_;
    writes[0].pImageInfo = &image_info;
    writes[1].dstBinding = 1;
    writes[1].descriptorCount = 1;
    writes[1].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[1].pBufferInfo = &buffer_info;

    const VkCommandBuffer cb = cmd.vk();
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
    if (sets_.empty()) {
        device_.ext().cmd_push_descriptor_set(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 2, writes);
    } else {
        const VkDescriptorSet set = sets_[next_set_.fetch_add(1, std::memory_order_relaxed) % ring_size];
        writes[0].dstSet = writes[1].dstSet = set;
        vkUpdateDescriptorSets(device_.vk(), 2, writes, 0, nullptr);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set, 0, nullptr);
    }
    if (push_bytes_) vkCmdPushConstants(cb, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_, push);
    vkCmdDispatch(cb, groups[0], groups[1], groups[2]);
}

} // namespace vkml::ops::detail
