#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NonMaxSuppression, step 4 (one workgroup): exclusive prefix sum of the per-group counts, so
// the output keeps ONNX Runtime's row order (batch, then class, then selection order), and the
// total into the count output (i32, or i64 as two little-endian words).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint GROUPS = 1;
layout(constant_id = 1) const uint INDEX64 = 1;

layout(std430, set = 0, binding = 0) readonly buffer Counts { uint data[]; } counts;
layout(std430, set = 0, binding = 1) writeonly buffer Offsets { uint data[]; } offsets;
layout(std430, set = 0, binding = 2) writeonly buffer Total { uint data[]; } total;

shared uint scan[gl_WorkGroupSize.x];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint running = 0u;
    for (uint base = 0u; base < GROUPS; base += wg) {
        uint i = base + t;
        uint v = i < GROUPS ? counts.data[i] : 0u;
        scan[t] = v;
        barrier();
        for (uint d = 1u; d < wg; d <<= 1) { // Hillis-Steele inclusive scan
            uint add = t >= d ? scan[t - d] : 0u;
            barrier();
            scan[t] += add;
            barrier();
        }
        if (i < GROUPS) offsets.data[i] = running + scan[t] - v;
        running += scan[wg - 1u];
        barrier(); // everyone has read scan[wg - 1] before the next chunk overwrites it
    }
    if (t == 0u) {
        total.data[0] = running;
        if (INDEX64 != 0) total.data[1] = 0u;
    }
}
