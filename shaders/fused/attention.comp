#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if SELECT_MASK
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "common.glsl"
// Scaled dot-product attention, Y = softmax(scale * Q K^T [select] [+ mask]) V, in one pass over K
// and V (ml/ops/fused_attention.cpp, vkml/ops/fused.hpp):
//
// A workgroup owns BQ query rows of one batch index (workgroup x: the block of rows, y: the batch
// index); T = WG / BQ invocations share a row. The BQ rows of Q (times scale) stay in shared
// memory; K and V are walked in tiles of BK rows staged in shared memory. Per tile, invocation t
// of row r computes the scores of columns t, t + T, ... in registers, the row's tile maximum is
// merged through shared memory, and the running state is updated as flash attention does:
//   m' = max(m, tile max)   c = exp(m - m')   l = l c + sum p   acc = acc c + P V
// with p = exp(s - m') (exactly 1 where s = m', so a row of -inf scores weighs its columns
// equally, as vkml's Softmax does). The probabilities go through shared memory to the P V
// product, where invocation t of row r owns output columns t, t + T, ... Each invocation keeps its
// own part of l (all of a row's parts use the same m); they are summed at the end.
// Shared rows are padded to an odd number of floats, so the columns invocations read at once
// fall in different banks.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint D = 1;   // Q and K row length (head dim)
layout(constant_id = 1) const uint DV = 1;  // V row length
layout(constant_id = 2) const uint BQ = 16; // query rows per workgroup
layout(constant_id = 3) const uint BK = 16; // key rows per tile
layout(constant_id = 4) const uint ADD = 0; // 1: an additive mask is bound
layout(constant_id = 5) const uint KROWS = 1; // 1: K's rows are contiguous ([Sk, D]); 0: K^T's are
#define MAX_SPT 16 // scores per invocation
#define MAX_APT 32 // output columns per invocation

const uint WG = gl_WorkGroupSize.x;
const uint T = WG / BQ;
const uint SPT = (BK + T - 1) / T;
const uint APT = (DV + T - 1) / T;
const uint DS = D | 1u;  // shared row strides, odd
const uint VS = DV | 1u;
const uint PS = BK | 1u;

// Element strides of the batch dimensions (up to three, outermost first), rows and columns;
// Y is contiguous [batch, SQ, DV].
layout(push_constant) uniform Params {
    uint sq, sk, nb0, nb1, nb2; // query and key rows; sizes of the batch dimensions
    uint q_b0, q_b1, q_b2, q_row;
    uint k_b0, k_b1, k_b2, k_row, k_col;
    uint v_b0, v_b1, v_b2, v_row;
    uint c_b0, c_b1, c_b2, c_row, c_col; // select condition
    uint m_b0, m_b1, m_b2, m_row, m_col; // additive mask
    float scale;
    float fill;
    uint keep; // select: the score is kept where (cond != 0) == (keep != 0)
} p;

layout(std430, set = 0, binding = 0) readonly buffer Q { sfloat data[]; } q;
layout(std430, set = 0, binding = 1) readonly buffer K { sfloat data[]; } k;
layout(std430, set = 0, binding = 2) readonly buffer V { sfloat data[]; } v;
#if SELECT_MASK
layout(std430, set = 0, binding = 3) readonly buffer Cond { uint8_t data[]; } cond;
#else
layout(std430, set = 0, binding = 3) readonly buffer Cond { sfloat data[]; } cond; // unused
#endif
layout(std430, set = 0, binding = 4) readonly buffer Mask { sfloat data[]; } mask;
layout(std430, set = 0, binding = 5) writeonly buffer Y { sfloat data[]; } y;

shared float q_s[BQ * DS];
shared float k_s[BK * DS];
shared float v_s[BK * VS];
shared float p_s[BQ * PS];
shared float red[WG];

float inf() { return uintBitsToFloat(0x7f800000u); }

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint r = lid / T, t = lid % T;
    const uint q0 = gl_WorkGroupID.x * BQ;
    const uint row = q0 + r;
    const bool live = row < p.sq; // rows past the end take part in the barriers
    // The batch index, split into its three dimensions.
    const uint b = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
    const uint b2 = b % p.nb2, b1 = (b / p.nb2) % p.nb1, b0 = b / (p.nb2 * p.nb1);
    if (b0 >= p.nb0) return; // past the last batch index: the whole workgroup, before any barrier
    const uint qb = b0 * p.q_b0 + b1 * p.q_b1 + b2 * p.q_b2;
    const uint kb = b0 * p.k_b0 + b1 * p.k_b1 + b2 * p.k_b2;
    const uint vb = b0 * p.v_b0 + b1 * p.v_b1 + b2 * p.v_b2;
    const uint cb = b0 * p.c_b0 + b1 * p.c_b1 + b2 * p.c_b2 + row * p.c_row;
    const uint mb = b0 * p.m_b0 + b1 * p.m_b1 + b2 * p.m_b2 + row * p.m_row;

    for (uint i = lid; i < BQ * D; i += WG) {
        const uint rr = i / D, d = i % D;
        q_s[rr * DS + d] = q0 + rr < p.sq ? float(q.data[qb + (q0 + rr) * p.q_row + d]) * p.scale : 0.0;
    }

    float m_run = -inf(); // the row's running maximum
    float l_part = 0.0;   // this invocation's part of the row's sum
    float acc[MAX_APT];
    [[unroll]] for (uint i = 0; i < MAX_APT; ++i) acc[i] = 0.0;

    for (uint k0 = 0; k0 < p.sk; k0 += BK) {
        barrier(); // the previous tile's readers are done (and Q is staged)
        if (KROWS != 0) {
            for (uint i = lid; i < BK * D; i += WG) {
                const uint c = i / D, d = i % D;
                k_s[c * DS + d] = k0 + c < p.sk ? float(k.data[kb + (k0 + c) * p.k_row + d * p.k_col]) : 0.0;
            }
        } else {
            for (uint i = lid; i < BK * D; i += WG) {
                const uint d = i / BK, c = i % BK;
                k_s[c * DS + d] = k0 + c < p.sk ? float(k.data[kb + (k0 + c) * p.k_row + d * p.k_col]) : 0.0;
            }
        }
        for (uint i = lid; i < BK * DV; i += WG) {
            const uint c = i / DV, j = i % DV;
            v_s[c * VS + j] = k0 + c < p.sk ? float(v.data[vb + (k0 + c) * p.v_row + j]) : 0.0;
        }
        barrier();

        float s[MAX_SPT];
        [[unroll]] for (uint j = 0; j < MAX_SPT; ++j) s[j] = 0.0;
        for (uint d = 0; d < D; ++d) {
            const float qd = q_s[r * DS + d];
            [[unroll]] for (uint j = 0; j < MAX_SPT; ++j) {
                if (j >= SPT) break;
                const uint c = t + j * T;
                if (c < BK) s[j] += qd * k_s[c * DS + d];
            }
        }
        float tile_max = -inf();
        [[unroll]] for (uint j = 0; j < MAX_SPT; ++j) {
            if (j >= SPT) break;
            const uint c = t + j * T, kc = k0 + c;
            if (c >= BK || kc >= p.sk) continue;
            if (live) {
#if SELECT_MASK
                if ((uint(cond.data[cb + kc * p.c_col]) != 0u) != (p.keep != 0u)) s[j] = p.fill;
#endif
                if (ADD != 0) s[j] += float(mask.data[mb + kc * p.m_col]);
            }
            tile_max = max(tile_max, s[j]);
        }
        red[lid] = tile_max;
        barrier();
        [[unroll]] for (uint i = 0; i < T; ++i) tile_max = max(tile_max, red[r * T + i]);
        const float m_new = max(m_run, tile_max);
        const float corr = m_run == m_new ? 1.0 : exp(m_run - m_new);
        m_run = m_new;
        float sum = 0.0;
        [[unroll]] for (uint j = 0; j < MAX_SPT; ++j) {
            if (j >= SPT) break;
            const uint c = t + j * T;
            if (c >= BK) break;
            const float e = k0 + c >= p.sk ? 0.0 : s[j] == m_new ? 1.0 : exp(s[j] - m_new);
            p_s[r * PS + c] = e;
            sum += e;
        }
        l_part = l_part * corr + sum;
        [[unroll]] for (uint i = 0; i < MAX_APT; ++i) acc[i] *= corr;
        barrier();

        const uint cols = min(BK, p.sk - k0);
        for (uint c = 0; c < cols; ++c) {
            const float pc = p_s[r * PS + c];
            [[unroll]] for (uint i = 0; i < MAX_APT; ++i) {
                if (i >= APT) break;
                const uint j = t + i * T;
                if (j < DV) acc[i] += pc * v_s[c * VS + j];
            }
        }
    }

    barrier(); // the last tile's readers of red are done
    red[lid] = l_part;
    barrier();
    float l = 0.0;
    [[unroll]] for (uint i = 0; i < T; ++i) l += red[r * T + i];
    if (!live) return;
    const uint yb = (b * p.sq + row) * DV;
    [[unroll]] for (uint i = 0; i < MAX_APT; ++i) {
        if (i >= APT) break;
        const uint j = t + i * T;
        if (j < DV) y.data[yb + j] = sfloat(acc[i] / l);
    }
}
