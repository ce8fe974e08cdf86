#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Trilu: element (..., i, j) is kept when j - i >= k (UPPER) or j - i <= k (lower), else zeroed.
// WORDS storage words per element (2 for i64).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint WORDS = 1;
layout(constant_id = 1) const uint UPPER = 1;
layout(std430, set = 0, binding = 0) readonly buffer Src { stype data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params {
    int count; // elements
    int rows;
    int cols;
    int k;
} p;

void main() {
    uint e = vkml_linear_id();
    if (e >= uint(p.count)) return;
    int j = int(e % uint(p.cols));
    int i = int((e / uint(p.cols)) % uint(p.rows));
    bool keep = UPPER != 0 ? j - i >= p.k : j - i <= p.k;
    for (uint w = 0; w < WORDS; ++w) dst.data[e * WORDS + w] = keep ? src.data[e * WORDS + w] : stype_zero;
}
