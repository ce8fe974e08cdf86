// Shared by nms_select.comp and nms_compact.comp: the greedy sweep over a group's sorted
// candidates. The including kernel declares first N, K, CENTER and IOU_THRESHOLD, the buffers
// `boxes` and `slots`, the shared `suppressed` bitmask (cleared) and `next_pos`, and
// uint sorted_index(uint pos), the box index of the candidate at sorted position pos; it defines
// vec4 sorted_box(uint batch, uint pos), that candidate's box (load_box below, or a copy), after
// the include.
#ifndef VKML_DETECT_NMS_SWEEP_GLSL
#define VKML_DETECT_NMS_SWEEP_GLSL

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

vec4 sorted_box(uint batch, uint pos);

// Invocation 0 finds the best candidate not yet suppressed; it is selected, and then every
// invocation tests a share of the candidates after it against it, marking those whose IoU
// exceeds the threshold in the shared bitmask. Memory stays one bit per candidate (an N x N
// mask would not fit for thousands of boxes times many classes), and the sweep stops as soon as
// K boxes are selected. Writes slots[group * K ...] in selection order; returns their number.
uint sweep(uint group, uint batch, uint m) {
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint selected = 0u;
    uint pos = 0u;
    while (selected < K) {
        if (t == 0u) next_pos = first_free(pos, m);
        barrier();
        pos = next_pos;
        if (pos >= m) break; // uniform: every invocation read the same next_pos
        vec4 a = sorted_box(batch, pos);
        if (t == 0u) slots.data[group * K + selected] = sorted_index(pos);
        ++selected;
        for (uint j = pos + 1u + t; j < m; j += wg) {
            if (suppresses(a, sorted_box(batch, j)))
                atomicOr(suppressed[j >> 5], 1u << (j & 31u));
        }
        barrier();
        ++pos;
    }
    return selected;
}

#endif
