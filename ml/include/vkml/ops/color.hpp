#pragma once
// Operator family "color": conversions between decoded video frames (planar / semi-planar YUV,
// packed RGB) and NCHW RGB tensors, on the GPU, so a video pipeline uploads the decoder's planes
// as they are and never converts pixels on the CPU.
//
// The frame lives in one buffer: each plane is described by its byte offset and its row stride
// in bytes, which is exactly FFmpeg's AVFrame layout (data[i] - base, linesize[i]) once the planes
// are copied into one upload buffer, padding and all. The shaders read and write 32-bit words
// (no 8-bit storage feature needed): any plane offset and stride works for reading; writing
// (RgbToYuv) needs offsets and strides that are multiples of 4, as each invocation owns whole words.
//
//   ops::FrameDesc frame{.format = ops::PixelFormat::Yuv420p, .width = 1920, .height = 1080,
//                        .planes = {{0, 1920}, {1920 * 1080, 960}, {1920 * 1080 + 960 * 540, 960}},
//                        .matrix = ops::ColorMatrix::Bt709, .range = ops::ColorRange::Limited};
//   auto to_rgb = ops::YuvToRgb::create(device, {.frame = frame, .dtype = DType::f16});
//   to_rgb->record(cmd, upload_buffer.range(), rgb_tensor);      // rgb_tensor: f16[1, 3, 1080, 1920]
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vkml/ops/op.hpp"

namespace vkml::ops {

// The layouts of a decoded frame. Planar formats have 3 planes (Y, U = Cb, V = Cr); semi-planar
// ones 2 (Y, interleaved UV); packed RGB ones 1.
enum class PixelFormat : uint8_t {
    Yuv420p,   // 8-bit planar, chroma halved in x and y            (FFmpeg yuv420p, yuvj420p)
    Yuv422p,   // 8-bit planar, chroma halved in x                  (yuv422p, yuvj422p)
    Yuv444p,   // 8-bit planar, full chroma                         (yuv444p, yuvj444p)
    Nv12,      // 8-bit Y plane + interleaved U,V plane, 4:2:0      (nv12)
    Yuv420p10, // 16-bit little-endian containers, value in the LOW `bits` bits (yuv420p10le, p12le...)
    Yuv422p10, //                                                   (yuv422p10le, yuv422p12le)
    Yuv444p10, //                                                   (yuv444p10le, yuv444p12le)
    P010,      // 16-bit Y + interleaved U,V, 4:2:0, value in the HIGH `bits` bits (p010le, p012le, p016le)
    Rgb24,     // packed R,G,B bytes                                (rgb24)
    Rgba,      // packed R,G,B,A bytes (alpha ignored on read, 255 on write)  (rgba, rgb0)
    Bgra,      // packed B,G,R,A bytes                              (bgra, bgr0)
    Gbrp,      // 8-bit planar RGB, planes in the order G, B, R     (gbrp, gbrap without its alpha)
    Gbrp16,    // 16-bit little-endian planar G, B, R, value in the LOW `bits` bits (gbrp10le .. gbrp16le)
};
const char* pixel_format_name(PixelFormat format); // "yuv420p", "p010", ...

// Colour matrix (Kr, Kb of the standard): BT.601 (0.299, 0.114), BT.709 (0.2126, 0.0722),
// BT.2020 non-constant luminance (0.2627, 0.0593). Ignored by the RGB formats (packed and planar).
enum class ColorMatrix : uint8_t { Bt601, Bt709, Bt2020 };
// Limited ("tv", MPEG): Y in 16..235, chroma in 16..240 (times 2^(bits-8)). Full ("pc", JPEG):
// 0..2^bits-1, chroma centred on 2^(bits-1). Ignored by the RGB formats (always full: 0..2^bits-1).
enum class ColorRange : uint8_t { Limited, Full };

// How YuvToRgb brings subsampled chroma to full resolution. Bilinear interpolates between chroma
// samples at their sited positions (clamped at the edges); Nearest repeats each sample over its
// 2x2 / 2x1 block (fastest, blocky edges).
enum class ChromaFilter : uint8_t { Bilinear, Nearest };
// Where subsampled chroma samples sit relative to luma (AVChromaLocation):
//   Left:    horizontally on even luma columns, vertically between rows (MPEG-2, H.264, HEVC default)
//   Center:  between luma columns and rows (JPEG, MPEG-1)
//   TopLeft: on even columns and even rows (some BT.2020 / HDR streams)
// For 4:2:2 only the horizontal part applies. RgbToYuv always averages the 2x2 / 2x1 block.
enum class ChromaSiting : uint8_t { Left, Center, TopLeft };

// One plane of the frame in the bound buffer.
struct PlaneDesc {
    uint64_t offset = 0; // bytes from the start of the bound buffer range to the first row
    uint64_t stride = 0; // bytes from one row to the next (FFmpeg's linesize; > 0, >= the row's bytes)
};

struct FrameDesc {
    PixelFormat format = PixelFormat::Yuv420p;
    uint32_t width = 0, height = 0; // luma size; chroma is ceil(width / 2) etc. (odd sizes work)
    // Planes in the order Y, U, V (planar), Y, UV (semi-planar) or the one packed plane; unused
    // entries are ignored.
    std::array<PlaneDesc, 3> planes{};
    // Significant bits of the 16-bit formats: 9..16 (0 = 10). Must be 0 or 8 for the 8-bit formats.
    uint32_t bits = 0;
    ColorMatrix matrix = ColorMatrix::Bt709;
    ColorRange range = ColorRange::Limited;
};

// Number of planes of `format` (1, 2 or 3), and the size in samples of plane `plane` of a frame:
// {columns of samples (UV pairs count as 2), rows}; bytes of a row = columns * bytes per sample.
uint32_t plane_count(PixelFormat format);
std::array<uint32_t, 2> plane_samples(PixelFormat format, uint32_t width, uint32_t height, uint32_t plane);
uint32_t bytes_per_sample(PixelFormat format); // 1 or 2
// A tightly packed layout (rows padded to `row_align` bytes, planes one after another), e.g. for
// tests, for a staging buffer, or to write an encoder's frame.
FrameDesc packed_frame(PixelFormat format, uint32_t width, uint32_t height, uint32_t row_align = 4);
// Bytes a buffer must have for `frame` (the end of its last plane's last row, rounded up to a
// multiple of 4 because the shaders read whole words).
uint64_t frame_bytes(const FrameDesc& frame);

// FFmpeg's pixel format name ("yuv420p", "yuvj420p", "nv12", "yuv420p10le", "yuv422p12le",
// "p010le", "rgb24", "rgba", "rgb0", "bgra", "bgr0", "gbrp", "gbrp16le", ...) as a format and bits;
// nullopt when vkml has no layout for it. (The "j" formats only imply ColorRange::Full.)
struct PixelFormatSpec {
    PixelFormat format = PixelFormat::Yuv420p;
    uint32_t bits = 8;
    bool full_range_hint = false; // a yuvj* name
};
std::optional<PixelFormatSpec> pixel_format_from_ffmpeg(std::string_view name);

// ---------------------------------------------------------------------------------------------
// YuvToRgb: frame -> NCHW RGB tensor [1, 3, height, width] (f32 or f16), values in [0, 1]
// (clamped). One invocation per output pixel, 16x16 pixels per workgroup, one dispatch.
// Input: the frame's buffer, either as a u8 tensor [frame_bytes(frame)] through Op::record or as
// any buffer range through record() below (the range's offset must be aligned to the device's
// minStorageBufferOffsetAlignment; FrameDesc offsets are relative to it).
struct YuvToRgbDesc {
    FrameDesc frame;
    DType dtype = DType::f32; // of the output: f32 or f16
    ChromaFilter filter = ChromaFilter::Bilinear;
    ChromaSiting siting = ChromaSiting::Left;
};

class YuvToRgb final : public Op {
public:
    static std::unique_ptr<YuvToRgb> create(gpu::Device& device, const YuvToRgbDesc& desc);
    const char* type() const override { return "YuvToRgb"; }
    const YuvToRgbDesc& desc() const { return desc_; }
    // Records the conversion of the frame in `frame` (at least frame_bytes() long) into `rgb`.
    void record(gpu::CommandBuffer& cmd, const gpu::BufferRange& frame, const Tensor& rgb) const;
    using Op::record;

    YuvToRgb(gpu::Device& device, const YuvToRgbDesc& desc); // use create()

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    YuvToRgbDesc desc_;
    std::array<uint32_t, 32> push_{};
    const gpu::Pipeline* pipeline_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// RgbToYuv: NCHW RGB tensor [1, 3, height, width] (f32 or f16) -> frame. RGB is clamped to
// [0, 1], converted with the matrix and range, subsampled chroma is the mean over each 2x2 / 2x1
// block (fewer pixels at odd edges), rounded to nearest and clamped to the code range. Every byte
// of every row up to the row's bytes rounded up to 4 is written (the padding with 0); other bytes
// of the buffer are untouched. Plane offsets and strides must be multiples of 4. One invocation
// per 32-bit word of output, one dispatch.
// Output: the frame's buffer, as a u8 tensor [frame_bytes(frame)] through Op::record or any
// buffer range through record() below.
struct RgbToYuvDesc {
    FrameDesc frame;
    DType dtype = DType::f32; // of the input: f32 or f16
};

class RgbToYuv final : public Op {
public:
    static std::unique_ptr<RgbToYuv> create(gpu::Device& device, const RgbToYuvDesc& desc);
    const char* type() const override { return "RgbToYuv"; }
    const RgbToYuvDesc& desc() const { return desc_; }
    void record(gpu::CommandBuffer& cmd, const Tensor& rgb, const gpu::BufferRange& frame) const;
    using Op::record;

    RgbToYuv(gpu::Device& device, const RgbToYuvDesc& desc); // use create()

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    RgbToYuvDesc desc_;
    std::array<uint32_t, 32> push_{};
    uint64_t words_ = 0; // output words, one invocation each
    const gpu::Pipeline* pipeline_ = nullptr;
};

} // namespace vkml::ops
