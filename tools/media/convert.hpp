#pragma once
// Decoded frames to GPU RGB tensors and back, with vkml's colour ops (ops::YuvToRgb / RgbToYuv):
// the decoder's planes are copied as they are into a host-visible staging buffer, moved to the GPU
// and converted there with the stream's matrix and range; the reverse writes the encoder's planes
// on the GPU and reads them back. The CPU only copies rows.
#include <memory>

#include "vkml/media/reader.hpp"
#include "vkml/gpu/buffer.hpp"
#include "vkml/ops/color.hpp"

namespace vkml::media {

// The colour-op layout of an FFmpeg pixel format (AVPixelFormat), or nullopt when vkml has none.
std::optional<ops::PixelFormatSpec> gpu_layout(int av_pix_fmt);

// Frames with an alpha channel: their colour goes through the GPU conversion of the same format
// without alpha, and their alpha as a second, grey frame (planar RGB whose three planes are the
// alpha plane), so a processor treats it as an image too (an upscaler upscales it).
struct AlphaLayout {
    int colour_format = -1; // AVPixelFormat of the colour: yuva420p -> yuv420p, gbrap16le -> gbrp16le,
                            // rgba -> rgba (the conversion ignores the alpha byte and writes 255)
    int alpha_format = -1;  // gbrp or gbrpNNle with the alpha's bits: the grey frame's format
    int plane = 3;          // where the alpha is: a plane of its own,
    bool packed = false;    // or byte `offset` of every `step`-byte pixel of plane 0
    int offset = 3, step = 4;
    int bits = 8;
};
// The layout of `av_pix_fmt`'s alpha, or nullopt when it has none or vkml converts neither its
// colour nor its alpha.
std::optional<AlphaLayout> alpha_layout(int av_pix_fmt);
// Whether the GPU conversion writes frames of `av_pix_fmt` (with alpha: colour and alpha apart;
// grey: see grey_gpu_format).
bool gpu_writable(int av_pix_fmt);
// Grey video (gray, gray10le, ... gray16le) is written through planar RGB of its depth (gbrp,
// gbrp10le, ...), whose first plane (G) becomes the grey plane (FrameDownloader::read with the grey
// format): that planar RGB format, or -1 for formats that are not grey.
int grey_gpu_format(int av_pix_fmt);

// Frames in a pixel format the GPU conversion has no layout for (grey video, paletted pal8, packed
// formats of odd depths such as rgb565 or monow, grey + alpha, big-endian and subsampled formats it
// lacks) are converted on the CPU, component by component, to one it has, of the same depth or the
// next it has (8, 10, 12 or 16 bits): RGB, paletted and grey formats to planar RGB (gbrp*; grey
// into all three planes), YUV to planar 4:4:4 YUV (yuv444p*, chroma repeated), with alpha to the
// same with alpha (gbrap*, yuva444p*). cpu_conversion_format gives that format (-1: none needed)
// and throws Error(Unsupported) naming the format for those vkml cannot convert (Bayer,
// floating-point, hardware frames); convert_on_cpu makes the converted frame. Grey becomes planar
// RGB, which is full range: grey of limited range (limited_grey: the stream says tv/MPEG range) is
// expanded to full range on the way (16..235 -> 0..255 at 8 bits), its alpha is not.
int cpu_conversion_format(int av_pix_fmt);
FramePtr convert_on_cpu(const AVFrame& frame, int to_format, bool limited_grey = false);
// Whether `av_pix_fmt` is a grey format (gray*, ya*: one component, or grey + alpha). Grey streams
// are full range unless they say otherwise (FFmpeg's convention for gray, and what PNG, TIFF and
// FFV1 grey hold): VideoReader takes an unspecified range of a grey stream as full.
bool is_grey_format(int av_pix_fmt);

// A frame with alpha split in two (references to its buffers where possible): its colour as the
// colour format, and its alpha as the grey alpha-format frame.
FramePtr colour_part(const AVFrame& frame, const AlphaLayout& layout);
FramePtr alpha_part(const AVFrame& frame, const AlphaLayout& layout);
// Writes the alpha of `out` (in a format of `layout`) from plane 0 of `alpha` (the grey frame,
// alpha_format, the same size).
void merge_alpha(AVFrame& out, const AVFrame& alpha, const AlphaLayout& layout);
// Makes the alpha of `out` opaque.
void fill_alpha(AVFrame& out, const AlphaLayout& layout);

struct ConvertDesc {
    int pix_fmt = -1; // AVPixelFormat of the frames
    Size size;
    ColorMatrix matrix = ColorMatrix::Bt709;
    ColorRange range = ColorRange::Limited;
    gpu::DType dtype = gpu::DType::f32; // of the RGB tensor
    int chroma_location = 0;            // AVChromaLocation of the stream (0 = unspecified: left)
};

class FrameUploader {
public:
    FrameUploader(gpu::Device& device, const ConvertDesc& desc);
    // Host side: copies the frame's rows into the staging buffer (the frame must match the desc).
    void stage(const AVFrame& frame);
    // Records staging -> device -> RGB tensor [1, 3, H, W], with the barriers so `rgb` is ready for
    // compute reads afterwards.
    void record(gpu::CommandBuffer& cmd, const gpu::Tensor& rgb) const;
    const ConvertDesc& desc() const { return desc_; }

private:
    ConvertDesc desc_;
    ops::FrameDesc frame_;
    gpu::Buffer staging_, device_;
    std::unique_ptr<ops::YuvToRgb> op_;
};

class FrameDownloader {
public:
    FrameDownloader(gpu::Device& device, const ConvertDesc& desc);
    // Records RGB tensor (written by compute) -> encoder planes -> readback buffer.
    void record(gpu::CommandBuffer& cmd, const gpu::Tensor& rgb) const;
    // After the work completed: a new frame in desc().pix_fmt holding the planes, or in
    // `as_format` (-1: the same), a format whose first planes are laid out as desc().pix_fmt's
    // (its alpha format: yuva420p for yuv420p, the alpha left for merge_alpha; or with fewer
    // planes, as gray for gbrp: the planes it has). Planar RGB is full range: read as a grey
    // format with desc().range limited, the grey plane is scaled into the limited range (0..255 ->
    // 16..235 at 8 bits), so that a tv-range grey video comes back in its own range.
    FramePtr read(int as_format = -1) const;
    const ConvertDesc& desc() const { return desc_; }

private:
    ConvertDesc desc_;
    ops::FrameDesc frame_;
    gpu::Buffer device_, readback_;
    std::unique_ptr<ops::RgbToYuv> op_;
};

} // namespace vkml::media
