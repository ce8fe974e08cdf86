#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// FusedConvStack on tensor cores (ml/ops/fused_conv_stack.cpp; the scalar kernel, fused/conv_stack.comp,
// describes the network and the tiling, which are the same here). What differs is the data path:
//
// Windows. Each activation window is stored pixel-major: one 16-byte unit per pixel holding its
// C <= 8 channels as halves (the input's CIN <= 4 channels, zero-padded), the f_l values before the
// activation. A 16-row A fragment whose rows are 16 consecutive pixels x .. x+15 of a window row
// and whose 16 columns are [8 channels of pixel x+i, 8 channels of pixel x+i+1] is one
// cooperative-matrix load with a stride of one unit (rows overlap by half). So per kernel row ky,
// two loads (kernel columns 0-1 and 2-3, the fourth column's weights zero) cover the 3x3 taps.
//
// Activation on the fragment. CReLU(f) = [relu(f), relu(-f)]: both halves come from the same loaded
// fragment, and multiply their own weight matrices (2 x 6 MMAs per 16 pixels and layer; ReLU 6,
// the first layer 6 without activation). As W_p relu(f) + W_n relu(-f) = (W_p + W_n) relu(f) - W_n f,
// one element-wise max makes relu(f) and the second product takes f itself (RELU_ONCE).
//
// Weights. Per layer, the 6 or 12 B matrices (16 x 16 halves: rows the 2 pixels x 8 channels of
// a tap pair, columns the outputs) stay in registers for all the layer's chunks, loaded from the
// op's buffer (L1/L2-resident: every workgroup reads the same); the bias is a 16 x 16 fp32 matrix
// of identical rows that initialises each accumulator.
//
// Work split. Subgroup s computes chunks s, s + NW, ... of a layer (a chunk: 16 consecutive
// pixels of an output row; the last chunk of a row starts at rw - 16 and recomputes a few pixels,
// storing the same values). Its fp32 accumulator goes to f16 through a per-subgroup staging
// fragment, from which 16 invocations store one unit each into the next window (zero outside the
// image: the next layer's padding). One barrier per layer.
//
// Head. HEAD_1X1: the 1x1 convolution over act(f_0 .. f_{D-1}) accumulates in fp32 fragments at
// the tile's own pixels (chunks of 16 of a tile row; subgroup s owns chunks s, s + NW, ...), one
// pair of MMAs (relu(f), relu(-f)) per layer, the fragment's second 8 rows of weights zero.
// LastLayer: the last 3x3 layer's window holds the head. The output stage is the scalar kernel's
// (fused/conv_stack_output.glsl).
//
// Reads past a window row (the zero-weighted fourth tap, the head's second pixel) land on the next
// row's first pixel or on a zero guard unit after each window: finite values times zero weights.
VKML_LOCAL_SIZE;

layout(constant_id = 0) const int CIN = 3;  // input channels, 1..4
layout(constant_id = 1) const int C = 8;    // outputs of every hidden layer, 1..8
layout(constant_id = 2) const int D = 1;    // 3x3 layers
layout(constant_id = 3) const int K = 4;    // head outputs: <= 16 (1x1 head), <= 8 (last layer)
layout(constant_id = 4) const int HEAD_1X1 = 1;
layout(constant_id = 5) const int CRELU = 1;
layout(constant_id = 6) const int MODE = 0; // 0: DepthToSpace + bilinear 2x input, 1: input + head
layout(constant_id = 7) const int H = 1;
layout(constant_id = 8) const int W = 1;
layout(constant_id = 9) const int TW = 16;  // output tile, TW a multiple of 16
layout(constant_id = 10) const int TH = 8;
layout(constant_id = 11) const int OC = 1;
layout(constant_id = 12) const int ACT_SIZE = 1; // units of both windows and their guards (and the head staging)
layout(constant_id = 13) const int B_OFFSET = 0; // where window B starts
// Elements of a 16 x 16 f16 A fragment each invocation holds. GLSL's length() is a specialization-
// constant instruction that KHR cooperative matrices lack, so the host passes it: 8 on NVIDIA (256
// elements over 32 invocations, none replicated), the only vendor the C++ side runs this kernel on.
layout(constant_id = 14) const int A_ELEMS = 8;
// CReLU from one max per element: W_p relu(f) + W_n relu(-f) = (W_p + W_n) relu(f) - W_n f, so the
// second product takes the loaded fragment as it is (the host packs W_p + W_n and -W_n). With 0,
// relu(f) and relu(-f) each (VKML_STACK_RELU_ONCE=0, for comparison).
layout(constant_id = 15) const int RELU_ONCE = 1;

const int S = CRELU != 0 ? 2 : 1;
const int NW = int(gl_WorkGroupSize.x) / 32; // subgroups
const int HQ = 4;                            // head chunks per subgroup, at most
const int BIAS_UNITS = 64;                   // a 16 x 16 fp32 matrix
const int MAT_UNITS = 32;                    // a 16 x 16 f16 matrix
const int KMAX = 16;

#define FH fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FF fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) readonly buffer Weights { uvec4 data[]; } wts;
layout(std430, set = 0, binding = 2) writeonly buffer Dst { sfloat data[]; } dst;

shared uvec4 s_act[ACT_SIZE];
shared uvec4 s_stage[NW * MAT_UNITS]; // one 16 x 16 f16 fragment per subgroup

FF hacc[HQ]; // the 1x1 head's sums at this subgroup's tile chunks

// Packed weights (ml/ops/fused_conv_stack.cpp, pack_mma): per layer [bias][B matrices], the
// first layer's 6 ((ky, pair)), the others' 6 S ((ky, pair, sign)); then the head's [bias][per
// layer, S matrices (sign)].
int layer_at(int l) {
    return l == 0 ? 0 : BIAS_UNITS + 6 * MAT_UNITS + (l - 1) * (BIAS_UNITS + 6 * S * MAT_UNITS);
}

void relu_split(FH a, out FH p, out FH n) {
    p = a;
    n = a;
    [[unroll]] for (int i = 0; i < A_ELEMS; ++i) {
        p[i] = max(a[i], float16_t(0.0));
        if (RELU_ONCE == 0 || S == 1) n[i] = max(-a[i], float16_t(0.0));
    }
}

// Layer l: window at `from` (the previous layer's output, or the input) -> window at `to`.
void conv_layer(int l, int from, int to, bool first) {
    const int lane = int(gl_LocalInvocationID.x) % 32, warp = int(gl_LocalInvocationID.x) / 32;
    const int halo = D - 1 - l;
    const int rw = TW + 2 * halo, rh = TH + 2 * halo, irw = rw + 2;
    const int gx0 = int(gl_WorkGroupID.x) * TW - halo, gy0 = int(gl_WorkGroupID.y) * TH - halo;
    const int at = layer_at(l);
    const int nb = first ? 6 : 6 * S;
    FH wb[12];
    [[unroll]] for (int k = 0; k < 12; ++k) {
        if (k < nb) coopMatLoadNV(wb[k], wts.data, at + BIAS_UNITS + k * MAT_UNITS, 2, false);
    }
    FF bias;
    coopMatLoadNV(bias, wts.data, at, 4, false);
    const int ncx = (rw + 15) / 16, chunks = rh * ncx;
    for (int ch = warp; ch < chunks; ch += NW) {
        const int y = ch / ncx, x0 = min((ch % ncx) * 16, rw - 16);
        FF acc = bias;
        [[unroll]] for (int ky = 0; ky < 3; ++ky) {
            [[unroll]] for (int pr = 0; pr < 2; ++pr) {
                FH a;
                coopMatLoadNV(a, s_act, from + (y + ky) * irw + x0 + 2 * pr, 1, false);
                if (first) {
                    acc = coopMatMulAddNV(a, wb[ky * 2 + pr], acc);
                } else {
                    FH p, n;
                    relu_split(a, p, n);
                    acc = coopMatMulAddNV(p, wb[(ky * 2 + pr) * S], acc);
                    if (S == 2) acc = coopMatMulAddNV(n, wb[(ky * 2 + pr) * S + 1], acc);
                }
            }
        }
        coopMatStoreNV(FH(acc), s_stage, warp * MAT_UNITS, 2, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        if (lane < 16) {
            const int gx = gx0 + x0 + lane, gy = gy0 + y;
            const bool inside = gx >= 0 && gx < W && gy >= 0 && gy < H;
            s_act[to + y * rw + x0 + lane] = inside ? s_stage[warp * MAT_UNITS + lane * 2] : uvec4(0);
        }
        subgroupBarrier(); // the staging fragment is read before the next chunk overwrites it
    }
}

// The 1x1 head's share of layer l (its window at `at`) at this subgroup's tile chunks.
void head_accumulate(int l, int at) {
    const int warp = int(gl_LocalInvocationID.x) / 32;
    const int halo = D - 1 - l, rw = TW + 2 * halo;
    const int hat = layer_at(D) + BIAS_UNITS + l * S * MAT_UNITS;
    FH wp, wn;
    coopMatLoadNV(wp, wts.data, hat, 2, false);
    if (S == 2) coopMatLoadNV(wn, wts.data, hat + MAT_UNITS, 2, false);
    [[unroll]] for (int q = 0; q < HQ; ++q) {
        const int ch = warp + q * NW;
        if (ch < TH * (TW / 16)) {
            const int py = ch / (TW / 16), x0 = (ch % (TW / 16)) * 16;
            FH a, p, n;
            coopMatLoadNV(a, s_act, at + (py + halo) * rw + x0 + halo, 1, false);
            relu_split(a, p, n);
            hacc[q] = coopMatMulAddNV(p, wp, hacc[q]);
            if (S == 2) hacc[q] = coopMatMulAddNV(n, wn, hacc[q]);
        }
    }
}

#include "fused/conv_stack_output.glsl"

void main() {
    const int NT = int(gl_WorkGroupSize.x);
    const int tid = int(gl_LocalInvocationID.x);
    const int lane = tid % 32, warp = tid / 32;
    const int n = int(gl_WorkGroupID.z);
    const int tx0 = int(gl_WorkGroupID.x) * TW, ty0 = int(gl_WorkGroupID.y) * TH;
    // The input window (halo D), zero outside the image and in the padding channels, into A;
    // the guard units after both windows.
    {
        const int irw = TW + 2 * D, irh = TH + 2 * D, plane = irw * irh;
        for (int i = tid; i < plane; i += NT) {
            const int gx = tx0 - D + i % irw, gy = ty0 - D + i / irw;
            const bool inside = gx >= 0 && gx < W && gy >= 0 && gy < H;
            vec4 v = vec4(0.0);
            [[unroll]] for (int c = 0; c < 4; ++c) {
                if (c < CIN && inside) v[c] = input_at(n, c, gy, gx);
            }
            s_act[i] = uvec4(packHalf2x16(v.xy), packHalf2x16(v.zw), 0u, 0u);
        }
        if (tid == 0) {
            s_act[B_OFFSET - 1] = uvec4(0);
            s_act[B_OFFSET + (TW + 2 * D - 2) * (TH + 2 * D - 2)] = uvec4(0); // after f_0's window
        }
    }
    if (HEAD_1X1 != 0) {
        FF hb;
        coopMatLoadNV(hb, wts.data, layer_at(D), 4, false);
        [[unroll]] for (int q = 0; q < HQ; ++q) hacc[q] = hb;
    }
    barrier();
    // Layer l reads window (l even: A, odd: B) and writes the other.
    int cur = 0, nxt = B_OFFSET;
    for (int l = 0; l < D; ++l) {
        if (l > 0 && HEAD_1X1 != 0) head_accumulate(l - 1, cur);
        if (l == 0)
            conv_layer(0, cur, nxt, true);
        else
            conv_layer(l, cur, nxt, false);
        barrier();
        const int t = cur;
        cur = nxt;
        nxt = t;
    }
    // The outputs, chunk by chunk: the head through this subgroup's fp32 staging (in the windows'
    // memory, free once every subgroup has read the last one), or read from the last window.
    if (HEAD_1X1 != 0) {
        head_accumulate(D - 1, cur);
        barrier();
    }
    const int r = lane % 16, sub = lane / 16;
    [[unroll]] for (int q = 0; q < HQ; ++q) {
        const int ch = warp + q * NW;
        if (ch >= TH * (TW / 16)) continue;
        const int py = ch / (TW / 16), px = (ch % (TW / 16)) * 16 + r;
        float hv[KMAX];
        if (HEAD_1X1 != 0) {
            coopMatStoreNV(hacc[q], s_act, warp * BIAS_UNITS, 4, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            [[unroll]] for (int u = 0; u < 4; ++u) {
                const vec4 t = uintBitsToFloat(s_act[warp * BIAS_UNITS + r * 4 + u]);
                [[unroll]] for (int e = 0; e < 4; ++e) hv[u * 4 + e] = t[e];
            }
            subgroupBarrier();
        } else {
            const uvec4 u = s_act[cur + py * TW + px];
            const vec2 h[4] = vec2[4](unpackHalf2x16(u.x), unpackHalf2x16(u.y), unpackHalf2x16(u.z), unpackHalf2x16(u.w));
            [[unroll]] for (int k = 0; k < KMAX; ++k) hv[k] = k < 8 ? h[k / 2][k % 2] : 0.0;
        }
        const int gx = tx0 + px, gy = ty0 + py;
        if (gx < W && gy < H) emit(n, gx, gy, hv, sub, sub + 1);
    }
}
