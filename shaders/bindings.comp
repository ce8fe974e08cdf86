#version 450
#extension GL_EXT_samplerless_texture_functions : require
// Every gpu::BindingType in one compute shader, for the core's tests (tests/gpu/binding_test.cpp):
// out = sample(a) * scale + texel(b) per pixel, and c = texel(b).
layout(local_size_x = 8, local_size_y = 8) in;
layout(std140, set = 0, binding = 0) uniform Params { vec4 scale; } params;  // uniform buffer
layout(set = 0, binding = 1) uniform sampler2D a;                            // image + sampler
layout(set = 0, binding = 2) uniform texture2D b;                            // sampled image
layout(set = 0, binding = 3, rgba8) uniform writeonly image2D c;             // storage image
layout(std430, set = 0, binding = 4) writeonly buffer Out { vec4 data[]; } o; // storage buffer
layout(push_constant) uniform Push { uint width; uint height; } p;

void main() {
    ivec2 q = ivec2(gl_GlobalInvocationID.xy);
    if (q.x >= int(p.width) || q.y >= int(p.height)) return;
    vec4 va = textureLod(a, (vec2(q) + 0.5) / vec2(p.width, p.height), 0.0);
    vec4 vb = texelFetch(b, q, 0);
    imageStore(c, q, vb);
    o.data[q.y * int(p.width) + q.x] = va * params.scale + vb;
}
