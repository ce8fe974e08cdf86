#pragma once
// What the detector ops that touch images share (defined in detect_image.cpp): format names,
// the checks of a sampled source image and of bound tensors, the pixel transform's push
// constants and the 8x8-pixel grid.
#include <array>
#include <string>

#include "vkml/ops/detect.hpp"

namespace vkml::ops::detail {

// "R8G8B8A8_UNORM", or "VkFormat <n>" for formats the ops do not name.
std::string describe(VkFormat format);
// The features of `format` with optimal tiling, including the Vulkan 1.3 bits (write without
// format) that only VkFormatProperties3 reports.
VkFormatFeatureFlags2 format_features(const gpu::Device& device, VkFormat format);
// A source read with texelFetch: one of the four formats ImageToTensor reads, in
// SHADER_READ_ONLY_OPTIMAL or GENERAL, sampled on this device.
void check_sampled_source(const char* op, const gpu::Device& device, VkFormat format, VkImageLayout layout);
// Validates a PixelTransform for `channels` tensor channels and packs it as the shaders' three
// vec4s (scale, mean, std); unused channels get the identity.
std::array<float, 12> pack_transform(const char* op, const PixelTransform& t, uint32_t channels);
// A bound tensor of the shape and dtype the op was created for, contiguous and aligned.
void check_tensor(const Op& op, const gpu::Device& device, const char* field, const Tensor& given,
                  const TensorDesc& want);
// A bound image of the format and size the op was created for.
void check_image(const Op& op, const ImageRef& image, VkFormat format, uint32_t width, uint32_t height);
// The grid of 8x8-pixel workgroups over width x height, checked against the device's limits.
std::array<uint32_t, 3> pixel_groups(const gpu::Device& device, const char* op, uint32_t width,
                                     uint32_t height);

} // namespace vkml::ops::detail
