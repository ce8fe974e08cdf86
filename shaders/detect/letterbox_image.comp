#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_samplerless_texture_functions : require
#include "common.glsl"
// Letterbox from an image: letterbox.comp's resize, padding and transform, reading mip level 0
// of a sampled image as ImageToTensor does (texelFetch, no sampler: every format, and an sRGB
// image's stored values when ENCODE_SRGB re-encodes the hardware's decode), so that a renderer's
// frame goes into a detector's input in one pass instead of a full-size tensor and a letterbox.
// One invocation per output pixel writes its three channels of [1, 3, DH, DW].
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint SW = 1; // source width, height
layout(constant_id = 1) const uint SH = 1;
layout(constant_id = 2) const uint DW = 1; // output width, height
layout(constant_id = 3) const uint DH = 1;
layout(constant_id = 4) const uint LEFT = 0;
layout(constant_id = 5) const uint TOP = 0;
layout(constant_id = 6) const uint CW = 1; // content width, height
layout(constant_id = 7) const uint CH = 1;
layout(constant_id = 8) const float PAD = 0.0;
layout(constant_id = 9) const uint BGR = 0;
layout(constant_id = 10) const uint ENCODE_SRGB = 0;

layout(set = 0, binding = 0) uniform texture2D img;
layout(std430, set = 0, binding = 1) writeonly buffer Out { sfloat data[]; } dst;
layout(push_constant) uniform Params { vec4 scale; vec4 mean; vec4 stddev; } p;

#include "detect/letterbox_common.glsl"

#include "detect/srgb_bytes.glsl"

vec3 texel(uint x, uint y) {
    vec3 v = texelFetch(img, ivec2(x, y), 0).rgb;
    if (ENCODE_SRGB != 0)
        v = srgb_stored(v);
    return BGR != 0 ? v.bgr : v;
}

void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= DW || y >= DH) return;
    vec3 v = vec3(PAD);
    uvec4 q;
    vec2 f;
    if (letterbox_taps(x, y, q, f)) {
        vec3 top = mix(texel(q.x, q.y), texel(q.z, q.y), f.x);
        vec3 bottom = mix(texel(q.x, q.w), texel(q.z, q.w), f.x);
        v = mix(top, bottom, f.y);
    }
    uint plane = DW * DH, o = y * DW + x;
    for (uint c = 0u; c < 3u; ++c)
        dst.data[c * plane + o] = sfloat((v[c] * p.scale[c] - p.mean[c]) / p.stddev[c]);
}
