#pragma once
// IEEE 754 binary16 conversion on the host, for uploading and downloading f16 tensors.
// Round-to-nearest-even, with infinities, NaN and subnormals handled, so that every half value
// round-trips exactly through float.
#include <cstdint>
#include <span>

namespace vkml::gpu {

uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);

void floats_to_halves(std::span<const float> in, std::span<uint16_t> out);
void halves_to_floats(std::span<const uint16_t> in, std::span<float> out);

} // namespace vkml::gpu
