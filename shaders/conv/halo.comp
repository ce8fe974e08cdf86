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
// Tensor-core KS x KS convolution (KS = 3 or 5), stride 1, dilation 1, group 1, f16 storage, fp32
// accumulation, with the input window ("halo") of an output tile staged in shared memory once for
// all taps.
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
// KG. Padding rows and columns and channels past C read as zeros. Needs C % 8 == 0 (whole 16-byte
// weight units) and pads top/left below KS; the C++ side (ml/ops/conv_common.cpp) checks, and
// mirrors the shared-memory sizes below.
VKML_LOCAL_SIZE;

#define CM_L 16
#define CM_SUBGROUP 32
#define CM_THREADS (CM_WM * CM_WN * CM_SUBGROUP)
#define BM (CM_WM * CM_FM * CM_L)
#define BN (CM_WN * CM_FN * CM_L)
#define TW 32
#define TH (BN / TW)
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
#define GROUPS (KS / KG)      // steps per channel chunk
#define TAPS (KG * KS)        // taps per step
#define HROWS (TH + KS - 1)   // input rows of a tile's window
#define HCOLS (TW + 16)       // input columns staged: 8 each side (whole units; pads < KS <= 8)
#define PIX_UNITS (CC / 8 + 1) // 16-byte units per staged pixel, padded against bank conflicts
#define W_ROW (TAPS * CC / 8 + 1) // units per staged weight row, padded
#define HALO_TASKS (HROWS * (HCOLS / 8) * (CC / 8)) // 8 channels x 8 pixels each
#define HALO_PER ((HALO_TASKS + CM_THREADS - 1) / CM_THREADS)
#define W_UNITS (BM * TAPS * CC / 8)
#define W_PER ((W_UNITS + CM_THREADS - 1) / CM_THREADS)
#define C_ROW (CM_L / 4 + 1) // units (4 floats) per row of a subgroup's epilogue fragment

#if BN % TW != 0 || KS % KG != 0 || KS > 9
#error "conv halo: the pixel tile must be whole rows of 32"
#endif
#if CM_WM * CM_WN * CM_L * C_ROW > HROWS * HCOLS * PIX_UNITS
#error "conv halo: the epilogue fragments must fit the staged window"
#endif

layout(std430, set = 0, binding = 0) readonly buffer X8 { uvec4 data[]; } x8;
layout(std430, set = 0, binding = 1) readonly buffer Wt8 { uvec4 data[]; } w8;
layout(std430, set = 0, binding = 3) readonly buffer Res8 { uvec4 data[]; } res8;
layout(std430, set = 0, binding = 4) writeonly buffer Y8 { uvec4 data[]; } y8;

#include "conv/halves.glsl"

shared uvec4 sh_x[HROWS * HCOLS * PIX_UNITS];
shared uvec4 sh_w[BM * W_ROW];

uvec4 rx[HALO_PER * 8]; // per task: 8 channels, each 8 pixels of a row
uvec4 rw[W_PER];

const uint TILES_X = (OW + TW - 1) / TW;
const uint TILES_Y = (OH + TH - 1) / TH;
const uint TILES = N * TILES_X * TILES_Y;
const uint CHUNKS = (C + CC - 1) / CC;
const bool X_VEC = W % 8 == 0;

// Global -> registers: kernel-row group rg of chunk q of tile t (the window with group 0).
void fetch(uint t, uint q, uint rg, uint m0) {
    const uint tid = gl_LocalInvocationIndex;
    const uint n = t / (TILES_X * TILES_Y), ty = (t / TILES_X) % TILES_Y, tx = t % TILES_X;
    const int ih0 = int(ty * TH) - int(PT), iw0 = int(tx * TW) - 8;
    if (rg == 0) [[unroll]] for (uint s = 0; s < HALO_PER; ++s) {
        const uint task = tid + s * CM_THREADS;
        const uint cg = task % (CC / 8), g = (task / (CC / 8)) % (HCOLS / 8), r = task / (CC / 8 * (HCOLS / 8));
        const uint c = q * CC + cg * 8;
        const uint ih = uint(ih0 + int(r)); // wraps when negative
        const int iw = iw0 + int(g * 8);
        const bool live = task < HALO_TASKS && c < C && ih < H;
        const uint row = ((n * C + c) * H + ih) * W; // element offset of channel c's row ih
        if (live && X_VEC && iw >= 0 && iw + 8 <= int(W)) {
            [[unroll]] for (uint e = 0; e < 8; ++e) rx[s * 8 + e] = x8.data[(row + e * H * W + uint(iw)) / 8];
        } else {
            [[unroll]] for (uint e = 0; e < 8; ++e) {
                uint h[8];
                [[unroll]] for (uint p = 0; p < 8; ++p) {
                    const uint col = uint(iw + int(p));
                    h[p] = live && col < W ? half_bits(x.data[row + e * H * W + col]) : 0u;
                }
                rx[s * 8 + e] = pack8(h);
            }
        }
    }
    // Weights [M][KS * KS][C] -> units (m, tap, 8 channels) of the chunk's kernel rows.
    [[unroll]] for (uint s = 0; s < W_PER; ++s) {
        const uint u = tid + s * CM_THREADS;
        const uint cu = u % (CC / 8), tap = (u / (CC / 8)) % TAPS, m = m0 + u / (CC / 8 * TAPS);
        const uint c = q * CC + cu * 8;
        rw[s] = u < W_UNITS && m < M && c < C ? w8.data[((m * KS * KS + rg * TAPS + tap) * C + c) / 8] : uvec4(0);
    }
}

uint half_of(uvec4 v, uint p) { return (v[p / 2] >> (16 * (p % 2))) & 0xffffu; }

// Registers -> shared memory; the window's units are transposed to 8 channels of one pixel.
void stage(uint rg) {
    const uint tid = gl_LocalInvocationIndex;
    if (rg == 0) [[unroll]] for (uint s = 0; s < HALO_PER; ++s) {
        const uint task = tid + s * CM_THREADS;
        if (task < HALO_TASKS) {
            const uint cg = task % (CC / 8), g = (task / (CC / 8)) % (HCOLS / 8), r = task / (CC / 8 * (HCOLS / 8));
            [[unroll]] for (uint p = 0; p < 8; ++p) {
                uvec4 v;
                [[unroll]] for (uint word = 0; word < 4; ++word)
                    v[word] = half_of(rx[s * 8 + 2 * word], p) | (half_of(rx[s * 8 + 2 * word + 1], p) << 16);
                sh_x[(r * HCOLS + g * 8 + p) * PIX_UNITS + cg] = v;
            }
        }
    }
    [[unroll]] for (uint s = 0; s < W_PER; ++s) {
        const uint u = tid + s * CM_THREADS;
        if (u < W_UNITS) sh_w[(u / (CC / 8 * TAPS)) * W_ROW + u % (CC / 8 * TAPS)] = rw[s];
    }
}

// y = act(acc + bias + residual) for eight consecutive pixels of a row from (oh, ow) in channel m.
void store8(uint n, uint m, uint oh, uint ow, vec4 lo, vec4 hi) {
    const float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
    const float b = HAS_BIAS != 0 ? float(bias.data[m]) : 0.0;
    const uint o = ((n * M + m) * OH + oh) * OW + ow;
    if (OW % 8 == 0 && ow + 8 <= OW) {
        uvec4 r = uvec4(0);
        if (HAS_RES != 0) r = res8.data[o / 8];
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

    fcoopmatNV<32, gl_ScopeSubgroup, CM_L, CM_L> acc[CM_FM * CM_FN];
    [[unroll]] for (uint f = 0; f < CM_FM * CM_FN; ++f) acc[f] = fcoopmatNV<32, gl_ScopeSubgroup, CM_L, CM_L>(0.0);

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
            const uint kh = rg * KG + tap / KS, kw = tap % KS;
            [[unroll]] for (uint ks = 0; ks < CC / CM_L; ++ks) {
                fcoopmatNV<16, gl_ScopeSubgroup, CM_L, CM_L> fa[CM_FM];
                fcoopmatNV<16, gl_ScopeSubgroup, CM_L, CM_L> fb[CM_FN];
                [[unroll]] for (uint i = 0; i < CM_FM; ++i)
                    coopMatLoadNV(fa[i], sh_w, (wm * CM_FM + i) * CM_L * W_ROW + tap * (CC / 8) + ks * 2, W_ROW, false);
                [[unroll]] for (uint j = 0; j < CM_FN; ++j) {
                    const uint p0 = (wn * CM_FN + j) * CM_L, y = p0 / TW, x = p0 % TW;
                    coopMatLoadNV(fb[j], sh_x, ((y + kh) * HCOLS + x + kw + 8 - PL) * PIX_UNITS + ks * 2, PIX_UNITS, true);
                }
                [[unroll]] for (uint i = 0; i < CM_FM; ++i)
                    [[unroll]] for (uint j = 0; j < CM_FN; ++j)
                        acc[i * CM_FN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * CM_FN + j]);
            }
        }

        if (nt != t) {
            // Epilogue of tile t through this subgroup's part of the window memory: invocation
            // `lane` takes row lane / 2 (an output channel), columns (lane % 2) * 8 ... + 7.
            barrier(); // every subgroup is done reading the window
            const uint n = t / (TILES_X * TILES_Y), ty = (t / TILES_X) % TILES_Y, tx = t % TILES_X;
            const uint cbase = warp * CM_L * C_ROW;
            const uint r = lane / 2, c0 = (lane % 2) * 8;
            [[unroll]] for (uint i = 0; i < CM_FM; ++i) {
                [[unroll]] for (uint j = 0; j < CM_FN; ++j) {
                    coopMatStoreNV(acc[i * CM_FN + j], sh_x, cbase, C_ROW, false);
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    const uint m = m0 + (wm * CM_FM + i) * CM_L + r;
                    const uint p0 = (wn * CM_FN + j) * CM_L + c0;
                    const uint oh = ty * TH + p0 / TW, ow = tx * TW + p0 % TW;
                    const uint at = cbase + r * C_ROW + c0 / 4;
                    if (m < M && oh < OH && ow < OW)
                        store8(n, m, oh, ow, uintBitsToFloat(sh_x[at]), uintBitsToFloat(sh_x[at + 1]));
                    subgroupBarrier();
                    acc[i * CM_FN + j] = fcoopmatNV<32, gl_ScopeSubgroup, CM_L, CM_L>(0.0);
                }
            }
        }
        if (nt >= TILES) break;
        t = nt;
        q = nq;
        rg = nrg;
    }
}
