#include "detect_post_ref.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vkml::test::ref_post {

HostTensor letterbox(const HostTensor& source, uint32_t width, uint32_t height, double pad,
                     const ops::PixelTransform& transform, bool bgr, gpu::DType dtype) {
    const bool u8 = source.desc.dtype == gpu::DType::u8;
    const int64_t sh = u8 ? source.shape()[1] : source.shape()[2];
    const int64_t sw = u8 ? source.shape()[2] : source.shape()[3];
    const int64_t sc = u8 ? source.shape()[3] : 3;
    auto at = [&](int64_t c, int64_t y, int64_t x) {
        return u8 ? source[size_t((y * sw + x) * sc + c)] / 255.0 : source[size_t((c * sh + y) * sw + x)];
    };
    // YOLO's letterbox: one scale for both axes, the content rounded to whole pixels, centred.
    const double r = std::min(double(width) / double(sw), double(height) / double(sh));
    const int64_t cw = std::max<int64_t>(1, std::llround(double(sw) * r));
    const int64_t ch = std::max<int64_t>(1, std::llround(double(sh) * r));
    const int64_t left = (int64_t(width) - cw) / 2, top = (int64_t(height) - ch) / 2;
    auto pick = [](const std::vector<float>& v, size_t c) { return double(v.size() == 1 ? v[0] : v[c]); };
    HostTensor out({1, 3, int64_t(height), int64_t(width)}, dtype);
    for (int64_t c = 0; c < 3; ++c)
        for (int64_t y = 0; y < int64_t(height); ++y)
            for (int64_t x = 0; x < int64_t(width); ++x) {
                double v = pad;
                if (x >= left && x < left + cw && y >= top && y < top + ch) {
                    // OpenCV INTER_LINEAR: half-pixel centres, coordinates clamped to the edge.
                    const double u = std::clamp((double(x - left) + 0.5) * double(sw) / double(cw) - 0.5, 0.0,
                                                double(sw - 1));
                    const double w = std::clamp((double(y - top) + 0.5) * double(sh) / double(ch) - 0.5, 0.0,
                                                double(sh - 1));
                    const int64_t x0 = int64_t(std::floor(u)), y0 = int64_t(std::floor(w));
                    const int64_t x1 = std::min(x0 + 1, sw - 1), y1 = std::min(y0 + 1, sh - 1);
                    const double fx = u - double(x0), fy = w - double(y0);
                    const int64_t s = bgr ? 2 - c : c;
                    v = (at(s, y0, x0) * (1 - fx) + at(s, y0, x1) * fx) * (1 - fy) +
                        (at(s, y1, x0) * (1 - fx) + at(s, y1, x1) * fx) * fy;
                }
                const size_t cc = size_t(c);
                out[size_t((c * height + y) * width + x)] =
                    (v * pick(transform.scale, cc) - pick(transform.mean, cc)) / pick(transform.std, cc);
            }
    return out;
}

std::vector<Candidate> yolo_decode(const HostTensor& input, ops::YoloFormat format, int64_t batch) {
    const bool v8 = format == ops::YoloFormat::V8;
    const auto& s = input.shape();
    const int64_t n = v8 ? s[2] : s[1], k = v8 ? s[1] : s[2];
    const int64_t first = v8 ? 4 : 5, classes = k - first;
    auto ch = [&](int64_t box, int64_t j) {
        return v8 ? input[size_t((batch * k + j) * n + box)] : input[size_t((batch * n + box) * k + j)];
    };
    std::vector<Candidate> out;
    for (int64_t i = 0; i < n; ++i) {
        int best = 0;
        for (int64_t c = 1; c < classes; ++c)
            if (ch(i, first + c) > ch(i, first + best)) best = int(c);
        Candidate cand;
        cand.cls = best;
        cand.score = ch(i, first + best) * (v8 ? 1.0 : ch(i, 4));
        cand.x0 = ch(i, 0) - ch(i, 2) / 2;
        cand.x1 = ch(i, 0) + ch(i, 2) / 2;
        cand.y0 = ch(i, 1) - ch(i, 3) / 2;
        cand.y1 = ch(i, 1) + ch(i, 3) / 2;
        out.push_back(cand);
    }
    return out;
}

std::vector<Candidate> nanodet_decode(const std::vector<HostTensor>& scores,
                                      const std::vector<HostTensor>& boxes,
                                      const std::vector<uint32_t>& strides, uint32_t width, double center,
                                      int64_t batch) {
    std::vector<Candidate> out;
    for (size_t l = 0; l < scores.size(); ++l) {
        const int64_t cells = scores[l].shape()[1], classes = scores[l].shape()[2];
        const int64_t bins = boxes[l].shape()[2] / 4;
        const int64_t grid = (width + strides[l] - 1) / strides[l];
        const double s = strides[l];
        for (int64_t i = 0; i < cells; ++i) {
            Candidate c;
            for (int64_t k = 0; k < classes; ++k) {
                const double v = scores[l][size_t((batch * cells + i) * classes + k)];
                if (k == 0 || v > c.score) c.score = v, c.cls = int(k);
            }
            double d[4];
            for (int side = 0; side < 4; ++side) {
                const size_t o = size_t(((batch * cells + i) * 4 + side) * bins);
                double m = -1e300, sum = 0, e = 0;
                for (int64_t k = 0; k < bins; ++k) m = std::max(m, boxes[l][o + size_t(k)]);
                for (int64_t k = 0; k < bins; ++k) {
                    const double p = std::exp(boxes[l][o + size_t(k)] - m);
                    sum += p;
                    e += p * double(k);
                }
                d[side] = e / sum * s;
            }
            const double cx = (double(i % grid) + center) * s, cy = (double(i / grid) + center) * s;
            c.x0 = cx - d[0], c.y0 = cy - d[1], c.x1 = cx + d[2], c.y1 = cy + d[3];
            out.push_back(c);
        }
    }
    return out;
}

std::vector<int64_t> class_nms(const std::vector<Candidate>& cands, double score_threshold,
                               double iou_threshold, size_t max_out, double* min_margin) {
    std::vector<int64_t> order;
    for (size_t i = 0; i < cands.size(); ++i)
        if (cands[i].score > score_threshold) order.push_back(int64_t(i));
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return cands[size_t(a)].score > cands[size_t(b)].score; });
    std::vector<int64_t> kept;
    double margin = 1.0;
    for (int64_t i : order) {
        if (kept.size() >= max_out) break;
        const Candidate& a = cands[size_t(i)];
        bool suppressed = false;
        for (int64_t j : kept) {
            const Candidate& b = cands[size_t(j)];
            if (a.cls != b.cls) continue;
            const double aa = (a.x1 - a.x0) * (a.y1 - a.y0), ab = (b.x1 - b.x0) * (b.y1 - b.y0);
            const double iw = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
            const double ih = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
            if (aa <= 0 || ab <= 0 || iw <= 0 || ih <= 0) continue;
            const double iou = iw * ih / (aa + ab - iw * ih);
            margin = std::min(margin, std::fabs(iou - iou_threshold));
            if (iou > iou_threshold) {
                suppressed = true;
                break;
            }
        }
        if (!suppressed) kept.push_back(i);
    }
    if (min_margin) *min_margin = margin;
    return kept;
}

HostTensor composite_over(const HostTensor& image, const HostTensor& overlay) {
    HostTensor out(image.shape(), image.desc.dtype);
    const int64_t h = image.shape()[2], w = image.shape()[3];
    for (int64_t c = 0; c < 3; ++c)
        for (int64_t p = 0; p < h * w; ++p) {
            const double a = overlay[size_t(p * 4 + 3)] / 255.0, rgb = overlay[size_t(p * 4 + c)] / 255.0;
            out[size_t(c * h * w + p)] = image[size_t(c * h * w + p)] * (1 - a) + rgb;
        }
    return out;
}

} // namespace vkml::test::ref_post
