#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// ScatterElements (ND = 0) and ScatterND (ND = 1) into an output that already holds a copy of the
// data. Each update element u goes to one output element:
//   ScatterElements: u's multi-index over updates' shape, its `axis` coordinate replaced by
//     indices[u] (dimensions innermost first; strides are the output's, in elements);
//   ScatterND: tuple k = u / slice of q indices selects the output's first q coordinates, the
//     element u % slice of that slice the rest.
// REDUCTION 0 (none): one invocation per update (duplicates: any one wins, as ONNX allows). 1 add,
// 2 mul, 3 max, 4 min: one invocation applies every update in order (simple, exact, slow).
// WORDS storage words per element (none only: i64 data as word pairs). Out-of-range indices skip.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint ND = 0;
layout(constant_id = 1) const uint REDUCTION = 0;
layout(constant_id = 2) const uint WORDS = 1;
layout(std430, set = 0, binding = 0) readonly buffer Idx { int data[]; } idx;
layout(std430, set = 0, binding = 1) readonly buffer Upd { stype data[]; } upd;
layout(std430, set = 0, binding = 2) buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint count; // update elements
    uint rank;  // ScatterElements: updates' rank; ScatterND: q
    uint axis;  // ScatterElements: innermost-first index of the axis
    uint extent; // ScatterElements: the output's length along axis; ScatterND: elements per tuple
    uint dims[6];    // ScatterElements: updates' dims, innermost first; ScatterND: output dims 0..q-1
    uint strides[6]; // ScatterElements: output strides, innermost first; ScatterND: of dims 0..q-1
} p;

#include "layout/index_read.glsl"

// The output element (in elements) update u goes to, or -1.
int target(uint u) {
    uint off = 0;
    if (ND == 0) {
        uint rem = u;
        for (uint d = 0; d < p.rank; ++d) {
            uint c = rem % p.dims[d];
            rem /= p.dims[d];
            if (d == p.axis) {
                int k = read_index(u, p.extent);
                if (k < 0) return -1;
                c = uint(k);
            }
            off += c * p.strides[d];
        }
        return int(off);
    }
    uint k = u / p.extent;
    off = u % p.extent;
    for (uint m = 0; m < p.rank; ++m) {
        int c = read_index(k * p.rank + m, p.dims[m]);
        if (c < 0) return -1;
        off += uint(c) * p.strides[m];
    }
    return int(off);
}

void main() {
    if (REDUCTION == 0) {
        uint u = vkml_linear_id();
        if (u >= p.count) return;
        int t = target(u);
        if (t < 0) return;
        for (uint w = 0; w < WORDS; ++w) dst.data[uint(t) * WORDS + w] = upd.data[u * WORDS + w];
        return;
    }
    if (vkml_linear_id() != 0) return;
    for (uint u = 0; u < p.count; ++u) {
        int t = target(u);
        if (t < 0) continue;
        ctype a = ctype(dst.data[t]), b = ctype(upd.data[u]);
        ctype r = REDUCTION == 1 ? a + b : REDUCTION == 2 ? a * b : REDUCTION == 3 ? max(a, b) : min(a, b);
        dst.data[t] = stype(r);
    }
}
