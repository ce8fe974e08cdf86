#pragma once
// Decoding NanoDet's heads (test code): per stride s in {8, 16, 32}, class scores [1, N, 80] (after
// the model's sigmoid) and box distributions [1, N, 44] = 4 sides x 11 bins (generalized focal
// loss: each side's distance to the cell, in strides, is the expectation of a softmax over the
// bins 0..10). A cell (x, y) of a W-wide grid is index y * W + x; its box is
// [cx - left, cy - top, cx + right, cy + bottom] with (cx, cy) = (x, y) * s, as NanoDet's own
// demos decode it. Then greedy per-class NMS.
#include <algorithm>
#include <cmath>
#include <vector>

#include "vkml/graph/tensor_data.hpp"

namespace vkml::test {

struct Detection {
    int label = 0; // COCO class index (0 person, 1 bicycle, 2 car, ..., 16 dog)
    float score = 0;
    float x1 = 0, y1 = 0, x2 = 0, y2 = 0; // in input pixels
};

inline float iou(const Detection& a, const Detection& b) {
    const float w = std::max(0.f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
    const float h = std::max(0.f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
    const float inter = w * h;
    const float area = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
    return area > 0 ? inter / area : 0.f;
}

// `scores` and `boxes` of one stride; `size` is the square input's side in pixels.
inline void decode_stride(const graph::TensorData& scores, const graph::TensorData& boxes, int stride,
                          int size, float threshold, std::vector<Detection>& out) {
    const auto sc = scores.to_floats(), bx = boxes.to_floats();
    const int grid = size / stride, classes = static_cast<int>(scores.dims().back());
    const int bins = static_cast<int>(boxes.dims().back()) / 4;
    const int cells = static_cast<int>(scores.dims()[1]);
    for (int i = 0; i < cells; ++i) {
        int best = 0;
        for (int c = 1; c < classes; ++c)
            if (sc[static_cast<size_t>(i * classes + c)] > sc[static_cast<size_t>(i * classes + best)])
                best = c;
        const float score = sc[static_cast<size_t>(i * classes + best)];
        if (score < threshold) continue;
        float d[4];
        for (int side = 0; side < 4; ++side) {
            const float* b = &bx[static_cast<size_t>((i * 4 + side) * bins)];
            const float m = *std::max_element(b, b + bins);
            float sum = 0, expect = 0;
            for (int k = 0; k < bins; ++k) {
                const float e = std::exp(b[k] - m);
                sum += e;
                expect += e * static_cast<float>(k);
            }
            d[side] = expect / sum * static_cast<float>(stride);
        }
        const float cx = static_cast<float>(i % grid * stride), cy = static_cast<float>(i / grid * stride);
        out.push_back({best, score, std::max(cx - d[0], 0.f), std::max(cy - d[1], 0.f),
                       std::min(cx + d[2], static_cast<float>(size)),
                       std::min(cy + d[3], static_cast<float>(size))});
    }
}

// Detections by descending score after per-class NMS.
inline std::vector<Detection> nms(std::vector<Detection> dets, float iou_threshold) {
    std::sort(dets.begin(), dets.end(),
              [](const Detection& a, const Detection& b) { return a.score > b.score; });
    std::vector<Detection> kept;
    for (const Detection& d : dets) {
        bool suppressed = false;
        for (const Detection& k : kept) suppressed |= k.label == d.label && iou(k, d) > iou_threshold;
        if (!suppressed) kept.push_back(d);
    }
    return kept;
}

} // namespace vkml::test
