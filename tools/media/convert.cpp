#include "convert.hpp"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
}

#include <cstring>

#include "vkml/error.hpp"

namespace vkml::media {

std::optional<ops::PixelFormatSpec> gpu_layout(int av_pix_fmt) {
    const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(av_pix_fmt));
    if (!name) return std::nullopt;
    return ops::pixel_format_from_ffmpeg(name);
}

namespace {

ops::FrameDesc frame_desc(const ConvertDesc& d) {
    const auto spec = gpu_layout(d.pix_fmt);
    if (!spec) {
        const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(d.pix_fmt));
        throw Error(ErrorCode::Unsupported,
                    std::string("pixel format ") + (name ? name : "?") +
                        " has no GPU colour conversion in vkml (yuv420p/422p/444p at 8-16 "
                        "bits, nv12, p010, rgb24, rgba, bgra)");
    }
    ops::FrameDesc f = ops::packed_frame(spec->format, static_cast<uint32_t>(d.size.width),
                                         static_cast<uint32_t>(d.size.height), 4);
    f.bits = spec->bits;
    f.matrix = d.matrix == ColorMatrix::Bt709    ? ops::ColorMatrix::Bt709
               : d.matrix == ColorMatrix::Bt2020 ? ops::ColorMatrix::Bt2020
                                                 : ops::ColorMatrix::Bt601;
    f.range = d.range == ColorRange::Full || spec->full_range_hint ? ops::ColorRange::Full
                                                                   : ops::ColorRange::Limited;
    return f;
}

ops::ChromaSiting siting_of(int loc) {
    switch (static_cast<AVChromaLocation>(loc)) {
    case AVCHROMA_LOC_CENTER:
        return ops::ChromaSiting::Center;
    case AVCHROMA_LOC_TOPLEFT:
        return ops::ChromaSiting::TopLeft;
    default:
        return ops::ChromaSiting::Left;
    }
}

// Row bytes of each plane, as the colour ops lay them out.
uint64_t row_bytes(const ops::FrameDesc& f, uint32_t plane) {
    return uint64_t(ops::plane_samples(f.format, f.width, f.height, plane)[0]) *
           ops::bytes_per_sample(f.format);
}

} // namespace

FrameUploader::FrameUploader(gpu::Device& device, const ConvertDesc& desc)
    : desc_(desc), frame_(frame_desc(desc)) {
    const uint64_t bytes = ops::frame_bytes(frame_);
    staging_ = gpu::Buffer(device, {.size = bytes,
                                    .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                    .memory = gpu::MemoryUsage::Upload,
                                    .name = "media upload staging"});
    device_ =
        gpu::Buffer(device, {.size = bytes,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .name = "media decoded planes"});
    // The tail word may be read by the shader but not written by the copy of the rows: zero it once.
    std::memset(staging_.mapped(), 0, bytes);
    op_ = ops::YuvToRgb::create(device, {.frame = frame_,
                                         .dtype = desc.dtype,
                                         .filter = ops::ChromaFilter::Bilinear,
                                         .siting = siting_of(desc.chroma_location)});
}

void FrameUploader::stage(const AVFrame& frame) {
    if (frame.width != desc_.size.width || frame.height != desc_.size.height || frame.format != desc_.pix_fmt)
        throw Error(ErrorCode::InvalidArgument,
                    "a frame changed size or format mid-stream (" + std::to_string(frame.width) + "x" +
                        std::to_string(frame.height) + "); vkml expects one size per stream");
    std::byte* base = staging_.mapped();
    for (uint32_t p = 0; p < ops::plane_count(frame_.format); ++p) {
        const uint64_t row = row_bytes(frame_, p);
        const uint32_t rows = ops::plane_samples(frame_.format, frame_.width, frame_.height, p)[1];
        const ops::PlaneDesc& pd = frame_.planes[p];
        for (uint32_t y = 0; y < rows; ++y)
            std::memcpy(base + pd.offset + y * pd.stride, frame.data[p] + int64_t(y) * frame.linesize[p],
                        row);
    }
}

void FrameUploader::record(gpu::CommandBuffer& cmd, const gpu::Tensor& rgb) const {
    cmd.copy(staging_.range(), device_.range(), staging_.size());
    gpu::barrier::transfer_to_compute(cmd);
    op_->record(cmd, device_.range(), rgb);
    gpu::barrier::compute_to_compute(cmd);
}

FrameDownloader::FrameDownloader(gpu::Device& device, const ConvertDesc& desc)
    : desc_(desc), frame_(frame_desc(desc)) {
    const uint64_t bytes = ops::frame_bytes(frame_);
    device_ =
        gpu::Buffer(device, {.size = bytes,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                             .name = "media encoder planes"});
    readback_ = gpu::Buffer(device, {.size = bytes,
                                     .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                     .memory = gpu::MemoryUsage::Readback,
                                     .name = "media readback"});
    op_ = ops::RgbToYuv::create(device, {.frame = frame_, .dtype = desc.dtype});
}

void FrameDownloader::record(gpu::CommandBuffer& cmd, const gpu::Tensor& rgb) const {
    // The processor wrote `rgb` with compute shaders or transfers.
    gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_TRANSFER_BIT,
                         VK_ACCESS_2_SHADER_WRITE_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT,
                         VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_READ_BIT);
    op_->record(cmd, rgb, device_.range());
    gpu::barrier::compute_to_transfer(cmd);
    cmd.copy(device_.range(), readback_.range(), device_.size());
    gpu::barrier::to_host(cmd);
}

FramePtr FrameDownloader::read() const {
    FramePtr f = make_frame();
    f->format = desc_.pix_fmt;
    f->width = desc_.size.width;
    f->height = desc_.size.height;
    const int ret = av_frame_get_buffer(f.get(), 0);
    if (ret < 0) throw Error(ErrorCode::OutOfHostMemory, "cannot allocate an output frame: " + av_error(ret));
    const std::byte* base = readback_.mapped();
    for (uint32_t p = 0; p < ops::plane_count(frame_.format); ++p) {
        const uint64_t row = row_bytes(frame_, p);
        const uint32_t rows = ops::plane_samples(frame_.format, frame_.width, frame_.height, p)[1];
        const ops::PlaneDesc& pd = frame_.planes[p];
        for (uint32_t y = 0; y < rows; ++y)
            std::memcpy(f->data[p] + int64_t(y) * f->linesize[p], base + pd.offset + y * pd.stride, row);
    }
    return f;
}

} // namespace vkml::media
