#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// GatherElements: output element i (indices' shape, contiguous) reads data at i's multi-index
// with the `axis` coordinate replaced by indices[i]. Dimensions innermost first; data strides in
// elements; WORDS storage words per element (2 for i64 data). Indices as in gather.comp; an index
// outside [-axis_len, axis_len) yields 0.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint WORDS = 1;
layout(std430, set = 0, binding = 0) readonly buffer Data { stype data[]; } src;
layout(std430, set = 0, binding = 1) readonly buffer Idx { int data[]; } idx;
layout(std430, set = 0, binding = 2) writeonly buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint count; // output elements
    uint rank;
    uint axis;  // innermost-first index of the gathered dimension
    uint axis_len;
    uint dims[6];
    uint strides[6];
} p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.count) return;
#if VKML_INDEX64
    int k = idx.data[2 * i];
    bool fits = idx.data[2 * i + 1] == (k >> 31);
#else
    int k = idx.data[i];
    bool fits = true;
#endif
    if (k < 0) k += int(p.axis_len);
    if (!fits || k < 0 || k >= int(p.axis_len)) {
        for (uint w = 0; w < WORDS; ++w) dst.data[i * WORDS + w] = stype_zero;
        return;
    }
    uint rem = i;
    uint off = 0;
    for (uint d = 0; d < p.rank; ++d) {
        uint c = rem % p.dims[d];
        rem /= p.dims[d];
        off += (d == p.axis ? uint(k) : c) * p.strides[d];
    }
    for (uint w = 0; w < WORDS; ++w) dst.data[i * WORDS + w] = src.data[off * WORDS + w];
}
