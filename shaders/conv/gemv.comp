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
// invocations, which read B once, coalesced, and sum their parts through shared memory (the
// specialization constants, loads and store are conv/gemm_spec.glsl's):
//   B_SK == 1 (each column's K contiguous, Gemm with transB): 8 columns a workgroup, 32
//   invocations along K for each;
//   otherwise (columns contiguous): 32 columns a workgroup, 8 invocations along K for each.
VKML_LOCAL_SIZE;

#include "conv/gemm_spec.glsl"

#define MAX_ROWS 4
const bool K_INNER = B_SK == 1;
const uint KP = K_INNER ? 32 : 8;  // invocations along K per column
const uint JW = 256 / KP;          // columns per workgroup

shared float partial[MAX_ROWS][256];

void main() {
    const uint t = gl_LocalInvocationIndex;
    const uint kp = K_INNER ? t % KP : t / JW, jl = K_INNER ? t / KP : t % JW;
    const uint j = gl_WorkGroupID.x * JW + jl;
    set_batch(gl_WorkGroupID.z);

    float acc[MAX_ROWS];
    [[unroll]] for (uint i = 0; i < MAX_ROWS; ++i) acc[i] = 0.0;
    if (j < TILE_N) {
        for (uint k = kp; k < TILE_K; k += KP) {
            const float bv = float(tile_load_b(k, j));
            [[unroll]] for (uint i = 0; i < MAX_ROWS; ++i)
                if (i < TILE_M) acc[i] += float(tile_load_a(i, k)) * bv;
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
    if (kp == 0 && j < TILE_N)
        [[unroll]] for (uint i = 0; i < MAX_ROWS; ++i)
            if (i < TILE_M) tile_store(i, j, partial[i][t]);
}
