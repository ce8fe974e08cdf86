#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// GatherND: output element o = (k, s) with k = o / slice the index tuple and s the element of the
// slice it selects: data[batch(k) * batch_stride + sum_m indices[k, m] * strides[m] + s], where the
// tuples of one batch entry are `per_batch` consecutive ones. WORDS storage words per element.
// An index out of range yields 0.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint WORDS = 1;
layout(std430, set = 0, binding = 0) readonly buffer Data { stype data[]; } src;
layout(std430, set = 0, binding = 1) readonly buffer Idx { int data[]; } idx;
layout(std430, set = 0, binding = 2) writeonly buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint count; // output elements
    uint q;
    uint slice;
    uint per_batch;
    uint batch_stride;
    uint dims[6];
    uint strides[6];
} p;

#include "layout/index_read.glsl"

void main() {
    uint o = vkml_linear_id();
    if (o >= p.count) return;
    uint k = o / p.slice;
    uint off = (k / p.per_batch) * p.batch_stride + o % p.slice;
    bool ok = true;
    for (uint m = 0; m < p.q; ++m) {
        int c = read_index(k * p.q + m, p.dims[m]);
        if (c < 0) ok = false;
        else off += uint(c) * p.strides[m];
    }
    for (uint w = 0; w < WORDS; ++w) dst.data[o * WORDS + w] = ok ? src.data[off * WORDS + w] : stype_zero;
}
