#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Einsum (ml/ops/math_einsum.cpp): output element o, at coordinates c_0..c_{NOUT-1} of the output
// labels, is the sum over every combination s of the summed labels of
//     a[sum_i c_i * AO_i + sum_j s_j * AS_j] (* b[sum_i c_i * BO_i + sum_j s_j * BS_j])
// in fp32. Every size and stride is a specialization constant, so the index arithmetic divides by
// constants and the loops unroll.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint NIN = 1;
layout(constant_id = 1) const uint NOUT = 0;
layout(constant_id = 2) const uint NSUM = 0;
layout(constant_id = 3) const uint OD0 = 1;
layout(constant_id = 4) const uint OD1 = 1;
layout(constant_id = 5) const uint OD2 = 1;
layout(constant_id = 6) const uint OD3 = 1;
layout(constant_id = 7) const uint OD4 = 1;
layout(constant_id = 8) const uint OD5 = 1;
layout(constant_id = 9) const uint SD0 = 1;
layout(constant_id = 10) const uint SD1 = 1;
layout(constant_id = 11) const uint SD2 = 1;
layout(constant_id = 12) const uint SD3 = 1;
layout(constant_id = 13) const uint SD4 = 1;
layout(constant_id = 14) const uint SD5 = 1;
layout(constant_id = 15) const uint AO0 = 0;
layout(constant_id = 16) const uint AO1 = 0;
layout(constant_id = 17) const uint AO2 = 0;
layout(constant_id = 18) const uint AO3 = 0;
layout(constant_id = 19) const uint AO4 = 0;
layout(constant_id = 20) const uint AO5 = 0;
layout(constant_id = 21) const uint AS0 = 0;
layout(constant_id = 22) const uint AS1 = 0;
layout(constant_id = 23) const uint AS2 = 0;
layout(constant_id = 24) const uint AS3 = 0;
layout(constant_id = 25) const uint AS4 = 0;
layout(constant_id = 26) const uint AS5 = 0;
layout(constant_id = 27) const uint BO0 = 0;
layout(constant_id = 28) const uint BO1 = 0;
layout(constant_id = 29) const uint BO2 = 0;
layout(constant_id = 30) const uint BO3 = 0;
layout(constant_id = 31) const uint BO4 = 0;
layout(constant_id = 32) const uint BO5 = 0;
layout(constant_id = 33) const uint BS0 = 0;
layout(constant_id = 34) const uint BS1 = 0;
layout(constant_id = 35) const uint BS2 = 0;
layout(constant_id = 36) const uint BS3 = 0;
layout(constant_id = 37) const uint BS4 = 0;
layout(constant_id = 38) const uint BS5 = 0;

layout(std430, set = 0, binding = 0) readonly buffer A { stype data[]; } a;
layout(std430, set = 0, binding = 1) readonly buffer B { stype data[]; } b;
layout(std430, set = 0, binding = 2) writeonly buffer Y { stype data[]; } y;
layout(push_constant) uniform Params { uint count; } p;

void main() {
    const uint od[6] = uint[6](OD0, OD1, OD2, OD3, OD4, OD5);
    const uint sd[6] = uint[6](SD0, SD1, SD2, SD3, SD4, SD5);
    const uint ao[6] = uint[6](AO0, AO1, AO2, AO3, AO4, AO5);
    const uint as_[6] = uint[6](AS0, AS1, AS2, AS3, AS4, AS5);
    const uint bo[6] = uint[6](BO0, BO1, BO2, BO3, BO4, BO5);
    const uint bs[6] = uint[6](BS0, BS1, BS2, BS3, BS4, BS5);
    uint o = vkml_linear_id();
    if (o >= p.count) return;
    // The output coordinates, innermost label last.
    uint abase = 0u, bbase = 0u, rest = o;
    for (int i = int(NOUT) - 1; i >= 0; --i) {
        uint c = rest % od[i];
        rest /= od[i];
        abase += c * ao[i];
        bbase += c * bo[i];
    }
    uint terms = 1u;
    for (uint j = 0u; j < NSUM; ++j) terms *= sd[j];
    float acc = 0.0;
    for (uint t = 0u; t < terms; ++t) {
        uint ai = abase, bi = bbase, r = t;
        for (int j = int(NSUM) - 1; j >= 0; --j) {
            uint s = r % sd[j];
            r /= sd[j];
            ai += s * as_[j];
            bi += s * bs[j];
        }
        float v = float(a.data[ai]);
        if (NIN > 1u) v *= float(b.data[bi]);
        acc += v;
    }
    y.data[o] = stype(acc);
}
