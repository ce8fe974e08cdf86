#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "detect/nms_common.glsl"
// NonMaxSuppression, step 3: the greedy selection for one (batch, class) group per workgroup.
// The group's candidates are already sorted (best first). Invocation 0 finds the best candidate
// not yet suppressed; it is selected, and then every invocation tests a share of the candidates
// after it against it, marking those whose IoU exceeds the threshold in a shared bitmask. This
// keeps memory at one bit per candidate (an N x N mask would not fit for thousands of boxes times
// many classes) and stops as soon as K boxes are selected.
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

// The box as (xmin, ymin, xmax, ymax).
vec4 load_box(uint batch, uint index) {
    uint o = (batch * N + index) * 4u;
    vec4 b = vec4(float(boxes.data[o]), float(boxes.data[o + 1u]), float(boxes.data[o + 2u]),
                  float(boxes.data[o + 3u]));
    if (CENTER != 0) // [x_center, y_center, width, height]
        return vec4(b.x - b.z * 0.5, b.y - b.w * 0.5, b.x + b.z * 0.5, b.y + b.w * 0.5);
    // [y1, x1, y2, x2] with either diagonal's corners
    return vec4(min(b.y, b.w), min(b.x, b.z), max(b.y, b.w), max(b.x, b.z));
}

// ONNX Runtime's rule: boxes without area or without overlap never suppress each other.
// IoU > threshold is decided as inter > threshold * union, not through a division (Vulkan allows
// OpFDiv 2.5 ULP, so identical boxes could get an IoU above 1), and `precise` keeps the union a
// sum of separately rounded terms (a fused inter product would leave identical boxes a union
// slightly below their intersection): identical boxes have IoU exactly 1 on every driver.
bool suppresses(vec4 a, vec4 b) {
    precise float area_a = (a.z - a.x) * (a.w - a.y);
    precise float area_b = (b.z - b.x) * (b.w - b.y);
    if (!(area_a > 0.0) || !(area_b > 0.0)) return false;
    float iw = min(a.z, b.z) - max(a.x, b.x);
    float ih = min(a.w, b.w) - max(a.y, b.y);
    if (!(iw > 0.0) || !(ih > 0.0)) return false;
    precise float inter = iw * ih;
    precise float uni = area_a + area_b - inter;
    if (!(uni > 0.0)) return false;
    precise float bound = IOU_THRESHOLD * uni;
    return inter > bound;
}

// The first candidate position >= from that is not suppressed, or m.
uint first_free(uint from, uint m) {
    if (from >= m) return m;
    uint w = from >> 5;
    uint bits = ~suppressed[w] & (0xffffffffu << (from & 31u));
    while (bits == 0u) {
        ++w;
        if (w * 32u >= m) return m;
        bits = ~suppressed[w];
    }
    return min(w * 32u + uint(findLSB(bits)), m);
}

void main() {
    uint group = gl_WorkGroupID.x;
    uint batch = group / C;
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint key0 = group * P;
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

    uint selected = 0u;
    uint pos = 0u;
    while (selected < K) {
        if (t == 0u) next_pos = first_free(pos, m);
        barrier();
        pos = next_pos;
        if (pos >= m) break; // uniform: every invocation read the same next_pos
        uint index = ~keys.data[key0 + pos].y;
        vec4 a = load_box(batch, index);
        if (t == 0u) slots.data[group * K + selected] = index;
        ++selected;
        for (uint j = pos + 1u + t; j < m; j += wg) {
            if (suppresses(a, load_box(batch, ~keys.data[key0 + j].y)))
                atomicOr(suppressed[j >> 5], 1u << (j & 31u));
        }
        barrier();
        ++pos;
    }
    if (t == 0u) counts.data[group] = selected;
}
