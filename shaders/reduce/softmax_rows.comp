#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "reduce/util.glsl"
// Softmax / LogSoftmax over contiguous rows of N elements (the innermost axis): G invocations per
// row (a power of two), WG / G rows per workgroup. A row is read as units of VEC elements (4: one
// vector load, N a multiple of 4 and the tensors on 16 bytes; else 1); invocation `lane` of a row
// takes its units lane, lane + G, ... (neighbouring invocations read neighbouring units).
//   CACHED: the invocation's UPT units stay in registers: their maximum m, then e = exp(x - m)
//     (the maximum's term exactly 1, as in util.glsl) and its sum, the G (max, sum) pairs merged
//     in shared memory, and the outputs written from the registers (Softmax: e * exp(m - M) / S,
//     one exp per element; LogSoftmax: x - M - log S): one read of the row.
//   otherwise (rows longer than G * MAX_UPT units): the same per-unit states over a loop, then a
//     second read of the row for the outputs.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint LOG = 0;
layout(constant_id = 1) const uint N = 1;    // row length
layout(constant_id = 2) const uint ROWS = 1; // rows
layout(constant_id = 3) const uint G = 1;    // invocations per row, a power of two dividing WG
layout(constant_id = 4) const uint UPT = 1;  // units per invocation (CACHED), at most MAX_UPT
layout(constant_id = 5) const uint VEC = 1;  // elements per unit: 4 or 1
layout(constant_id = 6) const bool CACHED = true;
#define MAX_UPT 16
const uint NU = N / VEC; // units per row

layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 0) readonly buffer In4 { sfloat4 data[]; } src4;
layout(std430, set = 0, binding = 1) writeonly buffer Out { sfloat data[]; } dst;
layout(std430, set = 0, binding = 1) writeonly buffer Out4 { sfloat4 data[]; } dst4;

shared vec2 partial[gl_WorkGroupSize.x];

vec4 load_unit(uint row, uint u) {
    if (VEC == 4) return vec4(src4.data[row * NU + u]);
    return vec4(float(src.data[row * N + u]), 0.0, 0.0, 0.0);
}

void store_unit(uint row, uint u, vec4 v) {
    if (VEC == 4)
        dst4.data[row * NU + u] = sfloat4(v);
    else
        dst.data[row * N + u] = sfloat(v.x);
}

float unit_max(vec4 v) {
    return VEC == 4 ? max(max(v.x, v.y), max(v.z, v.w)) : v.x;
}

// exp(x - m), exactly 1 for the maximum itself (also when it is infinite).
float term(float x, float m) {
    return x == m ? 1.0 : exp(x - m);
}

float unit_sum(vec4 v, float m) {
    float s = term(v.x, m);
    if (VEC == 4) s += term(v.y, m) + term(v.z, m) + term(v.w, m);
    return s;
}

vec4 terms(vec4 v, float m) {
    return vec4(term(v.x, m), term(v.y, m), term(v.z, m), term(v.w, m));
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

    vec4 v[MAX_UPT];
    vec2 state = lse_empty();
    float local_max = 0.0;
    if (CACHED) {
        // Every load first: UPT independent loads in flight.
        [[unroll]] for (uint k = 0; k < MAX_UPT; ++k) {
            if (k >= UPT) break;
            const uint u = lane + k * G;
            v[k] = vec4(0.0);
            if (live && u < NU) v[k] = load_unit(row, u);
        }
        float m = -reduce_inf();
        [[unroll]] for (uint k = 0; k < MAX_UPT; ++k) {
            if (k >= UPT) break;
            if (live && lane + k * G < NU) m = max(m, unit_max(v[k]));
        }
        float s = 0.0;
        [[unroll]] for (uint k = 0; k < MAX_UPT; ++k) {
            if (k >= UPT) break;
            if (live && lane + k * G < NU) {
                if (LOG != 0) {
                    s += unit_sum(v[k], m);
                } else {
                    v[k] = terms(v[k], m); // Softmax keeps exp(x - m) for the store
                    s += VEC == 4 ? (v[k].x + v[k].y) + (v[k].z + v[k].w) : v[k].x;
                }
            }
        }
        if (s != 0.0) state = vec2(m, s);
        local_max = m;
    } else if (live) {
        for (uint u = lane; u < NU; u += G) {
            const vec4 x = load_unit(row, u);
            const float m = unit_max(x);
            state = lse_merge(state, vec2(m, unit_sum(x, m)));
        }
    }

    partial[lid] = state;
    barrier();
    [[unroll]] for (uint s = G / 2; s > 0; s >>= 1) {
        if (lane < s) partial[lid] = lse_merge(partial[lid], partial[lid + s]);
        barrier();
    }
    state = partial[lid - lane];
    if (!live) return;
    const float log_sum = log(state.y);
    if (CACHED) {
        // exp(x - M) / S = exp(x - m) * (exp(m - M) / S), exp(m - M) exactly 1 where m = M.
        const float factor = (local_max == state.x ? 1.0 : exp(local_max - state.x)) / state.y;
        [[unroll]] for (uint k = 0; k < MAX_UPT; ++k) {
            if (k >= UPT) break;
            const uint u = lane + k * G;
            if (u < NU) store_unit(row, u, LOG != 0 ? normalized(v[k], state, log_sum) : v[k] * factor);
        }
    } else {
        for (uint u = lane; u < NU; u += G) store_unit(row, u, normalized(load_unit(row, u), state, log_sum));
    }
}
