#pragma once
// Double-precision references for the detector ops (Letterbox, YoloDecode, NanoDetDecode,
// GatherDetections, CompositeOver), written from their documented semantics: YOLO letterboxing
// (OpenCV INTER_LINEAR resize, centred padding), the exports' box layouts, NanoDet's GFL
// distributions, and a plain per-class greedy NMS (no class-offset trick).
#include <array>
#include <cstdint>
#include <vector>

#include "op_test.hpp"
#include "vkml/ops/detect.hpp"

namespace vkml::test::ref_post {

// source: NCHW [1, 3, H, W] floats, or u8 NHWC [1, H, W, C] (values 0..255).
HostTensor letterbox(const HostTensor& source, uint32_t width, uint32_t height, double pad,
                     const ops::PixelTransform& transform, bool bgr, gpu::DType dtype);

struct Candidate {
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0, score = 0;
    int cls = 0;
};
// One batch's candidates, in box order.
std::vector<Candidate> yolo_decode(const HostTensor& input, ops::YoloFormat format, int64_t batch = 0);
std::vector<Candidate> nanodet_decode(const std::vector<HostTensor>& scores,
                                      const std::vector<HostTensor>& boxes,
                                      const std::vector<uint32_t>& strides, uint32_t width, double center,
                                      int64_t batch = 0);

// Candidates with score > score_threshold by descending score (ties: lower index first), each
// kept unless a kept box of its class overlaps it with IoU > iou_threshold; at most max_out.
// min_margin: the smallest |IoU - threshold| among same-class comparisons made.
std::vector<int64_t> class_nms(const std::vector<Candidate>& cands, double score_threshold,
                               double iou_threshold, size_t max_out, double* min_margin = nullptr);

// out = image * (1 - a) + rgb (overlay bytes / 255).
HostTensor composite_over(const HostTensor& image, const HostTensor& overlay);

} // namespace vkml::test::ref_post
