#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "detect/nms_common.glsl"
// NonMaxSuppression, step 3: the greedy selection for one (batch, class) group per workgroup.
// The group's candidates are already sorted (best first) in the scratch keys; the sweep is
// detect/nms_sweep.glsl's.
// Writes the selected box indices, in selection order, to slots[group * K ...] and their number
// to counts[group].
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint N = 1;      // boxes per batch
layout(constant_id = 1) const uint P = 2;      // sorted keys per group
layout(constant_id = 2) const uint C = 1;      // classes
layout(constant_id = 3) const uint K = 1;      // boxes to select per group at most (<= N)
layout(constant_id = 4) const uint CENTER = 0; // center_point_box
layout(constant_id = 5) const float IOU_THRESHOLD = 0.0;
layout(constant_id = 6) const uint WORDS = 1;  // ceil(P / 32)

layout(std430, set = 0, binding = 0) readonly buffer Boxes { sfloat data[]; } boxes;
layout(std430, set = 0, binding = 1) readonly buffer Keys { uvec2 data[]; } keys;
layout(std430, set = 0, binding = 2) writeonly buffer Slots { uint data[]; } slots;
layout(std430, set = 0, binding = 3) writeonly buffer Counts { uint data[]; } counts;

shared uint suppressed[WORDS];
shared uint next_pos;

uint key0;
uint sorted_index(uint pos) {
    return ~keys.data[key0 + pos].y;
}

#include "detect/nms_sweep.glsl"

vec4 sorted_box(uint batch, uint pos) {
    return load_box(batch, sorted_index(pos));
}

void main() {
    uint group = gl_WorkGroupID.x;
    uint batch = group / C;
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    key0 = group * P;
    for (uint w = t; w < WORDS; w += wg) suppressed[w] = 0u;
    // Candidates come first, sentinels after: binary search for their number.
    uint lo = 0u, hi = P;
    while (lo < hi) {
        uint mid = (lo + hi) >> 1;
        if (keys.data[key0 + mid].x != 0u) lo = mid + 1u;
        else hi = mid;
    }
    uint m = lo;
    barrier();

    uint selected = sweep(group, batch, m);
    if (t == 0u) counts.data[group] = selected;
}
