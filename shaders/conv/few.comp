#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "activation.glsl"
#include "conv/conv_spec.glsl"
// Convolutions with few output channels (M <= MB = 4 or 8), a square KS x KS kernel (KS = 1, 3 or
// 5), stride 1, dilation 1, group 1, f32 or f16 storage, fp32 arithmetic: an RDN's 64 -> 4 growth
// layers, a super-resolution network's 12 -> 3 last layer, Anime4K's output heads.
//
// Such a layer reads C channels for every M it writes: it is bound by how often its input is read
// and by its multiply-adds, not by a GEMM's tile. The tensor-core tiles pad M to 16 (a 64 -> 4
// layer at 960x540 took 171 us on them on an H200 against a 17 us memory floor); the direct kernel
// loads every input element once per tap. Here a workgroup of 128 invocations computes every output
// channel of a 16-row x 64-column output tile; for each chunk of CC = 4 input channels it stages
// the tile's input window (16 + KS - 1 rows x 64 + KS - 1 columns, rows padded to whole vec4s) and
// the chunk's weights (fp32, [c][tap][MB], zeros past M) in shared memory. Invocation (tx, ty)
// owns a PY = 2 row x PX = 4 column block of outputs for all MB channels: per channel it reads its
// (PY + KS - 1) x (PX + KS - 1) input patch as vec4s (a quarter-subgroup's eight vec4s cover all
// 32 banks: no conflicts) and each tap's MB weights as broadcast vec4s, then multiply-adds vec4s of
// output channels: PY * PX * KS * KS * MB / 4 vec4 fmas per channel against 2 (PY + KS - 1) vec4
// loads.
//
// The window comes from global memory in 16-byte units (8 halves or 4 floats) covering input
// columns ow0 - 8 .. ow0 + 71 of a row (element by element where a unit crosses the image's edge or
// rows are not whole units), into registers while the previous chunk multiplies. Padding follows
// PAD_MODE (conv_src); channels past C read as zeros; outputs past OH / OW are not stored. Needs
// the left pad PL <= 8. The C++ side (ml/ops/conv.cpp) checks the geometry and dispatches one workgroup
// per (tile, image): x = tiles, y = N.
VKML_LOCAL_SIZE;

#ifndef KS
#define KS 3
#endif
#ifndef MB
#define MB 4
#endif
#define THREADS 128
#define TX 16 // invocations across a tile
#define TY 8  // ... and down
#define PX 4  // output columns per invocation
#define PY 2  // output rows per invocation
#define TW (TX * PX)
#define TH (TY * PY)
#define CC 4  // input channels staged at a time
#define WR (TH + KS - 1)                 // window rows
#define WC (TW + KS - 1)                 // window columns
#define WQ ((WC + 3) / 4)                // vec4s per window row
#define XR (PY + KS - 1)                 // patch rows of an invocation
#define XQ ((PX + KS - 1 + 3) / 4)       // vec4s per patch row
#define MQ (MB / 4)                      // vec4s of output channels
#define TAPS (KS * KS)
#if VKML_FP16
#define UE 8 // elements per 16-byte unit
#else
#define UE 4
#endif
#define NU ((TW + 16) / UE)              // units per window row: columns ow0 - 8 .. ow0 + TW + 7
#define X_TASKS (CC * WR * NU)
#define X_PER ((X_TASKS + THREADS - 1) / THREADS)
#define W_ELEMS (CC * TAPS * MB)
#define W_PER ((W_ELEMS + THREADS - 1) / THREADS)

#if MB % 4 != 0 || (KS != 1 && KS != 3 && KS != 5)
#error "conv few: MB is 4 or 8, KS is 1, 3 or 5"
#endif

layout(std430, set = 0, binding = 0) readonly buffer X16 { uvec4 data[]; } x16;

shared vec4 sh_x[CC * WR * WQ];
shared vec4 sh_w[CC * TAPS * MQ];

uvec4 rx[X_PER]; // the next chunk's window units, raw bits
float rw[W_PER]; // ... and weights

const uint TILES_X = (OW + TW - 1) / TW;
const uint TILES_Y = (OH + TH - 1) / TH;
const bool X_VEC = W % UE == 0;

uint elem_bits(uint i) {
#if VKML_FP16
    return packHalf2x16(vec2(float(x.data[i]), 0.0));
#else
    return floatBitsToUint(float(x.data[i]));
#endif
}

float unit_elem(uvec4 u, uint j) {
#if VKML_FP16
    return unpackHalf2x16(u[j / 2])[j % 2];
#else
    return uintBitsToFloat(u[j]);
#endif
}

// Global -> registers: chunk c0 of the window whose top-left input is (ih0, ow0 - 8) of image n.
void fetch(uint n, uint c0, int ih0, uint ow0) {
    const uint tid = gl_LocalInvocationIndex;
    [[unroll]] for (uint s = 0; s < X_PER; ++s) {
        const uint t = tid + s * THREADS;
        const uint g = t % NU, r = (t / NU) % WR, c = c0 + t / (NU * WR);
        const int ih = conv_src(ih0 + int(r), H);
        const int iw = int(ow0) - 8 + int(g * UE);
        const bool live = (X_TASKS % THREADS == 0 || t < X_TASKS) && c < C && ih >= 0 && ih < int(H);
        const uint row = live ? ((n * C + c) * H + uint(ih)) * W : 0;
        if (live && X_VEC && iw >= 0 && iw + UE <= int(W)) {
            rx[s] = x16.data[(row + uint(iw)) / UE];
        } else {
            uint b[UE];
            [[unroll]] for (uint j = 0; j < UE; ++j) {
                const int col = conv_src(iw + int(j), W);
                b[j] = live && col >= 0 && col < int(W) ? elem_bits(row + uint(col)) : 0u;
            }
#if VKML_FP16
            rx[s] = uvec4(b[0] | (b[1] << 16), b[2] | (b[3] << 16), b[4] | (b[5] << 16), b[6] | (b[7] << 16));
#else
            rx[s] = uvec4(b[0], b[1], b[2], b[3]);
#endif
        }
    }
    // The chunk's weights as [c][tap][MB]: W is [M][C][KS][KS].
    [[unroll]] for (uint s = 0; s < W_PER; ++s) {
        const uint e = tid + s * THREADS;
        const uint m = e % MB, tap = (e / MB) % TAPS, c = c0 + e / (MB * TAPS);
        rw[s] = (W_ELEMS % THREADS == 0 || e < W_ELEMS) && m < M && c < C ? float(w.data[(m * C + c) * TAPS + tap]) : 0.0;
    }
}

// Registers -> shared memory: unit g's element j is window column g * UE + j - 8 + PL.
void stage() {
    const uint tid = gl_LocalInvocationIndex;
    [[unroll]] for (uint s = 0; s < X_PER; ++s) {
        const uint t = tid + s * THREADS;
        if (X_TASKS % THREADS == 0 || t < X_TASKS) {
            const uint g = t % NU, rc = t / NU; // rc: c * WR + r
            [[unroll]] for (uint j = 0; j < UE; ++j) {
                const uint wc = g * UE + j - 8 + PL; // wraps when left of the window
                if (wc < WQ * 4) sh_x[rc * WQ + wc / 4][wc % 4] = unit_elem(rx[s], j);
            }
        }
    }
    [[unroll]] for (uint s = 0; s < W_PER; ++s) {
        const uint e = tid + s * THREADS;
        if (W_ELEMS % THREADS == 0 || e < W_ELEMS) sh_w[e / 4][e % 4] = rw[s];
    }
}

void main() {
    const uint tid = gl_LocalInvocationIndex;
    const uint tile = gl_WorkGroupID.x, n = gl_WorkGroupID.y;
    if (tile >= TILES_X * TILES_Y) return;
    const uint oh0 = (tile / TILES_X) * TH, ow0 = (tile % TILES_X) * TW;
    const uint tx = tid % TX, ty = tid / TX;
    const int ih0 = int(oh0) - int(PT);

    vec4 acc[PY * PX * MQ];
    [[unroll]] for (uint i = 0; i < PY * PX * MQ; ++i) acc[i] = vec4(0.0);

    fetch(n, 0, ih0, ow0);
    for (uint c0 = 0;; c0 += CC) {
        barrier(); // every invocation is done with the previous chunk
        stage();
        barrier();
        if (c0 + CC < C) fetch(n, c0 + CC, ih0, ow0); // in flight while this chunk multiplies

        [[unroll]] for (uint c = 0; c < CC; ++c) {
            [[unroll]] for (uint r = 0; r < XR; ++r) {
                // Patch row r: window row ty * PY + r, columns tx * PX ...
                vec4 xq[XQ];
                [[unroll]] for (uint q = 0; q < XQ; ++q)
                    xq[q] = sh_x[(c * WR + ty * PY + r) * WQ + tx * (PX / 4) + q];
                [[unroll]] for (uint kh = 0; kh < KS; ++kh) {
                    // Output row py = r - kh of this invocation, if it exists.
                    if (r < kh || r - kh >= PY) continue;
                    const uint py = r - kh;
                    [[unroll]] for (uint kw = 0; kw < KS; ++kw) {
                        [[unroll]] for (uint mq = 0; mq < MQ; ++mq) {
                            const vec4 wv = sh_w[(c * TAPS + kh * KS + kw) * MQ + mq];
                            [[unroll]] for (uint px = 0; px < PX; ++px) {
                                const uint col = px + kw;
                                acc[(py * PX + px) * MQ + mq] = fma(vec4(xq[col / 4][col % 4]), wv, acc[(py * PX + px) * MQ + mq]);
                            }
                        }
                    }
                }
            }
        }
        if (c0 + CC >= C) break;
    }

    [[unroll]] for (uint py = 0; py < PY; ++py) {
        const uint oh = oh0 + ty * PY + py;
        [[unroll]] for (uint px = 0; px < PX; ++px) {
            const uint ow = ow0 + tx * PX + px;
            if (oh < OH && ow < OW) {
                [[unroll]] for (uint m = 0; m < MB; ++m)
                    if (m < M)
                        conv_store(((n * M + m) * OH + oh) * OW + ow, m, acc[(py * PX + px) * MQ + m / 4][m % 4]);
            }
        }
    }
}
