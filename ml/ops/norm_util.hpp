#pragma once
// Helpers shared by the normalization operators' sources (not public API).
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "util.hpp"
#include "vkml/ops/norm.hpp"

// In a namespace of their own: other families' helpers live in detail:: too.
namespace vkml::ops::detail::norm {

// Float attributes travel as push-constant words.
inline uint32_t float_bits(float f) {
    return std::bit_cast<uint32_t>(f);
}

// A negative or non-finite epsilon would turn every output into NaN; ONNX only ever means a small
// positive number (0 is allowed: the caller knows its variances are positive).
inline void check_epsilon(const char* op, float epsilon) {
    if (!(epsilon >= 0.f) || !std::isfinite(epsilon))
        fail(op, "epsilon", "must be finite and >= 0, got " + std::to_string(epsilon));
}

// A per-channel parameter tensor: 1-D of `length` elements, stored like X.
inline void check_vector(const char* op, const std::string& field, const TensorDesc& param, int64_t length,
                         const TensorDesc& input) {
    if (param.shape.rank() != 1 || param.shape[0] != length)
        fail(op, field,
             "expected shape [" + std::to_string(length) + "], got " + param.shape.str() + " (input " +
                 to_string(input) + ")");
    if (param.dtype != input.dtype)
        fail(op, field,
             std::string("must have the input's dtype ") + gpu::dtype_name(input.dtype) + ", is " +
                 gpu::dtype_name(param.dtype));
}

// stash_type is the ONNX TensorProto data type of the statistics; vkml's kernels hold them in fp32.
inline void check_stash_type(const char* op, int64_t stash_type) {
    if (stash_type != 1)
        unsupported(op, "stash_type " + std::to_string(stash_type) +
                            ": mean and variance are computed in fp32 only (stash_type 1, FLOAT)");
}

// Product of shape[begin, end).
inline int64_t dims_product(const Shape& shape, size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t i = begin; i < end; ++i) p *= shape[i];
    return p;
}

} // namespace vkml::ops::detail::norm
