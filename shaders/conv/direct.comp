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
// ... and PX consecutive output pixels of one row, so each weight is loaded once for PX pixels and,
// at stride 1, neighbouring taps share their input loads (the loads, not the multiply-adds, bound
// these layers).
layout(constant_id = 21) const uint PX = 1;

void main() {
    const uint o = vkml_linear_id();
    const uint MB = (M + OB - 1) / OB;   // channel blocks
    const uint OWB = (OW + PX - 1) / PX; // pixel blocks per row
    if (o >= N * MB * OH * OWB) return;
    const uint ow0 = (o % OWB) * PX;
    const uint oh = (o / OWB) % OH;
    const uint m0 = ((o / (OWB * OH)) % MB) * OB;
    const uint n = o / (OWB * OH * MB);
    const uint g = m0 / MG;
    const int ih0 = int(oh * SH) - int(PT);
    const int iw0 = int(ow0 * SW) - int(PL);

    float acc[OB * PX];
    for (uint j = 0; j < OB * PX; ++j) acc[j] = 0.0;
    for (uint c = 0; c < CG; ++c) {
        const uint x_base = (n * C + g * CG + c) * H * W;
        for (uint kh = 0; kh < KH; ++kh) {
            const int ih = conv_src(ih0 + int(kh * DH), H);
            if (ih < 0 || ih >= int(H)) continue;
            for (uint kw = 0; kw < KW; ++kw) {
                float xv[PX];
                for (uint q = 0; q < PX; ++q) {
                    const int iw = conv_src(iw0 + int(q * SW + kw * DW), W);
                    xv[q] = iw < 0 || iw >= int(W) ? 0.0 : float(x.data[x_base + uint(ih) * W + uint(iw)]);
                }
                const uint w_tap = (c * KH + kh) * KW + kw;
                for (uint j = 0; j < OB; ++j) {
                    if (m0 + j >= M) continue;
                    const float wv = float(w.data[(m0 + j) * CG * KH * KW + w_tap]);
                    for (uint q = 0; q < PX; ++q) acc[j * PX + q] = fma(xv[q], wv, acc[j * PX + q]);
                }
            }
        }
    }
    const uint row = oh * OW;
    for (uint j = 0; j < OB; ++j)
        for (uint q = 0; q < PX; ++q)
            if (m0 + j < M && ow0 + q < OW) conv_store((n * M + m0 + j) * OH * OW + row + ow0 + q, m0 + j, acc[j * PX + q]);
}
