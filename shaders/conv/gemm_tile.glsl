// The tiled GEMM loop shared by conv_gemm (Gemm, MatMul, 1x1 Conv) and conv_igemm (implicit-GEMM
// Conv): C[i][j] = sum_k A[i][k] * B[k][j] for one batch, one BM x BN output tile per workgroup.
//
// The includer defines, before including this file:
//   uint TILE_M, TILE_N, TILE_K            problem sizes (specialization constants)
//   sfloat tile_load_a(uint i, uint k)  only called with i < TILE_M, k < TILE_K
//   sfloat tile_load_b(uint k, uint j)  only called with k < TILE_K, j < TILE_N
//   (the tensor-core tile needs more: see conv/coopmat_tile.glsl)
//   void tile_store(uint i, uint j, float acc)
// (a batched includer keeps the current batch in globals), and calls tile_compute(i0, j0) for
// each BM x BN tile its workgroup of TILE_THREADS_X x TILE_THREADS_Y invocations owns.
//
// Each K step stages a BK-deep slice of A and B through shared memory (as fp32, whatever the
// storage type, so f16 tensors accumulate in fp32), then every invocation accumulates a TM x TN
// register block. Shared memory: (BM + BN) * BK * 4 bytes = 8 KiB, well under the 16 KiB budget.
//
// With VKML_TILE_COOPMAT=1 (f16 storage, VK_NV_cooperative_matrix) conv/coopmat_tile.glsl
// replaces this file's tile: the loaders and fused epilogues of both kernels are the same.
#ifndef VKML_CONV_GEMM_TILE_GLSL
#define VKML_CONV_GEMM_TILE_GLSL

#if VKML_TILE_COOPMAT
#include "conv/coopmat_tile.glsl"
#else
#define TILE_THREADS_X 16
#define TILE_THREADS_Y 16
#define TILE_THREADS (TILE_THREADS_X * TILE_THREADS_Y)
#define BM 64 // rows of C per workgroup
#define BN 64 // columns of C per workgroup
#define BK 16 // depth of one staged K slice
#define TM (BM / TILE_THREADS_Y)
#define TN (BN / TILE_THREADS_X)

// sh_a is stored K-major so the TM values an invocation reads per k are one row apart.
shared float sh_a[BK][BM];
shared float sh_b[BK][BN];

// Invocation (tx, ty) owns rows ty + r * TILE_THREADS_Y and columns tx + c * TILE_THREADS_X, so
// neighbouring invocations store neighbouring columns (coalesced writes of contiguous pixels).
float tile_acc[TM][TN];

void tile_acc_init() {
    for (uint r = 0; r < TM; ++r)
        for (uint c = 0; c < TN; ++c) tile_acc[r][c] = 0.0;
}

void tile_mma() {
    const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    for (uint kk = 0; kk < BK; ++kk) {
        float a[TM];
        float b[TN];
        for (uint r = 0; r < TM; ++r) a[r] = sh_a[kk][ty + r * TILE_THREADS_Y];
        for (uint c = 0; c < TN; ++c) b[c] = sh_b[kk][tx + c * TILE_THREADS_X];
        for (uint r = 0; r < TM; ++r)
            for (uint c = 0; c < TN; ++c) tile_acc[r][c] = fma(a[r], b[c], tile_acc[r][c]);
    }
}

void tile_acc_store(uint i0, uint j0) {
    const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    for (uint r = 0; r < TM; ++r) {
        const uint i = i0 + ty + r * TILE_THREADS_Y;
        if (i >= TILE_M) break;
        for (uint c = 0; c < TN; ++c) {
            const uint j = j0 + tx + c * TILE_THREADS_X;
            if (j < TILE_N) tile_store(i, j, tile_acc[r][c]);
        }
    }
}

void tile_compute(uint i0, uint j0) {
    const uint tid = gl_LocalInvocationIndex;
    tile_acc_init();
    for (uint k0 = 0; k0 < TILE_K; k0 += BK) {
        // A slice: consecutive invocations read consecutive k (contiguous weights / rows of A).
        for (uint e = tid; e < BM * BK; e += TILE_THREADS) {
            const uint ii = e / BK, kk = e % BK;
            const uint i = i0 + ii, k = k0 + kk;
            sh_a[kk][ii] = i < TILE_M && k < TILE_K ? float(tile_load_a(i, k)) : 0.0;
        }
        // B slice: consecutive invocations read consecutive j (contiguous pixels / columns of B).
        for (uint e = tid; e < BK * BN; e += TILE_THREADS) {
            const uint kk = e / BN, jj = e % BN;
            const uint k = k0 + kk, j = j0 + jj;
            sh_b[kk][jj] = k < TILE_K && j < TILE_N ? float(tile_load_b(k, j)) : 0.0;
        }
        barrier();
        tile_mma();
        barrier();
    }
    tile_acc_store(i0, j0);
}

#endif // VKML_TILE_COOPMAT
#endif
