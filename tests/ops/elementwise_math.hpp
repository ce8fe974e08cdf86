#pragma once
// The arithmetic precisions the element-wise tests run each float op in, and the path the test
// expects the op to choose (its own list, not the op's).
#include <string>
#include <vector>

#include "op_test.hpp"

namespace vkml::test::elementwise_math {

// f32 tensors have one path (fp32 math, whatever the desc asks); f16 tensors are tested with Auto
// (half-precision math where the device and the op allow it) and with F32.
inline std::vector<ops::MathPrecision> precisions(gpu::DType dtype) {
    if (dtype == gpu::DType::f16) return {ops::MathPrecision::Auto, ops::MathPrecision::F32};
    return {ops::MathPrecision::Auto};
}

inline const char* name(ops::MathPrecision math) {
    return math == ops::MathPrecision::Auto ? "auto" : "f32-math";
}

// Whether an op that has a half-precision path (`has_f16_path`) should take it.
inline bool expect_f16_math(gpu::Device& dev, gpu::DType dtype, ops::MathPrecision math, bool has_f16_path) {
    return has_f16_path && dtype == gpu::DType::f16 && math == ops::MathPrecision::Auto && dev.caps().float16;
}

} // namespace vkml::test::elementwise_math
