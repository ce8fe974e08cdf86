#version 450
// Final compute pass: a vignette from the composited image into the output image.
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, rgba8) uniform readonly image2D src;
layout(set = 0, binding = 1, rgba8) uniform writeonly image2D dst;

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy), size = imageSize(src);
    if (any(greaterThanEqual(p, size))) return;
    vec2 d = (vec2(p) + 0.5) / vec2(size) - 0.5;
    imageStore(dst, p, vec4(imageLoad(src, p).rgb * (1.0 - dot(d, d)), 1.0));
}
