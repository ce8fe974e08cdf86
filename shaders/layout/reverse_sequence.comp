#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// ReverseSequence (ml/ops/layout_reverse_sequence.cpp): storage word e of the output, at time t of
// batch entry b, reads time len[b] - 1 - t when t < len[b], else t. The input is [T, B, inner] or
// (batch first) [B, T, inner], inner counted in storage words (i64 elements are two).
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer Src { stype data[]; } src;
layout(std430, set = 0, binding = 1) readonly buffer Lens { int data[]; } lens;
layout(std430, set = 0, binding = 2) writeonly buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params { uint count; uint T; uint B; uint inner; uint batch_first; } p;

void main() {
    uint e = vkml_linear_id();
    if (e >= p.count) return;
    uint w = e % p.inner, row = e / p.inner; // row = t * B + b, or b * T + t
    uint t = p.batch_first != 0u ? row % p.T : row / p.B;
    uint b = p.batch_first != 0u ? row / p.T : row % p.B;
    int len = clamp(lens.data[b], 0, int(p.T));
    uint s = int(t) < len ? uint(len) - 1u - t : t;
    uint srow = p.batch_first != 0u ? b * p.T + s : s * p.B + b;
    dst.data[e] = src.data[srow * p.inner + w];
}
