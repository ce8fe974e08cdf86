#include "vkml/media/testclip.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "vkml/error.hpp"

namespace vkml::media {

namespace fs = std::filesystem;
void quiet_libav_log(); // reader.cpp

namespace {

[[noreturn]] void fail(const TestClipDesc& d, const std::string& what, int ret = 0) {
    throw Error(ErrorCode::Io,
                "'" + d.path.string() + "': " + what + (ret ? " (" + av_error(ret) + ")" : ""));
}

uint8_t clamp8(double v) {
    return static_cast<uint8_t>(std::clamp(std::lround(v), 0l, 255l));
}

void default_paint(int64_t i, AVFrame& f) {
    std::vector<uint8_t> rgb(size_t(f.width) * f.height * 3);
    for (int y = 0; y < f.height; ++y)
        for (int x = 0; x < f.width; ++x) {
            uint8_t* p = &rgb[(size_t(y) * f.width + x) * 3];
            p[0] = clamp8(255.0 * x / std::max(1, f.width - 1));
            p[1] = clamp8(255.0 * y / std::max(1, f.height - 1));
            p[2] = clamp8(128 + 100 * std::sin(0.3 * double(x + y) + 0.7 * double(i)));
            const int sx = static_cast<int>((i * 5) % std::max(1, f.width - 8)), sy = f.height / 3;
            if (x >= sx && x < sx + 8 && y >= sy && y < sy + 8) p[0] = p[1] = p[2] = 235;
        }
    fill_from_rgb(f, rgb.data(), f.width * 3);
}

struct Out {
    AVFormatContext* fmt = nullptr;
    AVCodecContext* venc = nullptr;
    AVCodecContext* aenc = nullptr;
    ~Out() {
        avcodec_free_context(&venc);
        avcodec_free_context(&aenc);
        if (fmt) {
            if (fmt->pb) avio_closep(&fmt->pb);
            avformat_free_context(fmt);
        }
    }
};

void drain(const TestClipDesc& d, Out& o, AVCodecContext* enc, AVStream* st) {
    PacketPtr pkt = make_packet();
    for (;;) {
        const int ret = avcodec_receive_packet(enc, pkt.get());
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
        if (ret < 0) fail(d, "encoding failed", ret);
        pkt->stream_index = st->index;
        av_packet_rescale_ts(pkt.get(), enc->time_base, st->time_base);
        const int w = av_interleaved_write_frame(o.fmt, pkt.get());
        if (w < 0) fail(d, "write failed", w);
    }
}

} // namespace

void fill_from_rgb(AVFrame& f, const uint8_t* rgb, int stride) {
    const auto fmt = static_cast<AVPixelFormat>(f.format);
    const int w = f.width, h = f.height;
    auto px = [&](int x, int y) { return rgb + int64_t(y) * stride + int64_t(x) * 3; };
    auto packed = [&](int bpp, int ri, int gi, int bi, int ai) {
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                uint8_t* d = f.data[0] + int64_t(y) * f.linesize[0] + int64_t(x) * bpp;
                const uint8_t* s = px(x, y);
                d[ri] = s[0];
                d[gi] = s[1];
                d[bi] = s[2];
                if (ai >= 0) d[ai] = 255;
            }
    };
    switch (fmt) {
    case AV_PIX_FMT_RGB24:
        return packed(3, 0, 1, 2, -1);
    case AV_PIX_FMT_RGBA:
    case AV_PIX_FMT_RGB0:
        return packed(4, 0, 1, 2, 3);
    case AV_PIX_FMT_BGRA:
    case AV_PIX_FMT_BGR0:
        return packed(4, 2, 1, 0, 3);
    default:
        break;
    }
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(fmt);
    const bool planar_yuv = d && (d->flags & AV_PIX_FMT_FLAG_PLANAR) && !(d->flags & AV_PIX_FMT_FLAG_RGB) &&
                            d->nb_components >= 3 && !(d->flags & AV_PIX_FMT_FLAG_BE) &&
                            d->comp[0].depth <= 16 && d->comp[0].shift == 0 &&
                            std::string(d->name).rfind("yuvj", 0) != 0;
    if (!planar_yuv)
        throw Error(ErrorCode::Unsupported,
                    "test clips: no CPU conversion to " + std::string(av_get_pix_fmt_name(fmt)));
    // BT.601 limited range at the format's depth; an alpha plane (yuva*) opaque.
    const int bits = d->comp[0].depth;
    const double k = double(1 << (bits - 8)), max = double((1 << bits) - 1);
    auto put = [&](int plane, int x, int y, double v) {
        const int code = static_cast<int>(std::clamp(std::lround(v), 0l, static_cast<long>(max)));
        uint8_t* row = f.data[plane] + int64_t(y) * f.linesize[plane];
        if (bits == 8)
            row[x] = static_cast<uint8_t>(code);
        else
            reinterpret_cast<uint16_t*>(row)[x] = static_cast<uint16_t>(code);
    };
    const double kr = 0.299, kb = 0.114, kg = 1 - kr - kb;
    auto luma = [&](const uint8_t* s) { return (kr * s[0] + kg * s[1] + kb * s[2]) / 255.0; };
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            put(0, x, y, 16 * k + 219 * k * luma(px(x, y)));
            if (d->nb_components == 4) put(3, x, y, max);
        }
    const int sx = 1 << d->log2_chroma_w, sy = 1 << d->log2_chroma_h;
    for (int cy = 0; cy < (h + sy - 1) / sy; ++cy)
        for (int cx = 0; cx < (w + sx - 1) / sx; ++cx) {
            double cb = 0, cr = 0;
            int n = 0;
            for (int y = cy * sy; y < std::min(h, cy * sy + sy); ++y)
                for (int x = cx * sx; x < std::min(w, cx * sx + sx); ++x) {
                    const uint8_t* s = px(x, y);
                    const double l = luma(s);
                    cb += (s[2] / 255.0 - l) / (2 * (1 - kb));
                    cr += (s[0] / 255.0 - l) / (2 * (1 - kr));
                    ++n;
                }
            put(1, cx, cy, 128 * k + 224 * k * cb / n);
            put(2, cx, cy, 128 * k + 224 * k * cr / n);
        }
}

void write_test_clip(const TestClipDesc& d) {
    quiet_libav_log();
    Out o;
    int ret = avformat_alloc_output_context2(&o.fmt, nullptr, nullptr, d.path.c_str());
    if (ret < 0 || !o.fmt) fail(d, "unknown container", ret);
    const AVCodec* vc = avcodec_find_encoder_by_name(d.codec.c_str());
    if (!vc) fail(d, "no encoder " + d.codec);
    const AVPixelFormat pf = av_get_pix_fmt(d.pix_fmt.c_str());
    o.venc = avcodec_alloc_context3(vc);
    o.venc->width = d.size.width;
    o.venc->height = d.size.height;
    o.venc->pix_fmt = pf;
    o.venc->time_base = {d.time_base.num, d.time_base.den};
    o.venc->framerate = {d.frame_rate.num, d.frame_rate.den};
    o.venc->thread_count = 1;
    if (!(av_pix_fmt_desc_get(pf)->flags & AV_PIX_FMT_FLAG_RGB)) {
        o.venc->colorspace = AVCOL_SPC_SMPTE170M;
        o.venc->color_range = AVCOL_RANGE_MPEG;
    }
    if (d.color_range >= 0) o.venc->color_range = static_cast<AVColorRange>(d.color_range);
    if (o.fmt->oformat->flags & AVFMT_GLOBALHEADER) o.venc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    AVDictionary* opts = nullptr;
    for (const auto& [k, v] : d.options) av_dict_set(&opts, k.c_str(), v.c_str(), 0);
    ret = avcodec_open2(o.venc, vc, &opts);
    av_dict_free(&opts);
    if (ret < 0) fail(d, "cannot open " + d.codec, ret);
    AVStream* vs = avformat_new_stream(o.fmt, nullptr);
    avcodec_parameters_from_context(vs->codecpar, o.venc);
    vs->time_base = o.venc->time_base;
    vs->avg_frame_rate = o.venc->framerate;
    if (d.rotation) {
        int32_t m[9];
        av_display_rotation_set(m, d.rotation);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#if LIBAVFORMAT_VERSION_MAJOR >= 61
        AVPacketSideData* sd =
            av_packet_side_data_new(&vs->codecpar->coded_side_data, &vs->codecpar->nb_coded_side_data,
                                    AV_PKT_DATA_DISPLAYMATRIX, sizeof m, 0);
        if (sd) std::memcpy(sd->data, m, sizeof m);
#else
        if (uint8_t* sd = av_stream_new_side_data(vs, AV_PKT_DATA_DISPLAYMATRIX, sizeof m))
            std::memcpy(sd, m, sizeof m);
#endif
#pragma GCC diagnostic pop
    }
    for (const auto& [k, v] : d.metadata) av_dict_set(&o.fmt->metadata, k.c_str(), v.c_str(), 0);

    auto pts_of = [&](int64_t i) -> int64_t {
        if (!d.pts.empty()) return d.pts.at(static_cast<size_t>(i));
        return av_rescale_q(i, av_inv_q({d.frame_rate.num, d.frame_rate.den}),
                            {d.time_base.num, d.time_base.den});
    };
    const double video_seconds = d.frames > 0
                                     ? double(pts_of(d.frames - 1)) * d.time_base.num / d.time_base.den +
                                           d.frame_rate.den / double(d.frame_rate.num)
                                     : 0;

    AVStream* as = nullptr;
    if (!d.audio_codec.empty()) {
        const AVCodec* ac = avcodec_find_encoder_by_name(d.audio_codec.c_str());
        if (!ac) fail(d, "no encoder " + d.audio_codec);
        o.aenc = avcodec_alloc_context3(ac);
        o.aenc->sample_rate = d.sample_rate;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#if LIBAVUTIL_VERSION_MAJOR >= 58 || (LIBAVUTIL_VERSION_MAJOR == 57 && LIBAVUTIL_VERSION_MINOR >= 24)
        av_channel_layout_default(&o.aenc->ch_layout, 1);
#else
        o.aenc->channel_layout = AV_CH_LAYOUT_MONO;
        o.aenc->channels = 1;
#endif
        const AVSampleFormat* sfs = ac->sample_fmts;
#pragma GCC diagnostic pop
        o.aenc->sample_fmt = sfs ? sfs[0] : AV_SAMPLE_FMT_S16;
        o.aenc->time_base = {1, d.sample_rate};
        if (o.fmt->oformat->flags & AVFMT_GLOBALHEADER) o.aenc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
        ret = avcodec_open2(o.aenc, ac, nullptr);
        if (ret < 0) fail(d, "cannot open " + d.audio_codec, ret);
        as = avformat_new_stream(o.fmt, nullptr);
        avcodec_parameters_from_context(as->codecpar, o.aenc);
        as->time_base = o.aenc->time_base;
        av_dict_set(&as->metadata, "language", "eng", 0);
    }
    ret = avio_open(&o.fmt->pb, d.path.c_str(), AVIO_FLAG_WRITE);
    if (ret < 0) fail(d, "cannot write", ret);
    AVDictionary* mux = nullptr;
    for (const auto& [k, v] : d.muxer_options) av_dict_set(&mux, k.c_str(), v.c_str(), 0);
    ret = avformat_write_header(o.fmt, &mux);
    av_dict_free(&mux);
    if (ret < 0) fail(d, "cannot write the header", ret);

    for (int64_t i = 0; i < d.frames; ++i) {
        FramePtr f = make_frame();
        f->format = pf;
        f->width = d.size.width;
        f->height = d.size.height;
        if (av_frame_get_buffer(f.get(), 0) < 0) fail(d, "frame allocation failed");
        (d.paint ? d.paint : default_paint)(i, *f);
        f->pts = pts_of(i);
        ret = avcodec_send_frame(o.venc, f.get());
        if (ret < 0) fail(d, "encoding failed", ret);
        drain(d, o, o.venc, vs);
    }
    avcodec_send_frame(o.venc, nullptr);
    drain(d, o, o.venc, vs);

    if (o.aenc) {
        // A plucked string (Karplus-Strong with a fixed seed), retriggered every half second.
        const double seconds = d.audio_seconds > 0 ? d.audio_seconds : video_seconds;
        const int64_t total = static_cast<int64_t>(seconds * d.sample_rate);
        const int chunk = o.aenc->frame_size > 0 ? o.aenc->frame_size : 1024;
        std::vector<float> ring(static_cast<size_t>(d.sample_rate / 220));
        uint32_t seed = 12345;
        auto pluck = [&] {
            for (float& v : ring) {
                seed = seed * 1664525u + 1013904223u;
                v = float((seed >> 8) & 0xffff) / 32768.f - 1.f;
            }
        };
        size_t pos = 0;
        for (int64_t t = 0; t < total; t += chunk) {
            const int n = static_cast<int>(std::min<int64_t>(chunk, total - t));
            FramePtr f = make_frame();
            f->format = o.aenc->sample_fmt;
            f->nb_samples = n;
            f->sample_rate = d.sample_rate;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#if LIBAVUTIL_VERSION_MAJOR >= 58 || (LIBAVUTIL_VERSION_MAJOR == 57 && LIBAVUTIL_VERSION_MINOR >= 24)
            av_channel_layout_copy(&f->ch_layout, &o.aenc->ch_layout);
#else
            f->channel_layout = o.aenc->channel_layout;
            f->channels = 1;
#endif
#pragma GCC diagnostic pop
            if (av_frame_get_buffer(f.get(), 0) < 0) fail(d, "audio frame allocation failed");
            for (int k = 0; k < n; ++k) {
                if ((t + k) % (d.sample_rate / 2) == 0) pluck();
                const size_t a = pos % ring.size(), b = (pos + 1) % ring.size();
                const float v = 0.996f * 0.5f * (ring[a] + ring[b]);
                ring[a] = v;
                ++pos;
                const float s = 0.4f * v;
                if (f->format == AV_SAMPLE_FMT_FLTP || f->format == AV_SAMPLE_FMT_FLT)
                    reinterpret_cast<float*>(f->data[0])[k] = s;
                else if (f->format == AV_SAMPLE_FMT_S16 || f->format == AV_SAMPLE_FMT_S16P)
                    reinterpret_cast<int16_t*>(f->data[0])[k] = static_cast<int16_t>(s * 32767);
                else
                    fail(d, "test clips: unsupported audio sample format");
            }
            f->pts = t;
            ret = avcodec_send_frame(o.aenc, f.get());
            if (ret < 0) fail(d, "audio encoding failed", ret);
            drain(d, o, o.aenc, as);
        }
        avcodec_send_frame(o.aenc, nullptr);
        drain(d, o, o.aenc, as);
    }
    ret = av_write_trailer(o.fmt);
    if (ret < 0) fail(d, "cannot finish the file", ret);
}

} // namespace vkml::media

namespace vkml::media {

std::filesystem::path bundled_clip_path() {
    if (const char* env = std::getenv("VKML_CLIP"); env && *env) return env;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const fs::path installed = exe.parent_path().parent_path() / "share/vkml/clips" / bundled_clip_name;
        if (fs::exists(installed, ec)) return installed;
    }
    return fs::path(VKML_MEDIA_SOURCE_CLIPS) / bundled_clip_name;
}

} // namespace vkml::media
