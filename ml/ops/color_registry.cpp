#include "families.hpp"

namespace vkml::ops::detail {

// Kernels and limits: see ml/include/vkml/ops/color.hpp and ml/ops/color.cpp.
void add_color_ops(std::vector<OpInfo>& out) {
    const std::string f = "Color";
    out.push_back({"YuvToRgb", f, "u8 frame -> f32, f16",
                   "vkml op, not ONNX: a decoded frame (yuv420p, yuv422p, yuv444p, nv12, 16-bit planar "
                   "yuv420p/422p/444p with 9..16 LSB-aligned bits, p010/p012/p016 MSB-aligned, rgb24, rgba, "
                   "bgra, planar gbrp at 8 or 9..16 LSB-aligned bits; each plane an offset and byte stride "
                   "in one buffer, FFmpeg's linesizes) -> NCHW "
                   "[1, 3, H, W] RGB in [0, 1] (clamped); BT.601 / BT.709 / BT.2020-NCL, limited or full "
                   "range; chroma bilinear (left, center or top-left siting) or nearest; odd sizes; one "
                   "invocation per pixel reading 32-bit words (no 8-bit storage needed)"});
    out.push_back({"RgbToYuv", f, "f32, f16 -> u8 frame",
                   "vkml op, not ONNX: NCHW [1, 3, H, W] RGB (clamped to [0, 1]) -> any YuvToRgb layout; "
                   "chroma is the mean over each 2x2 / 2x1 block (clipped at odd edges), codes rounded to "
                   "nearest and clamped; plane offsets and strides multiples of 4; one invocation per 32-bit "
                   "output word, row padding up to the next word written as 0"});
}

} // namespace vkml::ops::detail
