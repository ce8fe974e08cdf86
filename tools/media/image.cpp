#include "image.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
}

#include <stb_image.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include "vkml/media/output_file.hpp"
#include "vkml/error.hpp"

namespace vkml::media {

namespace fs = std::filesystem;

namespace {

std::string lower_ext(const fs::path& p) {
    std::string e = p.extension().string();
    std::transform(e.begin(), e.end(), e.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return e;
}

bool is_jpeg(const fs::path& p) {
    const std::string e = lower_ext(p);
    return e == ".jpg" || e == ".jpeg";
}

[[noreturn]] void fail(const fs::path& p, const std::string& what) {
    throw Error(ErrorCode::Io, "'" + p.string() + "': " + what);
}

// Sample (x, y) of plane p of a planar frame of 8 or 16 (little-endian) bits.
int sample(const AVFrame& f, int p, int x, int y, bool wide) {
    const uint8_t* row = f.data[p] + int64_t(y) * f.linesize[p];
    if (!wide) return row[x];
    return row[2 * x] | (row[2 * x + 1] << 8);
}

void append_bytes(void* context, void* data, int size) {
    auto* out = static_cast<std::vector<uint8_t>*>(context);
    const auto* p = static_cast<const uint8_t*>(data);
    out->insert(out->end(), p, p + size);
}

// A PNG of `packed` (in rgb24, rgba, gray, ya8, rgb48be, rgba64be, gray16be or ya16be) through
// libavcodec's encoder.
std::vector<uint8_t> encode_png(const AVFrame& packed, const fs::path& path) {
    const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
    if (!codec) fail(path, "this FFmpeg has no PNG encoder");
    std::unique_ptr<AVCodecContext, void (*)(AVCodecContext*)> ctx(
        avcodec_alloc_context3(codec), [](AVCodecContext* c) { avcodec_free_context(&c); });
    if (!ctx) throw Error(ErrorCode::OutOfHostMemory, "avcodec_alloc_context3 failed");
    ctx->width = packed.width;
    ctx->height = packed.height;
    ctx->pix_fmt = static_cast<AVPixelFormat>(packed.format);
    ctx->time_base = {1, 1};
    int ret = avcodec_open2(ctx.get(), codec, nullptr);
    if (ret < 0) fail(path, "cannot open the PNG encoder (" + av_error(ret) + ")");
    ret = avcodec_send_frame(ctx.get(), &packed);
    if (ret >= 0) ret = avcodec_send_frame(ctx.get(), nullptr);
    PacketPtr pkt = make_packet();
    if (ret >= 0) ret = avcodec_receive_packet(ctx.get(), pkt.get());
    if (ret < 0) fail(path, "cannot encode the image (" + av_error(ret) + ")");
    return {pkt->data, pkt->data + pkt->size};
}

} // namespace

FramePtr load_image(const fs::path& path, ImageKind& kind) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot read the image");
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return decode_image(bytes, path, kind);
}

FramePtr decode_image(std::span<const uint8_t> bytes, const fs::path& path, ImageKind& kind, int64_t max_pixels) {
    if (bytes.empty()) fail(path, "cannot read the image (empty file)");
    const int len = static_cast<int>(std::min<size_t>(bytes.size(), size_t(INT32_MAX)));
    int w = 0, h = 0, c = 0;
    // The size from the header first: a small file may claim (and, compressed, hold) gigabytes.
    if (stbi_info_from_memory(bytes.data(), len, &w, &h, &c) && int64_t(w) * int64_t(h) > max_pixels)
        fail(path, std::to_string(w) + "x" + std::to_string(h) + " pixels: more than vkml reads (" +
                       std::to_string(max_pixels) + ")");
    const bool wide = stbi_is_16_bit_from_memory(bytes.data(), len) != 0;
    std::unique_ptr<void, void (*)(void*)> px(
        wide ? static_cast<void*>(stbi_load_16_from_memory(bytes.data(), len, &w, &h, &c, 0))
             : static_cast<void*>(stbi_load_from_memory(bytes.data(), len, &w, &h, &c, 0)),
        stbi_image_free);
    if (!px) fail(path, std::string("cannot read the image (") + stbi_failure_reason() + ")");
    kind = {c, wide ? 16 : 8};
    FramePtr f = make_frame();
    f->format = kind.alpha() ? (wide ? AV_PIX_FMT_GBRAP16LE : AV_PIX_FMT_GBRAP)
                             : (wide ? AV_PIX_FMT_GBRP16LE : AV_PIX_FMT_GBRP);
    f->width = w;
    f->height = h;
    if (av_frame_get_buffer(f.get(), 0) < 0)
        throw Error(ErrorCode::OutOfHostMemory, "image frame allocation failed");
    // stb's interleaved channels into the planes G, B, R (and A): grey into all three.
    const int to_plane[4][4] = {{0, -1, -1, -1}, {0, 3, -1, -1}, {2, 0, 1, -1}, {2, 0, 1, 3}};
    for (int y = 0; y < h; ++y)
        for (int k = 0; k < c; ++k) {
            const int plane = to_plane[c - 1][k];
            for (int copy = 0; copy < (kind.grey() && k == 0 ? 3 : 1); ++copy) {
                const int p = kind.grey() && k == 0 ? copy : plane;
                uint8_t* row = f->data[p] + int64_t(y) * f->linesize[p];
                if (wide) {
                    const uint16_t* src = static_cast<const uint16_t*>(px.get()) + (int64_t(y) * w) * c + k;
                    for (int x = 0; x < w; ++x) {
                        const uint16_t v = src[int64_t(x) * c];
                        row[2 * x] = uint8_t(v & 0xff);
                        row[2 * x + 1] = uint8_t(v >> 8);
                    }
                } else {
                    const uint8_t* src = static_cast<const uint8_t*>(px.get()) + (int64_t(y) * w) * c + k;
                    for (int x = 0; x < w; ++x) row[x] = src[int64_t(x) * c];
                }
            }
        }
    return f;
}

ImageKind image_kind_for(const fs::path& path, const ImageKind& kind) {
    if (!is_jpeg(path)) return kind;
    return {kind.grey() ? 1 : 3, 8};
}

std::string image_loss(const fs::path& path, const ImageKind& kind) {
    const ImageKind out = image_kind_for(path, kind);
    const bool alpha = kind.alpha() && !out.alpha(), bits = out.bits < kind.bits;
    const std::string name = "'" + path.string() + "': ";
    const std::string depth = "the " + std::to_string(kind.bits) + " bits become " + std::to_string(out.bits);
    if (alpha && bits)
        return name + "JPEG has no alpha channel and 8 bits: the alpha is dropped and " + depth +
               " (a .png keeps both)";
    if (alpha) return name + "JPEG has no alpha channel: the alpha is dropped (a .png keeps it)";
    if (bits) return name + "JPEG has 8 bits: " + depth + " (a .png keeps them)";
    return "";
}

void save_image(const AVFrame& f, const ImageKind& kind, const fs::path& path) {
    const ImageKind out = image_kind_for(path, kind);
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(f.format));
    const bool wide = d && d->comp[0].depth > 8, has_alpha = d && (d->flags & AV_PIX_FMT_FLAG_ALPHA);
    const int w = f.width, h = f.height, c = out.channels;
    const int max_in = wide ? 65535 : 255;
    // Channel k of output pixel (x, y) at the input's depth: R, G, B from planes 2, 0, 1; grey as
    // BT.601 luma; alpha from plane 3 (opaque when the frame has none).
    auto value = [&](int x, int y, int k) -> int {
        const bool alpha_k = out.alpha() && k == c - 1;
        if (alpha_k) return has_alpha ? sample(f, 3, x, y, wide) : max_in;
        if (out.grey()) {
            const double l = 0.299 * sample(f, 2, x, y, wide) + 0.587 * sample(f, 0, x, y, wide) +
                             0.114 * sample(f, 1, x, y, wide);
            return std::clamp(static_cast<int>(std::lround(l)), 0, max_in);
        }
        static constexpr int plane_of[3] = {2, 0, 1};
        return sample(f, plane_of[k], x, y, wide);
    };
    std::vector<uint8_t> bytes;
    if (is_jpeg(path)) {
        std::vector<uint8_t> px(size_t(w) * h * c);
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                for (int k = 0; k < c; ++k) {
                    const int v = value(x, y, k);
                    px[(size_t(y) * w + x) * c + k] =
                        static_cast<uint8_t>(wide ? (v * 255 + 32767) / 65535 : v);
                }
        if (!stbi_write_jpg_to_func(append_bytes, &bytes, w, h, c, px.data(), 95) || bytes.empty())
            fail(path, "cannot encode the image");
    } else {
        static constexpr AVPixelFormat eight[4] = {AV_PIX_FMT_GRAY8, AV_PIX_FMT_YA8, AV_PIX_FMT_RGB24,
                                                   AV_PIX_FMT_RGBA};
        static constexpr AVPixelFormat sixteen[4] = {AV_PIX_FMT_GRAY16BE, AV_PIX_FMT_YA16BE,
                                                     AV_PIX_FMT_RGB48BE, AV_PIX_FMT_RGBA64BE};
        const bool wide_out = out.bits == 16;
        FramePtr packed = make_frame();
        packed->format = (wide_out ? sixteen : eight)[c - 1];
        packed->width = w;
        packed->height = h;
        if (av_frame_get_buffer(packed.get(), 0) < 0)
            throw Error(ErrorCode::OutOfHostMemory, "image frame allocation failed");
        for (int y = 0; y < h; ++y) {
            uint8_t* row = packed->data[0] + int64_t(y) * packed->linesize[0];
            for (int x = 0; x < w; ++x)
                for (int k = 0; k < c; ++k) {
                    int v = value(x, y, k);
                    if (wide_out && !wide) v *= 257; // (an 8-bit frame written as 16-bit: not done today)
                    if (wide_out) {
                        row[(x * c + k) * 2] = uint8_t(v >> 8); // big endian, as PNG stores it
                        row[(x * c + k) * 2 + 1] = uint8_t(v & 0xff);
                    } else {
                        row[x * c + k] = uint8_t(v);
                    }
                }
        }
        bytes = encode_png(*packed, path);
    }
    write_file_atomically(path, bytes);
}

} // namespace vkml::media
