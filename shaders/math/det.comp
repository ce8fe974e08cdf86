#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Det (ml/ops/math_det.cpp): invocation m copies matrix m ([M, M], row-major) to its part of the
// fp32 scratch and eliminates below the diagonal column by column, swapping in the row with the
// largest pivot (partial pivoting; each swap flips the sign). The determinant is the signed product
// of the pivots; a zero pivot column gives 0.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 1) writeonly buffer Y { stype data[]; } y;
layout(std430, set = 0, binding = 2) buffer S { float data[]; } s;
layout(push_constant) uniform Params { uint matrices; uint m; } p;

void main() {
    uint id = vkml_linear_id();
    if (id >= p.matrices) return;
    const uint n = p.m, base = id * n * n;
    for (uint e = 0u; e < n * n; ++e) s.data[base + e] = float(x.data[base + e]);
    float det = 1.0;
    for (uint c = 0u; c < n; ++c) {
        uint piv = c;
        float best = abs(s.data[base + c * n + c]);
        for (uint r = c + 1u; r < n; ++r) {
            float v = abs(s.data[base + r * n + c]);
            if (v > best) {
                best = v;
                piv = r;
            }
        }
        if (best == 0.0) {
            det = 0.0;
            break;
        }
        if (piv != c) {
            det = -det;
            for (uint k = c; k < n; ++k) {
                float t = s.data[base + c * n + k];
                s.data[base + c * n + k] = s.data[base + piv * n + k];
                s.data[base + piv * n + k] = t;
            }
        }
        float d = s.data[base + c * n + c];
        det *= d;
        for (uint r = c + 1u; r < n; ++r) {
            float f = s.data[base + r * n + c] / d;
            for (uint k = c + 1u; k < n; ++k) s.data[base + r * n + k] -= f * s.data[base + c * n + k];
        }
    }
    y.data[id] = stype(det);
}
