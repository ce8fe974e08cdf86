#version 450
#extension GL_GOOGLE_include_directive : require
#if VKML_Q_U8
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "common.glsl"
// QuantizeLinear (VKML_Q_DEQUANTIZE 0) and DequantizeLinear (1), ml/ops/elementwise_quantize.cpp.
// The variant is the float side's storage; the quantized side is uint8 (VKML_Q_U8) or int8 held in
// i32. Element i uses scale and zero point (i / inner) % channels (one of each: channels 1).
VKML_LOCAL_SIZE;
#if VKML_Q_U8
#define QTYPE uint8_t
#else
#define QTYPE int
#endif
#if VKML_Q_DEQUANTIZE
layout(std430, set = 0, binding = 0) readonly buffer X { QTYPE data[]; } x;
#else
layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
#endif
layout(std430, set = 0, binding = 1) readonly buffer Scale { float data[]; } scale;
layout(std430, set = 0, binding = 2) readonly buffer Zero { int data[]; } zero;
#if VKML_Q_DEQUANTIZE
layout(std430, set = 0, binding = 3) writeonly buffer Y { stype data[]; } y;
#else
layout(std430, set = 0, binding = 3) writeonly buffer Y { QTYPE data[]; } y;
#endif
layout(push_constant) uniform Params { int count; int inner; int channels; int qmin; int qmax; int has_zero; } p;

void main() {
    uint i = vkml_linear_id();
    if (i >= uint(p.count)) return;
    uint c = (i / uint(p.inner)) % uint(p.channels);
    float s = scale.data[c];
    int z = p.has_zero != 0 ? zero.data[c] : 0;
#if VKML_Q_DEQUANTIZE
    y.data[i] = stype(float(int(x.data[i]) - z) * s);
#else
    float q = roundEven(float(x.data[i]) / s) + float(z);
    q = clamp(q, float(p.qmin), float(p.qmax)); // NaN: clamp gives one of the bounds or NaN -> int 0
    y.data[i] = QTYPE(int(q));
#endif
}
