#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce/util.glsl"
// ArgMax / ArgMin along one axis of an input seen as [outer, n, inner]; output o = (outer, inner).
// Indices are written as 32-bit words: i64 outputs as (index, 0) pairs (little endian), so no
// shaderInt64 is needed.
//   REDUCE_WG=0: one invocation per output scans its row.
//   REDUCE_WG=1: one workgroup per output; (value, index) candidates combined in shared memory.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint IS_MIN = 0;
layout(constant_id = 1) const uint SELECT_LAST = 0;
layout(constant_id = 2) const uint INDEX_WORDS = 2; // 2: i64 output, 1: i32

layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Out { uint data[]; } dst;
layout(push_constant) uniform Params {
    uint outputs;
    uint n;
    uint inner;
} pc;

const uint NONE = 0xffffffffu; // no candidate yet

// Whether candidate (a, ia) beats (b, ib): the larger (smaller) value, on ties the first (last) index.
bool better(float a, uint ia, float b, uint ib) {
    if (ib == NONE) return ia != NONE;
    if (ia == NONE) return false;
    if (a != b) return IS_MIN != 0 ? a < b : a > b;
    return SELECT_LAST != 0 ? ia > ib : ia < ib;
}

void write_index(uint o, uint index) {
    if (INDEX_WORDS == 2) {
        dst.data[2 * o] = index;
        dst.data[2 * o + 1] = 0u;
    } else {
        dst.data[o] = index;
    }
}

uint row_base(uint o) {
    return (o / pc.inner) * pc.n * pc.inner + o % pc.inner;
}

#if REDUCE_WG
shared float best_value[gl_WorkGroupSize.x];
shared uint best_index[gl_WorkGroupSize.x];

void main() {
    const uint o = reduce_group_id();
    if (o >= pc.outputs) return; // uniform across the workgroup
    const uint base = row_base(o);
    const uint tid = gl_LocalInvocationID.x;
    float bv = 0.0;
    uint bi = NONE;
    for (uint j = tid; j < pc.n; j += gl_WorkGroupSize.x) {
        const float v = float(src.data[base + j * pc.inner]);
        if (better(v, j, bv, bi)) {
            bv = v;
            bi = j;
        }
    }
    best_value[tid] = bv;
    best_index[tid] = bi;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (tid < s && better(best_value[tid + s], best_index[tid + s], best_value[tid], best_index[tid])) {
            best_value[tid] = best_value[tid + s];
            best_index[tid] = best_index[tid + s];
        }
        barrier();
    }
    if (tid == 0) write_index(o, best_index[0]);
}
#else
void main() {
    const uint o = vkml_linear_id();
    if (o >= pc.outputs) return;
    const uint base = row_base(o);
    float bv = float(src.data[base]);
    uint bi = 0;
    for (uint j = 1; j < pc.n; ++j) {
        const float v = float(src.data[base + j * pc.inner]);
        if (better(v, j, bv, bi)) {
            bv = v;
            bi = j;
        }
    }
    write_index(o, bi);
}
#endif
