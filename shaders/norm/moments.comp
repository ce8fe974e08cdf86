#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Stage 1 of the split grouped normalization: workgroup w computes the Welford moments of chunk
// (w % partials) of group (w / partials) and stores them as (n, mean, m2) in the partials buffer.
// Stage 2 (normalize.comp with NORM_SPLIT) merges a group's partials and writes the output.
VKML_LOCAL_SIZE;
// After the workgroup-size declaration: glslang folds gl_WorkGroupSize used before it to 1.
#include "norm/norm_common.glsl"
layout(constant_id = 0) const uint spec_m = 1;        // elements per group
layout(constant_id = 1) const uint spec_partials = 1; // workgroups per group
layout(constant_id = 2) const uint spec_chunk = 1;    // elements per workgroup
// Four elements per load (spec_m and spec_chunk multiples of 4, X on 16 bytes).
layout(constant_id = 3) const bool spec_vec = false;

layout(std430, set = 0, binding = 0) readonly buffer X { sfloat data[]; } x;
layout(std430, set = 0, binding = 0) readonly buffer X4 { sfloat4 data[]; } x4;
layout(std430, set = 0, binding = 1) writeonly buffer Partials { float data[]; } partials;

void main() {
    uint w = norm_workgroup_id();
    uint group = w / spec_partials;
    if (group >= p.groups) return; // whole workgroups only: no barrier is skipped by half of one
    uint part = w % spec_partials;
    uint base = group * spec_m;
    float shift = float(x.data[base]);
    uint begin = part * spec_chunk;
    uint end = min(begin + spec_chunk, spec_m);

    Moments m = Moments(0.0, 0.0, 0.0);
    if (spec_vec) {
        // Four vectors per step, loaded before any is used: four loads in flight per invocation.
        const uint wg = gl_WorkGroupSize.x, last = end / 4;
        uint i = begin / 4 + gl_LocalInvocationID.x;
        for (; i + 3 * wg < last; i += 4 * wg) {
            const vec4 a = vec4(x4.data[base / 4 + i]), b = vec4(x4.data[base / 4 + i + wg]);
            const vec4 c = vec4(x4.data[base / 4 + i + 2 * wg]), d = vec4(x4.data[base / 4 + i + 3 * wg]);
            moments_add16(m, a - shift, b - shift, c - shift, d - shift);
        }
        for (; i < last; i += wg) moments_add4(m, vec4(x4.data[base / 4 + i]) - shift);
    } else {
        for (uint i = begin + gl_LocalInvocationID.x; i < end; i += gl_WorkGroupSize.x)
            moments_add(m, float(x.data[base + i]) - shift);
    }
    m = moments_reduce(m);
    if (gl_LocalInvocationID.x == 0) {
        partials.data[3 * w] = m.n;
        partials.data[3 * w + 1] = m.mean;
        partials.data[3 * w + 2] = m.m2;
    }
}
