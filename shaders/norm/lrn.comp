#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// LRN across channels, one invocation per element:
// y = x / (bias + alpha / size * sum_{j = c - (size-1)/2}^{c + size/2} x[j]^2)^beta, j clamped to [0, C).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint spec_elements = 1;
layout(constant_id = 1) const uint spec_channels = 1;
layout(constant_id = 2) const uint spec_inner = 1; // product of the spatial dimensions
layout(constant_id = 3) const uint spec_size = 1;

layout(std430, set = 0, binding = 0) readonly buffer X { sfloat data[]; } x;
layout(std430, set = 0, binding = 1) writeonly buffer Y { sfloat data[]; } y;
layout(push_constant) uniform Params { float alpha; float beta; float bias; } p;

void main() {
    uint i = vkml_linear_id();
    if (i >= spec_elements) return;
    int c = int((i / spec_inner) % spec_channels);
    uint plane = i - uint(c) * spec_inner; // element i's offset in channel 0
    int lo = max(0, c - int(spec_size - 1) / 2);
    int hi = min(int(spec_channels) - 1, c + int(spec_size) / 2);
    float sum = 0.0;
    for (int j = lo; j <= hi; ++j) {
        float v = float(x.data[plane + uint(j) * spec_inner]);
        sum += v * v;
    }
    float xi = float(x.data[i]);
    y.data[i] = sfloat(xi * pow(p.bias + p.alpha / float(spec_size) * sum, -p.beta));
}
