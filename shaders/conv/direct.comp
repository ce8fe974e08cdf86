#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "activation.glsl"
#include "conv/conv_spec.glsl"
// The general direct convolution: one invocation per output pixel and block of OB channels, any
// group (depthwise included), stride, dilation and padding. Weights are [M][C/G][KH][KW].
VKML_LOCAL_SIZE;
// Each invocation computes OB consecutive output channels of one pixel, so each input element is
// loaded once for all of them (few-channel layers such as Anime4K's are bound by those loads and
// their index math). OB > 1 only at group 1, where the block never crosses a group.
layout(constant_id = 20) const uint OB = 1;

void main() {
    const uint o = vkml_linear_id();
    const uint MB = (M + OB - 1) / OB; // channel blocks
    if (o >= N * MB * OH * OW) return;
    const uint ow = o % OW;
    const uint oh = (o / OW) % OH;
    const uint m0 = ((o / (OW * OH)) % MB) * OB;
    const uint n = o / (OW * OH * MB);
    const uint g = m0 / MG;
    const int ih0 = int(oh * SH) - int(PT);
    const int iw0 = int(ow * SW) - int(PL);

    float acc[OB];
    for (uint j = 0; j < OB; ++j) acc[j] = 0.0;
    for (uint c = 0; c < CG; ++c) {
        const uint x_base = (n * C + g * CG + c) * H * W;
        for (uint kh = 0; kh < KH; ++kh) {
            const int ih = ih0 + int(kh * DH);
            if (ih < 0 || ih >= int(H)) continue;
            for (uint kw = 0; kw < KW; ++kw) {
                const int iw = iw0 + int(kw * DW);
                if (iw < 0 || iw >= int(W)) continue;
                const float xv = float(x.data[x_base + uint(ih) * W + uint(iw)]);
                const uint w_tap = (c * KH + kh) * KW + kw;
                for (uint j = 0; j < OB; ++j)
                    if (m0 + j < M) acc[j] = fma(xv, float(w.data[(m0 + j) * CG * KH * KW + w_tap]), acc[j]);
            }
        }
    }
    const uint pix = oh * OW + ow;
    for (uint j = 0; j < OB; ++j)
        if (m0 + j < M) conv_store((n * M + m0 + j) * OH * OW + pix, m0 + j, acc[j]);
}
