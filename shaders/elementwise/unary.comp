#version 450
#extension GL_GOOGLE_include_directive : require
#if VKML_EW_OUT_BOOL
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "common.glsl"
#include "elementwise/ops.glsl"
// y[i] = act(f(x[i])) for i < n: unary math and activations with ONNX semantics. The op (OP) and the
// fused activation (ACT) are specialization constants, so each pipeline compiles to one function.
// f32 and f16 compute in fp32; f16a computes the ops that are exact or one bounded division in
// half precision in float16 (apply_half: the kinds ml/ops/elementwise_unary.cpp selects f16a for)
// and the fused activation in fp32; i32 has Abs, Neg, Sign and Relu; u8 Not.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint ACT = 0;
// 4: each invocation takes four consecutive elements with one vector load and store (float
// variants; the C++ side picks it when every binding starts on 16 bytes).
layout(constant_id = 2) const uint VEC = 1;

layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
#if VKML_EW_OUT_BOOL
// elementwise_classify: IsNaN, IsInf of float inputs, bool (u8) results, one element per invocation.
layout(std430, set = 0, binding = 1) writeonly buffer Y { uint8_t data[]; } y;
#else
layout(std430, set = 0, binding = 1) writeonly buffer Y { stype data[]; } y;
#endif
#if !(VKML_I32 || VKML_U8 || VKML_EW_OUT_BOOL)
layout(std430, set = 0, binding = 0) readonly buffer X4 { stype4 data[]; } x4;
layout(std430, set = 0, binding = 1) writeonly buffer Y4 { stype4 data[]; } y4;
#endif
// alpha, beta, gamma: the op's ONNX attributes; act_alpha, act_beta: the fused activation's.
layout(push_constant) uniform Params { uint n; float alpha; float beta; float gamma; float act_alpha; float act_beta; } p;

#if VKML_EW_OUT_BOOL
uint apply(float v) {
    switch (OP) {
    case EW_ISNAN: return uint(isnan(v));
    case EW_ISINF: return uint(isinf(v) && (v > 0.0 ? p.beta != 0.0 : p.alpha != 0.0));
    default: return 0u;
    }
}
#elif VKML_I32
int apply(int v) {
    switch (OP) {
    case EW_ABS: return abs(v);
    case EW_NEG: return -v;
    case EW_SIGN: return sign(v);
    case EW_RELU: return max(v, 0);
    default: return v;
    }
}
#elif VKML_U8
uint apply(uint v) { return OP == EW_NOT ? uint(v == 0u) : v; }
#else
#include "activation.glsl"

// tanh from one exp of a non-positive argument: no overflow for any x.
float ew_tanh(float v) {
    float t = exp(-2.0 * abs(v));
    return sign(v) * (1.0 - t) / (1.0 + t);
}
// log(1 + exp(v)) without overflow for large v.
float ew_softplus(float v) { return max(v, 0.0) + log(1.0 + exp(-abs(v))); }

float apply(float v) {
    switch (OP) {
    case EW_ABS: return abs(v);
    case EW_NEG: return -v;
    case EW_EXP: return exp(v);
    case EW_LOG: return log(v);
    case EW_SQRT: return sqrt(v);
    case EW_RECIPROCAL: return 1.0 / v;
    case EW_FLOOR: return floor(v);
    case EW_CEIL: return ceil(v);
    case EW_ROUND: return roundEven(v); // ONNX Round: halves to even
    case EW_SIN: return sin(v);
    case EW_COS: return cos(v);
    case EW_ERF: return vkml_erf(v);
    case EW_SIGN: return sign(v);
    case EW_RELU: return vkml_activate(VKML_ACT_RELU, v, 0.0, 0.0);
    case EW_LEAKY_RELU: return vkml_activate(VKML_ACT_LEAKY_RELU, v, p.alpha, 0.0);
    case EW_ELU: return vkml_activate(VKML_ACT_ELU, v, p.alpha, 0.0);
    case EW_SELU: return p.gamma * (v > 0.0 ? v : p.alpha * (exp(v) - 1.0));
    case EW_CELU: return max(v, 0.0) + min(0.0, p.alpha * (exp(v / p.alpha) - 1.0));
    case EW_SIGMOID: return vkml_activate(VKML_ACT_SIGMOID, v, 0.0, 0.0);
    case EW_HARD_SIGMOID: return vkml_activate(VKML_ACT_HARD_SIGMOID, v, p.alpha, p.beta);
    case EW_HARD_SWISH: return vkml_activate(VKML_ACT_HARD_SWISH, v, 0.0, 0.0);
    case EW_TANH: return ew_tanh(v);
    case EW_SOFTPLUS: return ew_softplus(v);
    case EW_SOFTSIGN: return v / (1.0 + abs(v));
    case EW_MISH: return v * ew_tanh(ew_softplus(v));
    case EW_GELU: return vkml_activate(VKML_ACT_GELU, v, 0.0, 0.0);
    case EW_GELU_TANH: {
        const float k = 0.7978845608028654; // sqrt(2 / pi)
        return 0.5 * v * (1.0 + ew_tanh(k * (v + 0.044715 * v * v * v)));
    }
    case EW_SWISH: return v / (1.0 + exp(-p.alpha * v));
    case EW_TAN: return tan(v);
    // Through atan, which drivers compute accurately (lavapipe's asin/acos are off by 4e-4):
    // asin(x) = 2 atan(x / (1 + sqrt(1 - x^2))), acos(x) = 2 atan(sqrt((1 - x) / (1 + x))).
    case EW_ASIN: return abs(v) > 1.0 ? (0.0 / 0.0) : 2.0 * atan(v / (1.0 + sqrt(1.0 - v * v)));
    case EW_ACOS: return abs(v) > 1.0 ? (0.0 / 0.0) : 2.0 * atan(sqrt((1.0 - v) / (1.0 + v)));
    case EW_ATAN: return atan(v);
    case EW_SINH: return sinh(v);
    case EW_COSH: return cosh(v);
    case EW_ASINH: return asinh(v);
    case EW_ACOSH: return acosh(v);
    case EW_ATANH: return atanh(v);
    case EW_THRESHOLDED_RELU: return v > p.alpha ? v : 0.0;
    case EW_SHRINK: return v < -p.alpha ? v + p.beta : (v > p.alpha ? v - p.beta : 0.0);
    default: return v;
    }
}

#if VKML_FP16_ARITH
// Half-precision forms: exact (Abs, Neg, Sign, Relu, Floor, Ceil, Round) or one division, which
// half-precision OpFDiv bounds (2.5 ULP) only for divisors in [2^-14, 2^14] (or 0): others go
// through fp32, which is within one f16 ULP for every divisor. Kinds the C++ side never runs in
// f16a widen to the fp32 apply(), so every OP still compiles to something correct.
afloat apply_half(afloat v) {
    switch (OP) {
    case EW_ABS: return abs(v);
    case EW_NEG: return -v;
    case EW_SIGN: return sign(v);
    case EW_RELU: return max(v, afloat(0));
    case EW_FLOOR: return floor(v);
    case EW_CEIL: return ceil(v);
    case EW_ROUND: return roundEven(v);
    case EW_RECIPROCAL: {
        afloat a = abs(v);
        bool bounded = a == afloat(0) || (a >= afloat(0.00006103515625) && a <= afloat(16384));
        return bounded ? afloat(1) / v : afloat(1.0 / float(v));
    }
    default: return afloat(apply(float(v)));
    }
}
#endif
#endif

#if !(VKML_I32 || VKML_U8 || VKML_EW_OUT_BOOL)
float value(ctype xv) {
#if VKML_FP16_ARITH
    // The op's result as the f16 it would be stored as; the fused activation runs on it in fp32,
    // as an unfused activation on the stored tensor would.
    float v = float(apply_half(xv));
#else
    float v = apply(float(xv));
#endif
    if (ACT != VKML_ACT_NONE) v = vkml_activate(ACT, v, p.act_alpha, p.act_beta);
    return v;
}
#endif

void main() {
#if VKML_EW_OUT_BOOL
    uint i = vkml_linear_id();
    if (i >= p.n) return;
    y.data[i] = uint8_t(apply(float(x.data[i])));
#elif VKML_I32 || VKML_U8
    uint i = vkml_linear_id();
    if (i >= p.n) return;
    y.data[i] = stype(apply(ctype(x.data[i])));
#else
    if (VEC == 4) {
        const uint q = vkml_linear_id(), i0 = q * 4;
        if (i0 >= p.n) return;
        if (i0 + 4 <= p.n) {
            const ctype4 xv = ctype4(x4.data[q]);
            y4.data[q] = stype4(vec4(value(xv.x), value(xv.y), value(xv.z), value(xv.w)));
        } else {
            for (uint i = i0; i < p.n; ++i) y.data[i] = stype(value(ctype(x.data[i])));
        }
        return;
    }
    uint i = vkml_linear_id();
    if (i >= p.n) return;
    y.data[i] = stype(value(ctype(x.data[i])));
#endif
}
