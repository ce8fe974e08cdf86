#pragma once
// Double-precision references for the colour family, written from the standards (ITU-R BT.601,
// BT.709, BT.2020: Kr/Kb, code ranges) and FFmpeg's documented plane layouts, independently of
// the GPU kernels: the forward matrix is built from Kr/Kb and inverted numerically, frame
// geometry is derived here from the format's own description.
#include <array>
#include <cstdint>
#include <vector>

#include "vkml/ops/color.hpp"

namespace vkml::test::ref_color {

// Geometry of a format as the reference understands it.
struct Layout {
    int planes = 3;           // 1 packed, 2 semi-planar, 3 planar
    int bytes = 1;            // per sample
    bool msb = false;         // 16-bit value in the high bits
    int sub_x = 1, sub_y = 1; // chroma subsampling factors
    int pixel_bytes = 0;      // packed formats: 3 or 4
    int r = 0, g = 1, b = 2;  // packed: byte index of each channel; planar RGB: plane of each
    bool rgb = false;         // an RGB format (packed or planar): no matrix, full range
};
Layout layout_of(ops::PixelFormat format);
int bits_of(const ops::FrameDesc& frame);
// Samples of a row (UV pairs count 2, packed rows count bytes) and rows of plane `p`.
std::array<int, 2> plane_size(const ops::FrameDesc& frame, int p);

// Reads sample (col, row) of plane p as its code value.
int read_code(const ops::FrameDesc& frame, const std::vector<uint8_t>& bytes, int p, int col, int row);
void write_code(const ops::FrameDesc& frame, std::vector<uint8_t>& bytes, int p, int col, int row, int code);

// frame -> planar RGB [3][H][W] in [0, 1].
std::vector<double> yuv_to_rgb(const ops::FrameDesc& frame, const std::vector<uint8_t>& bytes,
                               ops::ChromaFilter filter, ops::ChromaSiting siting);
// planar RGB [3][H][W] -> frame, written into `bytes` (which keeps its other bytes); row padding
// up to a multiple of 4 bytes is written as 0, as the op documents.
void rgb_to_yuv(const ops::FrameDesc& frame, const std::vector<double>& rgb, std::vector<uint8_t>& bytes);

} // namespace vkml::test::ref_color
