#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if SOFTMAX_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"
#include "reduce/util.glsl"
// Softmax / LogSoftmax over contiguous rows of N elements (the innermost axis): G invocations per
// row (a power of two, up to the whole workgroup: one workgroup per long row), WG / G rows per
// workgroup. A row is read as units of VEC elements: 16 bytes where rows are whole units and the
// tensors start on 16 bytes (f32: 4 floats; f16: 8 halves, loaded packed as a uvec4), 8 bytes (f16
// rows of whole 4-element vectors), else one element. A unit is S = max(VEC / 4, 1) vec4 slices in
// registers. Invocation `lane` of a row takes units lane, lane + G, ... (neighbouring invocations
// read neighbouring 16 bytes: coalesced).
//   CACHED: the invocation's UPT units stay in registers (at most MAX_SLICES slices, fp32): their
//     maximum m, then e = exp(x - m) (the maximum's term exactly 1, as in util.glsl) and its sum,
//     the G (max, sum) pairs merged in shared memory, and the outputs written from the registers
//     (Softmax: e * exp(m - M) / S, one exp per element; LogSoftmax: x - M - log S): one read and
//     one write of the row.
//   otherwise (rows longer than G * MAX_SLICES slices): the same per-unit states over a loop, then
//     a second read of the row for the outputs.
// SOFTMAX_SUBGROUP (one row per workgroup, G = WG; the device has subgroup arithmetic): the G
// states merged by subgroup max and sum, then the subgroups' results by the first subgroup: two
// barriers and a handful of exp() per invocation, where the shared-memory tree takes five
// barriers and up to 28 dependent exp() on its busiest lanes.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint LOG = 0;
layout(constant_id = 1) const uint N = 1;    // row length
layout(constant_id = 2) const uint ROWS = 1; // rows
layout(constant_id = 3) const uint G = 1;    // invocations per row, a power of two dividing WG
layout(constant_id = 4) const uint UPT = 1;  // units per invocation (CACHED): UPT * S <= MAX_SLICES
layout(constant_id = 5) const uint VEC = 1;  // elements per unit: 8 (f16 only), 4 or 1
layout(constant_id = 6) const bool CACHED = true;
#define MAX_SLICES 8
const uint S = VEC == 8 ? 2 : 1; // vec4 slices per unit
const uint NU = N / VEC;         // units per row

layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 0) readonly buffer In4 { sfloat4 data[]; } src4;
layout(std430, set = 0, binding = 0) readonly buffer In16 { uvec4 data[]; } src16;
layout(std430, set = 0, binding = 1) writeonly buffer Out { sfloat data[]; } dst;
layout(std430, set = 0, binding = 1) writeonly buffer Out4 { sfloat4 data[]; } dst4;
layout(std430, set = 0, binding = 1) writeonly buffer Out16 { uvec4 data[]; } dst16;

shared vec2 partial[gl_WorkGroupSize.x];

#if SOFTMAX_SUBGROUP
shared vec2 sg_total;

// The states of a subgroup merged: their largest m, each s scaled by exp(m - M) (exactly 1 where
// m == M, empty states adding nothing). Every invocation gets the result.
vec2 subgroup_lse(vec2 a) {
    const float M = subgroupMax(a.x);
    return vec2(M, subgroupAdd(a.y == 0.0 ? 0.0 : a.x == M ? a.y : a.y * exp(a.x - M)));
}

// The workgroup's states merged: each subgroup's, then those by the first subgroup.
vec2 workgroup_lse(vec2 state) {
    const vec2 mine = subgroup_lse(state);
    if (subgroupElect()) partial[gl_SubgroupID] = mine;
    barrier();
    if (gl_SubgroupID == 0) {
        vec2 a = lse_empty();
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) a = lse_merge(a, partial[i]);
        a = subgroup_lse(a);
        if (subgroupElect()) sg_total = a;
    }
    barrier();
    return sg_total;
}
#endif

// Slice s (0 or 1) of unit u of a row: the unit's elements 4s .. 4s + 3 (VEC 1: x only).
void load_unit(uint row, uint u, out vec4 lo, out vec4 hi) {
    hi = vec4(0.0);
    if (VEC == 8) {
        const uvec4 w = src16.data[row * NU + u];
        lo = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
        hi = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
    } else if (VEC == 4) {
        lo = vec4(src4.data[row * NU + u]);
    } else {
        lo = vec4(float(src.data[row * N + u]), 0.0, 0.0, 0.0);
    }
}

void store_unit(uint row, uint u, vec4 lo, vec4 hi) {
    if (VEC == 8)
        dst16.data[row * NU + u] = uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy),
                                         packHalf2x16(hi.zw));
    else if (VEC == 4)
        dst4.data[row * NU + u] = sfloat4(lo);
    else
        dst.data[row * N + u] = sfloat(lo.x);
}

float slice_max(vec4 v) {
    return VEC == 1 ? v.x : max(max(v.x, v.y), max(v.z, v.w));
}

// exp(x - m), exactly 1 for the maximum itself (also when it is infinite).
float term(float x, float m) {
    return x == m ? 1.0 : exp(x - m);
}

vec4 terms(vec4 v, float m) {
    return vec4(term(v.x, m), term(v.y, m), term(v.z, m), term(v.w, m));
}

float slice_sum(vec4 e) {
    return VEC == 1 ? e.x : (e.x + e.y) + (e.z + e.w);
}

vec4 normalized(vec4 v, vec2 state, float log_sum) {
    if (LOG != 0) return (v - state.x) - log_sum;
    return exp(v - state.x) / state.y;
}

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint lane = lid % G;
    const uint row = reduce_group_id() * (gl_WorkGroupSize.x / G) + lid / G;
    const bool live = row < ROWS; // rows past the end still take part in the barriers

    vec4 v[MAX_SLICES];
    vec2 state = lse_empty();
    float local_max = 0.0;
    if (CACHED) {
        // Every load first: UPT independent loads in flight.
        [[unroll]] for (uint k = 0; k < MAX_SLICES; ++k) {
            if (k >= UPT) break;
            const uint u = lane + k * G;
            v[k * S] = vec4(0.0);
            if (S == 2) v[k * S + 1] = vec4(0.0);
            if (live && u < NU) {
                vec4 lo, hi;
                load_unit(row, u, lo, hi);
                v[k * S] = lo;
                if (S == 2) v[k * S + 1] = hi;
            }
        }
        float m = -reduce_inf();
        [[unroll]] for (uint k = 0; k < MAX_SLICES; ++k) {
            if (k >= UPT) break;
            if (live && lane + k * G < NU) {
                m = max(m, slice_max(v[k * S]));
                if (S == 2) m = max(m, slice_max(v[k * S + 1]));
            }
        }
        float s = 0.0;
        [[unroll]] for (uint k = 0; k < MAX_SLICES; ++k) {
            if (k >= UPT) break;
            if (live && lane + k * G < NU) {
                [[unroll]] for (uint h = 0; h < S; ++h) {
                    const vec4 e = terms(v[k * S + h], m);
                    if (LOG == 0) v[k * S + h] = e; // Softmax keeps exp(x - m) for the store
                    s += slice_sum(e);
                }
            }
        }
        if (s != 0.0) state = vec2(m, s);
        local_max = m;
    } else if (live) {
        for (uint u = lane; u < NU; u += G) {
            vec4 lo, hi;
            load_unit(row, u, lo, hi);
            float m = slice_max(lo);
            if (S == 2) m = max(m, slice_max(hi));
            float s = slice_sum(terms(lo, m));
            if (S == 2) s += slice_sum(terms(hi, m));
            state = lse_merge(state, vec2(m, s));
        }
    }

    // The row's G states merged: up to 64 in a pairwise tree (every lane of a level merges once:
    // short rows, where the levels of eight below left Softmax 4096x1000 at 76 % of the copy
    // bandwidth on an H200 against 84 % before), above in levels of eight (1024 -> 128 -> 16 -> 2
    // -> 1: five barriers where a pairwise tree takes eleven): the first ceil(n / 8) lanes each
    // merge eight, strided.
#if SOFTMAX_SUBGROUP
    state = workgroup_lse(state);
#else
    partial[lid] = state;
    barrier();
    if (G <= 64) {
        [[unroll]] for (uint h = 32; h > 0; h >>= 1) {
            if (h >= G) continue;
            if (lane < h) partial[lid] = lse_merge(partial[lid], partial[lid + h]);
            barrier();
        }
    } else {
        for (uint n = G; n > 1; n = (n + 7) / 8) {
            const uint next = (n + 7) / 8;
            if (lane < next) {
                vec2 a = partial[lid];
                for (uint k = 1; k < 8; ++k)
                    if (lane + k * next < n) a = lse_merge(a, partial[lid + k * next]);
                partial[lid] = a;
            }
            barrier();
        }
    }
    state = partial[lid - lane];
#endif
    if (!live) return;
    const float log_sum = log(state.y);
    if (CACHED) {
        // exp(x - M) / S = exp(x - m) * (exp(m - M) / S), exp(m - M) exactly 1 where m = M.
        const float factor = (local_max == state.x ? 1.0 : exp(local_max - state.x)) / state.y;
        [[unroll]] for (uint k = 0; k < MAX_SLICES; ++k) {
            if (k >= UPT) break;
            const uint u = lane + k * G;
            if (u >= NU) continue;
            vec4 lo = v[k * S], hi = S == 2 ? v[k * S + 1] : vec4(0.0);
            if (LOG != 0) {
                lo = normalized(lo, state, log_sum);
                hi = normalized(hi, state, log_sum);
            } else {
                lo *= factor;
                hi *= factor;
            }
            store_unit(row, u, lo, hi);
        }
    } else {
        for (uint u = lane; u < NU; u += G) {
            vec4 lo, hi;
            load_unit(row, u, lo, hi);
            store_unit(row, u, normalized(lo, state, log_sum), normalized(hi, state, log_sum));
        }
    }
}
