#pragma once
// Double-precision references for the detect family, written from the ONNX specification (and
// ONNX Runtime's documented behaviour for ties and degenerate boxes) independently of the GPU
// kernels: a plain sequential NMS, and per-pixel image <-> tensor conversions from raw bytes.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "op_test.hpp"
#include "vkml/ops/detect.hpp"

namespace vkml::test::ref_detect {

struct NmsResult {
    std::vector<std::array<int64_t, 3>> selected; // (batch, class, box) in ONNX Runtime's order
    // Smallest |IoU - iou_threshold| over the pairs whose comparison decided something: a test
    // whose margin is tiny could flip between f32 (GPU) and double (here) arithmetic.
    double min_margin = 1.0;
};

// boxes [B, N, 4], scores [B, C, N].
NmsResult nms(const HostTensor& boxes, const HostTensor& scores, int64_t max_output_boxes_per_class,
              double iou_threshold, std::optional<double> score_threshold, int64_t center_point_box);

// The linear value of an sRGB-encoded channel in [0, 1] (IEC 61966-2-1).
double srgb_to_linear(double c);

// The pixels of a packed image of `format` (tightly packed rows, as a buffer -> image copy takes
// them) as RGBA values in [0, 1] (UNORM), linear values (sRGB) or stored halves (RGBA16F).
std::vector<std::array<double, 4>> decode_pixels(const std::vector<uint8_t>& bytes, VkFormat format,
                                                 uint32_t width, uint32_t height, bool linearize_srgb = true);

// ImageToTensor on decoded pixels: NCHW [1, channels, height, width].
HostTensor image_to_tensor(const std::vector<std::array<double, 4>>& pixels, uint32_t width, uint32_t height,
                           uint32_t channels, ops::ChannelOrder order, const ops::PixelTransform& transform,
                           gpu::DType dtype);

// TensorToImage's pixel values before storage (RGBA, inverse transform, clamped for UNORM).
std::vector<std::array<double, 4>> tensor_to_pixels(const HostTensor& tensor, ops::ChannelOrder order,
                                                    const ops::PixelTransform& transform, bool clamp);

} // namespace vkml::test::ref_detect
