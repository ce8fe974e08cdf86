#version 450
#extension GL_GOOGLE_include_directive : require
#if VKML_EW_SRC_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#if VKML_EW_SRC_U8
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "common.glsl"
// ONNX Cast from the source dtype (VKML_EW_SRC_*) to the variant's storage type, or to i64 words
// (VKML_EW_DST_I64). 64-bit integers are read and written as (low, high) pairs of 32-bit words, so
// no shaderInt64 is needed. Integer sources are carried as a 64-bit (lo, hi) pair so i32 <-> i64
// stays exact; float sources as a float.
//   float -> integer: truncation toward zero, saturated to the destination's range, NaN -> 0
//                     (ONNX leaves out-of-range results undefined).
//   integer -> narrower integer: wraps (two's complement), as C and numpy.
//   -> bool (BOOL, u8 destination only): nonzero (and NaN) -> 1.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const bool BOOL = false;
// Float to float (f32 / f16 both ways) with a whole number of 4-vectors: 4 elements an invocation
// (the host passes n / 4 invocations); 1: one.
layout(constant_id = 1) const uint VEC = 1;

#if VKML_EW_SRC_F32
#define EW_SRC_FLOAT 1
layout(std430, set = 0, binding = 0) readonly buffer Src { float data[]; } src;
layout(std430, set = 0, binding = 0) readonly buffer Src4 { vec4 data[]; } src4;
#elif VKML_EW_SRC_F16
#define EW_SRC_FLOAT 1
layout(std430, set = 0, binding = 0) readonly buffer Src { float16_t data[]; } src;
layout(std430, set = 0, binding = 0) readonly buffer Src4 { f16vec4 data[]; } src4;
#elif VKML_EW_SRC_I32
layout(std430, set = 0, binding = 0) readonly buffer Src { int data[]; } src;
#elif VKML_EW_SRC_I64
layout(std430, set = 0, binding = 0) readonly buffer Src { uint data[]; } src;
#elif VKML_EW_SRC_U8
layout(std430, set = 0, binding = 0) readonly buffer Src { uint8_t data[]; } src;
#endif

#if VKML_EW_DST_I64
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uint data[]; } dst;
#else
layout(std430, set = 0, binding = 1) writeonly buffer Dst { stype data[]; } dst;
#endif
#if EW_SRC_FLOAT && !VKML_EW_DST_I64 && !VKML_I32 && !VKML_U8
#define EW_FLOAT_TO_FLOAT 1
layout(std430, set = 0, binding = 1) writeonly buffer Dst4 { stype4 data[]; } dst4;
#endif
layout(push_constant) uniform Params { uint n; } p;

// Truncates `v` toward zero into a 64-bit integer (lo, hi), saturated, NaN -> 0.
uvec2 float_to_i64(float v) {
    if (isnan(v)) return uvec2(0u);
    if (v >= 9223372036854775808.0) return uvec2(0xffffffffu, 0x7fffffffu);
    if (v <= -9223372036854775808.0) return uvec2(0u, 0x80000000u);
    // Split the magnitude (exact: both parts are integers a float holds), then negate in two's
    // complement; splitting a negative value directly would need 2^32 - k, which fp32 cannot hold.
    float m = trunc(abs(v));
    float h = floor(m * (1.0 / 4294967296.0));
    uint hi = uint(h);
    uint lo = uint(m - h * 4294967296.0);
    if (v < 0.0) {
        lo = ~lo + 1u;
        hi = ~hi + uint(lo == 0u);
    }
    return uvec2(lo, hi);
}

float i64_to_float(uvec2 w) {
    // Values that fit 32 bits convert with one rounding; others round twice (at most 1 ulp off).
    if (int(w.y) == (int(w.x) >> 31)) return float(int(w.x));
    return float(int(w.y)) * 4294967296.0 + float(w.x);
}

void main() {
    uint i = vkml_linear_id();
#if EW_FLOAT_TO_FLOAT
    if (VEC == 4) {
        if (i * 4 >= p.n) return;
        dst4.data[i] = stype4(vec4(src4.data[i]));
        return;
    }
#endif
    if (i >= p.n) return;
#if EW_SRC_FLOAT
    float v = float(src.data[i]);
#if VKML_EW_DST_I64
    uvec2 w = float_to_i64(v);
    dst.data[2 * i] = w.x;
    dst.data[2 * i + 1] = w.y;
#elif VKML_I32
    int r = 0;
    if (isnan(v)) r = 0;
    else if (v >= 2147483648.0) r = 0x7fffffff;
    else if (v <= -2147483648.0) r = int(0x80000000u);
    else r = int(v);
    dst.data[i] = r;
#elif VKML_U8
    uint r = 0u;
    if (BOOL) r = uint(v != 0.0 || isnan(v));
    else if (!isnan(v)) r = uint(clamp(trunc(v), 0.0, 255.0));
    dst.data[i] = uint8_t(r);
#else
    dst.data[i] = stype(v);
#endif
#else // integer source, as a 64-bit (lo, hi) pair
#if VKML_EW_SRC_I64
    uvec2 w = uvec2(src.data[2 * i], src.data[2 * i + 1]);
#elif VKML_EW_SRC_I32
    int s = src.data[i];
    uvec2 w = uvec2(uint(s), uint(s >> 31));
#else
    uvec2 w = uvec2(uint(src.data[i]), 0u);
#endif
#if VKML_EW_DST_I64
    dst.data[2 * i] = w.x;
    dst.data[2 * i + 1] = w.y;
#elif VKML_I32
    dst.data[i] = int(w.x);
#elif VKML_U8
    dst.data[i] = uint8_t(BOOL ? uint((w.x | w.y) != 0u) : (w.x & 255u));
#else
    dst.data[i] = stype(i64_to_float(w));
#endif
#endif
}
