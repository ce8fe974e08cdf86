#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "detect/nms_common.glsl"
// NonMaxSuppression, sort step 2: one compare-exchange round (stage p.k, distance p.j) of the
// bitonic network over each group's P keys in global memory, for distances too large for one
// workgroup's block. One invocation per compare pair of every group.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint P = 2;      // keys per group (power of two)
layout(constant_id = 1) const uint GROUPS = 1; // batches * classes

layout(std430, set = 0, binding = 0) buffer Keys { uvec2 data[]; } keys;
layout(push_constant) uniform Params { uint k; uint j; } p;

void main() {
    uint id = vkml_linear_id();
    if (id >= GROUPS * (P / 2)) return;
    uint group = id / (P / 2);
    uint t = id % (P / 2);
    uint lo = 2u * p.j * (t / p.j) + (t % p.j);
    uint hi = lo + p.j;
    uvec2 a = keys.data[group * P + lo], b = keys.data[group * P + hi];
    bool descending = (lo & p.k) == 0u;
    if (descending ? nms_key_less(a, b) : nms_key_less(b, a)) {
        keys.data[group * P + lo] = b;
        keys.data[group * P + hi] = a;
    }
}
