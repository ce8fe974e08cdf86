#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// MaxPool / AveragePool over [D, H, W] (ml/ops/reduce_pool3d.cpp): output (n, c, od, oh, ow) takes
// the window starting at o * stride - pad_begin with dilated taps, fp32. Average divides by the
// taps inside the input, or (COUNT_PAD) inside the input and its pads. A window wholly in padding
// (possible with ceil_mode) gives -inf for max, as ONNX Runtime, and 0 for average.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint IS_MAX = 1;
layout(constant_id = 1) const uint COUNT_PAD = 0;
layout(constant_id = 2) const uint ID = 1;
layout(constant_id = 3) const uint OD = 1;
layout(constant_id = 4) const uint KD = 1;
layout(constant_id = 5) const uint SD = 1;
layout(constant_id = 6) const uint DD = 1;
layout(constant_id = 7) const uint PD0 = 0;
layout(constant_id = 8) const uint PD1 = 0;
layout(constant_id = 9) const uint IH = 1;
layout(constant_id = 10) const uint OH = 1;
layout(constant_id = 11) const uint KH = 1;
layout(constant_id = 12) const uint SH = 1;
layout(constant_id = 13) const uint DH = 1;
layout(constant_id = 14) const uint PH0 = 0;
layout(constant_id = 15) const uint PH1 = 0;
layout(constant_id = 16) const uint IW = 1;
layout(constant_id = 17) const uint OW = 1;
layout(constant_id = 18) const uint KW = 1;
layout(constant_id = 19) const uint SW = 1;
layout(constant_id = 20) const uint DW = 1;
layout(constant_id = 21) const uint PW0 = 0;
layout(constant_id = 22) const uint PW1 = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 1) writeonly buffer Y { stype data[]; } y;
layout(push_constant) uniform Params { uint count; } p;

void main() {
    uint o = vkml_linear_id();
    if (o >= p.count) return;
    uint ow = o % OW, oh = (o / OW) % OH, od = (o / (OW * OH)) % OD, nc = o / (OW * OH * OD);
    int d0 = int(od * SD) - int(PD0), h0 = int(oh * SH) - int(PH0), w0 = int(ow * SW) - int(PW0);
    const uint base = nc * ID * IH * IW;
    float acc = IS_MAX != 0u ? uintBitsToFloat(0xff800000u) : 0.0;
    uint inside = 0u, padded = 0u;
    for (uint kd = 0u; kd < KD; ++kd) {
        int d = d0 + int(kd * DD);
        for (uint kh = 0u; kh < KH; ++kh) {
            int h = h0 + int(kh * DH);
            for (uint kw = 0u; kw < KW; ++kw) {
                int w = w0 + int(kw * DW);
                bool in_pads = d < int(ID + PD1) && h < int(IH + PH1) && w < int(IW + PW1);
                if (in_pads) ++padded;
                if (d < 0 || h < 0 || w < 0 || d >= int(ID) || h >= int(IH) || w >= int(IW)) continue;
                float v = float(x.data[base + (uint(d) * IH + uint(h)) * IW + uint(w)]);
                acc = IS_MAX != 0u ? max(acc, v) : acc + v;
                ++inside;
            }
        }
    }
    if (IS_MAX == 0u) {
        uint n = COUNT_PAD != 0u ? padded : inside;
        acc = n > 0u ? acc / float(n) : 0.0;
    }
    y.data[o] = stype(acc);
}
