#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Gather: with data viewed as [outer, axis_len, inner] and indices flattened to [n_idx],
//     out[(o * n_idx + j) * inner + e] = data[(o * axis_len + idx[j]) * inner + e]
// `inner` counts storage words (i64 data moves as word pairs). Indices are i32, or i64 read as
// (low, high) word pairs (VKML_INDEX64), so no shaderInt64 is needed. A negative index counts
// from the end; one still outside [0, axis_len) yields 0, since a shader cannot raise an error.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer Data { stype data[]; } src;
layout(std430, set = 0, binding = 1) readonly buffer Idx { int data[]; } idx;
layout(std430, set = 0, binding = 2) writeonly buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint count;
    uint n_idx;
    uint axis_len;
    uint inner;
} p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.count) return;
    uint e = i % p.inner;
    uint t = i / p.inner;
    uint j = t % p.n_idx;
    uint o = t / p.n_idx;
#if VKML_INDEX64
    int k = idx.data[2 * j];
    // Valid only when the high word is the low word's sign extension (the value fits 32 bits).
    bool fits = idx.data[2 * j + 1] == (k >> 31);
#else
    int k = idx.data[j];
    bool fits = true;
#endif
    if (k < 0) k += int(p.axis_len);
    if (!fits || k < 0 || k >= int(p.axis_len)) {
        dst.data[i] = stype_zero;
        return;
    }
    dst.data[i] = src.data[(o * p.axis_len + uint(k)) * p.inner + e];
}
