#pragma once
// Decoded frames to GPU RGB tensors and back, with vkml's colour ops (ops::YuvToRgb / RgbToYuv):
// the decoder's planes are copied as they are into a host-visible staging buffer, moved to the GPU
// and converted there with the stream's matrix and range; the reverse writes the encoder's planes
// on the GPU and reads them back. The CPU only copies rows.
#include <memory>

#include "reader.hpp"
#include "vkml/gpu/buffer.hpp"
#include "vkml/ops/color.hpp"

namespace vkml::media {

// The colour-op layout of an FFmpeg pixel format (AVPixelFormat), or nullopt when vkml has none.
std::optional<ops::PixelFormatSpec> gpu_layout(int av_pix_fmt);

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
    // After the work completed: a new frame in desc().pix_fmt holding the planes.
    FramePtr read() const;
    const ConvertDesc& desc() const { return desc_; }

private:
    ConvertDesc desc_;
    ops::FrameDesc frame_;
    gpu::Buffer device_, readback_;
    std::unique_ptr<ops::RgbToYuv> op_;
};

} // namespace vkml::media
