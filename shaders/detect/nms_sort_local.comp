#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "detect/nms_common.glsl"
// NonMaxSuppression, sort step 1 (MERGE == 0): builds the key of every box of one (batch, class)
// group and sorts blocks of BLOCK keys in shared memory, largest first, with the same bitonic
// network a whole-array sort of P keys would use (directions come from the global index), so
// the global passes can continue it. MERGE == 1 finishes stage p.k of that network inside each
// block once the global passes have brought the compare distance below BLOCK.
// Grid: (P / BLOCK, groups); BLOCK / 2 invocations of the workgroup each own one compare pair.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint N = 1;     // boxes per class
layout(constant_id = 1) const uint P = 2;     // keys per group: N rounded up to a power of two
layout(constant_id = 2) const uint BLOCK = 2; // keys per workgroup: min(P, 2 * workgroup size)
layout(constant_id = 3) const uint MERGE = 0;
layout(constant_id = 4) const uint HAS_THRESHOLD = 0;
layout(constant_id = 5) const float SCORE_THRESHOLD = 0.0;

layout(std430, set = 0, binding = 0) readonly buffer Scores { sfloat data[]; } scores;
layout(std430, set = 0, binding = 1) buffer Keys { uvec2 data[]; } keys;
layout(push_constant) uniform Params { uint k; } p;

shared uvec2 sh[BLOCK];

uvec2 candidate_key(uint group, uint i) {
    if (i >= N) return nms_sentinel;
    float s = float(scores.data[group * N + i]);
    // ONNX keeps boxes whose score is strictly above the threshold; NaN never qualifies.
    if (isnan(s) || (HAS_THRESHOLD != 0 && !(s > SCORE_THRESHOLD))) return nms_sentinel;
    return nms_key(s, i);
}

// One compare-exchange round of stage k at distance j, then a barrier.
void exchange(uint base, uint k, uint j) {
    uint t = gl_LocalInvocationID.x;
    if (t < BLOCK / 2) {
        uint lo = 2u * j * (t / j) + (t % j);
        uint hi = lo + j;
        uvec2 a = sh[lo], b = sh[hi];
        bool descending = ((base + lo) & k) == 0u;
        if (descending ? nms_key_less(a, b) : nms_key_less(b, a)) {
            sh[lo] = b;
            sh[hi] = a;
        }
    }
    barrier();
}

void main() {
    uint group = gl_WorkGroupID.y;
    uint base = gl_WorkGroupID.x * BLOCK;
    uint t = gl_LocalInvocationID.x;
    uint off = group * P + base;
    if (t < BLOCK / 2) {
        for (uint e = t; e < BLOCK; e += BLOCK / 2)
            sh[e] = MERGE != 0 ? keys.data[off + e] : candidate_key(group, base + e);
    }
    barrier();
    if (MERGE == 0) {
        for (uint k = 2u; k <= BLOCK; k <<= 1)
            for (uint j = k >> 1; j > 0u; j >>= 1) exchange(base, k, j);
    } else {
        for (uint j = BLOCK >> 1; j > 0u; j >>= 1) exchange(base, p.k, j);
    }
    if (t < BLOCK / 2) {
        for (uint e = t; e < BLOCK; e += BLOCK / 2) keys.data[off + e] = sh[e];
    }
}
