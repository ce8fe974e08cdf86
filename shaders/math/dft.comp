#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// DFT (ml/ops/math_dft.cpp): output value (outer, k, inner) = sum over j < min(n, L) of
// x[outer, j, inner] * exp(-+2 pi i j k / L), in fp32 with the angle's j k reduced mod L exactly;
// inverse: the + sign and a division by L. x is real ([.., 1]) or complex ([.., 2]).
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 1) writeonly buffer Y { stype data[]; } y;
layout(push_constant) uniform Params {
    uint count; uint n; uint L; uint n_out; uint inner; uint complex_in; uint inverse; uint pad;
} p;

void main() {
    uint o = vkml_linear_id();
    if (o >= p.count) return;
    uint i = o % p.inner, k = (o / p.inner) % p.n_out, outer = o / (p.inner * p.n_out);
    uint c = p.complex_in != 0u ? 2u : 1u;
    uint m = min(p.n, p.L);
    float sign = p.inverse != 0u ? 1.0 : -1.0;
    const float two_pi = 6.283185307179586;
    float re = 0.0, im = 0.0;
    uint phase = 0u; // j k mod L, advanced by k each step
    uint step = k % p.L;
    for (uint j = 0u; j < m; ++j) {
        uint at = ((outer * p.n + j) * p.inner + i) * c;
        float xr = float(x.data[at]), xi = c == 2u ? float(x.data[at + 1u]) : 0.0;
        // The turn phase / L as a quarter turn q plus a remainder in [-1/8, 1/8] of a turn
        // (integers, exact): sin and cos of the small remainder, rotated by q, so multiples of a
        // quarter turn give exact 0 and 1 and the rest stay within a few ULP.
        uint q = (4u * phase + p.L / 2u) / p.L; // round(4 phase / L), 0..4
        float a = two_pi * (float(int(4u * phase) - int(q * p.L)) / float(4u * p.L));
        float c0 = cos(a), s0 = sin(a);
        float cs = (q & 3u) == 0u ? c0 : (q & 3u) == 1u ? -s0 : (q & 3u) == 2u ? -c0 : s0;
        float sn = (q & 3u) == 0u ? s0 : (q & 3u) == 1u ? c0 : (q & 3u) == 2u ? -s0 : -c0;
        sn *= sign;
        re += xr * cs - xi * sn;
        im += xr * sn + xi * cs;
        phase += step;
        if (phase >= p.L) phase -= p.L;
    }
    if (p.inverse != 0u) {
        re /= float(p.L);
        im /= float(p.L);
    }
    y.data[o * 2u] = stype(re);
    y.data[o * 2u + 1u] = stype(im);
}
