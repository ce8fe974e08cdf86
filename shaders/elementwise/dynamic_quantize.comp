#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
// DynamicQuantizeLinear (ml/ops/elementwise_quantize.cpp). PASS 0 (one workgroup): the range
// [min(0, min x), max(0, max x)], scale = range / 255 and zero point = round_half_even(clamp(
// -min / scale, 0, 255)). PASS 1: y = clamp(round_half_even(x / scale) + zero point, 0, 255).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 1) writeonly buffer Y { uint8_t data[]; } y;
layout(std430, set = 0, binding = 2) buffer Scale { float data[]; } scale;
layout(std430, set = 0, binding = 3) buffer Zero { uint8_t data[]; } zero;
layout(push_constant) uniform Params { uint count; } p;

shared float lo[gl_WorkGroupSize.x];
shared float hi[gl_WorkGroupSize.x];

void main() {
    if (PASS == 0u) {
        const uint t = gl_LocalInvocationID.x;
        float a = 0.0, b = 0.0; // the range always holds 0
        for (uint i = t; i < p.count; i += gl_WorkGroupSize.x) {
            float v = float(x.data[i]);
            a = min(a, v);
            b = max(b, v);
        }
        lo[t] = a;
        hi[t] = b;
        barrier();
        for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
            if (t < s) {
                lo[t] = min(lo[t], lo[t + s]);
                hi[t] = max(hi[t], hi[t + s]);
            }
            barrier();
        }
        if (t == 0u) {
            float sc = (hi[0] - lo[0]) / 255.0;
            scale.data[0] = sc;
            zero.data[0] = uint8_t(sc > 0.0 ? uint(roundEven(clamp(-lo[0] / sc, 0.0, 255.0))) : 0u);
        }
        return;
    }
    uint i = vkml_linear_id();
    if (i >= p.count) return;
    float sc = scale.data[0];
    float q = sc > 0.0 ? roundEven(float(x.data[i]) / sc) + float(uint(zero.data[0])) : 0.0;
    y.data[i] = uint8_t(uint(clamp(q, 0.0, 255.0)));
}
