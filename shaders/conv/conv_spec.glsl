// Specialization constants and bindings shared by the direct, implicit-GEMM and transposed
// convolution kernels. 2-D NCHW; 1-D convolutions arrive as H = KH = 1. Pads are the
// top/left ones (the bottom/right ones only shape the output, which the C++ side computed).
#ifndef VKML_CONV_SPEC_GLSL
#define VKML_CONV_SPEC_GLSL

layout(constant_id = 0) const uint N = 1;
layout(constant_id = 1) const uint C = 1;   // input channels
layout(constant_id = 2) const uint H = 1;
layout(constant_id = 3) const uint W = 1;
layout(constant_id = 4) const uint M = 1;   // output channels
layout(constant_id = 5) const uint OH = 1;
layout(constant_id = 6) const uint OW = 1;
layout(constant_id = 7) const uint KH = 1;
layout(constant_id = 8) const uint KW = 1;
layout(constant_id = 9) const uint SH = 1;  // strides
layout(constant_id = 10) const uint SW = 1;
layout(constant_id = 11) const uint DH = 1; // dilations
layout(constant_id = 12) const uint DW = 1;
layout(constant_id = 13) const uint PT = 0; // pads at the top and left
layout(constant_id = 14) const uint PL = 0;
layout(constant_id = 15) const uint G = 1;  // groups
layout(constant_id = 16) const uint HAS_BIAS = 0;
layout(constant_id = 17) const uint HAS_RES = 0;
layout(constant_id = 18) const uint ACT = 0; // ActivationKind
// Padding: 0 zeros, 1 reflect (ONNX Pad's "reflect": -1 reads 1), 2 edge (-1 reads 0). Ids 19-23
// belong to the kernels.
layout(constant_id = 24) const uint PAD_MODE = 0;

// The input coordinate that position i of an axis of n elements reads under PAD_MODE; with zero
// padding i itself (the caller reads 0 out of range). Reflect needs pads below n (checked on the
// C++ side); positions further out (a tile's window past the last output) stay out of range.
int conv_src(int i, uint n) {
    if (PAD_MODE == 1) {
        i = i < 0 ? -i : i;
        return i >= int(n) ? 2 * int(n) - 2 - i : i;
    }
    if (PAD_MODE == 2) return clamp(i, 0, int(n) - 1);
    return i;
}

const uint CG = C / G; // input channels per group
const uint MG = M / G; // output channels per group

layout(std430, set = 0, binding = 0) readonly buffer X { sfloat data[]; } x;
layout(std430, set = 0, binding = 1) readonly buffer Wt { sfloat data[]; } w;
layout(std430, set = 0, binding = 2) readonly buffer Bias { sfloat data[]; } bias;
layout(std430, set = 0, binding = 3) readonly buffer Res { sfloat data[]; } res;
layout(std430, set = 0, binding = 4) writeonly buffer Y { sfloat data[]; } y;
layout(push_constant) uniform Params {
    float act_alpha;
    float act_beta;
} p;

// The fused tail: y = act(acc + bias[m] + residual[o]). Bias and residual are added before the
// activation, the order a "Conv -> Add -> Relu" residual block needs.
void conv_store(uint o, uint m, float acc) {
    if (HAS_BIAS != 0) acc += float(bias.data[m]);
    if (HAS_RES != 0) acc += float(res.data[o]);
    y.data[o] = sfloat(vkml_activate(ACT, acc, p.act_alpha, p.act_beta));
}

#endif
