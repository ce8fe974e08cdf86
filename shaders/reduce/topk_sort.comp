#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce/util.glsl"
// TopK, one workgroup per row of an input seen as [outer, n, inner]: the row is copied into shared
// memory (padded to the power of two P with entries that sort last), bitonic-sorted so that
// larger keys come first and equal keys keep index order (ONNX's tie rule), and the first k
// entries are written. For smallest-k the keys are negated, which is exact.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint P = 1024; // power of two >= n
layout(constant_id = 1) const uint LARGEST = 1;
layout(constant_id = 2) const uint INDEX_WORDS = 2; // 2: i64 indices, 1: i32

layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Values { sfloat data[]; } values;
layout(std430, set = 0, binding = 2) writeonly buffer Indices { uint data[]; } indices;
layout(push_constant) uniform Params {
    uint rows;
    uint n;
    uint inner;
    uint k;
} pc;

shared float key[P];
shared uint idx[P];

// Whether entry a sorts before entry b.
bool before(float ka, uint ia, float kb, uint ib) {
    return ka > kb || (ka == kb && ia < ib);
}

void main() {
    const uint r = reduce_group_id();
    if (r >= pc.rows) return; // uniform across the workgroup
    const uint outer = r / pc.inner, in_i = r % pc.inner;
    const uint base = outer * pc.n * pc.inner + in_i;
    const uint tid = gl_LocalInvocationID.x;
    for (uint j = tid; j < P; j += gl_WorkGroupSize.x) {
        if (j < pc.n) {
            const float v = float(src.data[base + j * pc.inner]);
            key[j] = LARGEST != 0 ? v : -v;
        } else {
            key[j] = -reduce_inf(); // padding: index >= n puts it after any real -inf
        }
        idx[j] = j;
    }
    barrier();
    // Bitonic sort: for each block size `size`, merge passes with partner distance `dist`. Pair t
    // compares entries i and i + dist; blocks whose `size` bit is clear sort in `before` order,
    // the others in reverse, and the last block size covers all P entries in `before` order.
    for (uint size = 2; size <= P; size <<= 1) {
        for (uint dist = size >> 1; dist > 0; dist >>= 1) {
            for (uint t = tid; t < P / 2; t += gl_WorkGroupSize.x) {
                const uint i = (t / dist) * 2 * dist + t % dist;
                const uint l = i + dist;
                const bool forward = (i & size) == 0;
                const float ki = key[i], kl = key[l];
                const uint ii = idx[i], il = idx[l];
                if (before(kl, il, ki, ii) == forward) {
                    key[i] = kl;
                    key[l] = ki;
                    idx[i] = il;
                    idx[l] = ii;
                }
            }
            barrier();
        }
    }
    const uint out_base = outer * pc.k * pc.inner + in_i;
    for (uint j = tid; j < pc.k; j += gl_WorkGroupSize.x) {
        const uint o = out_base + j * pc.inner;
        const uint i = idx[j];
        values.data[o] = src.data[base + i * pc.inner];
        if (INDEX_WORDS == 2) {
            indices.data[2 * o] = i;
            indices.data[2 * o + 1] = 0u;
        } else {
            indices.data[o] = i;
        }
    }
}
