#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NanoDetDecode, one level: one invocation per cell. Best class of the cell's scores [B, CELLS, C];
// each side's distance is the expectation of a softmax over BINS logits (in strides) of
// boxes [B, CELLS, 4 * BINS]; the cell's centre is ((i % GRID_W + CENTER) * STRIDE,
// (i / GRID_W + CENTER) * STRIDE). Writes rows BASE + i of the outputs (see yolo_decode.comp),
// whose row count per batch is TOTAL.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint CELLS = 1;
layout(constant_id = 1) const uint C = 80;
layout(constant_id = 2) const uint BINS = 8;
layout(constant_id = 3) const uint GRID_W = 1;
layout(constant_id = 4) const float STRIDE = 8.0;
layout(constant_id = 5) const float CENTER = 0.0;
layout(constant_id = 6) const uint BASE = 0;
layout(constant_id = 7) const uint TOTAL = 1;
layout(constant_id = 8) const uint B = 1;
layout(constant_id = 9) const float CLASS_OFFSET = 4096.0;

layout(std430, set = 0, binding = 0) readonly buffer Score { sfloat data[]; } sc;
layout(std430, set = 0, binding = 1) readonly buffer Dist { sfloat data[]; } dist;
layout(std430, set = 0, binding = 2) writeonly buffer Cand { float data[]; } cand;
layout(std430, set = 0, binding = 3) writeonly buffer NmsBoxes { float data[]; } nms_boxes;
layout(std430, set = 0, binding = 4) writeonly buffer Scores { float data[]; } scores;

void main() {
    uint i = vkml_linear_id();
    if (i >= B * CELLS) return;
    uint b = i / CELLS, cell = i % CELLS;
    uint s0 = i * C;
    uint best = 0u;
    float score = float(sc.data[s0]);
    for (uint c = 1u; c < C; ++c) {
        float s = float(sc.data[s0 + c]);
        if (s > score) {
            score = s;
            best = c;
        }
    }
    float d[4];
    for (uint side = 0u; side < 4u; ++side) {
        uint o = (i * 4u + side) * BINS;
        float m = float(dist.data[o]);
        for (uint k = 1u; k < BINS; ++k) m = max(m, float(dist.data[o + k]));
        float sum = 0.0, expect = 0.0;
        for (uint k = 0u; k < BINS; ++k) {
            float e = exp(float(dist.data[o + k]) - m);
            sum += e;
            expect += e * float(k);
        }
        d[side] = expect / sum * STRIDE;
    }
    float cx = (float(cell % GRID_W) + CENTER) * STRIDE;
    float cy = (float(cell / GRID_W) + CENTER) * STRIDE;
    vec4 box = vec4(cx - d[0], cy - d[1], cx + d[2], cy + d[3]);
    uint row = b * TOTAL + BASE + cell;
    uint o = row * 6u;
    cand.data[o] = box.x;
    cand.data[o + 1u] = box.y;
    cand.data[o + 2u] = box.z;
    cand.data[o + 3u] = box.w;
    cand.data[o + 4u] = score;
    cand.data[o + 5u] = float(best);
    float shift = float(best) * CLASS_OFFSET;
    nms_boxes.data[row * 4u] = box.x + shift;
    nms_boxes.data[row * 4u + 1u] = box.y + shift;
    nms_boxes.data[row * 4u + 2u] = box.z + shift;
    nms_boxes.data[row * 4u + 3u] = box.w + shift;
    scores.data[row] = score;
}
