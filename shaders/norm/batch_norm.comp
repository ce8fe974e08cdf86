#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "activation.glsl"
// Inference batch normalization, one invocation per element:
// y = act((x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c]), c = (i / inner) % channels.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint spec_elements = 1;
layout(constant_id = 1) const uint spec_channels = 1;
layout(constant_id = 2) const uint spec_inner = 1; // product of the spatial dimensions
layout(constant_id = 3) const uint spec_activation = 0;

layout(std430, set = 0, binding = 0) readonly buffer X { sfloat data[]; } x;
layout(std430, set = 0, binding = 1) readonly buffer Scale { sfloat data[]; } scale;
layout(std430, set = 0, binding = 2) readonly buffer Bias { sfloat data[]; } bias;
layout(std430, set = 0, binding = 3) readonly buffer Mean { sfloat data[]; } mean;
layout(std430, set = 0, binding = 4) readonly buffer Var { sfloat data[]; } var;
layout(std430, set = 0, binding = 5) writeonly buffer Y { sfloat data[]; } y;
layout(push_constant) uniform Params { float epsilon; float alpha; float beta; } p;

void main() {
    uint i = vkml_linear_id();
    if (i >= spec_elements) return;
    uint c = (i / spec_inner) % spec_channels;
    float a = float(scale.data[c]) / sqrt(float(var.data[c]) + p.epsilon);
    float v = (float(x.data[i]) - float(mean.data[c])) * a + float(bias.data[c]);
    y.data[i] = sfloat(vkml_activate(spec_activation, v, p.alpha, p.beta));
}
