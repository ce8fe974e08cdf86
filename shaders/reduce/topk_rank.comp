#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// TopK for rows of any length, one invocation per input element of an input seen as
// [outer, n, inner]: an element's rank is the number of row elements that sort before it (larger
// key, or equal key and lower index, ONNX's tie rule), so ranks are distinct and an element of
// rank < k writes itself to output slot `rank`. The count stops at k, which makes the work
// about n·k·log n comparisons per row for random data instead of n² (still n²/2 for a row sorted
// against the requested order).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint LARGEST = 1;
layout(constant_id = 1) const uint INDEX_WORDS = 2; // 2: i64 indices, 1: i32

layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Values { sfloat data[]; } values;
layout(std430, set = 0, binding = 2) writeonly buffer Indices { uint data[]; } indices;
layout(push_constant) uniform Params {
    uint rows;
    uint n;
    uint inner;
    uint k;
} pc;

float key_of(float v) {
    return LARGEST != 0 ? v : -v;
}

void main() {
    const uint e = vkml_linear_id();
    if (e >= pc.rows * pc.n) return;
    const uint r = e / pc.n, j = e % pc.n;
    const uint outer = r / pc.inner, in_i = r % pc.inner;
    const uint base = outer * pc.n * pc.inner + in_i;
    const float x = float(src.data[base + j * pc.inner]); // exact: f32 holds every f16
    const float kj = key_of(x);
    uint rank = 0;
    for (uint m = 0; m < pc.n && rank < pc.k; ++m) {
        const float km = key_of(float(src.data[base + m * pc.inner]));
        if (km > kj || (km == kj && m < j)) ++rank;
    }
    if (rank >= pc.k) return;
    const uint o = outer * pc.k * pc.inner + in_i + rank * pc.inner;
    values.data[o] = sfloat(x);
    if (INDEX_WORDS == 2) {
        indices.data[2 * o] = j;
        indices.data[2 * o + 1] = 0u;
    } else {
        indices.data[o] = j;
    }
}
