// The tensor-core tile of conv/gemm_tile.glsl (VKML_TILE_COOPMAT=1): C = A x B on
// VK_NV_cooperative_matrix, f16 x f16 products accumulated in fp32 (f16 in the f16c variants:
// conv/coopmat_acc.glsl), f16 storage.
//
// The includer defines (besides TILE_M, TILE_N, TILE_K and the scalar tile_load_a / tile_store):
//   const bool TILE_A_VEC                A's rows are 16-byte aligned and K is a multiple of 8
//   uvec4 tile_load_a8(uint i, uint k)   A[i][k..k+7] (TILE_A_VEC; k a multiple of 8, k + 8 <= K)
//   void tile_b_column(uint j)           this invocation's eight B columns j..j+7, once per tile
//   void tile_b_step(uint k)             before a slice's B loads: k is this invocation's first row
//   uvec4 tile_load_b8(uint k)           B[k][j..j+7] packed as halves, zeros past TILE_N
//   const bool TILE_STORE_VEC            eight consecutive columns are eight consecutive outputs
//   void tile_store8(uint i, uint j, vec4 lo, vec4 hi, uvec4 r)   C[i][j..j+7] (TILE_STORE_VEC, j + 8 <= N),
//                                                 r: tile_residual8(i, j), loaded beforehand
//   uvec4 tile_residual8(uint i, uint j)                the residual's unit there (or zeros)
//
// Workgroup: CM_WM x CM_WN subgroups of 32 invocations; each owns CM_FM x CM_FN accumulator
// fragments of 16 x 16, so the workgroup tile is BM = CM_WM * CM_FM * 16 rows by
// BN = CM_WN * CM_FN * 16 columns. Each K step stages BK = 32 deep slices of A (BM x BK) and B
// (BK x BN) in shared memory as 16-byte units of eight halves, rows padded by one unit so the
// fragment loads of consecutive rows fall on different banks. BK = 64: each slice's global loads
// are in flight while four 16-deep fragment steps multiply (the loop is latency-bound below that).
//
// Data path per K step: every invocation reads its units of the next slice from global memory
// into registers (16-byte loads where the layout allows) while the subgroups multiply the current
// slice from shared memory; two barriers a step. The epilogue passes each accumulator fragment
// through a per-subgroup fp32 fragment in the (then idle) B staging memory, where two invocations
// per row apply tile_store8 (bias, residual, activation) to eight columns each.
#ifndef VKML_CONV_COOPMAT_TILE_GLSL
#define VKML_CONV_COOPMAT_TILE_GLSL

#define CM_L 16 // fragment edge: 16 x 16 x 16, f16 x f16 + f32
#define CM_SUBGROUP 32
#define CM_WARPS (CM_WM * CM_WN)
#define CM_THREADS (CM_WARPS * CM_SUBGROUP)
#define BM (CM_WM * CM_FM * CM_L)
#define BN (CM_WN * CM_FN * CM_L)
#ifndef CM_BK
#define CM_BK 64
#endif
#define BK CM_BK
#define CM_A_ROW (BK / 8 + 1) // units per staged A row, padded
#define CM_B_ROW (BN / 8 + 1) // units per staged B row, padded
#define CM_C_ROW (CM_L / 4 + 1) // units (of 4 floats) per row of a subgroup's epilogue fragment
#define CM_A_UNITS (BM * BK / 8 / CM_THREADS) // A units each invocation stages per K step
#define CM_B_GROUPS (BN / 8)                   // 8-column groups of a B row
#define CM_B_PASS (CM_THREADS / CM_B_GROUPS)   // B rows the workgroup stages per pass
#define CM_B_UNITS (BK / CM_B_PASS)            // B units each invocation stages per K step

#if (BM * BK / 8) % CM_THREADS != 0 || CM_THREADS % CM_B_GROUPS != 0 || BK % CM_B_PASS != 0
#error "conv coopmat tile: the workgroup must divide the A slice and cover whole B rows"
#endif
#if CM_WARPS * CM_L * CM_C_ROW > BK * CM_B_ROW
#error "conv coopmat tile: the epilogue fragments must fit the B staging memory"
#endif

shared uvec4 cm_sh_a[BM * CM_A_ROW];
shared uvec4 cm_sh_b[BK * CM_B_ROW];

uvec4 cm_ra[CM_A_UNITS];
uvec4 cm_rb[CM_B_UNITS];

#include "conv/halves.glsl"
#include "conv/coopmat_acc.glsl"

// Global -> registers: the K slice starting at k0 of the tile whose rows start at i0.
void cm_fetch(uint i0, uint k0) {
    const uint tid = gl_LocalInvocationIndex;
    [[unroll]] for (uint q = 0; q < CM_A_UNITS; ++q) {
        const uint u = tid + q * CM_THREADS;
        const uint i = i0 + u / (BK / 8), k = k0 + (u % (BK / 8)) * 8;
        if (TILE_A_VEC) {
            cm_ra[q] = i < TILE_M && k < TILE_K ? tile_load_a8(i, k) : uvec4(0);
        } else {
            uint h[8];
            [[unroll]] for (uint e = 0; e < 8; ++e)
                h[e] = i < TILE_M && k + e < TILE_K ? half_bits(tile_load_a(i, k + e)) : 0u;
            cm_ra[q] = pack8(h);
        }
    }
    const uint kr = tid / CM_B_GROUPS;
    tile_b_step(k0 + kr);
    [[unroll]] for (uint q = 0; q < CM_B_UNITS; ++q) {
        const uint k = k0 + kr + q * CM_B_PASS;
        cm_rb[q] = k < TILE_K ? tile_load_b8(k) : uvec4(0);
    }
}

// Registers -> shared memory.
void cm_stage() {
    const uint tid = gl_LocalInvocationIndex;
    [[unroll]] for (uint q = 0; q < CM_A_UNITS; ++q) {
        const uint u = tid + q * CM_THREADS;
        cm_sh_a[(u / (BK / 8)) * CM_A_ROW + u % (BK / 8)] = cm_ra[q];
    }
    const uint g = tid % CM_B_GROUPS, kr = tid / CM_B_GROUPS;
    [[unroll]] for (uint q = 0; q < CM_B_UNITS; ++q) cm_sh_b[(kr + q * CM_B_PASS) * CM_B_ROW + g] = cm_rb[q];
}

// The K range this workgroup sums: all of K, or one chunk of a split K (the includer sets these,
// in multiples of BK, and defines CM_SPLIT_K and tile_store_partial to store fp32 partial sums
// that a second pass adds up).
uint cm_k_begin = 0, cm_k_end = TILE_K;

// Tiles walked grid-stride: the includer sets cm_next_j0 to the first column of this workgroup's
// next tile (same rows, same batch) before each tile_compute, or ~0u where none follows. That
// tile's first K slice is then fetched while this tile's last one multiplies, so its memory
// latency overlaps this tile's multiply and epilogue instead of following them.
uint cm_next_j0 = ~0u;
bool cm_prefetched = false; // the first slice of this tile is already in registers

void tile_compute(uint i0, uint j0) {
    const uint tid = gl_LocalInvocationIndex;
    const uint warp = tid / CM_SUBGROUP, lane = tid % CM_SUBGROUP;
    const uint wm = warp / CM_WN, wn = warp % CM_WN;

    CM_ACC_MAT acc[CM_FM * CM_FN];
    [[unroll]] for (uint f = 0; f < CM_FM * CM_FN; ++f) acc[f] = CM_ACC_MAT(0.0);

    if (!cm_prefetched) {
        tile_b_column(j0 + (tid % CM_B_GROUPS) * 8);
        cm_fetch(i0, cm_k_begin);
    }
    for (uint k0 = cm_k_begin; k0 < cm_k_end; k0 += BK) {
        barrier(); // every subgroup is done reading the previous slice (or the last epilogue)
        cm_stage();
        barrier();
        if (k0 + BK < cm_k_end) {
            cm_fetch(i0, k0 + BK); // in flight while the slice below multiplies
        } else if (cm_next_j0 != ~0u) {
            // The next tile's first slice (the epilogue below does not read the column state).
            tile_b_column(cm_next_j0 + (tid % CM_B_GROUPS) * 8);
            cm_fetch(i0, cm_k_begin);
        }
        [[unroll]] for (uint ks = 0; ks < BK / CM_L; ++ks) {
            fcoopmatNV<16, gl_ScopeSubgroup, CM_L, CM_L> fa[CM_FM];
            fcoopmatNV<16, gl_ScopeSubgroup, CM_L, CM_L> fb[CM_FN];
            [[unroll]] for (uint i = 0; i < CM_FM; ++i)
                coopMatLoadNV(fa[i], cm_sh_a, (wm * CM_FM + i) * CM_L * CM_A_ROW + ks * (CM_L / 8), CM_A_ROW, false);
            [[unroll]] for (uint j = 0; j < CM_FN; ++j)
                coopMatLoadNV(fb[j], cm_sh_b, ks * CM_L * CM_B_ROW + (wn * CM_FN + j) * (CM_L / 8), CM_B_ROW, false);
            [[unroll]] for (uint i = 0; i < CM_FM; ++i)
                [[unroll]] for (uint j = 0; j < CM_FN; ++j)
                    acc[i * CM_FN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * CM_FN + j]);
        }
    }

    cm_prefetched = cm_next_j0 != ~0u;

    // Epilogue, one fragment at a time through this subgroup's part of the B staging memory:
    // invocation `lane` takes row lane / 2, columns (lane % 2) * 8 ... + 7.
    barrier(); // every subgroup is done with the last slice
    const uint cbase = warp * CM_L * CM_C_ROW;
    const uint r = lane / 2, c0 = (lane % 2) * 8;
    // The residual units of every fragment this invocation stores, loaded at once (one memory
    // latency per tile, not one per fragment); zeros where tile_store8 does not run.
    uvec4 pre[CM_FM * CM_FN];
#ifdef CM_SPLIT_K
    const bool whole = CM_SPLIT_K == 1; // split K: the second pass adds the residual
#else
    const bool whole = true;
#endif
    [[unroll]] for (uint i = 0; i < CM_FM; ++i) {
        [[unroll]] for (uint j = 0; j < CM_FN; ++j) {
            const uint gi = i0 + (wm * CM_FM + i) * CM_L + r, gj = j0 + (wn * CM_FN + j) * CM_L + c0;
            pre[i * CM_FN + j] = whole && gi < TILE_M && TILE_STORE_VEC && gj + 8 <= TILE_N ? tile_residual8(gi, gj) : uvec4(0);
        }
    }
    [[unroll]] for (uint i = 0; i < CM_FM; ++i) {
        [[unroll]] for (uint j = 0; j < CM_FN; ++j) {
            coopMatStoreNV(cm_acc_f32(acc[i * CM_FN + j]), cm_sh_b, cbase, CM_C_ROW, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            const uint gi = i0 + (wm * CM_FM + i) * CM_L + r, gj = j0 + (wn * CM_FN + j) * CM_L + c0;
            const uint at = cbase + r * CM_C_ROW + c0 / 4;
            const vec4 lo = uintBitsToFloat(cm_sh_b[at]), hi = uintBitsToFloat(cm_sh_b[at + 1]);
#ifdef CM_SPLIT_K
            if (CM_SPLIT_K > 1) {
                const float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
                if (gi < TILE_M)
                    [[unroll]] for (uint e = 0; e < 8; ++e)
                        if (gj + e < TILE_N) tile_store_partial(gi, gj + e, v[e]);
            } else
#endif
            if (gi < TILE_M) {
                if (TILE_STORE_VEC && gj + 8 <= TILE_N) {
                    tile_store8(gi, gj, lo, hi, pre[i * CM_FN + j]);
                } else {
                    const float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
                    [[unroll]] for (uint e = 0; e < 8; ++e)
                        if (gj + e < TILE_N) tile_store(gi, gj + e, v[e]);
                }
            }
            subgroupBarrier();
        }
    }
}

#endif
