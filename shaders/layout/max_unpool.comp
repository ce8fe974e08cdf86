#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// MaxUnpool (ml/ops/layout_max_unpool.cpp). SCATTER 0: y[i] = 0 for every output element;
// SCATTER 1: x[e] goes to the (plane, row, column) its index names in the default [dh, dw]
// output, placed in the [oh, ow] one; indices outside the default output are skipped.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint SCATTER = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 1) readonly buffer I { int data[]; } idx;
layout(std430, set = 0, binding = 2) writeonly buffer Y { stype data[]; } y;
layout(push_constant) uniform Params { uint in_count; uint out_count; uint dh; uint dw; uint oh; uint ow; } p;

void main() {
    uint e = vkml_linear_id();
    if (SCATTER == 0u) {
        if (e < p.out_count) y.data[e] = stype_zero;
        return;
    }
    if (e >= p.in_count) return;
    int i = idx.data[e];
    uint plane = uint(i) / (p.dh * p.dw), rem = uint(i) % (p.dh * p.dw);
    uint at = (plane * p.oh + rem / p.dw) * p.ow + rem % p.dw;
    if (i >= 0 && at < p.out_count) y.data[at] = x.data[e];
}
