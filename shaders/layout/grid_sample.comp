#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// GridSample (2-D): output (n, c, h, w) samples X[n, c] at grid[n, h, w] = (x, y) in [-1, 1],
// following ONNX's reference: the coordinate is unnormalized (ALIGN: -1 and 1 are the corner
// pixels' centres, else their outer edges), reflected into the border range for reflection
// padding, then MODE 0 bilinear, 1 nearest (halves to even), 2 bicubic (A = -0.75) reads pixels
// that PADDING 0 zeros (outside: 0), 1 border (clamped), 2 reflection (reflected) provides. fp32.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint PADDING = 0;
layout(constant_id = 2) const uint ALIGN = 0;
layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) readonly buffer Grid { sfloat data[]; } grid;
layout(std430, set = 0, binding = 2) writeonly buffer Dst { sfloat data[]; } dst;
layout(push_constant) uniform Params {
    uint count; // output elements
    uint C, H, W, Ho, Wo;
} p;

float reflect_into(float x, float lo, float hi) {
    float range = hi - lo;
    if (range <= 0.0) return lo;
    if (x < lo) {
        float dx = lo - x;
        float n = floor(dx / range);
        float r = dx - n * range;
        return mod(n, 2.0) == 0.0 ? lo + r : hi - r;
    }
    if (x > hi) {
        float dx = x - hi;
        float n = floor(dx / range);
        float r = dx - n * range;
        return mod(n, 2.0) == 0.0 ? hi - r : lo + r;
    }
    return x;
}

uint plane;

float pixel(int y, int x) {
    int H = int(p.H), W = int(p.W);
    if (PADDING == 0) {
        if (x < 0 || x >= W || y < 0 || y >= H) return 0.0;
    } else if (PADDING == 1) {
        x = clamp(x, 0, W - 1);
        y = clamp(y, 0, H - 1);
    } else {
        float lo_x = ALIGN != 0 ? 0.0 : -0.5, hi_x = ALIGN != 0 ? float(W - 1) : float(W) - 0.5;
        float lo_y = ALIGN != 0 ? 0.0 : -0.5, hi_y = ALIGN != 0 ? float(H - 1) : float(H) - 0.5;
        x = clamp(int(reflect_into(float(x), lo_x, hi_x)), 0, W - 1);
        y = clamp(int(reflect_into(float(y), lo_y, hi_y)), 0, H - 1);
    }
    return float(src.data[plane + uint(y) * p.W + uint(x)]);
}

void cubic_weights(float t, out float w[4]) {
    const float A = -0.75;
    float t1 = t + 1.0, t2 = 1.0 - t, t3 = 2.0 - t;
    w[0] = ((A * t1 - 5.0 * A) * t1 + 8.0 * A) * t1 - 4.0 * A;
    w[1] = ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0;
    w[2] = ((A + 2.0) * t2 - (A + 3.0)) * t2 * t2 + 1.0;
    w[3] = ((A * t3 - 5.0 * A) * t3 + 8.0 * A) * t3 - 4.0 * A;
}

void main() {
    uint e = vkml_linear_id();
    if (e >= p.count) return;
    uint w = e % p.Wo, h = (e / p.Wo) % p.Ho, c = (e / (p.Wo * p.Ho)) % p.C, n = e / (p.Wo * p.Ho * p.C);
    plane = (n * p.C + c) * p.H * p.W;
    uint g = ((n * p.Ho + h) * p.Wo + w) * 2;
    float gx = float(grid.data[g]), gy = float(grid.data[g + 1]);
    float x = ALIGN != 0 ? (gx + 1.0) * 0.5 * float(p.W - 1) : ((gx + 1.0) * float(p.W) - 1.0) * 0.5;
    float y = ALIGN != 0 ? (gy + 1.0) * 0.5 * float(p.H - 1) : ((gy + 1.0) * float(p.H) - 1.0) * 0.5;
    if (PADDING == 2) {
        x = reflect_into(x, ALIGN != 0 ? 0.0 : -0.5, ALIGN != 0 ? float(p.W - 1) : float(p.W) - 0.5);
        y = reflect_into(y, ALIGN != 0 ? 0.0 : -0.5, ALIGN != 0 ? float(p.H - 1) : float(p.H) - 0.5);
    }
    float v;
    if (MODE == 1) {
        v = pixel(int(roundEven(y)), int(roundEven(x)));
    } else if (MODE == 0) {
        float x0 = floor(x), y0 = floor(y);
        float fx = x - x0, fy = y - y0;
        int ix = int(x0), iy = int(y0);
        v = (1.0 - fy) * ((1.0 - fx) * pixel(iy, ix) + fx * pixel(iy, ix + 1)) +
            fy * ((1.0 - fx) * pixel(iy + 1, ix) + fx * pixel(iy + 1, ix + 1));
    } else {
        float x0 = floor(x), y0 = floor(y);
        float wx[4], wy[4];
        cubic_weights(x - x0, wx);
        cubic_weights(y - y0, wy);
        int ix = int(x0) - 1, iy = int(y0) - 1;
        v = 0.0;
        for (int i = 0; i < 4; ++i) {
            float row = 0.0;
            for (int j = 0; j < 4; ++j) row += wx[j] * pixel(iy + i, ix + j);
            v += wy[i] * row;
        }
    }
    dst.data[e] = sfloat(v);
}
