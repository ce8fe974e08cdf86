#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// y[i] = min(max(x[i], lo), hi), ONNX Clip: lo and hi come from the one-element min and max inputs
// when HAS_MIN / HAS_MAX, else from the push constants (attributes, defaults -inf and +inf; for
// i32 already rounded inward to integers). min(max()) rather than clamp(): when lo > hi ONNX
// wants every value to become hi, and clamp() is undefined then. f16a (half-precision math) rounds
// the attribute bounds to f16 first: rounding is monotonic, so for f16 x that gives exactly what
// clipping in fp32 and rounding on store gives.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const bool HAS_MIN = false;
layout(constant_id = 1) const bool HAS_MAX = false;

layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 1) readonly buffer Min { stype data[]; } min_in;
layout(std430, set = 0, binding = 2) readonly buffer Max { stype data[]; } max_in;
layout(std430, set = 0, binding = 3) writeonly buffer Y { stype data[]; } y;
// lo, hi: float bits, or ints for the i32 variant.
layout(push_constant) uniform Params { uint n; uint lo; uint hi; } p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.n) return;
#if VKML_I32
    ctype lo = HAS_MIN ? min_in.data[0] : int(p.lo);
    ctype hi = HAS_MAX ? max_in.data[0] : int(p.hi);
#else
    ctype lo = HAS_MIN ? ctype(min_in.data[0]) : ctype(uintBitsToFloat(p.lo));
    ctype hi = HAS_MAX ? ctype(max_in.data[0]) : ctype(uintBitsToFloat(p.hi));
#endif
    y.data[i] = stype(min(max(ctype(x.data[i]), lo), hi));
}
