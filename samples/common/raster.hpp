#pragma once
// The raster pipelines of the samples' own passes (the scene, the detection boxes): dynamic
// rendering, one colour attachment, viewport and scissor dynamic (the frame graph sets them), no
// culling, opaque writes. What differs between them is in RasterPipelineDesc.
#include <span>

#include <vulkan/vulkan_core.h>

#include "vkml/shader_ids.hpp"

namespace vkml::samples {

// A shader module of an embedded SPIR-V shader; errors name `owner` ("scene", "detect boxes").
VkShaderModule make_shader_module(VkDevice device, gpu::ShaderId id, const char* owner);

struct RasterPipelineDesc {
    VkShaderModule vs = VK_NULL_HANDLE, fs = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    std::span<const VkVertexInputBindingDescription> bindings;
    std::span<const VkVertexInputAttributeDescription> attributes;
    VkFormat color_format = VK_FORMAT_UNDEFINED;
    // A depth attachment turns on depth test and write (less); UNDEFINED: none.
    VkFormat depth_format = VK_FORMAT_UNDEFINED;
    VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT;
    bool alpha_to_coverage = false;
    const char* owner = "sample"; // for error messages
};

VkPipeline make_raster_pipeline(VkDevice device, const RasterPipelineDesc& desc);

} // namespace vkml::samples
