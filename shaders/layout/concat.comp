#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Concat of up to 8 inputs in one dispatch (more inputs take more passes). The output is viewed
// as [outer, total, inner] with `total` its length along the axis; this pass writes the rows
// [offsets[0], offsets[n]) of that axis, row r coming from the input j with
// offsets[j] <= r < offsets[j + 1]. `inner` counts storage words (i64 elements are two). Unused
// bindings repeat input 0. With CONCAT_VEC, a word is a 16-byte unit (layout_concat_v16: every
// input's rows are whole units, and the C++ side divides `inner` accordingly).
VKML_LOCAL_SIZE;
#if CONCAT_VEC
#undef stype
#define stype uvec4
#endif
layout(std430, set = 0, binding = 0) readonly buffer In0 { stype data[]; } in0;
layout(std430, set = 0, binding = 1) readonly buffer In1 { stype data[]; } in1;
layout(std430, set = 0, binding = 2) readonly buffer In2 { stype data[]; } in2;
layout(std430, set = 0, binding = 3) readonly buffer In3 { stype data[]; } in3;
layout(std430, set = 0, binding = 4) readonly buffer In4 { stype data[]; } in4;
layout(std430, set = 0, binding = 5) readonly buffer In5 { stype data[]; } in5;
layout(std430, set = 0, binding = 6) readonly buffer In6 { stype data[]; } in6;
layout(std430, set = 0, binding = 7) readonly buffer In7 { stype data[]; } in7;
layout(std430, set = 0, binding = 8) writeonly buffer Out { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint count;  // outer * (offsets[n] - offsets[0]) * inner
    uint total;  // output length along the axis
    uint inner;
    uint n;      // inputs in this pass
    uint offsets[9];
} p;

// 16-bit storage allows no float16 locals: each case moves the element from buffer to buffer.
void move(uint j, uint src_idx, uint dst_idx) {
    switch (j) {
    case 0: dst.data[dst_idx] = in0.data[src_idx]; break;
    case 1: dst.data[dst_idx] = in1.data[src_idx]; break;
    case 2: dst.data[dst_idx] = in2.data[src_idx]; break;
    case 3: dst.data[dst_idx] = in3.data[src_idx]; break;
    case 4: dst.data[dst_idx] = in4.data[src_idx]; break;
    case 5: dst.data[dst_idx] = in5.data[src_idx]; break;
    case 6: dst.data[dst_idx] = in6.data[src_idx]; break;
    default: dst.data[dst_idx] = in7.data[src_idx]; break;
    }
}

void main() {
    uint i = vkml_linear_id();
    if (i >= p.count) return;
    uint span = p.offsets[p.n] - p.offsets[0];
    uint e = i % p.inner;
    uint t = i / p.inner;
    uint row = p.offsets[0] + t % span;
    uint outer = t / span;
    uint j = 0;
    while (j + 1 < p.n && row >= p.offsets[j + 1]) ++j;
    uint len = p.offsets[j + 1] - p.offsets[j];
    move(j, (outer * len + (row - p.offsets[j])) * p.inner + e, (outer * p.total + row) * p.inner + e);
}
