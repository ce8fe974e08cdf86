#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Resize, nearest, by whole factors KH x KW over the last two dimensions, where every ONNX mode the
// C++ side accepted for it (ml/ops/layout_resize.cpp) maps output (oh, ow) to input
// (oh / KH, ow / KW). Eight consecutive outputs per invocation: with rows of whole 16-byte units
// (f16, OW % 8 == 0) they are one 16-byte store, the memory-bound case of a network's x2 upsample.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint GROUPS = 1; // invocations: ceil(COUNT / 8)
layout(constant_id = 1) const uint COUNT = 1;
layout(constant_id = 2) const uint IH = 1;
layout(constant_id = 3) const uint IW = 1;
layout(constant_id = 4) const uint KH = 1;
layout(constant_id = 5) const uint KW = 1;
const uint OH = IH * KH, OW = IW * KW;

layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { sfloat data[]; } dst;
#if VKML_FP16
// The halves as 32-bit words (16-bit storage has no 16-bit arithmetic to repack them with).
layout(std430, set = 0, binding = 0) readonly buffer Src32 { uint data[]; } src32;
layout(std430, set = 0, binding = 1) writeonly buffer Dst8 { uvec4 data[]; } dst8;
const bool UNITS = OW % 8 == 0;
uint half_at(uint i) { return (src32.data[i / 2] >> (16 * (i % 2))) & 0xffffu; }
#endif

uint source(uint o) {
    const uint ow = o % OW, oh = (o / OW) % OH, plane = o / (OW * OH);
    return (plane * IH + oh / KH) * IW + ow / KW;
}

void main() {
    const uint g = vkml_linear_id();
    if (g >= GROUPS) return;
    const uint o = g * 8;
#if VKML_FP16
    if (UNITS) { // eight outputs of one row, at a 16-byte boundary
        const uint s = source(o);
        uint h[8];
        [[unroll]] for (uint e = 0; e < 8; ++e)
            h[e] = half_at(s + (o % OW + e) / KW - (o % OW) / KW);
        dst8.data[g] = uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
        return;
    }
#endif
    [[unroll]] for (uint e = 0; e < 8; ++e)
        if (o + e < COUNT) dst.data[o + e] = src.data[source(o + e)];
}
