#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Negative log-likelihood of X [N, C, inner] (log-probabilities) at targets T [N, inner]:
// l = -X[n, t, i] * W[t], 0 for ignored or out-of-range targets. REDUCTION 0 (none): one
// invocation per target writes l. 1 (sum), 2 (mean): one workgroup sums l and the weights of the
// targets not ignored in fp32 and writes the sum, or the sum over the weights.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint WORDS = 1; // 32-bit words per target (2: i64)
layout(constant_id = 1) const uint HAS_WEIGHT = 0;
layout(constant_id = 2) const uint REDUCTION = 0;
layout(constant_id = 3) const uint HAS_IGNORE = 0;
layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) readonly buffer Tgt { int data[]; } tgt;
layout(std430, set = 0, binding = 2) readonly buffer Wgt { sfloat data[]; } wgt;
layout(std430, set = 0, binding = 3) writeonly buffer Dst { sfloat data[]; } dst;
layout(push_constant) uniform Params {
    uint count; // N * inner
    uint classes;
    uint inner;
    int ignore;
} p;

shared float part_loss[gl_WorkGroupSize.x];
shared float part_weight[gl_WorkGroupSize.x];

// The loss of target element i and its weight (0 when ignored or out of range).
void term(uint i, out float loss, out float weight) {
    int t = tgt.data[i * WORDS];
    // An i64 target outside int range is out of range: its high word is not t's sign extension.
    bool fits = WORDS == 1 || tgt.data[i * WORDS + 1] == (t >> 31);
    loss = 0.0;
    weight = 0.0;
    if (!fits || (HAS_IGNORE != 0 && t == p.ignore) || t < 0 || uint(t) >= p.classes) return;
    weight = HAS_WEIGHT != 0 ? float(wgt.data[t]) : 1.0;
    uint n = i / p.inner, d = i % p.inner;
    loss = -float(src.data[(n * p.classes + uint(t)) * p.inner + d]) * weight;
}

void main() {
    if (REDUCTION == 0) {
        uint i = vkml_linear_id();
        if (i >= p.count) return;
        float l, w;
        term(i, l, w);
        dst.data[i] = sfloat(l);
        return;
    }
    uint lid = gl_LocalInvocationID.x;
    float sl = 0.0, sw = 0.0;
    for (uint i = lid; i < p.count; i += gl_WorkGroupSize.x) {
        float l, w;
        term(i, l, w);
        sl += l;
        sw += w;
    }
    part_loss[lid] = sl;
    part_weight[lid] = sw;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (lid < s) {
            part_loss[lid] += part_loss[lid + s];
            part_weight[lid] += part_weight[lid + s];
        }
        barrier();
    }
    if (lid == 0) dst.data[0] = sfloat(REDUCTION == 2 ? part_loss[0] / part_weight[0] : part_loss[0]);
}
