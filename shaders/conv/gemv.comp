#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "activation.glsl"
// Gemm and MatMul with one to four rows (a classifier's last layer at batch 1, a decoder's
// projection of one token): Y[b][i][j] = act(alpha * sum_k A[b][i][k] B[b][k][j] + beta C[i][j]
// + R[b][i][j]), the strided, batched form of conv/gemm.comp (same specialization constants). The
// tiled kernels pad such an A to a whole tile of rows and walk all of K in a few workgroups; here
// every workgroup of 256 invocations computes the rows for a few columns and splits K among its
// invocations, which read B once, coalesced, and sum their parts through shared memory:
//   B_SK == 1 (each column's K contiguous, Gemm with transB): 8 columns a workgroup, 32
//   invocations along K for each;
//   otherwise (columns contiguous): 32 columns a workgroup, 8 invocations along K for each.
VKML_LOCAL_SIZE;

layout(constant_id = 0) const uint TILE_M = 1;
layout(constant_id = 1) const uint TILE_N = 1;
layout(constant_id = 2) const uint TILE_K = 1;
layout(constant_id = 3) const uint A_SI = 0;
layout(constant_id = 4) const uint A_SK = 0;
layout(constant_id = 5) const uint B_SK = 0;
layout(constant_id = 6) const uint B_SJ = 0;
layout(constant_id = 7) const uint C_SI = 0;
layout(constant_id = 8) const uint C_SJ = 0;
layout(constant_id = 9) const uint HAS_C = 0;
layout(constant_id = 10) const uint HAS_R = 0;
layout(constant_id = 11) const uint ACT = 0;
layout(constant_id = 12) const uint BD0 = 1;
layout(constant_id = 13) const uint BD1 = 1;
layout(constant_id = 14) const uint BD2 = 1;
layout(constant_id = 15) const uint BD3 = 1;
layout(constant_id = 16) const uint AB0 = 0;
layout(constant_id = 17) const uint AB1 = 0;
layout(constant_id = 18) const uint AB2 = 0;
layout(constant_id = 19) const uint AB3 = 0;
layout(constant_id = 20) const uint BB0 = 0;
layout(constant_id = 21) const uint BB1 = 0;
layout(constant_id = 22) const uint BB2 = 0;
layout(constant_id = 23) const uint BB3 = 0;

layout(std430, set = 0, binding = 0) readonly buffer A { sfloat data[]; } a;
layout(std430, set = 0, binding = 1) readonly buffer B { sfloat data[]; } b;
layout(std430, set = 0, binding = 2) readonly buffer C { sfloat data[]; } c;
layout(std430, set = 0, binding = 3) readonly buffer R { sfloat data[]; } r;
layout(std430, set = 0, binding = 4) writeonly buffer Y { sfloat data[]; } y;
layout(push_constant) uniform Params {
    float alpha;
    float beta;
    float act_alpha;
    float act_beta;
} p;

#define MAX_ROWS 4
const bool K_INNER = B_SK == 1;
const uint KP = K_INNER ? 32 : 8;  // invocations along K per column
const uint JW = 256 / KP;          // columns per workgroup

shared float partial[MAX_ROWS][256];

void main() {
    const uint t = gl_LocalInvocationIndex;
    const uint kp = K_INNER ? t % KP : t / JW, jl = K_INNER ? t / KP : t % JW;
    const uint j = gl_WorkGroupID.x * JW + jl;
    const uint batch = gl_WorkGroupID.z;
    uint rest = batch;
    const uint d3 = rest % BD3;
    rest /= BD3;
    const uint d2 = rest % BD2;
    rest /= BD2;
    const uint d1 = rest % BD1;
    const uint d0 = rest / BD1;
    const uint a_base = d0 * AB0 + d1 * AB1 + d2 * AB2 + d3 * AB3;
    const uint b_base = d0 * BB0 + d1 * BB1 + d2 * BB2 + d3 * BB3;

    float acc[MAX_ROWS];
    [[unroll]] for (uint i = 0; i < MAX_ROWS; ++i) acc[i] = 0.0;
    if (j < TILE_N) {
        for (uint k = kp; k < TILE_K; k += KP) {
            const float bv = float(b.data[b_base + k * B_SK + j * B_SJ]);
            [[unroll]] for (uint i = 0; i < MAX_ROWS; ++i)
                if (i < TILE_M) acc[i] += float(a.data[a_base + i * A_SI + k * A_SK]) * bv;
        }
    }
    [[unroll]] for (uint i = 0; i < MAX_ROWS; ++i) partial[i][t] = acc[i];
    barrier();
    // Tree sum over the KP invocations of each column.
    for (uint s = KP / 2; s > 0; s /= 2) {
        if (kp < s) {
            const uint o = K_INNER ? t + s : t + s * JW;
            [[unroll]] for (uint i = 0; i < MAX_ROWS; ++i) partial[i][t] += partial[i][o];
        }
        barrier();
    }
    if (kp == 0 && j < TILE_N) {
        [[unroll]] for (uint i = 0; i < MAX_ROWS; ++i) {
            if (i >= TILE_M) break;
            float v = p.alpha * partial[i][t];
            if (HAS_C != 0) v += p.beta * float(c.data[i * C_SI + j * C_SJ]);
            const uint o = (batch * TILE_M + i) * TILE_N + j;
            if (HAS_R != 0) v += float(r.data[o]);
            y.data[o] = sfloat(vkml_activate(ACT, v, p.act_alpha, p.act_beta));
        }
    }
}
