#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// GatherDetections: one invocation per output row r < K. Row r < count takes the candidate that
// NonMaxSuppression selected r-th (column 2 of selected_indices: the box), maps its box from model
// input to source pixels and clips it; rows past the count are zero. Invocation 0 copies the count.
// Indices are read as 32-bit words: i64 ones as (low, high) pairs, the low word being the value.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint K = 1;
layout(constant_id = 1) const uint INDEX64 = 0;
layout(constant_id = 2) const uint N = 1;

layout(std430, set = 0, binding = 0) readonly buffer Cand { float data[]; } cand;
layout(std430, set = 0, binding = 1) readonly buffer Selected { uint data[]; } selected;
layout(std430, set = 0, binding = 2) readonly buffer Count { uint data[]; } count_in;
layout(std430, set = 0, binding = 3) writeonly buffer Dets { float data[]; } dets;
layout(std430, set = 0, binding = 4) writeonly buffer CountOut { uint data[]; } count_out;
layout(push_constant) uniform Params {
    vec2 scale;
    vec2 offset;
    vec2 clip; // 0: no clipping
} p;

void main() {
    uint r = vkml_linear_id();
    if (r >= K) return;
    uint count = min(count_in.data[0], K);
    if (r == 0u) count_out.data[0] = count;
    uint o = r * 6u;
    uint box = selected.data[(r * 3u + 2u) * (INDEX64 != 0u ? 2u : 1u)];
    if (r >= count || box >= N) {
        for (uint k = 0u; k < 6u; ++k) dets.data[o + k] = 0.0;
        return;
    }
    uint c = box * 6u;
    vec4 b = vec4(cand.data[c], cand.data[c + 1u], cand.data[c + 2u], cand.data[c + 3u]);
    b = (b - p.offset.xyxy) / p.scale.xyxy;
    if (p.clip.x > 0.0) b.xz = clamp(b.xz, 0.0, p.clip.x);
    if (p.clip.y > 0.0) b.yw = clamp(b.yw, 0.0, p.clip.y);
    dets.data[o] = b.x;
    dets.data[o + 1u] = b.y;
    dets.data[o + 2u] = b.z;
    dets.data[o + 3u] = b.w;
    dets.data[o + 4u] = cand.data[c + 4u];
    dets.data[o + 5u] = cand.data[c + 5u];
}
