#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Log-softmax of X [N, C, inner] over C, one invocation per (n, i): max, then the sum of
// exp(x - max), in fp32.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { sfloat data[]; } dst;
layout(push_constant) uniform Params {
    uint count; // N * inner
    uint classes;
    uint inner;
    int ignore;
} p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.count) return;
    uint n = i / p.inner, d = i % p.inner;
    uint base = n * p.classes * p.inner + d;
    float m = -1.0 / 0.0;
    for (uint c = 0; c < p.classes; ++c) m = max(m, float(src.data[base + c * p.inner]));
    float s = 0.0;
    for (uint c = 0; c < p.classes; ++c) s += exp(float(src.data[base + c * p.inner]) - m);
    float l = m + log(s);
    for (uint c = 0; c < p.classes; ++c) dst.data[base + c * p.inner] = sfloat(float(src.data[base + c * p.inner]) - l);
}
