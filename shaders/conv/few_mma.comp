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
#include "conv/halves.glsl"
// Convolutions with few output channels (M <= 16; the C++ side gives it M <= 8) on tensor cores:
// conv/few.comp's layers (an RDN's 64 -> 4 growth layers, a super-resolution network's 12 -> 3
// last layer), KS x KS (KS = 3), stride 1, dilation 1, group 1, f16 storage, fp32 sums.
//
// The tensor-core GEMM tiles put the output channels on a fragment's 16 rows, so such a layer is
// mostly padding, and they stage their input once per 16 output channels. Here the pixels are the
// rows and the output channels the columns (N = 16, M <= 16 of them real): a fragment product
// covers 16 pixels x 16 channels of one tap, so the padding is in N only and the window is staged
// once for all outputs.
//
// A workgroup (8 subgroups) computes a TH = 8 row x TW = 64 column output tile; subgroup s owns
// output row s, four 16-column fragments. Per chunk of CC = 16 input channels it stages
//   - the input window (TH + KS - 1 rows x TW + KS - 1 columns) pixel-major: one pixel is two
//     16-byte units of 8 channels as halves plus one unit of padding (a 48-byte pitch puts the 8
//     rows of a fragment load on distinct banks); zero outside the image (or reflect / edge
//     padding, PAD_MODE) and past C;
//   - the chunk's weights as KS * KS B matrices [tap][16 channels][16 outputs] (same pitch).
// The A fragment of tap (kh, kw) for output row s, columns x .. x + 15 is the window's pixels
// (s + kh, x + kw ...): one load with a stride of one pixel. Each thread gathers its units of the
// next chunk from global memory (8 channels of one pixel; consecutive threads read consecutive
// pixels of a channel) into registers while the subgroups multiply the current one.
// The epilogue passes each fp32 fragment through the window's memory (16 x 16 floats per
// subgroup), where 32 invocations store 16 pixels x 8 outputs each with conv_store (bias, residual,
// activation). Dispatch: x = tiles, y = N.
VKML_LOCAL_SIZE;

#ifndef KS
#define KS 3
#endif
#define THREADS 256
#define TH 8                      // output rows: one per subgroup
#define TW 64                     // output columns
#define NQ (TW / 16)              // fragments per subgroup
#define CC 16                     // input channels a chunk
#define WR (TH + KS - 1)          // window rows
#define WC (TW + KS - 1)          // window columns
#define PU 3                      // units per window pixel and per B row (2 + padding)
#define TAPS (KS * KS)
#define X_TASKS (2 * WR * WC)     // (half of the chunk, pixel)
#define X_PER ((X_TASKS + THREADS - 1) / THREADS)
#define B_TASKS (TAPS * CC * 2)   // (tap, channel, half of the outputs)
#define B_PER ((B_TASKS + THREADS - 1) / THREADS)

#define FH fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FF fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

shared uvec4 sh_x[WR * WC * PU];
shared uvec4 sh_b[TAPS * CC * PU];

uvec4 rx[X_PER]; // the next chunk's window units
uvec4 rb[B_PER]; // ... and weight units

const uint TILES_X = (OW + TW - 1) / TW;
const uint TILES_Y = (OH + TH - 1) / TH;

// Global -> registers: chunk c0 of the window whose top-left input is (ih0, iw0) of image n.
void fetch(uint n, uint c0, int ih0, int iw0) {
    const uint tid = gl_LocalInvocationIndex;
    [[unroll]] for (uint s = 0; s < X_PER; ++s) {
        const uint t = tid + s * THREADS;
        const uint p = t % (WR * WC), h = t / (WR * WC);
        const int ih = conv_src(ih0 + int(p / WC), H), iw = conv_src(iw0 + int(p % WC), W);
        const bool live = (X_TASKS % THREADS == 0 || t < X_TASKS) && ih >= 0 && ih < int(H) && iw >= 0 && iw < int(W);
        uint v[8];
        [[unroll]] for (uint j = 0; j < 8; ++j) {
            const uint c = c0 + h * 8 + j;
            v[j] = live && c < C ? half_bits(x.data[((n * C + c) * H + uint(ih)) * W + uint(iw)]) : 0u;
        }
        rx[s] = pack8(v);
    }
    // B[tap][k][o] = W[o][c0 + k][tap] (W is [M][C][KS][KS]), zero past M and C.
    [[unroll]] for (uint s = 0; s < B_PER; ++s) {
        const uint t = tid + s * THREADS;
        const uint o0 = (t % 2) * 8, k = (t / 2) % CC, tap = t / (2 * CC);
        const uint c = c0 + k;
        uint v[8];
        [[unroll]] for (uint j = 0; j < 8; ++j) {
            const uint o = o0 + j;
            v[j] = (B_TASKS % THREADS == 0 || t < B_TASKS) && o < M && c < C ? half_bits(w.data[(o * C + c) * TAPS + tap]) : 0u;
        }
        rb[s] = pack8(v);
    }
}

// Registers -> shared memory.
void stage() {
    const uint tid = gl_LocalInvocationIndex;
    [[unroll]] for (uint s = 0; s < X_PER; ++s) {
        const uint t = tid + s * THREADS;
        if (X_TASKS % THREADS == 0 || t < X_TASKS) sh_x[(t % (WR * WC)) * PU + t / (WR * WC)] = rx[s];
    }
    [[unroll]] for (uint s = 0; s < B_PER; ++s) {
        const uint t = tid + s * THREADS;
        if (B_TASKS % THREADS == 0 || t < B_TASKS) sh_b[(t / 2) * PU + t % 2] = rb[s];
    }
}

void main() {
    const uint tid = gl_LocalInvocationIndex;
    const uint warp = tid / 32, lane = tid % 32;
    const uint tile = gl_WorkGroupID.x, n = gl_WorkGroupID.y;
    if (tile >= TILES_X * TILES_Y) return;
    const uint oh0 = (tile / TILES_X) * TH, ow0 = (tile % TILES_X) * TW;
    const int ih0 = int(oh0) - int(PT), iw0 = int(ow0) - int(PL);

    FF acc[NQ];
    [[unroll]] for (uint q = 0; q < NQ; ++q) acc[q] = FF(0.0);

    fetch(n, 0, ih0, iw0);
    for (uint c0 = 0;; c0 += CC) {
        barrier(); // every subgroup is done with the previous chunk
        stage();
        barrier();
        if (c0 + CC < C) fetch(n, c0 + CC, ih0, iw0); // in flight while this chunk multiplies
        [[unroll]] for (uint kh = 0; kh < KS; ++kh) {
            [[unroll]] for (uint kw = 0; kw < KS; ++kw) {
                FH b;
                coopMatLoadNV(b, sh_b, (kh * KS + kw) * CC * PU, PU, false);
                [[unroll]] for (uint q = 0; q < NQ; ++q) {
                    FH a;
                    coopMatLoadNV(a, sh_x, ((warp + kh) * WC + q * 16 + kw) * PU, PU, false);
                    acc[q] = coopMatMulAddNV(a, b, acc[q]);
                }
            }
        }
        if (c0 + CC >= C) break;
    }

    barrier(); // the window's memory becomes the epilogue's
    const uint base = warp * 64, r = lane % 16, o0 = (lane / 16) * 8;
    const uint oh = oh0 + warp;
    [[unroll]] for (uint q = 0; q < NQ; ++q) {
        coopMatStoreNV(acc[q], sh_x, base, 4, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        const uint ow = ow0 + q * 16 + r;
        if (oh < OH && ow < OW && o0 < M) {
            const vec4 lo = uintBitsToFloat(sh_x[base + r * 4 + o0 / 4]);
            const vec4 hi = uintBitsToFloat(sh_x[base + r * 4 + o0 / 4 + 1]);
            const float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
            [[unroll]] for (uint j = 0; j < 8; ++j) {
                const uint o = o0 + j;
                if (o < M) conv_store(((n * M + o) * OH + oh) * OW + ow, o, v[j]);
            }
        }
        subgroupBarrier();
    }
}
