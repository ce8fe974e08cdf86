#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Stand-in for a 2x super-resolution model (the frame-graph bench): bilinear from the planar
// low-resolution tensor, then `work` rounds of a small per-pixel network (3 -> 8 -> 3), so the
// pass costs what a real model's would while staying an ordinary vkml-style compute op.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer X { sfloat data[]; } x;
layout(std430, set = 0, binding = 1) writeonly buffer Y { sfloat data[]; } y;
layout(push_constant) uniform Params { uint in_w; uint in_h; uint out_w; uint out_h; uint work; } p;

vec3 load(ivec2 q) {
    q = clamp(q, ivec2(0), ivec2(p.in_w - 1, p.in_h - 1));
    uint plane = p.in_w * p.in_h, i = uint(q.y) * p.in_w + uint(q.x);
    return vec3(afloat(x.data[i]), afloat(x.data[plane + i]), afloat(x.data[2 * plane + i]));
}

void main() {
    uint i = vkml_linear_id(), n = p.out_w * p.out_h;
    if (i >= n) return;
    vec2 s = (vec2(i % p.out_w, i / p.out_w) + 0.5) * vec2(p.in_w, p.in_h) / vec2(p.out_w, p.out_h) - 0.5;
    ivec2 b = ivec2(floor(s));
    vec2 f = s - vec2(b);
    vec3 c = mix(mix(load(b), load(b + ivec2(1, 0)), f.x), mix(load(b + ivec2(0, 1)), load(b + ivec2(1, 1)), f.x), f.y);
    vec3 v = c;
    for (uint r = 0; r < p.work; ++r) {
        vec3 o = vec3(0.0);
        for (int k = 0; k < 8; ++k) {
            float h = max(0.0, dot(v, vec3(sin(float(k) + 1.0), cos(float(k) * 1.3), sin(float(k) * 0.7 + 0.5))));
            o += h * vec3(cos(float(k) * 0.9), sin(float(k) * 1.1 + 0.3), cos(float(k) * 0.4 + 1.0));
        }
        v = c + 0.02 * o;
    }
    y.data[i] = sfloat(v.r);
    y.data[n + i] = sfloat(v.g);
    y.data[2 * n + i] = sfloat(v.b);
}
