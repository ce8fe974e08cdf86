#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Re-packs convolution weights [M][C][TAPS] (TAPS = KH * KW) into the tap-major [M][TAPS][C] the
// tensor-core implicit GEMM multiplies when it walks K tap by tap (conv/igemm.comp, TAP_MAJOR):
// then every 8 consecutive K of a weight row are one 16-byte load. One invocation per element.
VKML_LOCAL_SIZE;

layout(constant_id = 0) const uint M = 1;
layout(constant_id = 1) const uint C = 1;
layout(constant_id = 2) const uint TAPS = 1;

layout(std430, set = 0, binding = 0) readonly buffer W { sfloat data[]; } w;
layout(std430, set = 0, binding = 1) writeonly buffer P { sfloat data[]; } packed;

void main() {
    const uint o = vkml_linear_id();
    if (o >= M * C * TAPS) return;
    const uint c = o % C, tap = (o / C) % TAPS, m = o / (C * TAPS);
    packed.data[o] = w.data[(m * C + c) * TAPS + tap];
}
