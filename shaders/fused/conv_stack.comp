#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// FusedConvStack (ml/ops/fused_conv_stack.cpp): a whole network of few-channel 3x3 convolutions
// (Anime4K S/M/L and networks of that shape) in one dispatch. A workgroup owns a TW x TH tile of
// the network's resolution and computes every layer of it in shared memory:
//
//   input window   (TW + 2D) x (TH + 2D) pixels, CIN channels, zero outside the image
//   layer l        3x3 of the previous window (layer 0: the input; later: act(layer l - 1), act
//                  CReLU [relu(f), relu(-f)] or relu(f)), over a window shrunk by one pixel a side:
//                  (TW + 2(D-1-l)) x (TH + 2(D-1-l)); outside the image it stores 0, the next
//                  layer's zero padding, so tile edges and image edges need no other care
//   head           HEAD_1X1: a 1x1 convolution over act(every layer) concatenated, accumulated
//                  layer by layer in registers at the tile's own pixels (the concatenation never
//                  exists); otherwise the last 3x3 layer (K outputs) is the head
//   store          MODE 0: DepthToSpace(2, CRD) of the head plus the input upsampled 2x (linear,
//                  half_pixel, edges clamped: ONNX Resize); MODE 1: the input plus the head's
//                  first OC channels (Anime4K's restore networks)
//
// Two activation windows ping-pong in shared memory (A: the input and odd layers, B: even
// layers), each stored as planes of 8-byte units (4 halves with SMEM_F16, else 2 floats) so that
// neighbouring invocations read neighbouring units. Weights and biases come packed as vec4s of four
// output channels (ml/ops/fused_conv_stack.cpp, pack_weights): the head's block is staged once, the
// 3x3 layers' blocks one layer ahead into two alternating slots (loaded before a layer's work,
// stored after it). One barrier per layer.
//
// An invocation computes P rows of one column of a layer (a vertical strip): per kernel column it
// loads P + 2 pixels once and every weight vec4 once for the P rows. fp32 accumulation throughout.
VKML_LOCAL_SIZE;

layout(constant_id = 0) const int CIN = 3;      // input channels, 1..4
layout(constant_id = 1) const int C = 4;        // outputs of every hidden 3x3 layer, 1..8
layout(constant_id = 2) const int D = 1;        // 3x3 layers (with HEAD_1X1 == 0 the last one is the head)
layout(constant_id = 3) const int K = 4;        // head outputs: <= 16 (1x1 head), <= 8 (3x3 head)
layout(constant_id = 4) const int HEAD_1X1 = 1;
layout(constant_id = 5) const int CRELU = 1;    // act: 1 CReLU, 0 ReLU
layout(constant_id = 6) const int MODE = 0;
layout(constant_id = 7) const int H = 1;        // input height and width
layout(constant_id = 8) const int W = 1;
layout(constant_id = 9) const int TW = 8;       // output tile
layout(constant_id = 10) const int TH = 8;
layout(constant_id = 11) const int OC = 1;      // output channels
layout(constant_id = 12) const int P = 4;       // rows per strip, <= PMAX
layout(constant_id = 13) const int ACT_SIZE = 1; // 8-byte units of both activation windows
layout(constant_id = 14) const int B_OFFSET = 0; // where window B starts
layout(constant_id = 15) const int W_SIZE = 1;   // vec4s of staged weights: head block + 2 layer slots
layout(constant_id = 16) const int WL_MAX = 0;   // vec4s of one layer slot

const int CMAX = 8;  // channels of a layer's output
const int PMAX = 4;  // rows of a strip
const int QMAX = 4;  // tile pixels per invocation (head accumulators)
const int KMAX = 16; // outputs of a 1x1 head

#if SMEM_F16
const int PER_UNIT = 4;
#else
const int PER_UNIT = 2;
#endif
const int UMAX = CMAX / PER_UNIT;

layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) readonly buffer Weights { vec4 data[]; } wts;
layout(std430, set = 0, binding = 2) writeonly buffer Dst { sfloat data[]; } dst;

shared uvec2 s_act[ACT_SIZE];
shared vec4 s_w[W_SIZE];

vec4 hacc[QMAX][KMAX / 4]; // the 1x1 head's sums at this invocation's tile pixels

#if SMEM_F16
vec4 unit_load(int i) {
    const uvec2 u = s_act[i];
    return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
}
void unit_store(int i, vec4 v) {
    s_act[i] = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
}
#else
vec4 unit_load(int i) {
    return vec4(uintBitsToFloat(s_act[i]), 0.0, 0.0);
}
void unit_store(int i, vec4 v) {
    s_act[i] = floatBitsToUint(v.xy);
}
#endif

// The first `ch` channels of pixel p of a window at `base` with planes of `plane` units.
void load_px(int base, int plane, int p, int ch, out float v[CMAX]) {
    [[unroll]] for (int u = 0; u < UMAX; ++u) {
        vec4 t = vec4(0.0);
        if (u * PER_UNIT < ch) t = unit_load(base + u * plane + p);
        [[unroll]] for (int e = 0; e < PER_UNIT; ++e) v[u * PER_UNIT + e] = t[e];
    }
}

void store_px(int base, int plane, int p, int ch, float v[CMAX]) {
    [[unroll]] for (int u = 0; u < UMAX; ++u) {
        if (u * PER_UNIT < ch) {
            vec4 t = vec4(0.0);
            [[unroll]] for (int e = 0; e < PER_UNIT; ++e) t[e] = v[u * PER_UNIT + e];
            unit_store(base + u * plane + p, t);
        }
    }
}

// Weight layout (vec4 units of four output channels): a 3x3 layer of `co` outputs reading `ci`
// channels is [bias: CO4][tap (ky * 3 + kx)][ci][CO4]; the 1x1 head is [bias: K4][layer][ci][K4].
int c4(int c) {
    return (c + 3) / 4;
}

// Layer l: window `src` (cin stored channels per pixel; act applied on reading unless first)
// -> window `dst` (`co` channels stored of co4 vec4s computed). `slot`: where the layer's weights
// were staged. Two call sites only (the first layer, and every later one): compilers that unroll
// it all (llvmpipe) take long enough as it is.
void conv_layer(int l, int src_at, int dst_at, int cin, bool first, int co4, int co, int slot) {
    const int NT = int(gl_WorkGroupSize.x);
    const int tid = int(gl_LocalInvocationID.x);
    const int halo = D - 1 - l;
    const int rw = TW + 2 * halo, rh = TH + 2 * halo;
    const int irw = rw + 2, irh = rh + 2;
    const int iplane = irw * irh, oplane = rw * rh;
    const int units = rw * ((rh + P - 1) / P);
    const int S = first ? 1 : (CRELU != 0 ? 2 : 1); // read channels per stored channel
    const int ci = S * cin;
    const int gx0 = int(gl_WorkGroupID.x) * TW - halo, gy0 = int(gl_WorkGroupID.y) * TH - halo;
    // A loop every invocation runs the same number of times (uniform control flow: shared loads
    // of the weights stay broadcasts, also for compilers that cannot otherwise prove it); strips
    // past the end compute clamped garbage they do not store.
    for (int base = 0; base < units; base += NT) {
        const int u = min(base + tid, units - 1);
        const bool valid = base + tid < units;
        const int x = u % rw, y0 = (u / rw) * P;
        vec4 acc[PMAX][CMAX / 4];
        [[unroll]] for (int q = 0; q < CMAX / 4; ++q) {
            const vec4 b = q < co4 ? s_w[slot + q] : vec4(0.0);
            [[unroll]] for (int j = 0; j < PMAX; ++j) acc[j][q] = b;
        }
        [[unroll]] for (int kx = 0; kx < 3; ++kx) {
            float col[PMAX + 2][CMAX];
            [[unroll]] for (int r = 0; r < PMAX + 2; ++r) {
                if (r < P + 2) load_px(src_at, iplane, min(y0 + r, irh - 1) * irw + x + kx, cin, col[r]);
            }
            [[unroll]] for (int ky = 0; ky < 3; ++ky) {
                [[unroll]] for (int c = 0; c < CMAX; ++c) {
                    if (c >= cin) continue;
                    [[unroll]] for (int s = 0; s < 2; ++s) {
                        if (s >= S) continue;
                        const int wi = slot + co4 + ((ky * 3 + kx) * ci + s * cin + c) * co4;
                        vec4 w[CMAX / 4];
                        [[unroll]] for (int q = 0; q < CMAX / 4; ++q) w[q] = q < co4 ? s_w[wi + q] : vec4(0.0);
                        [[unroll]] for (int j = 0; j < PMAX; ++j) {
                            if (j >= P) continue;
                            float a = col[j + ky][c];
                            if (!first) a = s == 0 ? max(a, 0.0) : max(-a, 0.0);
                            [[unroll]] for (int q = 0; q < CMAX / 4; ++q) {
                                if (q < co4) acc[j][q] += w[q] * a;
                            }
                        }
                    }
                }
            }
        }
        [[unroll]] for (int j = 0; j < PMAX; ++j) {
            const int y = y0 + j;
            if (j < P && y < rh && valid) {
                const int gx = gx0 + x, gy = gy0 + y;
                const bool inside = gx >= 0 && gx < W && gy >= 0 && gy < H;
                float v[CMAX];
                [[unroll]] for (int q = 0; q < CMAX / 4; ++q) {
                    [[unroll]] for (int e = 0; e < 4; ++e) v[q * 4 + e] = inside ? acc[j][q][e] : 0.0;
                }
                store_px(dst_at, oplane, y * rw + x, co, v);
            }
        }
    }
}

// The 1x1 head's share of layer l (window `at`) at this invocation's tile pixels.
void head_accumulate(int l, int at) {
    const int NT = int(gl_WorkGroupSize.x);
    const int tid = int(gl_LocalInvocationID.x);
    const int Q = (TW * TH + NT - 1) / NT;
    const int halo = D - 1 - l;
    const int rw = TW + 2 * halo, plane = rw * (TH + 2 * halo);
    const int S = CRELU != 0 ? 2 : 1, ci = S * C;
    const int k4 = c4(K);
    [[unroll]] for (int q = 0; q < QMAX; ++q) {
        if (q >= Q) continue;
        // Past the tile (the last q only): a clamped pixel, summed but never stored.
        const int p = min(tid + q * NT, TW * TH - 1);
        const int px = p % TW, py = p / TW;
        float v[CMAX];
        load_px(at, plane, (py + halo) * rw + px + halo, C, v);
        [[unroll]] for (int c = 0; c < CMAX; ++c) {
            if (c >= C) continue;
            [[unroll]] for (int s = 0; s < 2; ++s) {
                if (s >= S) continue;
                const float a = s == 0 ? max(v[c], 0.0) : max(-v[c], 0.0);
                const int wi = k4 + (l * ci + s * C + c) * k4;
                [[unroll]] for (int kq = 0; kq < KMAX / 4; ++kq) {
                    if (kq < k4) hacc[q][kq] += s_w[wi + kq] * a;
                }
            }
        }
    }
}

#include "fused/conv_stack_output.glsl"

// The head's values at the tile's pixels, plus the skip connection, into the output.
void store_outputs(int last_at) {
    const int NT = int(gl_WorkGroupSize.x);
    const int tid = int(gl_LocalInvocationID.x);
    const int Q = (TW * TH + NT - 1) / NT;
    const int n = int(gl_WorkGroupID.z);
    [[unroll]] for (int q = 0; q < QMAX; ++q) {
        const int p = tid + q * NT;
        if (q >= Q || p >= TW * TH) continue;
        const int px = p % TW, py = p / TW;
        const int gx = int(gl_WorkGroupID.x) * TW + px, gy = int(gl_WorkGroupID.y) * TH + py;
        if (gx >= W || gy >= H) continue;
        float hv[KMAX];
        if (HEAD_1X1 != 0) {
            [[unroll]] for (int kq = 0; kq < KMAX / 4; ++kq) {
                [[unroll]] for (int e = 0; e < 4; ++e) hv[kq * 4 + e] = hacc[q][kq][e];
            }
        } else {
            float v[CMAX];
            load_px(last_at, TW * TH, py * TW + px, K, v);
            [[unroll]] for (int k = 0; k < KMAX; ++k) hv[k] = k < CMAX ? v[k] : 0.0;
        }
        emit(n, gx, gy, hv, 0, 2);
    }
}

void main() {
    const int NT = int(gl_WorkGroupSize.x);
    const int tid = int(gl_LocalInvocationID.x);
    const int n = int(gl_WorkGroupID.z);
    const int tx0 = int(gl_WorkGroupID.x) * TW, ty0 = int(gl_WorkGroupID.y) * TH;
    const int S = CRELU != 0 ? 2 : 1;
    const int C4 = c4(C), K4 = c4(K);
    // Global weight blocks: layer 0, the hidden layers, (the last layer), the 1x1 head.
    // Layers after the first all compute max(C4, c4(co_last)) vec4s of outputs (the last layer's
    // padding, or the hidden layers', has zero weights): one code path for all of them.
    const int co_last = HEAD_1X1 != 0 ? C : K;
    const int co0 = D == 1 ? co_last : C;
    const int rest4 = max(C4, c4(co_last));
    const int lb0 = c4(co0) * (1 + 9 * CIN);
    const int lbh = rest4 * (1 + 9 * S * C);
    const int head_size = HEAD_1X1 != 0 ? K4 * (1 + D * S * C) : 0;
    const int head_at = lb0 + (D - 1) * lbh; // the 1x1 head's block (HEAD_1X1: every layer is hidden)
    const int slot0 = head_size, slot1 = head_size + WL_MAX;

    for (int i = tid; i < head_size; i += NT) s_w[i] = wts.data[head_at + i];
    for (int i = tid; i < lb0; i += NT) s_w[slot0 + i] = wts.data[i];
    // The input window, zero outside the image, into window A.
    {
        const int irw = TW + 2 * D, irh = TH + 2 * D, plane = irw * irh;
        for (int i = tid; i < plane; i += NT) {
            const int x = i % irw, y = i / irw;
            const int gx = tx0 - D + x, gy = ty0 - D + y;
            const bool inside = gx >= 0 && gx < W && gy >= 0 && gy < H;
            float v[CMAX];
            [[unroll]] for (int c = 0; c < CMAX; ++c) v[c] = c < CIN && inside ? input_at(n, c, gy, gx) : 0.0;
            store_px(0, plane, i, CIN, v);
        }
    }
    barrier();
    if (HEAD_1X1 != 0) {
        [[unroll]] for (int q = 0; q < QMAX; ++q) {
            [[unroll]] for (int kq = 0; kq < KMAX / 4; ++kq) hacc[q][kq] = kq < K4 ? s_w[kq] : vec4(0.0);
        }
    }
    // Layer l reads window (l even: A, odd: B) and writes the other; the next layer's weights are
    // staged meanwhile into the slot the previous layer used.
    // The next layer's first 2 * NT vec4s are loaded before this layer's work and stored after
    // it, so the loads' latency hides behind the arithmetic.
    int cur = 0, nxt = B_OFFSET;
    for (int l = 0; l < D; ++l) {
        const bool stage = l + 1 < D;
        const int from = lb0 + l * lbh;
        const int to = ((l + 1) & 1) != 0 ? slot1 : slot0;
        vec4 pre[2];
        [[unroll]] for (int k = 0; k < 2; ++k) {
            const int i = tid + k * NT;
            pre[k] = stage && i < lbh ? wts.data[from + i] : vec4(0.0);
        }
        if (l > 0 && HEAD_1X1 != 0) head_accumulate(l - 1, cur);
        const int slot = (l & 1) != 0 ? slot1 : slot0;
        if (l == 0)
            conv_layer(0, cur, nxt, CIN, true, c4(co0), co0, slot);
        else
            conv_layer(l, cur, nxt, C, false, rest4, l == D - 1 ? co_last : C, slot);
        if (stage) {
            [[unroll]] for (int k = 0; k < 2; ++k) {
                const int i = tid + k * NT;
                if (i < lbh) s_w[to + i] = pre[k];
            }
            for (int i = tid + 2 * NT; i < lbh; i += NT) s_w[to + i] = wts.data[from + i];
        }
        barrier();
        const int t = cur;
        cur = nxt;
        nxt = t;
    }
    if (HEAD_1X1 != 0) head_accumulate(D - 1, cur);
    store_outputs(cur);
}
