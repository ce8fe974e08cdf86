#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Re-packs convolution weights [M][C][TAPS] (TAPS = KH * KW) into the tap-major [M][TAPS][C] the
// tensor-core implicit GEMM multiplies when it walks K tap by tap (conv/igemm.comp, TAP_MAJOR):
// then every 8 consecutive K of a weight row are one 16-byte load. One invocation per element.
// With FOLD_KW = KW (the staged-window kernel's FOLD variants, conv/halo.comp) the kernel's columns
// join the channels instead: [M][KH][CP] with element c * KW + kw of row kh, zero up to CP.
// With FOLD_M = KW they join the output rows: [M * KW][KH][C].
VKML_LOCAL_SIZE;

layout(constant_id = 0) const uint M = 1;
layout(constant_id = 1) const uint C = 1;
layout(constant_id = 2) const uint TAPS = 1;
layout(constant_id = 3) const uint FOLD_KW = 0;
layout(constant_id = 4) const uint CP = 1; // FOLD_KW: the padded row length
// FOLD_M = KW: [M * KW][KH][C], row m * KW + kw holding channel m's kernel column kw (the
// staged-window kernel's MFOLD variants).
layout(constant_id = 5) const uint FOLD_M = 0;

layout(std430, set = 0, binding = 0) readonly buffer W { sfloat data[]; } w;
layout(std430, set = 0, binding = 1) writeonly buffer P { sfloat data[]; } packed;

void main() {
    const uint o = vkml_linear_id();
    if (FOLD_KW != 0) {
        const uint KH = TAPS / FOLD_KW;
        if (o >= M * KH * CP) return;
        const uint cv = o % CP, kh = (o / CP) % KH, m = o / (CP * KH);
        const uint c = cv / FOLD_KW, kw = cv % FOLD_KW;
        packed.data[o] = cv < C * FOLD_KW ? w.data[((m * C + c) * KH + kh) * FOLD_KW + kw] : sfloat(0.0);
        return;
    }
    if (FOLD_M != 0) {
        const uint KH = TAPS / FOLD_M;
        if (o >= M * FOLD_M * KH * C) return;
        const uint c = o % C, kh = (o / C) % KH, r = o / (C * KH);
        packed.data[o] = w.data[(((r / FOLD_M) * C + c) * KH + kh) * FOLD_M + r % FOLD_M];
        return;
    }
    if (o >= M * C * TAPS) return;
    const uint c = o % C, tap = (o / C) % TAPS, m = o / (C * TAPS);
    packed.data[o] = w.data[(m * C + c) * TAPS + tap];
}
