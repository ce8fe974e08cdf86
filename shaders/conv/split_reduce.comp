#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "activation.glsl"
#include "conv/conv_spec.glsl"
// The second pass of a split-K implicit GEMM (conv/igemm.comp with SPLIT > 1): adds the SPLIT fp32
// partial sums [z][m][j] of each output and applies the fused tail (bias, residual, activation).
// Columns j run over (n, oh, ow), so consecutive invocations read consecutive partials.
VKML_LOCAL_SIZE;
layout(constant_id = 22) const uint SPLIT = 1;
layout(std430, set = 0, binding = 0) readonly buffer Part { float data[]; } part;

void main() {
    const uint cols = N * OH * OW;
    const uint o = vkml_linear_id();
    if (o >= M * cols) return;
    const uint m = o / cols, j = o % cols;
    float acc = 0.0;
    for (uint z = 0; z < SPLIT; ++z) acc += part.data[(z * M + m) * cols + j];
    const uint n = j / (OH * OW);
    conv_store((n * M + m) * OH * OW + j % (OH * OW), m, acc);
}
