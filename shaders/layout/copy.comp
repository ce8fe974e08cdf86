#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "activation.glsl"
// The strided gather behind Transpose, Slice, Expand, Tile, Split, DepthToSpace and SpaceToDepth:
// output element i, written contiguously, reads the input element
//     base + sum_k (c_k % mods[k]) * strides[k]
// where c is i's multi-index over `dims` (innermost first). Elements are moved as storage words
// (the i32 variant moves f32 and, as pairs, i64), so the copy is exact for every dtype. A
// Transpose that took the element-wise activation before it (ACT, fuse.cpp) applies it to each
// element it moves: f32 words in the i32 variant, halves in the f16 one.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer Src { stype data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint count;
    int base;
    uint rank;
    uint unused;
    uint dims[8];
    int strides[8];
    uint mods[8];
} p;
// The same 28 words as specialization constants 1..28 when SPEC is 1: the divisions by the
// dimensions then become multiplications (DepthToSpace's six-dimensional walk ran at 14 % of the
// copy bandwidth with them as push constants).
layout(constant_id = 0) const uint SPEC = 0;
layout(constant_id = 1) const uint S_COUNT = 0;
layout(constant_id = 2) const int S_BASE = 0;
layout(constant_id = 3) const uint S_RANK = 0;
layout(constant_id = 5) const uint D0 = 1;
layout(constant_id = 6) const uint D1 = 1;
layout(constant_id = 7) const uint D2 = 1;
layout(constant_id = 8) const uint D3 = 1;
layout(constant_id = 9) const uint D4 = 1;
layout(constant_id = 10) const uint D5 = 1;
layout(constant_id = 11) const uint D6 = 1;
layout(constant_id = 12) const uint D7 = 1;
layout(constant_id = 13) const int T0 = 0;
layout(constant_id = 14) const int T1 = 0;
layout(constant_id = 15) const int T2 = 0;
layout(constant_id = 16) const int T3 = 0;
layout(constant_id = 17) const int T4 = 0;
layout(constant_id = 18) const int T5 = 0;
layout(constant_id = 19) const int T6 = 0;
layout(constant_id = 20) const int T7 = 0;
layout(constant_id = 21) const uint M0 = 1;
layout(constant_id = 22) const uint M1 = 1;
layout(constant_id = 23) const uint M2 = 1;
layout(constant_id = 24) const uint M3 = 1;
layout(constant_id = 25) const uint M4 = 1;
layout(constant_id = 26) const uint M5 = 1;
layout(constant_id = 27) const uint M6 = 1;
layout(constant_id = 28) const uint M7 = 1;
layout(constant_id = 29) const uint ACT = VKML_ACT_NONE;
layout(constant_id = 30) const float ACT_ALPHA = 0.0;
layout(constant_id = 31) const float ACT_BETA = 0.0;

// dst[i] = src[off], through the activation if there is one. (A macro: without the 16-bit
// arithmetic extension f16 values cannot pass through a function.)
#if VKML_I32
#define MOVE(i, off)                                                                                    \
    if (ACT != VKML_ACT_NONE)                                                                           \
        dst.data[i] = floatBitsToInt(vkml_activate(ACT, intBitsToFloat(src.data[off]), ACT_ALPHA, ACT_BETA)); \
    else                                                                                                \
        dst.data[i] = src.data[off]
#elif VKML_FP16
#define MOVE(i, off)                                                                                    \
    if (ACT != VKML_ACT_NONE)                                                                           \
        dst.data[i] = stype(vkml_activate(ACT, float(src.data[off]), ACT_ALPHA, ACT_BETA));            \
    else                                                                                                \
        dst.data[i] = src.data[off]
#else
#define MOVE(i, off) dst.data[i] = src.data[off]
#endif

// Dimension k's term of the source offset; `rem` loses that dimension.
int term(inout uint rem, uint d, int stride, uint mod) {
    const uint c = rem % d;
    rem /= d;
    return int(c % mod) * stride;
}

void main() {
    uint i = vkml_linear_id();
    if (SPEC != 0) {
        if (i >= S_COUNT) return;
        uint rem = i;
        int off = S_BASE;
        // Unrolled by the specialization: every divisor is a constant.
        if (S_RANK > 0) off += term(rem, D0, T0, M0);
        if (S_RANK > 1) off += term(rem, D1, T1, M1);
        if (S_RANK > 2) off += term(rem, D2, T2, M2);
        if (S_RANK > 3) off += term(rem, D3, T3, M3);
        if (S_RANK > 4) off += term(rem, D4, T4, M4);
        if (S_RANK > 5) off += term(rem, D5, T5, M5);
        if (S_RANK > 6) off += term(rem, D6, T6, M6);
        if (S_RANK > 7) off += term(rem, D7, T7, M7);
        MOVE(i, off);
        return;
    }
    if (i >= p.count) return;
    uint rem = i;
    int off = p.base;
    for (uint k = 0; k < p.rank; ++k) off += term(rem, p.dims[k], p.strides[k], p.mods[k]);
    MOVE(i, off);
}
