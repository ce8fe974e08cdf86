#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "activation.glsl"
#include "conv/conv_spec.glsl"
// Tensor-core KS x KS convolution (KS = 3, 5 or 9), stride 1 (or 2: STRIDE below), dilation 1,
// group 1, f16 storage, fp32 accumulation (f16 in the f16c variants), with the input window ("halo") of an output tile staged
// in shared memory once for all taps.
//
// The implicit GEMM (conv/igemm.comp) gathers its B slice from global memory tap by tap, so each
// input element is read nine times and most of those reads straddle two 16-byte units. Here a
// workgroup computes BM output channels x an output tile of TH rows x TW = 32 columns. For each
// chunk of CC = 16 input channels it stages
//   - the input rows oh0 - PT .. oh0 - PT + TH + KS - 2, columns ow0 - 8 .. ow0 + TW + 7 (whole aligned
//     16-byte units), channel-innermost: each pixel's CC channels are one padded row of shared
//     memory, so the B fragment of any tap (16 channels x 16 consecutive pixels of a row) is one
//     column-major cooperative-matrix load at any column offset;
//   - the weights of the chunk, [BM][KS * KS taps][CC] (re-packed tap-major by conv/pack_taps.comp),
// then multiplies KS * KS taps x CC / 16 fragment steps from shared memory. At KS = 5 the weights of a
// chunk do not fit beside the window: they come KG kernel rows at a time (steps of one chunk that
// stage the window once). The next step (of this tile or of the workgroup's next tile: tiles are
// walked grid-stride) is read into registers while the current one multiplies; the input units
// are transposed to channel-innermost when stored.
//
// Compile-time tile (the .list line): CM_WM x CM_WN subgroups, each CM_FM x CM_FN fragments of
// 16 x 16; BM = CM_WM * CM_FM * 16 channels, BN = CM_WN * CM_FN * 16 pixels = TH rows of 32; KS,
// KG, STRIDE. Padding rows and columns read as zeros, or reflect or repeat the edge (PAD_MODE; only the
// units that cross an edge take the element-wise path); channels past C read as zeros. Needs C % 8 == 0 (whole 16-byte
// weight units) and pads top/left below KS; the C++ side (ml/ops/conv_common.cpp) checks, and
// mirrors the shared-memory sizes below.
//
// STRIDE = 2 (KS = 3 or 5, neither FOLD nor MFOLD): output row oh0 + y, column ow0 + x, tap (kh, kw)
// reads input row 2 (oh0 + y) + kh - PT, column 2 (ow0 + x) + kw - PL. The window is then the
// (TH - 1) * 2 + KS input rows from 2 oh0 - PT and the HCOLS = 2 TW + 8 (KS = 3) or + 16 (KS = 5)
// input columns from 2 ow0 - WIN_L: WIN_L = 8 (whole units, as at stride 1) where PL > 0, 0 at
// KS = 3 with PL = 0 (then the 72 columns still reach 2 ow0 + 64, the last one read). Window
// column wc holds input column 2 ow0 - WIN_L + wc; output column x of tap kw reads window column
// 2 x + d, d = kw + WIN_L - PL >= 0. A window row is stored as its even columns then its odd ones
// (column wc at pixel slot (wc % 2) * HCOLS / 2 + wc / 2), so the 16 pixels x0 .. x0 + 15 of a B
// fragment are the consecutive slots (d % 2) * HCOLS / 2 + x0 + d / 2 + i: the same column-major
// load as at stride 1, and conflict-free (a stride of two pixels would hit each bank twice).
VKML_LOCAL_SIZE;

#define CM_L 16
#define CM_SUBGROUP 32
#define CM_THREADS (CM_WM * CM_WN * CM_SUBGROUP)
#define BM (CM_WM * CM_FM * CM_L)
#define BN (CM_WN * CM_FN * CM_L)
#define TW 32
#ifndef MFOLD
#define MFOLD 0
#endif
// MFOLD: few output channels (M * KW <= BM: a style network's 9x9 32->3 last layer): the kernel's
// columns folded into the output rows instead. Row (m, kw) of A holds channel m's weights of
// kernel column kw (re-packed [M * KW][KS][C] by conv/pack_taps.comp with FOLD_M), B runs over the
// window's whole rows (BCOLS = 48 columns each, one per subgroup), so the accumulators are partial
// sums P[(m, kw)][y][window column]; the epilogue adds y[m][y][x] = sum over kw of
// P[(m, kw)][y][x + kw + 8 - PL]. 27 of 32 rows and 32 of 48 columns useful instead of 3 of 16 rows.
#if MFOLD
#define BCOLS 48
#else
#define BCOLS TW
#endif
#define TH (BN / BCOLS)
#ifndef HALO_CC
#define HALO_CC 16
#endif
#define CC HALO_CC
#ifndef KS
#define KS 3
#endif
#ifndef KG
#define KG KS                 // kernel rows whose weights are staged at a time
#endif
#ifndef FOLD
#define FOLD 0
#endif
#ifndef STRIDE
#define STRIDE 1
#endif
// FOLD: few input channels (an RGB first layer, C * KW <= 64): the kernel's columns are folded
// into the channels, so the kernel runs as KS x 1 over CV = C * KW virtual channels (padded to
// a multiple of 8), virtual channel c * KW + kw of a pixel being channel c at column + kw - PL.
// Each 16-deep fragment then holds 16 (channel, column) pairs instead of 3 channels and 13 zeros
// (a 9x9 3->32 layer: 243 of 288 multiply-adds useful instead of 243 of 1296). The weights come
// re-packed [M][KS][CV] (conv/pack_taps.comp with FOLD_KW), the window has no side columns.
#if FOLD || MFOLD
#define KWV 1
#endif
#if FOLD
const uint CV = (C * KW + 7) / 8 * 8;
#define HSIDE 0
const uint PLV = 0;
#else
const uint CV = C;
#define HSIDE 8
const uint PLV = PL;
#endif
#ifndef KWV
#define KWV KS
#endif
#if MFOLD
const uint MROWS = M * KW; // rows of A
#define MF_ROW (BCOLS / 4 + 1) // units (4 floats) per row of a subgroup's partial sums
#else
const uint MROWS = M;
#endif
#define GROUPS (KS / KG)      // steps per channel chunk
#define TAPS (KG * KWV)       // taps per step
#define HROWS ((TH - 1) * STRIDE + KS) // input rows of a tile's window
#if STRIDE == 1
#define HCOLS (TW + 2 * HSIDE) // input columns staged: HSIDE each side (whole units; pads < KS <= 8)
#define WIN_L HSIDE            // window column 0 is input column ow0 - WIN_L
#define SLOT(col) (col)        // pixel slot of window column col in its row
#else
#if KS <= 3
#define S2_SIDE 8  // columns beyond the 2 TW of a tile's outputs (whole units)
#define S2_DMAX 9  // the largest column offset d of a tap (WIN_L = 8 at PL >= 1)
#else
#define S2_SIDE 16
#define S2_DMAX 12
#endif
#define HCOLS (2 * TW + S2_SIDE)
#define WIN_L (KS <= 3 && PL == 0 ? 0u : 8u) // window column 0 is input column 2 ow0 - WIN_L
#define SLOT(col) (((col) & 1) * (HCOLS / 2) + ((col) >> 1)) // even columns, then odd ones
#endif
#ifndef PIX_PAD
#define PIX_PAD 1 // 0: unpadded pixels (two-way bank conflicts on the B loads; room for taller tiles)
#endif
#define PIX_UNITS (CC / 8 + PIX_PAD) // 16-byte units per staged pixel, padded against bank conflicts
#define W_ROW (TAPS * CC / 8 + 1) // units per staged weight row, padded
#define HALO_TASKS (HROWS * (HCOLS / 8) * (CC / 8)) // 8 channels x 8 pixels each
#define HALO_PER ((HALO_TASKS + CM_THREADS - 1) / CM_THREADS)
#define W_UNITS (BM * TAPS * CC / 8)
#define W_PER ((W_UNITS + CM_THREADS - 1) / CM_THREADS)
#define C_ROW (CM_L / 4 + 1) // units (4 floats) per row of a subgroup's epilogue fragment

#if BN % BCOLS != 0 || KS % KG != 0 || KS > 9 || (MFOLD && (CM_FN * CM_L != BCOLS || CM_WM != 1))
#error "conv halo: the pixel tile must be whole rows of 32"
#endif
#if STRIDE != 1 && (STRIDE != 2 || FOLD || MFOLD || KS > 5)
#error "conv halo: stride 2 comes at 3x3 and 5x5, unfolded"
#endif
// Stride 2: the last slot a B fragment reads, TW - 1 + d / 2 with d <= KS - 1 + WIN_L - PL, stays in
// its half row: d <= 9 at KS = 3 (WIN_L = 8 needs PL >= 1), d <= 12 at KS = 5.
#if STRIDE == 2
#if TW - 1 + S2_DMAX / 2 >= HCOLS / 2
#error "conv halo: the stride-2 window is too narrow"
#endif
#endif
#if MFOLD && CM_WN / 2 * BM * (BCOLS / 4 + 1) > HROWS * HCOLS * PIX_UNITS
#error "conv halo: half of the subgroups' partial sums must fit the staged window"
#endif
#if CM_WM * CM_WN * CM_L * C_ROW > HROWS * HCOLS * PIX_UNITS
#error "conv halo: the epilogue fragments must fit the staged window"
#endif

layout(std430, set = 0, binding = 0) readonly buffer X8 { uvec4 data[]; } x8;
layout(std430, set = 0, binding = 1) readonly buffer Wt8 { uvec4 data[]; } w8;
layout(std430, set = 0, binding = 3) readonly buffer Res8 { uvec4 data[]; } res8;
layout(std430, set = 0, binding = 4) writeonly buffer Y8 { uvec4 data[]; } y8;

#include "conv/halves.glsl"
#include "conv/coopmat_acc.glsl"

shared uvec4 sh_x[HROWS * HCOLS * PIX_UNITS];
shared uvec4 sh_w[BM * W_ROW];

uvec4 rx[HALO_PER * 8]; // per task: 8 channels, each 8 pixels of a row
uvec4 rw[W_PER];

const uint TILES_X = (OW + TW - 1) / TW;
const uint TILES_Y = (OH + TH - 1) / TH;
const uint TILES = N * TILES_X * TILES_Y;
const uint CHUNKS = (CV + CC - 1) / CC;
const bool X_VEC = W % 8 == 0;

// Global -> registers: kernel-row group rg of chunk q of tile t (the window with group 0).
void fetch(uint t, uint q, uint rg, uint m0) {
    const uint tid = gl_LocalInvocationIndex;
    const uint n = t / (TILES_X * TILES_Y), ty = (t / TILES_X) % TILES_Y, tx = t % TILES_X;
    const int ih0 = int(ty * TH * STRIDE) - int(PT), iw0 = int(tx * TW * STRIDE) - int(WIN_L);
    if (rg == 0) [[unroll]] for (uint s = 0; s < HALO_PER; ++s) {
        const uint task = tid + s * CM_THREADS;
        const uint cg = task % (CC / 8), g = (task / (CC / 8)) % (HCOLS / 8), r = task / (CC / 8 * (HCOLS / 8));
        const uint c = q * CC + cg * 8;
        const uint ih = uint(conv_src(ih0 + int(r), H)); // wraps when negative
        const int iw = iw0 + int(g * 8);
#if FOLD
        // Virtual channels c .. c + 7: channel cv / KW's row ih from column iw + cv % KW - PL.
        [[unroll]] for (uint e = 0; e < 8; ++e) {
            const uint cv = c + e, ch = cv / KW;
            const bool live = task < HALO_TASKS && cv < C * KW && ih < H;
            const int col0 = iw + int(cv % KW) - int(PL);
            const uint row = ((n * C + ch) * H + ih) * W;
            if (live && X_VEC && col0 >= 0 && col0 + 8 <= int(W)) {
                const uint sft = uint(col0) & 7u, u = (row + uint(col0) - sft) / 8;
                const uvec4 lo = x8.data[u];
                rx[s * 8 + e] = sft == 0 ? lo : shift_halves(lo, x8.data[u + 1], sft);
            } else {
                uint h[8];
                [[unroll]] for (uint p = 0; p < 8; ++p) {
                    const uint col = uint(conv_src(col0 + int(p), W));
                    h[p] = live && col < W ? half_bits(x.data[row + col]) : 0u;
                }
                rx[s * 8 + e] = pack8(h);
            }
        }
#else
        const bool live = task < HALO_TASKS && c < C && ih < H;
        const uint row = ((n * C + c) * H + ih) * W; // element offset of channel c's row ih
        if (live && X_VEC && iw >= 0 && iw + 8 <= int(W)) {
            [[unroll]] for (uint e = 0; e < 8; ++e) rx[s * 8 + e] = x8.data[(row + e * H * W + uint(iw)) / 8];
        } else {
            [[unroll]] for (uint e = 0; e < 8; ++e) {
                uint h[8];
                [[unroll]] for (uint p = 0; p < 8; ++p) {
                    const uint col = uint(conv_src(iw + int(p), W));
                    h[p] = live && col < W ? half_bits(x.data[row + e * H * W + col]) : 0u;
                }
                rx[s * 8 + e] = pack8(h);
            }
        }
#endif
    }
    // Weights [M][KS * KWV][CV] -> units (m, tap, 8 channels) of the chunk's kernel rows.
    [[unroll]] for (uint s = 0; s < W_PER; ++s) {
        const uint u = tid + s * CM_THREADS;
        const uint cu = u % (CC / 8), tap = (u / (CC / 8)) % TAPS, m = m0 + u / (CC / 8 * TAPS);
        const uint c = q * CC + cu * 8;
        rw[s] = u < W_UNITS && m < MROWS && c < CV ? w8.data[((m * KS * KWV + rg * TAPS + tap) * CV + c) / 8] : uvec4(0);
    }
}

// Registers -> shared memory; the window's units are transposed to 8 channels of one pixel.
void stage(uint rg) {
    const uint tid = gl_LocalInvocationIndex;
    if (rg == 0) [[unroll]] for (uint s = 0; s < HALO_PER; ++s) {
        const uint task = tid + s * CM_THREADS;
        if (task < HALO_TASKS) {
            const uint cg = task % (CC / 8), g = (task / (CC / 8)) % (HCOLS / 8), r = task / (CC / 8 * (HCOLS / 8));
            uvec4 block[8];
            [[unroll]] for (uint j = 0; j < 8; ++j) block[j] = rx[s * 8 + j];
            [[unroll]] for (uint p = 0; p < 8; ++p) sh_x[(r * HCOLS + SLOT(g * 8 + p)) * PIX_UNITS + cg] = column8(block, p);
        }
    }
    [[unroll]] for (uint s = 0; s < W_PER; ++s) {
        const uint u = tid + s * CM_THREADS;
        if (u < W_UNITS) sh_w[(u / (CC / 8 * TAPS)) * W_ROW + u % (CC / 8 * TAPS)] = rw[s];
    }
}

// Whether store8 writes (oh, ow) .. + 7 of a row as one 16-byte unit.
bool whole_unit(uint ow) { return OW % 8 == 0 && ow + 8 <= OW; }

// y = act(acc + bias + residual) for eight consecutive pixels of a row from (oh, ow) in channel m;
// r: the residual's unit there, loaded beforehand (whole_unit(ow), HAS_RES).
void store8(uint n, uint m, uint oh, uint ow, vec4 lo, vec4 hi, uvec4 r) {
    const float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
    const float b = HAS_BIAS != 0 ? float(bias.data[m]) : 0.0;
    const uint o = ((n * M + m) * OH + oh) * OW + ow;
    if (whole_unit(ow)) {
        uint h[8];
        [[unroll]] for (uint e = 0; e < 8; ++e) {
            float a = v[e] + b;
            if (HAS_RES != 0) a += unpack_half(r, e);
            h[e] = half_bits(sfloat(vkml_activate(ACT, a, p.act_alpha, p.act_beta)));
        }
        y8.data[o / 8] = pack8(h);
    } else {
        [[unroll]] for (uint e = 0; e < 8; ++e)
            if (ow + e < OW) conv_store(o + e, m, v[e]);
    }
}

void main() {
    const uint tid = gl_LocalInvocationIndex;
    const uint warp = tid / CM_SUBGROUP, lane = tid % CM_SUBGROUP;
    const uint wm = warp / CM_WN, wn = warp % CM_WN;
    const uint m0 = gl_WorkGroupID.y * BM;
    uint t = gl_WorkGroupID.x;
    if (t >= TILES) return;

    CM_ACC_MAT acc[CM_FM * CM_FN];
    [[unroll]] for (uint f = 0; f < CM_FM * CM_FN; ++f) acc[f] = CM_ACC_MAT(0.0);

    fetch(t, 0, 0, m0);
    uint q = 0, rg = 0;
    for (;;) {
        barrier(); // every subgroup is done with the previous step (or the epilogue)
        stage(rg);
        barrier();
        uint nt = t, nq = q, nrg = rg + 1;
        if (nrg == GROUPS) {
            nrg = 0;
            if (++nq == CHUNKS) {
                nq = 0;
                nt = t + gl_NumWorkGroups.x;
            }
        }
        if (nt < TILES) fetch(nt, nq, nrg, m0); // in flight while this step multiplies

        [[unroll]] for (uint tap = 0; tap < TAPS; ++tap) {
            const uint kh = rg * KG + tap / KWV, kw = tap % KWV;
            [[unroll]] for (uint ks = 0; ks < CC / CM_L; ++ks) {
                fcoopmatNV<16, gl_ScopeSubgroup, CM_L, CM_L> fa[CM_FM];
                fcoopmatNV<16, gl_ScopeSubgroup, CM_L, CM_L> fb[CM_FN];
                [[unroll]] for (uint i = 0; i < CM_FM; ++i)
                    coopMatLoadNV(fa[i], sh_w, (wm * CM_FM + i) * CM_L * W_ROW + tap * (CC / 8) + ks * 2, W_ROW, false);
                [[unroll]] for (uint j = 0; j < CM_FN; ++j) {
                    const uint p0 = (wn * CM_FN + j) * CM_L, y = p0 / BCOLS, x = p0 % BCOLS;
#if MFOLD
                    coopMatLoadNV(fb[j], sh_x, ((y + kh) * HCOLS + x) * PIX_UNITS + ks * 2, PIX_UNITS, true);
#elif STRIDE == 2
                    // Output pixels x .. x + 15 of row y: window row 2 y + kh, columns 2 (x + i) + d.
                    const uint d = kw + WIN_L - PL;
                    coopMatLoadNV(fb[j], sh_x, ((2 * y + kh) * HCOLS + SLOT(d) + x) * PIX_UNITS + ks * 2, PIX_UNITS, true);
#else
                    coopMatLoadNV(fb[j], sh_x, ((y + kh) * HCOLS + x + kw + HSIDE - PLV) * PIX_UNITS + ks * 2, PIX_UNITS, true);
#endif
                }
                [[unroll]] for (uint i = 0; i < CM_FM; ++i)
                    [[unroll]] for (uint j = 0; j < CM_FN; ++j)
                        acc[i * CM_FN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * CM_FN + j]);
            }
        }

#if MFOLD
        if (nt != t) {
            // Epilogue: subgroup `warp` holds P for output row `warp` of the tile. Half of the
            // subgroups at a time store theirs (32 rows x 48 columns of floats) in the window's
            // memory; invocation `lane` then sums output column `lane` of every channel.
            const uint n = t / (TILES_X * TILES_Y), ty = (t / TILES_X) % TILES_Y, tx = t % TILES_X;
            const uint oh = ty * TH + warp, ow = tx * TW + lane;
            [[unroll]] for (uint round = 0; round < 2; ++round) {
                barrier(); // the window (or the previous round's sums) is no longer read
                const uint base = (warp % (CM_WN / 2)) * BM * MF_ROW;
                if (warp / (CM_WN / 2) == round) {
                    [[unroll]] for (uint i = 0; i < CM_FM; ++i)
                        [[unroll]] for (uint j = 0; j < CM_FN; ++j)
                            coopMatStoreNV(cm_acc_f32(acc[i * CM_FN + j]), sh_x, base + i * CM_L * MF_ROW + j * (CM_L / 4), MF_ROW, false);
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    for (uint m = m0 / KW; m < min(M, (m0 + BM) / KW); ++m) {
                        float a = 0.0;
                        [[unroll]] for (uint kw = 0; kw < KS; ++kw) {
                            const uint r = m * KW + kw - m0, col = lane + kw + 8 - PL;
                            a += uintBitsToFloat(sh_x[base + r * MF_ROW + col / 4][col % 4]);
                        }
                        if (oh < OH && ow < OW) conv_store(((n * M + m) * OH + oh) * OW + ow, m, a);
                    }
                }
            }
            [[unroll]] for (uint f = 0; f < CM_FM * CM_FN; ++f) acc[f] = CM_ACC_MAT(0.0);
        }
#else
        if (nt != t) {
            // Epilogue of tile t through this subgroup's part of the window memory: invocation
            // `lane` takes row lane / 2 (an output channel), columns (lane % 2) * 8 ... + 7.
            barrier(); // every subgroup is done reading the window
            const uint n = t / (TILES_X * TILES_Y), ty = (t / TILES_X) % TILES_Y, tx = t % TILES_X;
            const uint cbase = warp * CM_L * C_ROW;
            const uint r = lane / 2, c0 = (lane % 2) * 8;
            // The residual units of every fragment this invocation stores, loaded at once: one
            // memory latency per tile rather than one per fragment (GFF_2 + FDF of esrgan took
            // 0.31 ms against 0.25 ms for the same layer without a residual).
            uvec4 rr[CM_FM * CM_FN];
            [[unroll]] for (uint i = 0; i < CM_FM; ++i) {
                [[unroll]] for (uint j = 0; j < CM_FN; ++j) {
                    rr[i * CM_FN + j] = uvec4(0);
                    const uint m = m0 + (wm * CM_FM + i) * CM_L + r;
                    const uint p0 = (wn * CM_FN + j) * CM_L + c0;
                    const uint oh = ty * TH + p0 / TW, ow = tx * TW + p0 % TW;
                    if (HAS_RES != 0 && m < M && oh < OH && whole_unit(ow))
                        rr[i * CM_FN + j] = res8.data[(((n * M + m) * OH + oh) * OW + ow) / 8];
                }
            }
            [[unroll]] for (uint i = 0; i < CM_FM; ++i) {
                [[unroll]] for (uint j = 0; j < CM_FN; ++j) {
                    coopMatStoreNV(cm_acc_f32(acc[i * CM_FN + j]), sh_x, cbase, C_ROW, false);
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    const uint m = m0 + (wm * CM_FM + i) * CM_L + r;
                    const uint p0 = (wn * CM_FN + j) * CM_L + c0;
                    const uint oh = ty * TH + p0 / TW, ow = tx * TW + p0 % TW;
                    const uint at = cbase + r * C_ROW + c0 / 4;
                    if (m < M && oh < OH && ow < OW)
                        store8(n, m, oh, ow, uintBitsToFloat(sh_x[at]), uintBitsToFloat(sh_x[at + 1]), rr[i * CM_FN + j]);
                    subgroupBarrier();
                    acc[i * CM_FN + j] = CM_ACC_MAT(0.0);
                }
            }
        }
#endif
        if (nt >= TILES) break;
        t = nt;
        q = nq;
        rg = nrg;
    }
}
