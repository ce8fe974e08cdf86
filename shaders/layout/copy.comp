#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The strided gather behind Transpose, Slice, Expand, Tile, Split, DepthToSpace and SpaceToDepth:
// output element i, written contiguously, reads the input element
//     base + sum_k (c_k % mods[k]) * strides[k]
// where c is i's multi-index over `dims` (innermost first). Elements are moved as storage words
// (the i32 variant moves f32 and, as pairs, i64), so the copy is exact for every dtype.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer Src { stype data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint count;
    int base;
    uint rank;
    uint unused;
    uint dims[8];
    int strides[8];
    uint mods[8];
} p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.count) return;
    uint rem = i;
    int off = p.base;
    for (uint k = 0; k < p.rank; ++k) {
        uint d = p.dims[k];
        uint c = rem % d;
        rem /= d;
        off += int(c % p.mods[k]) * p.strides[k];
    }
    dst.data[i] = src.data[off];
}
