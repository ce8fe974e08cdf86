#pragma once
// Moving data between host memory and GPU buffers and tensors through staging buffers, on the
// transfer queue when the device has one. These are blocking conveniences for setup, tests and
// tools; per-frame paths record copies into their own command buffers.
#include <cstdint>
#include <span>
#include <vector>

#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/tensor.hpp"

namespace vkml::gpu {

class Device;

void upload(Device& device, const BufferRange& dst, std::span<const std::byte> data);
void download(Device& device, const BufferRange& src, std::span<std::byte> data);

// Float data converted to the tensor's dtype (f32 or f16) on the way.
void upload(Device& device, const Tensor& tensor, std::span<const float> data);
std::vector<float> download_floats(Device& device, const Tensor& tensor);
// Raw elements in the tensor's own dtype.
void upload_raw(Device& device, const Tensor& tensor, std::span<const std::byte> data);
std::vector<std::byte> download_raw(Device& device, const Tensor& tensor);

} // namespace vkml::gpu
