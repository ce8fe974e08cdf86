#include "ref/detect_ref.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace vkml::test::ref_detect {

namespace {

struct Corners {
    double xmin, ymin, xmax, ymax;
};

Corners corners(const HostTensor& boxes, int64_t b, int64_t i, int64_t center_point_box) {
    const int64_t n = boxes.shape()[1];
    const double* v = &boxes.data[size_t((b * n + i) * 4)];
    if (center_point_box == 1) {
        // [x_center, y_center, width, height]
        return {v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2};
    }
    // [y1, x1, y2, x2]: "any diagonal pair of box corners"
    return {std::min(v[1], v[3]), std::min(v[0], v[2]), std::max(v[1], v[3]), std::max(v[0], v[2])};
}

// The IoU of two boxes, or nullopt when ONNX Runtime treats them as never overlapping (an empty
// box or no intersection).
std::optional<double> iou(const Corners& a, const Corners& b) {
    const double area_a = (a.xmax - a.xmin) * (a.ymax - a.ymin);
    const double area_b = (b.xmax - b.xmin) * (b.ymax - b.ymin);
    if (area_a <= 0 || area_b <= 0) return std::nullopt;
    const double w = std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin);
    const double h = std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin);
    if (w <= 0 || h <= 0) return std::nullopt;
    const double inter = w * h;
    return inter / (area_a + area_b - inter);
}

double transform_value(const std::vector<float>& v, uint32_t c) {
    return v.size() == 1 ? v[0] : v[c];
}

} // namespace

NmsResult nms(const HostTensor& boxes, const HostTensor& scores, int64_t max_output_boxes_per_class,
              double iou_threshold, std::optional<double> score_threshold, int64_t center_point_box) {
    NmsResult r;
    const int64_t batches = scores.shape()[0], classes = scores.shape()[1], n = scores.shape()[2];
    for (int64_t b = 0; b < batches; ++b) {
        for (int64_t c = 0; c < classes; ++c) {
            const double* s = &scores.data[size_t((b * classes + c) * n)];
            std::vector<int64_t> order;
            for (int64_t i = 0; i < n; ++i)
                if (!std::isnan(s[i]) && (!score_threshold || s[i] > *score_threshold)) order.push_back(i);
            std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
            std::vector<int64_t> kept;
            for (int64_t i : order) {
                if (int64_t(kept.size()) >= max_output_boxes_per_class) break;
                bool suppressed = false;
                for (int64_t k : kept) {
                    const auto v =
                        iou(corners(boxes, b, i, center_point_box), corners(boxes, b, k, center_point_box));
                    if (!v) continue;
                    r.min_margin = std::min(r.min_margin, std::fabs(*v - iou_threshold));
                    if (*v > iou_threshold) {
                        suppressed = true;
                        break;
                    }
                }
                if (!suppressed) {
                    kept.push_back(i);
                    r.selected.push_back({b, c, i});
                }
            }
        }
    }
    return r;
}

double srgb_to_linear(double c) {
    return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

std::vector<std::array<double, 4>> decode_pixels(const std::vector<uint8_t>& bytes, VkFormat format,
                                                 uint32_t width, uint32_t height, bool linearize_srgb) {
    std::vector<std::array<double, 4>> px(size_t(width) * height);
    for (size_t p = 0; p < px.size(); ++p) {
        switch (format) {
        case VK_FORMAT_R8G8B8A8_UNORM:
        case VK_FORMAT_R8G8B8A8_SRGB:
            for (int c = 0; c < 4; ++c) px[p][c] = bytes[p * 4 + c] / 255.0;
            if (format == VK_FORMAT_R8G8B8A8_SRGB && linearize_srgb)
                for (int c = 0; c < 3; ++c) px[p][c] = srgb_to_linear(px[p][c]); // alpha is linear
            break;
        case VK_FORMAT_B8G8R8A8_UNORM: // bytes B, G, R, A
            px[p] = {bytes[p * 4 + 2] / 255.0, bytes[p * 4 + 1] / 255.0, bytes[p * 4] / 255.0,
                     bytes[p * 4 + 3] / 255.0};
            break;
        case VK_FORMAT_R16G16B16A16_SFLOAT:
            for (int c = 0; c < 4; ++c) {
                uint16_t h;
                std::memcpy(&h, &bytes[p * 8 + c * 2], 2);
                px[p][c] = gpu::half_to_float(h);
            }
            break;
        default:
            ADD_FAILURE() << "decode_pixels: unexpected format " << format;
            return px;
        }
    }
    return px;
}

HostTensor image_to_tensor(const std::vector<std::array<double, 4>>& pixels, uint32_t width, uint32_t height,
                           uint32_t channels, ops::ChannelOrder order, const ops::PixelTransform& transform,
                           gpu::DType dtype) {
    HostTensor t({1, int64_t(channels), int64_t(height), int64_t(width)}, dtype);
    for (uint32_t c = 0; c < channels; ++c) {
        // Tensor channel c of BGR reads image channel 2 - c for the colours; alpha stays 3.
        const uint32_t src = order == ops::ChannelOrder::BGR && c < 3 ? 2 - c : c;
        for (size_t p = 0; p < size_t(width) * height; ++p)
            t.data[c * size_t(width) * height + p] =
                (pixels[p][src] * transform_value(transform.scale, c) - transform_value(transform.mean, c)) /
                transform_value(transform.std, c);
    }
    return t;
}

std::vector<std::array<double, 4>> tensor_to_pixels(const HostTensor& tensor, ops::ChannelOrder order,
                                                    const ops::PixelTransform& transform, bool clamp) {
    const auto channels = uint32_t(tensor.shape()[1]);
    const size_t plane = size_t(tensor.shape()[2] * tensor.shape()[3]);
    std::vector<std::array<double, 4>> px(plane, std::array<double, 4>{0, 0, 0, 1});
    for (uint32_t c = 0; c < channels; ++c) {
        const uint32_t dst = order == ops::ChannelOrder::BGR && c < 3 ? 2 - c : c;
        for (size_t p = 0; p < plane; ++p)
            px[p][dst] = (tensor.data[c * plane + p] * transform_value(transform.std, c) +
                          transform_value(transform.mean, c)) /
                         transform_value(transform.scale, c);
    }
    if (clamp)
        for (auto& p : px)
            for (double& v : p) v = std::clamp(v, 0.0, 1.0);
    return px;
}

} // namespace vkml::test::ref_detect
