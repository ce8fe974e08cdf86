#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "layout/resize_coord.glsl"
// Resize, modes linear and cubic, over the last two dimensions: the input is [PLANES, IH, IW],
// the output [PLANES, OH, OW]. Out-of-range taps clamp to the edge, or with EXCLUDE_OUTSIDE get
// weight 0 and the rest renormalized. fp32 weights and accumulation for both storage variants.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint COUNT = 1;
layout(constant_id = 1) const uint CTM = 0;
layout(constant_id = 2) const bool CUBIC = false;
layout(constant_id = 3) const float CUBIC_A = -0.75;
layout(constant_id = 4) const bool EXCLUDE_OUTSIDE = false;
layout(constant_id = 5) const uint IH = 1;
layout(constant_id = 6) const uint IW = 1;
layout(constant_id = 7) const uint OH = 1;
layout(constant_id = 8) const uint OW = 1;
layout(constant_id = 9) const float NUM_H = 1.0;
layout(constant_id = 10) const float DEN_H = 1.0;
layout(constant_id = 11) const float ROI0_H = 0.0;
layout(constant_id = 12) const float ROI1_H = 1.0;
layout(constant_id = 13) const float NUM_W = 1.0;
layout(constant_id = 14) const float DEN_W = 1.0;
layout(constant_id = 15) const float ROI0_W = 0.0;
layout(constant_id = 16) const float ROI1_W = 1.0;
// Consecutive outputs of a row per invocation (OW a multiple of it): the row's taps are worked out
// once for them (4 when the C++ side can, else 1). COUNT counts invocations.
layout(constant_id = 17) const uint PER = 1;

layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { sfloat data[]; } dst;
// A push constant, not a specialization constant: converting a constant to float16 is no
// valid specialization-constant operation.
layout(push_constant) uniform Params { float extrapolation; } p;

// Keys' cubic convolution kernel with parameter A at distance |t|.
float cubic_weight(float t) {
    t = abs(t);
    if (t <= 1.0) return ((CUBIC_A + 2.0) * t - (CUBIC_A + 3.0)) * t * t + 1.0;
    if (t < 2.0) return ((CUBIC_A * t - 5.0 * CUBIC_A) * t + 8.0 * CUBIC_A) * t - 4.0 * CUBIC_A;
    return 0.0;
}

// Taps (first index and up to 4 weights) of one axis around source coordinate c. The first tap
// is floor(c), decided exactly (resize_coord.glsl), so a coordinate on an input sample gets weight
// 1 there whatever the division's rounding; t is clamped because the guess v may sit a few ULP on
// the other side of that integer.
void taps(ResizeCoord c, uint len, out int first, out vec4 w) {
    float v = clamp(resize_value(c), -4.0, float(len) + 4.0);
    int f = resize_greatest_ge(c, v, 0.0);
    float t = clamp(v - float(f), 0.0, 1.0);
    if (CUBIC) {
        first = f - 1;
        w = vec4(cubic_weight(t + 1.0), cubic_weight(t), cubic_weight(1.0 - t), cubic_weight(2.0 - t));
    } else {
        first = f;
        w = vec4(1.0 - t, t, 0.0, 0.0);
    }
    if (EXCLUDE_OUTSIDE) {
        for (int k = 0; k < 4; ++k)
            if (first + k < 0 || first + k >= int(len)) w[k] = 0.0;
        w /= w.x + w.y + w.z + w.w;
    }
}

void main() {
    const uint g = vkml_linear_id();
    if (g >= COUNT) return;
    const uint i0 = g * PER;
    const uint t = i0 / OW;
    const uint oy = t % OH;
    const uint plane = t / OH;
    const ResizeCoord cy = resize_coord(CTM, float(oy), float(IH), float(OH), NUM_H, DEN_H, ROI0_H, ROI1_H);
    const bool row_outside = resize_outside(CTM, cy, float(IH));
    int y0;
    vec4 wy;
    taps(cy, IH, y0, wy);
    const int n = CUBIC ? 4 : 2;
    const uint base = plane * IH * IW;
    for (uint e = 0; e < PER; ++e) {
        const uint i = i0 + e, ox = i % OW;
        const ResizeCoord cx = resize_coord(CTM, float(ox), float(IW), float(OW), NUM_W, DEN_W, ROI0_W, ROI1_W);
        if (row_outside || resize_outside(CTM, cx, float(IW))) {
            dst.data[i] = sfloat(p.extrapolation);
            continue;
        }
        int x0;
        vec4 wx;
        taps(cx, IW, x0, wx);
        float acc = 0.0;
        for (int ky = 0; ky < n; ++ky) {
            const uint y = uint(clamp(y0 + ky, 0, int(IH) - 1));
            float row = 0.0;
            for (int kx = 0; kx < n; ++kx) {
                const uint x = uint(clamp(x0 + kx, 0, int(IW) - 1));
                row += wx[kx] * float(src.data[base + y * IW + x]);
            }
            acc += wy[ky] * row;
        }
        dst.data[i] = sfloat(acc);
    }
}
