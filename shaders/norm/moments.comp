#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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
// Elements per load: 8 (f16, 16 bytes), 4 or 1; spec_m and spec_chunk multiples of it, X on 16
// bytes (see norm_units.glsl).
layout(constant_id = 3) const uint spec_vec = 1;
#include "norm/norm_units.glsl"
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

    Moments m = chunk_moments(base, begin, end, shift);
    if (gl_LocalInvocationID.x == 0) {
        partials.data[3 * w] = m.n;
        partials.data[3 * w + 1] = m.mean;
        partials.data[3 * w + 2] = m.m2;
    }
}
