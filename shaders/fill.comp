#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// out[i] = value for i < n.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) writeonly buffer Out { sfloat data[]; } dst;
layout(push_constant) uniform Params { uint n; float value; } p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.n) return;
    dst.data[i] = sfloat(p.value);
}
