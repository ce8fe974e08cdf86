#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "activation.glsl"
#include "conv/conv_spec.glsl"
// ConvTranspose as a gather: one invocation per output element, summing every (input pixel,
// kernel tap) pair that scatters onto it, i.e. ih * SH + kh * DH == oh + PT (PT, PL are the pads
// cropped from the full output; output_padding only grew OH and OW). Weights are
// [C][M/G][KH][KW]; X has C channels in G groups of C/G.
VKML_LOCAL_SIZE;

void main() {
    const uint o = vkml_linear_id();
    if (o >= N * M * OH * OW) return;
    const uint ow = o % OW;
    const uint oh = (o / OW) % OH;
    const uint m = (o / (OW * OH)) % M;
    const uint n = o / (OW * OH * M);
    const uint g = m / MG;
    const uint mg = m % MG;
    const int th0 = int(oh + PT);
    const int tw0 = int(ow + PL);

    float acc = 0.0;
    for (uint kh = 0; kh < KH; ++kh) {
        const int th = th0 - int(kh * DH);
        // Unsigned %: Vulkan makes OpSMod of a negative operand poison, and a compiler may
        // evaluate both sides of || when neither has side effects.
        if (th < 0 || uint(th) % SH != 0u) continue;
        const uint ih = uint(th) / SH;
        if (ih >= H) continue;
        for (uint kw = 0; kw < KW; ++kw) {
            const int tw = tw0 - int(kw * DW);
            if (tw < 0 || uint(tw) % SW != 0u) continue;
            const uint iw = uint(tw) / SW;
            if (iw >= W) continue;
            for (uint c = 0; c < CG; ++c) {
                const uint ci = g * CG + c;
                acc = fma(float(x.data[((n * C + ci) * H + ih) * W + iw]),
                          float(w.data[((ci * MG + mg) * KH + kh) * KW + kw]), acc);
            }
        }
    }
    conv_store(o, m, acc);
}
