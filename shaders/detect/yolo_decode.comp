#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// YoloDecode: one invocation per box of a YOLO-format export. V8 == 0 (YOLOv5): rows
// [B, N, 5 + C] of (cx, cy, w, h, objectness, class scores); V8 == 1: columns [B, 4 + C, N] of
// (cx, cy, w, h, class scores). Keeps the best class (the first of equal ones), writes the
// candidate row (x0, y0, x1, y1, score, class), the box shifted by class * CLASS_OFFSET for
// class-aware NMS in one group, and the score.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint N = 1;
layout(constant_id = 1) const uint C = 80;
layout(constant_id = 2) const uint V8 = 1;
layout(constant_id = 3) const uint B = 1;
layout(constant_id = 4) const float CLASS_OFFSET = 4096.0;

layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Cand { float data[]; } cand;
layout(std430, set = 0, binding = 2) writeonly buffer NmsBoxes { float data[]; } nms_boxes;
layout(std430, set = 0, binding = 3) writeonly buffer Scores { float data[]; } scores;

float channel(uint b, uint n, uint k) {
    const uint K = V8 != 0u ? 4u + C : 5u + C;
    return float(V8 != 0u ? src.data[(b * K + k) * N + n] : src.data[(b * N + n) * K + k]);
}

void main() {
    uint i = vkml_linear_id();
    if (i >= B * N) return;
    uint b = i / N, n = i % N;
    uint first = V8 != 0u ? 4u : 5u;
    uint best = 0u;
    float best_score = channel(b, n, first);
    for (uint c = 1u; c < C; ++c) {
        float s = channel(b, n, first + c);
        if (s > best_score) {
            best_score = s;
            best = c;
        }
    }
    float score = V8 != 0u ? best_score : best_score * channel(b, n, 4u);
    float cx = channel(b, n, 0u), cy = channel(b, n, 1u);
    float hw = channel(b, n, 2u) * 0.5, hh = channel(b, n, 3u) * 0.5;
    vec4 box = vec4(cx - hw, cy - hh, cx + hw, cy + hh);
    uint o = i * 6u;
    cand.data[o] = box.x;
    cand.data[o + 1u] = box.y;
    cand.data[o + 2u] = box.z;
    cand.data[o + 3u] = box.w;
    cand.data[o + 4u] = score;
    cand.data[o + 5u] = float(best);
    float shift = float(best) * CLASS_OFFSET;
    nms_boxes.data[i * 4u] = box.x + shift;
    nms_boxes.data[i * 4u + 1u] = box.y + shift;
    nms_boxes.data[i * 4u + 2u] = box.z + shift;
    nms_boxes.data[i * 4u + 3u] = box.w + shift;
    scores.data[i] = score;
}
