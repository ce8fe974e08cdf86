#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// 3-D Conv / ConvTranspose (ml/ops/conv3d.cpp): one invocation per output (n, m, od, oh, ow) sums,
// in fp32, over the input channels of m's group and the kernel taps:
//   Conv:          x[n, c, o * s - pad + k * dil] * w[m, c - group start, k]
//   ConvTranspose: x[n, c, i] * w[c, m - group start, k] for every i with i * s - pad + k * dil = o
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint TRANSPOSE = 0;
layout(constant_id = 1) const uint HAS_BIAS = 0;
layout(constant_id = 2) const uint C = 1;
layout(constant_id = 3) const uint M = 1;
layout(constant_id = 4) const uint G = 1;
layout(constant_id = 5) const uint ID = 1;
layout(constant_id = 6) const uint OD = 1;
layout(constant_id = 7) const uint KD = 1;
layout(constant_id = 8) const uint SD = 1;
layout(constant_id = 9) const uint DD = 1;
layout(constant_id = 10) const uint PD = 0;
layout(constant_id = 11) const uint IH = 1;
layout(constant_id = 12) const uint OH = 1;
layout(constant_id = 13) const uint KH = 1;
layout(constant_id = 14) const uint SH = 1;
layout(constant_id = 15) const uint DH = 1;
layout(constant_id = 16) const uint PH = 0;
layout(constant_id = 17) const uint IW = 1;
layout(constant_id = 18) const uint OW = 1;
layout(constant_id = 19) const uint KW = 1;
layout(constant_id = 20) const uint SW = 1;
layout(constant_id = 21) const uint DW = 1;
layout(constant_id = 22) const uint PW = 0;
layout(constant_id = 23) const uint ACT = 0;      // a fused activation (activation.glsl)
layout(constant_id = 24) const uint RESIDUAL = 0; // adds R before the activation
layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 1) readonly buffer Wt { stype data[]; } wt;
layout(std430, set = 0, binding = 2) readonly buffer B { stype data[]; } bias;
layout(std430, set = 0, binding = 3) readonly buffer R { stype data[]; } res;
layout(std430, set = 0, binding = 4) writeonly buffer Y { stype data[]; } y;
layout(push_constant) uniform Params { uint count; float alpha; float beta; } p;

#include "activation.glsl"

// The input coordinate tap k of output coordinate o reads along one axis, or -1 when none.
int source(uint o, uint k, uint s, uint dil, uint pad, uint len) {
    int v = int(o) + int(pad) - int(k * dil);
    if (TRANSPOSE == 0u) {
        v = int(o * s) - int(pad) + int(k * dil);
        return v >= 0 && v < int(len) ? v : -1;
    }
    if (v < 0 || v % int(s) != 0) return -1;
    v /= int(s);
    return v < int(len) ? v : -1;
}

void main() {
    uint o = vkml_linear_id();
    if (o >= p.count) return;
    uint ow = o % OW, oh = (o / OW) % OH, od = (o / (OW * OH)) % OD;
    uint m = (o / (OW * OH * OD)) % M, n = o / (OW * OH * OD * M);
    const uint cg = C / G, mg = M / G, g = m / mg;
    float acc = HAS_BIAS != 0u ? float(bias.data[m]) : 0.0;
    for (uint kd = 0u; kd < KD; ++kd) {
        int d = source(od, kd, SD, DD, PD, ID);
        if (d < 0) continue;
        for (uint kh = 0u; kh < KH; ++kh) {
            int h = source(oh, kh, SH, DH, PH, IH);
            if (h < 0) continue;
            for (uint kw = 0u; kw < KW; ++kw) {
                int w = source(ow, kw, SW, DW, PW, IW);
                if (w < 0) continue;
                const uint tap = (kd * KH + kh) * KW + kw;
                for (uint ci = 0u; ci < cg; ++ci) {
                    const uint c = g * cg + ci;
                    float xv = float(x.data[(((n * C + c) * ID + uint(d)) * IH + uint(h)) * IW + uint(w)]);
                    uint wi = TRANSPOSE != 0u ? (c * mg + (m - g * mg)) * KD * KH * KW + tap
                                              : (m * cg + ci) * KD * KH * KW + tap;
                    acc += xv * float(wt.data[wi]);
                }
            }
        }
    }
    if (RESIDUAL != 0u) acc += float(res.data[o]);
    if (ACT != VKML_ACT_NONE) acc = vkml_activate(ACT, acc, p.alpha, p.beta);
    y.data[o] = stype(acc);
}
