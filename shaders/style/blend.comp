#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// out = clamp(mix(original * original_scale, styled * styled_scale, strength), 0, 1) per channel
// of a [3, H, W] image. `styled` is the model's f32 output, [3, SH, SW] with SH >= H, SW >= W:
// a fast-neural-style network rounds odd sizes up at its two stride-2 convolutions, and its
// pixels stay aligned to the input's top-left corner, so the extra rows and columns are cropped.
// strength <= 0 never reads `styled` (the model may not have run).
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer Original { sfloat data[]; } original;
layout(std430, set = 0, binding = 1) readonly buffer Styled { float data[]; } styled;
layout(std430, set = 0, binding = 2) writeonly buffer Out { sfloat data[]; } result;
layout(push_constant) uniform Params {
    uint width, height;               // of original and out
    uint styled_width, styled_height; // of the model's output
    float original_scale, styled_scale, strength;
} p;

void main() {
    uint i = vkml_linear_id();
    uint plane = p.width * p.height;
    if (i >= 3u * plane) return;
    uint c = i / plane, r = i - c * plane;
    uint y = r / p.width, x = r - y * p.width;
    float o = float(original.data[i]) * p.original_scale;
    float v = o;
    if (p.strength > 0.0) {
        float s = styled.data[(c * p.styled_height + y) * p.styled_width + x] * p.styled_scale;
        v = mix(o, s, min(p.strength, 1.0));
    }
    result.data[i] = sfloat(clamp(v, 0.0, 1.0));
}
