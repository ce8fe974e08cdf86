#version 450
// RGBA8 image -> planar RGB float tensor [1, 3, H, W], the layout ML models take. The image is
// read through a sampler (texelFetch), in the layout the raster passes sample it in too.
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2D src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { float data[]; } dst;

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy), size = textureSize(src, 0);
    if (any(greaterThanEqual(p, size))) return;
    vec4 c = texelFetch(src, p, 0);
    int plane = size.x * size.y, i = p.y * size.x + p.x;
    dst.data[i] = c.r;
    dst.data[plane + i] = c.g;
    dst.data[2 * plane + i] = c.b;
}
