#version 450
// Blends the rendered scene with the ML pass's output tensor (planar RGB, [1, 3, H, W] f32).
layout(set = 0, binding = 0) uniform sampler2D scene;
layout(std430, set = 0, binding = 1) readonly buffer Features { float data[]; } features;
layout(push_constant) uniform Params { int width; int height; } p;
layout(location = 0) out vec4 out_color;

void main() {
    ivec2 px = ivec2(gl_FragCoord.xy);
    int plane = p.width * p.height, i = px.y * p.width + px.x;
    vec3 ml = vec3(features.data[i], features.data[plane + i], features.data[2 * plane + i]);
    vec3 s = texelFetch(scene, px, 0).rgb;
    out_color = vec4(mix(s, ml, 0.5), 1.0);
}
