#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// A 1x1 convolution over 3 channels with bias and ReLU: y[c] = max(0, sum_k w[c][k] x[k] + b[c]),
// on planar [1, 3, H, W] tensors. The frame-graph tests' stand-in for an ML operator.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer X { sfloat data[]; } x;
layout(std430, set = 0, binding = 1) writeonly buffer Y { sfloat data[]; } y;
layout(push_constant) uniform Params { uint plane; float w[9]; float b[3]; } p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.plane) return;
    vec3 v = vec3(afloat(x.data[i]), afloat(x.data[p.plane + i]), afloat(x.data[2 * p.plane + i]));
    for (uint c = 0; c < 3; ++c) {
        float r = p.w[3 * c] * v.x + p.w[3 * c + 1] * v.y + p.w[3 * c + 2] * v.z + p.b[c];
        y.data[c * p.plane + i] = sfloat(max(r, 0.0));
    }
}
