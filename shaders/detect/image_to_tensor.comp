#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_samplerless_texture_functions : require
#include "common.glsl"
// ImageToTensor: one invocation per pixel reads the image as a sampled image (texelFetch, no
// sampler), so every format works, sRGB included: the hardware decodes sRGB to linear values,
// which ENCODE_SRGB maps back to the stored (gamma-encoded) 8-bit values: re-encoded, then rounded
// to the nearest 1/255, which is exact while the hardware's decode errs by less than half a step
// (some decoders, llvmpipe's among them, are approximations). Writes an NCHW tensor
// [1, C, H, W]: tensor channel c = (image channel * scale[c] - mean[c]) / stddev[c], with the
// colour channels reversed for BGR.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint W = 1;
layout(constant_id = 1) const uint H = 1;
layout(constant_id = 2) const uint C = 3;
layout(constant_id = 3) const uint BGR = 0;
layout(constant_id = 4) const uint ENCODE_SRGB = 0;

layout(set = 0, binding = 0) uniform texture2D img;
layout(std430, set = 0, binding = 1) writeonly buffer Out { sfloat data[]; } dst;
layout(push_constant) uniform Params { vec4 scale; vec4 mean; vec4 stddev; } p;

#include "detect/srgb_bytes.glsl"

void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= W || y >= H) return;
    vec4 v = texelFetch(img, ivec2(x, y), 0);
    if (ENCODE_SRGB != 0)
        v.rgb = srgb_stored(v.rgb);
    if (BGR != 0) v = v.bgra;
    for (uint c = 0u; c < C; ++c)
        dst.data[(c * H + y) * W + x] = sfloat((v[c] * p.scale[c] - p.mean[c]) / p.stddev[c]);
}
