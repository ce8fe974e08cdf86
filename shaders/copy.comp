#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// dst[i] = src[i] in vec4 units: the memory-bandwidth probe of bench/ and the staging-free copy.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat4 data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { sfloat4 data[]; } dst;
layout(push_constant) uniform Params { uint n4; } p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.n4) return;
    dst.data[i] = src.data[i];
}
