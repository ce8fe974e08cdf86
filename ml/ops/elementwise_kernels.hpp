#pragma once
// Internals shared by the element-wise operators: the shaders' operation codes (mirroring
// shaders/elementwise/ops.glsl), broadcast layouts and the checks every element-wise op makes.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/elementwise.hpp"

namespace vkml::ops::detail::elementwise {

// Workgroup size of every element-wise kernel (one element per invocation).
inline constexpr uint32_t workgroup_size = 256;

// Binary operation codes (elementwise_binary), as in ops.glsl.
enum BinaryCode : uint32_t {
    code_add = 0,
    code_sub = 1,
    code_mul = 2,
    code_div = 3,
    code_pow = 4,
    code_mod = 5,
    code_fmod = 6,
    code_prelu = 7,
    code_max = 8,
    code_min = 9,
    code_add_scale = 10,
    code_first = 11,
    code_shl = 12,
    code_shr = 13,
};
// Comparison and logic codes (elementwise_compare), as in ops.glsl.
enum CompareCode : uint32_t {
    code_equal = 0,
    code_less = 1,
    code_less_equal = 2,
    code_greater = 3,
    code_greater_equal = 4,
    code_and = 5,
    code_or = 6,
    code_xor = 7,
};
// Unary codes are UnaryKind's values, plus this one for Gelu's tanh approximation.
inline constexpr uint32_t code_gelu_tanh = 64;

// The output's dimensions with each operand's element strides, after dropping size-1 dimensions
// and merging neighbours that every operand walks contiguously (so [8, 3, 5] + [8, 3, 5] is one
// flat dimension and [4, 6, 7] + [7] is [24, 7]).
struct BroadcastLayout {
    uint32_t rank = 0; // 0: every operand has the output's shape; the shaders use the flat index
    std::array<uint32_t, gpu::max_rank> dims{};
    std::array<std::array<uint32_t, gpu::max_rank>, 3> strides{};
};
// `inputs` (at most 3) must broadcast to `out`; fails naming `op` when an index exceeds 32 bits.
BroadcastLayout broadcast_layout(const char* op, const Shape& out, std::span<const Shape> inputs);

// The push constants of elementwise_binary (std430, as the shader declares them).
struct BinaryPush {
    uint32_t n = 0;
    float alpha = 0.f, beta = 0.f, scale = 1.f;
    std::array<uint32_t, gpu::max_rank> dims{}, sa{}, sb{};
};
BinaryPush binary_push(uint32_t n, const BroadcastLayout& layout, const Activation& activation,
                       float scale = 1.f);
std::vector<uint32_t> as_words(const BinaryPush& push);

// Fails unless `activation` is valid for an op storing `dtype`: float results only, known kind,
// Clip with min <= max.
void check_activation(const char* op, const Activation& activation, DType dtype);

// The pipeline of one element-wise kernel.
const gpu::Pipeline& pipeline(gpu::Device& device, gpu::ShaderId shader, uint32_t bindings,
                              uint32_t push_bytes, std::vector<uint32_t> specialization);

// Dispatches one invocation per element; nothing for empty tensors.
void dispatch(gpu::CommandBuffer& cmd, const gpu::Pipeline& pipeline,
              std::span<const gpu::BufferRange> buffers, const void* push, uint32_t push_bytes, uint32_t n);
// The same with the four-elements-per-invocation pipeline (VEC = 4) when `vec4` is set and every
// buffer starts on 16 bytes, else with the scalar one.
void dispatch_vec(gpu::CommandBuffer& cmd, const gpu::Pipeline& scalar, const gpu::Pipeline* vec4,
                  std::span<const gpu::BufferRange> buffers, const void* push, uint32_t push_bytes, uint32_t n);

} // namespace vkml::ops::detail::elementwise
