#pragma once
// Helpers shared by the operator implementations (not public API).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vkml/ops/op.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::ops::detail {

// numpy broadcasting of two shapes; fails naming `op` and both shapes when they do not broadcast.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Element strides for reading `in` as if it had shape `out` (right-aligned, 0 on broadcast
// dimensions), returned for out.rank() dimensions.
std::array<int64_t, gpu::max_rank> broadcast_strides(const Shape& in, const Shape& out);
// Contiguous element strides of `shape`.
std::array<int64_t, gpu::max_rank> contiguous_strides(const Shape& shape);
// An ONNX axis (negative counts from the end) as an index into a rank-`rank` shape.
size_t normalize_axis(const char* op, const std::string& field, int64_t axis, size_t rank);

// "f32", "f16", "i32", "u8" (the shader variant that stores `dtype`); i64 has none.
const char* variant_name(DType dtype);
// The shader `name` in the variant storing `dtype`, after checking the device can run it; fails
// naming the op when the dtype has no variant or the device lacks the feature (e.g. f16 storage).
gpu::ShaderId shader_for(gpu::Device& device, const char* op, std::string_view name, DType dtype);
gpu::ShaderId shader_for(gpu::Device& device, const char* op, std::string_view name,
                         std::string_view variant);

// Whether an op storing `dtype` and asking for `math` computes in half precision (the f16a shader
// variant): f16 tensors, MathPrecision::Auto and a device with shaderFloat16 (and 16-bit storage).
// Whether the op has a half-precision path for its mode is the op's own decision.
bool use_f16_math(const gpu::Device& device, DType dtype, MathPrecision math);
// Fails unless `math` is a known MathPrecision (field "math").
void check_math(const char* op, MathPrecision math);

void require_float(const char* op, const std::string& field, const TensorDesc& desc); // f32 or f16
// A 3-D op's per-axis attribute (kernel_shape, strides, pads...): `count` values each in
// [min, 65535], or `count` copies of `fallback` when `v` is empty; `what` names the op kind in
// the error ("3-D convolution").
std::vector<int64_t> axis_values(const char* op, const char* field, const char* what,
                                 const std::vector<int64_t>& v, size_t count, int64_t min, int64_t fallback);
// Fails unless `value` fits a uint32 (shader indices are 32-bit).
uint32_t to_u32(const char* op, const std::string& field, int64_t value);
// A numeric tuning environment variable (VKML_*), clamped to [lo, hi]; `fallback` when unset. Read
// once by each caller (into a static).
int64_t tuning_knob(const char* name, int64_t fallback, int64_t lo, int64_t hi);

// Checked shape arithmetic: a sum or product past 64 bits fails naming `op` and `field` (a model's
// huge pads, scales, repeats or block sizes are an error, not a wrapped size).
int64_t add_dims(const char* op, const std::string& field, int64_t a, int64_t b);
int64_t mul_dims(const char* op, const std::string& field, int64_t a, int64_t b);
// floor(v) as a size: fails unless v is finite and below 2^63 (Resize's input size times scale).
int64_t floor_size(const char* op, const std::string& field, double v);
// An output shape computed from `field`: a dimension product past 64 bits fails naming the op.
Shape shape_of(const char* op, const std::string& field, std::span<const int64_t> dims);

// Dispatches `pipeline` over `count` one-dimensional work items.
template <class Push>
void dispatch_1d(gpu::CommandBuffer& cmd, const gpu::Pipeline& pipeline,
                 std::span<const gpu::BufferRange> buffers, const Push& push, uint64_t count) {
    cmd.dispatch(pipeline, buffers, push, cmd.groups_for(pipeline, count));
}

// Whether `plan()` (an op's plan builder, which throws vkml::Error on what it cannot run) succeeds;
// the reason in *why when not (the ops' static supported()).
template <class F>
bool plan_succeeds(F&& plan, std::string* why) {
    try {
        (void)plan();
        return true;
    } catch (const Error& e) {
        if (why) *why = e.what();
        return false;
    }
}

} // namespace vkml::ops::detail
