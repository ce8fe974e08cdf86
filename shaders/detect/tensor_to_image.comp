#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// TensorToImage: one invocation per pixel reads an NCHW tensor [1, C, H, W], undoes
// ImageToTensor's transform (value = (t * stddev[c] + mean[c]) / scale[c]), reverses the colour
// channels for BGR, takes alpha from channel 3 or 1.0 and writes a storage image.
//
// 8-bit UNORM formats: the store's float -> UNORM conversion may return either integer next to
// v * 255 (Vulkan spec, "Conversion from Floating-Point to Normalized Fixed-Point": round to
// nearest is only a "should"; only exact integers, 0.0 and 1.0 are guaranteed), and drivers do
// differ. So the shader rounds to nearest itself, q = floor(v * 255 + 0.5) (halves up), and
// stores (q + 0.25) / 255: round-to-nearest and round-toward-zero conversions both give q, with
// 0.25 of a step to spare for a conversion that goes through a float16 intermediate (at most
// 2^-11 relative, 0.13 of a step at 1.0). q = 0 and q = 255 are stored as exactly 0.0 and 1.0,
// the values the spec pins down.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint W = 1;
layout(constant_id = 1) const uint H = 1;
layout(constant_id = 2) const uint C = 3;
layout(constant_id = 3) const uint BGR = 0;
layout(constant_id = 4) const uint UNORM8 = 1; // the image has an 8-bit UNORM format

#if VKML_IMAGE_RGBA8
layout(set = 0, binding = 0, rgba8) uniform writeonly image2D img;
#elif VKML_IMAGE_RGBA16F
layout(set = 0, binding = 0, rgba16f) uniform writeonly image2D img;
#else
layout(set = 0, binding = 0) uniform writeonly image2D img; // format from the view (BGRA8)
#endif
layout(std430, set = 0, binding = 1) readonly buffer In { sfloat data[]; } src;
layout(push_constant) uniform Params { vec4 scale; vec4 mean; vec4 stddev; } p;

void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= W || y >= H) return;
    vec4 v = vec4(0.0, 0.0, 0.0, 1.0);
    for (uint c = 0u; c < C; ++c)
        v[c] = (float(src.data[(c * H + y) * W + x]) * p.stddev[c] + p.mean[c]) / p.scale[c];
    if (BGR != 0) v = v.bgra;
    if (UNORM8 != 0) {
        precise vec4 q = floor(clamp(v, 0.0, 1.0) * 255.0 + 0.5);
        v = mix(min((q + 0.25) * (1.0 / 255.0), vec4(1.0)), vec4(0.0), equal(q, vec4(0.0)));
    }
    imageStore(img, ivec2(x, y), v);
}
