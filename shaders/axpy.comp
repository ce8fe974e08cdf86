#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// y[i] = a * x[i] + y[i] for i < n. The element count is specialization constant 0 when the
// shape is known at pipeline creation, else (0) it comes from the push constant.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint spec_n = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { sfloat data[]; } x;
layout(std430, set = 0, binding = 1) buffer Y { sfloat data[]; } y;
layout(push_constant) uniform Params { uint n; float a; } p;

void main() {
    uint n = spec_n != 0 ? spec_n : p.n;
    uint i = vkml_linear_id();
    if (i >= n) return;
    y.data[i] = sfloat(p.a * afloat(x.data[i]) + afloat(y.data[i]));
}
