#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// CompositeOver: one invocation per pixel; out = image * (1 - a) + rgb with the premultiplied
// overlay's bytes / 255 (one 32-bit word per RGBA8 pixel, little endian: r in the low byte).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint PIXELS = 1;

layout(std430, set = 0, binding = 0) readonly buffer Img { sfloat data[]; } img;
layout(std430, set = 0, binding = 1) readonly buffer Ov { uint data[]; } ov;
layout(std430, set = 0, binding = 2) writeonly buffer Out { sfloat data[]; } dst;

void main() {
    uint i = vkml_linear_id();
    if (i >= PIXELS) return;
    vec4 o = unpackUnorm4x8(ov.data[i]);
    for (uint c = 0u; c < 3u; ++c) {
        uint k = c * PIXELS + i;
        dst.data[k] = sfloat(float(img.data[k]) * (1.0 - o.a) + o[c]);
    }
}
