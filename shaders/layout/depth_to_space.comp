#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// DepthToSpace of an NCHW tensor, modes DCR and CRD, by whole units of rows. Output row
// R = ((n * OC + c) * H + h) * B + b1 interleaves the B input rows of channel (b1 * B + b2) * OC + c
// (DCR) or (c * B + b1) * B + b2 (CRD), row h, b2 = 0..B-1:
//     out[R][w * B + b2] = in[channel(b2)][h][w]
// A unit is UW 32-bit words (16, 8 or 4 bytes) holding P = UW * 32 / EB elements of EB bits; the
// C++ side (ml/ops/layout_copy.cpp) picks UW so that rows are whole units and binds only tensors
// that start on a unit. Bits are moved, not values: one variant serves every 8-, 16- and 32-bit
// dtype (the general strided copy, layout/copy.comp, serves the rest).
//   SPLIT (B divides UW): invocation g writes output units g, g + COUNT, ... (K of them, K
//     dividing the output's units) of the whole output: neighbouring invocations store neighbouring units (coalesced stores). Output
//     unit j of a row holds P / B elements of each of the B input rows, one sub-unit of UW / B
//     words each (also coalesced): all K * B loads are issued before the first store.
//   otherwise (blocksize 3, or units narrower than B words): invocation g reads unit j of the B
//     input rows and writes the B consecutive units of the output row they make.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint COUNT = 1; // invocations: N * OC * H * B * UPR (SPLIT: / K * B)
layout(constant_id = 1) const uint EB = 32;   // element bits: 8, 16 or 32
layout(constant_id = 2) const uint UW = 4;    // words per unit: 1, 2 or 4
layout(constant_id = 3) const uint B = 2;     // blocksize, at most MAX_B
layout(constant_id = 4) const bool DCR = true;
layout(constant_id = 5) const uint OC = 1;  // output channels
layout(constant_id = 6) const uint H = 1;   // input height
layout(constant_id = 7) const uint UPR = 1; // units per input row: W / P
layout(constant_id = 8) const bool SPLIT = false;
layout(constant_id = 9) const uint K = 1; // output units per invocation (SPLIT), at most MAX_K
#define MAX_B 4
#define MAX_K 4
const uint EPW = 32 / EB; // elements per word
const uint P = UW * EPW;  // elements per unit
const uint MASK = EB == 32 ? 0xffffffffu : ((1u << EB) - 1u);
const uint SW = UW / B; // words per sub-unit (SPLIT)

layout(std430, set = 0, binding = 0) readonly buffer Src1 { uint data[]; } src1;
layout(std430, set = 0, binding = 0) readonly buffer Src2 { uvec2 data[]; } src2;
layout(std430, set = 0, binding = 0) readonly buffer Src4 { uvec4 data[]; } src4;
layout(std430, set = 0, binding = 1) writeonly buffer Dst1 { uint data[]; } dst1;
layout(std430, set = 0, binding = 1) writeonly buffer Dst2 { uvec2 data[]; } dst2;
layout(std430, set = 0, binding = 1) writeonly buffer Dst4 { uvec4 data[]; } dst4;

uvec4 load_unit(uint u) {
    if (UW == 4) return src4.data[u];
    if (UW == 2) return uvec4(src2.data[u], 0u, 0u);
    return uvec4(src1.data[u], 0u, 0u, 0u);
}

void store_unit(uint u, uvec4 v) {
    if (UW == 4)
        dst4.data[u] = v;
    else if (UW == 2)
        dst2.data[u] = v.xy;
    else
        dst1.data[u] = v.x;
}

// Input channel of row b2 of output row b1, channel c.
uint in_channel(uint c, uint b1, uint b2) {
    return DCR ? (b1 * B + b2) * OC + c : (c * B + b1) * B + b2;
}

void split_main(uint g) {
    uvec2 sub[MAX_K][MAX_B]; // sub-units, SW <= 2 words
    // Every load first: K * B independent loads in flight per invocation.
    [[unroll]] for (uint k = 0; k < MAX_K; ++k) {
        if (k >= K) break;
        const uint u = g + k * COUNT;
        const uint j = u % (B * UPR), r = u / (B * UPR); // unit j of output row r
        const uint b1 = r % B, t = r / B;
        const uint h = t % H, t2 = t / H;
        const uint c = t2 % OC, n = t2 / OC;
        [[unroll]] for (uint b2 = 0; b2 < MAX_B; ++b2) {
            if (b2 >= B) break;
            // Sub-unit j of the input row, in units of SW words.
            const uint at = ((n * OC * B * B + in_channel(c, b1, b2)) * H + h) * (UPR * B) + j;
            sub[k][b2] = SW == 2 ? src2.data[at] : uvec2(src1.data[at], 0u);
        }
    }
    [[unroll]] for (uint k = 0; k < MAX_K; ++k) {
        if (k >= K) break;
        uvec4 o = uvec4(0u);
        // Output element e of the unit is element e / B of row e % B's sub-unit.
        [[unroll]] for (uint e = 0; e < 4 * 4; ++e) {
            if (e >= P) break;
            const uint b2 = e % B, pos = e / B;
            const uint word = sub[k][b2][pos / EPW];
            const uint v = (word >> (EB * (pos % EPW))) & MASK;
            o[e / EPW] |= v << (EB * (e % EPW));
        }
        store_unit(g + k * COUNT, o);
    }
}

void main() {
    const uint g = vkml_linear_id();
    if (g >= COUNT) return;
    if (SPLIT) {
        split_main(g);
        return;
    }
    const uint j = g % UPR, r = g / UPR; // unit j of output row r
    const uint b1 = r % B, t = r / B;
    const uint h = t % H, t2 = t / H;
    const uint c = t2 % OC, n = t2 / OC;
    // Every load before any store: B independent loads in flight per invocation.
    uvec4 in_units[MAX_B];
    [[unroll]] for (uint b2 = 0; b2 < MAX_B; ++b2) {
        if (b2 < B) {
            in_units[b2] = load_unit(((n * OC * B * B + in_channel(c, b1, b2)) * H + h) * UPR + j);
        }
    }
    const uint out_unit = (r * UPR + j) * B;
    [[unroll]] for (uint k = 0; k < MAX_B; ++k) {
        if (k >= B) break;
        uvec4 o = uvec4(0u);
        // Output element k * P + e of this invocation's run is input element (k * P + e) / B of
        // row (k * P + e) % B.
        [[unroll]] for (uint e = 0; e < 4 * 4; ++e) {
            if (e >= P) break;
            const uint idx = k * P + e, b2 = idx % B, pos = idx / B;
            const uint word = in_units[b2][pos / EPW];
            const uint v = (word >> (EB * (pos % EPW))) & MASK;
            o[e / EPW] |= v << (EB * (e % EPW));
        }
        store_unit(out_unit + k, o);
    }
}
