#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The model's input from an RGB tensor: x[i] = rgb[i] * scale (0..1 pixels to the 0..255 the
// fast-neural-style models were trained on). x is always f32: the model declares its input so.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer Rgb { sfloat data[]; } rgb;
layout(std430, set = 0, binding = 1) writeonly buffer X { float data[]; } x;
layout(push_constant) uniform Params { uint n; float scale; } p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.n) return;
    x.data[i] = float(rgb.data[i]) * p.scale;
}
