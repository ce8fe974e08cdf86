#include "convert.hpp"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "vkml/error.hpp"

namespace vkml::media {

std::optional<ops::PixelFormatSpec> gpu_layout(int av_pix_fmt) {
    const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(av_pix_fmt));
    if (!name) return std::nullopt;
    return ops::pixel_format_from_ffmpeg(name);
}

std::optional<AlphaLayout> alpha_layout(int av_pix_fmt) {
    const auto fmt = static_cast<AVPixelFormat>(av_pix_fmt);
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(fmt);
    if (!d || !(d->flags & AV_PIX_FMT_FLAG_ALPHA) || d->nb_components != 4) return std::nullopt;
    const std::string name = d->name;
    AlphaLayout l;
    const AVComponentDescriptor& a = d->comp[3];
    l.bits = a.depth;
    if (d->flags & AV_PIX_FMT_FLAG_PLANAR) {
        // yuva420p10le -> yuv420p10le, gbrap16le -> gbrp16le.
        std::string colour;
        if (name.rfind("yuva", 0) == 0)
            colour = "yuv" + name.substr(4);
        else if (name.rfind("gbrap", 0) == 0)
            colour = "gbrp" + name.substr(5);
        else
            return std::nullopt;
        if (a.shift != 0 || a.offset != 0 || (a.step != 1 && a.step != 2)) return std::nullopt;
        l.colour_format = av_get_pix_fmt(colour.c_str());
        l.plane = a.plane;
    } else {
        // Packed RGBA / BGRA: the alpha byte of each pixel; the conversion reads the colour as is.
        if (fmt != AV_PIX_FMT_RGBA && fmt != AV_PIX_FMT_BGRA) return std::nullopt;
        l.colour_format = av_pix_fmt;
        l.packed = true;
        l.plane = 0;
        l.offset = a.offset;
        l.step = a.step;
    }
    const std::string grey = l.bits == 8 ? "gbrp" : "gbrp" + std::to_string(l.bits) + "le";
    l.alpha_format = av_get_pix_fmt(grey.c_str());
    if (l.colour_format < 0 || l.alpha_format < 0 || !gpu_layout(l.colour_format) ||
        !gpu_layout(l.alpha_format))
        return std::nullopt;
    return l;
}

int grey_gpu_format(int av_pix_fmt) {
    const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(av_pix_fmt));
    if (!name || std::string_view(name).rfind("gray", 0) != 0) return -1;
    const std::string rgb = "gbrp" + std::string(name + 4); // gray10le -> gbrp10le; gray -> gbrp
    const int f = av_get_pix_fmt(rgb.c_str());
    return f >= 0 && gpu_layout(f) ? f : -1;
}

bool gpu_writable(int av_pix_fmt) {
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(av_pix_fmt));
    if (d && (d->flags & AV_PIX_FMT_FLAG_ALPHA)) {
        // rgba and bgra are written as they are (alpha 255) when the alpha is not kept.
        return alpha_layout(av_pix_fmt).has_value();
    }
    return gpu_layout(av_pix_fmt).has_value();
}

namespace {

// Bits of the deepest component of `d` (8 for paletted formats: their palette's).
int depth_of(const AVPixFmtDescriptor& d) {
    if (d.flags & AV_PIX_FMT_FLAG_PAL) return 8;
    int bits = 0;
    for (int c = 0; c < d.nb_components; ++c) bits = std::max(bits, int(d.comp[c].depth));
    return bits;
}

// Grey formats (one component, or grey + alpha), as opposed to RGB and YUV ones.
bool is_grey(const AVPixFmtDescriptor& d) {
    return !(d.flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL)) && d.nb_components <= 2;
}

// Limited-range code <-> full-range code of a grey sample at `bits` (16..235 <-> 0..255 at 8 bits).
uint16_t grey_to_full(uint32_t v, int bits) {
    const double k = std::ldexp(1.0, bits - 8), max = std::ldexp(1.0, bits) - 1;
    return uint16_t(std::lround(std::clamp((double(v) - 16 * k) * max / (219 * k), 0.0, max)));
}
uint16_t grey_to_limited(uint32_t v, int bits) {
    const double k = std::ldexp(1.0, bits - 8), max = std::ldexp(1.0, bits) - 1;
    return uint16_t(std::lround(16 * k + std::min(double(v), max) * 219 * k / max));
}

} // namespace

bool is_grey_format(int av_pix_fmt) {
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(av_pix_fmt));
    return d && is_grey(*d) && !(d->flags & (AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_BAYER));
}

int cpu_conversion_format(int av_pix_fmt) {
    const auto fmt = static_cast<AVPixelFormat>(av_pix_fmt);
    if (gpu_layout(av_pix_fmt) || alpha_layout(av_pix_fmt)) return -1;
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(fmt);
    const std::string name = d ? d->name : "unknown";
    auto refuse = [&](const std::string& why) -> int {
        throw Error(ErrorCode::Unsupported,
                    "pixel format " + name + " (" + why + ") has no conversion in vkml");
    };
    if (!d) return refuse("not a pixel format libavutil knows");
    if (d->flags & AV_PIX_FMT_FLAG_HWACCEL) return refuse("hardware frames");
    if (d->flags & AV_PIX_FMT_FLAG_BAYER) return refuse("a Bayer sensor pattern");
    if (d->flags & AV_PIX_FMT_FLAG_FLOAT) return refuse("floating-point samples");
    if (d->nb_components < 1 || d->nb_components > 4 ||
        (d->flags & AV_PIX_FMT_FLAG_PAL && d->nb_components != 1))
        return refuse("an unusual component layout");
    const int depth = depth_of(*d);
    if (depth < 1 || depth > 16) return refuse(std::to_string(depth) + "-bit samples");
    const int bits = depth <= 8 ? 8 : depth <= 10 ? 10 : depth <= 12 ? 12 : 16;
    const bool alpha = d->flags & AV_PIX_FMT_FLAG_ALPHA;
    const bool rgb = (d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL)) || is_grey(*d);
    const std::string target =
        std::string(rgb ? (alpha ? "gbrap" : "gbrp") : (alpha ? "yuva444p" : "yuv444p")) +
        (bits == 8 ? "" : std::to_string(bits) + "le");
    const int to = av_get_pix_fmt(target.c_str());
    if (to < 0 || !(alpha ? alpha_layout(to).has_value() : gpu_layout(to).has_value()))
        return refuse("vkml would convert it to " + target + ", which it lacks");
    return to;
}

FramePtr convert_on_cpu(const AVFrame& frame, int to_format, bool limited_grey) {
    const AVPixFmtDescriptor* sd = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(frame.format));
    const AVPixFmtDescriptor* td = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(to_format));
    if (!sd || !td) throw Error(ErrorCode::InvalidArgument, "convert_on_cpu: unknown pixel format");
    FramePtr out = make_frame();
    out->format = to_format;
    out->width = frame.width;
    out->height = frame.height;
    if (int ret = av_frame_get_buffer(out.get(), 0); ret < 0)
        throw Error(ErrorCode::OutOfHostMemory, "cannot allocate a converted frame: " + av_error(ret));
    // av_write_image_line2 ORs samples into what is there: start from zeros.
    for (AVBufferRef* b : out->buf)
        if (b) std::memset(b->data, 0, b->size);
    if (int ret = av_frame_copy_props(out.get(), &frame); ret < 0)
        throw Error(ErrorCode::OutOfHostMemory, "cannot copy a frame's properties: " + av_error(ret));
    const int w = frame.width, h = frame.height;
    const uint32_t to_max = (1u << depth_of(*td)) - 1;
    const bool pal = sd->flags & AV_PIX_FMT_FLAG_PAL, grey = is_grey(*sd);
    const bool white_is_zero = frame.format == AV_PIX_FMT_MONOWHITE;
    const uint8_t* src[4] = {frame.data[0], frame.data[1], frame.data[2], frame.data[3]};
    std::vector<uint16_t> line(static_cast<size_t>(w)), part(static_cast<size_t>(w));
    for (int c = 0; c < td->nb_components; ++c) {
        const bool target_alpha = c == 3;
        // The source component: grey into R, G and B (its alpha into A); others as they are.
        const int sc = grey ? (target_alpha ? 1 : 0) : c;
        const uint32_t from_max = (1u << (pal ? 8 : sd->comp[sc].depth)) - 1;
        for (int y = 0; y < h; ++y) {
            if (pal) {
                // Indices, then the palette's ARGB entries (native-endian 32-bit words in data[1]).
                av_read_image_line2(line.data(), src, frame.linesize, sd, 0, y, 0, w, 0, 2);
                const auto* entries = reinterpret_cast<const uint32_t*>(frame.data[1]);
                // R, G, B, A in the component order of RGB descriptors.
                const int shift = c == 0 ? 16 : c == 1 ? 8 : c == 2 ? 0 : 24;
                for (int x = 0; x < w; ++x)
                    line[size_t(x)] = uint16_t((entries[line[size_t(x)] & 255] >> shift) & 255);
            } else {
                const bool chroma = !(sd->flags & AV_PIX_FMT_FLAG_RGB) && !grey && (sc == 1 || sc == 2);
                const int cw = chroma ? -((-w) >> sd->log2_chroma_w) : w;
                const int cy = chroma ? y >> sd->log2_chroma_h : y;
                av_read_image_line2(part.data(), src, frame.linesize, sd, 0, cy, sc, cw, 0, 2);
                for (int x = 0; x < w; ++x)
                    line[size_t(x)] = part[size_t(chroma ? x >> sd->log2_chroma_w : x)];
                if (white_is_zero)
                    for (uint16_t& v : line) v = uint16_t(from_max - v);
                if (grey && limited_grey && !target_alpha)
                    for (uint16_t& v : line) v = grey_to_full(v, sd->comp[sc].depth);
            }
            if (from_max != to_max)
                for (uint16_t& v : line) v = uint16_t((uint32_t(v) * to_max + from_max / 2) / from_max);
            av_write_image_line2(line.data(), out->data, out->linesize, td, 0, y, c, w, 2);
        }
    }
    return out;
}

FramePtr colour_part(const AVFrame& frame, const AlphaLayout& layout) {
    FramePtr f = make_frame();
    if (av_frame_ref(f.get(), &frame) < 0) throw Error(ErrorCode::OutOfHostMemory, "av_frame_ref failed");
    f->format = layout.colour_format;
    if (!layout.packed) {
        f->data[layout.plane] = nullptr;
        f->linesize[layout.plane] = 0;
    }
    return f;
}

FramePtr alpha_part(const AVFrame& frame, const AlphaLayout& layout) {
    FramePtr f = make_frame();
    if (!layout.packed) {
        // The alpha plane itself, three times: a grey planar-RGB frame sharing the buffers.
        if (av_frame_ref(f.get(), &frame) < 0) throw Error(ErrorCode::OutOfHostMemory, "av_frame_ref failed");
        f->format = layout.alpha_format;
        uint8_t* plane = frame.data[layout.plane];
        const int stride = frame.linesize[layout.plane];
        for (int p = 0; p < 3; ++p) {
            f->data[p] = plane;
            f->linesize[p] = stride;
        }
        f->data[3] = nullptr;
        f->linesize[3] = 0;
        return f;
    }
    // Packed: the alpha bytes copied out into a plane.
    f->format = layout.alpha_format;
    f->width = frame.width;
    f->height = frame.height;
    if (av_frame_get_buffer(f.get(), 0) < 0)
        throw Error(ErrorCode::OutOfHostMemory, "alpha frame allocation failed");
    for (int y = 0; y < frame.height; ++y) {
        const uint8_t* src = frame.data[0] + int64_t(y) * frame.linesize[0] + layout.offset;
        uint8_t* dst = f->data[0] + int64_t(y) * f->linesize[0];
        for (int x = 0; x < frame.width; ++x) dst[x] = src[int64_t(x) * layout.step];
    }
    for (int p = 1; p < 3; ++p) {
        f->data[p] = f->data[0];
        f->linesize[p] = f->linesize[0];
    }
    return f;
}

void merge_alpha(AVFrame& out, const AVFrame& alpha, const AlphaLayout& layout) {
    if (alpha.width != out.width || alpha.height != out.height)
        throw Error(ErrorCode::InvalidArgument, "merge_alpha: the alpha frame's size differs");
    const int bytes = layout.bits > 8 ? 2 : 1;
    for (int y = 0; y < out.height; ++y) {
        const uint8_t* src = alpha.data[0] + int64_t(y) * alpha.linesize[0];
        if (layout.packed) {
            uint8_t* dst = out.data[0] + int64_t(y) * out.linesize[0] + layout.offset;
            for (int x = 0; x < out.width; ++x) dst[int64_t(x) * layout.step] = src[x];
        } else {
            std::memcpy(out.data[layout.plane] + int64_t(y) * out.linesize[layout.plane], src,
                        size_t(out.width) * bytes);
        }
    }
}

void fill_alpha(AVFrame& out, const AlphaLayout& layout) {
    const int max = (1 << layout.bits) - 1;
    for (int y = 0; y < out.height; ++y) {
        uint8_t* row = out.data[layout.plane] + int64_t(y) * out.linesize[layout.plane];
        for (int x = 0; x < out.width; ++x) {
            if (layout.packed)
                row[int64_t(x) * layout.step + layout.offset] = uint8_t(max);
            else if (layout.bits > 8)
                reinterpret_cast<uint16_t*>(row)[x] = uint16_t(max);
            else
                row[x] = uint8_t(max);
        }
    }
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

FramePtr FrameDownloader::read(int as_format) const {
    FramePtr f = make_frame();
    f->format = as_format >= 0 ? as_format : desc_.pix_fmt;
    f->width = desc_.size.width;
    f->height = desc_.size.height;
    const int ret = av_frame_get_buffer(f.get(), 0);
    if (ret < 0) throw Error(ErrorCode::OutOfHostMemory, "cannot allocate an output frame: " + av_error(ret));
    const std::byte* base = readback_.mapped();
    const uint32_t planes = std::min<uint32_t>(
        ops::plane_count(frame_.format),
        uint32_t(std::max(0, av_pix_fmt_count_planes(static_cast<AVPixelFormat>(f->format)))));
    for (uint32_t p = 0; p < planes; ++p) {
        const uint64_t row = row_bytes(frame_, p);
        const uint32_t rows = ops::plane_samples(frame_.format, frame_.width, frame_.height, p)[1];
        const ops::PlaneDesc& pd = frame_.planes[p];
        for (uint32_t y = 0; y < rows; ++y)
            std::memcpy(f->data[p] + int64_t(y) * f->linesize[p], base + pd.offset + y * pd.stride, row);
    }
    const AVPixFmtDescriptor* fd = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(f->format));
    if (desc_.range == ColorRange::Limited && fd && fd->nb_components == 1 && is_grey(*fd)) {
        // The G plane of full-range planar RGB as tv-range grey.
        std::vector<uint16_t> line(static_cast<size_t>(f->width));
        const int bits = fd->comp[0].depth;
        const int row_bytes_of_grey = av_image_get_linesize(static_cast<AVPixelFormat>(f->format), f->width, 0);
        const uint8_t* rows[4] = {f->data[0], f->data[1], f->data[2], f->data[3]};
        for (int y = 0; y < f->height; ++y) {
            av_read_image_line2(line.data(), rows, f->linesize, fd, 0, y, 0, f->width, 0, 2);
            for (uint16_t& v : line) v = grey_to_limited(v, bits);
            // av_write_image_line2 ORs samples into what is there.
            std::memset(f->data[0] + int64_t(y) * f->linesize[0], 0, size_t(row_bytes_of_grey));
            av_write_image_line2(line.data(), f->data, f->linesize, fd, 0, y, 0, f->width, 2);
        }
    }
    return f;
}

} // namespace vkml::media
