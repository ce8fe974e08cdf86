#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// OneHot: the output is the indices' shape with `depth` inserted at the axis; viewing it as
// [outer, depth, inner], element (o, j, i) is values[1] when indices[o * inner + i] (negative: +
// depth) equals j, else values[0]. WORDS storage words per element.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint WORDS = 1;
layout(std430, set = 0, binding = 0) readonly buffer Idx { int data[]; } idx;
layout(std430, set = 0, binding = 1) readonly buffer Values { stype data[]; } values;
layout(std430, set = 0, binding = 2) writeonly buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint count; // output elements
    uint depth;
    uint inner;
} p;

#include "layout/index_read.glsl"

void main() {
    uint e = vkml_linear_id();
    if (e >= p.count) return;
    uint i = e % p.inner;
    uint j = (e / p.inner) % p.depth;
    uint o = e / (p.inner * p.depth);
    bool hot = read_index(o * p.inner + i, p.depth) == int(j);
    for (uint w = 0; w < WORDS; ++w) dst.data[e * WORDS + w] = values.data[(hot ? WORDS : 0) + w];
}
