#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NonMaxSuppression, step 5: one invocation per slot (group, k) of the fixed-capacity output.
// Selected slots move to row offsets[group] + k as (batch, class, box); rows from the total
// onwards are filled with -1. The two kinds of writes never touch the same row.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint GROUPS = 1;
layout(constant_id = 1) const uint K = 1; // slots per group
layout(constant_id = 2) const uint C = 1; // classes
layout(constant_id = 3) const uint INDEX64 = 1;

layout(std430, set = 0, binding = 0) readonly buffer Slots { uint data[]; } slots;
layout(std430, set = 0, binding = 1) readonly buffer Counts { uint data[]; } counts;
layout(std430, set = 0, binding = 2) readonly buffer Offsets { uint data[]; } offsets;
layout(std430, set = 0, binding = 3) writeonly buffer Out { uint data[]; } dst;

#include "detect/nms_store.glsl"

void main() {
    uint id = vkml_linear_id();
    if (id >= GROUPS * K) return;
    uint group = id / K;
    uint k = id % K;
    if (k < counts.data[group]) {
        uint row = offsets.data[group] + k;
        store(row, 0u, group / C, false);
        store(row, 1u, group % C, false);
        store(row, 2u, slots.data[id], false);
    }
    uint total = offsets.data[GROUPS - 1u] + counts.data[GROUPS - 1u];
    if (id >= total) {
        for (uint c = 0u; c < 3u; ++c) store(id, c, 0xffffffffu, true);
    }
}
