#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Hardmax along one axis of an input seen as [outer, n, inner]: one invocation per row writes 1
// at the row's first maximum and 0 elsewhere.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Out { sfloat data[]; } dst;
layout(push_constant) uniform Params {
    uint rows;
    uint n;
    uint inner;
} pc;

void main() {
    const uint r = vkml_linear_id();
    if (r >= pc.rows) return;
    const uint base = (r / pc.inner) * pc.n * pc.inner + r % pc.inner;
    uint best = 0;
    float m = float(src.data[base]);
    for (uint j = 1; j < pc.n; ++j) {
        const float v = float(src.data[base + j * pc.inner]);
        if (v > m) {
            m = v;
            best = j;
        }
    }
    for (uint j = 0; j < pc.n; ++j) dst.data[base + j * pc.inner] = j == best ? sfloat(1.0) : sfloat(0.0);
}
