// Demux + decode with libavformat/libavcodec. libav's own log is silenced (set VKML_AV_LOG=1 to
// see it): every failure becomes one vkml::Error line naming the file instead.
#include "vkml/media/reader.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
}

#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string_view>
#include <vector>

#include "convert.hpp"
#include "vkml/error.hpp"

namespace vkml::media {

namespace fs = std::filesystem;

void AvFrameDeleter::operator()(AVFrame* f) const {
    av_frame_free(&f);
}
void AvPacketDeleter::operator()(AVPacket* p) const {
    av_packet_free(&p);
}

FramePtr make_frame() {
    FramePtr f(av_frame_alloc());
    if (!f) throw Error(ErrorCode::OutOfHostMemory, "av_frame_alloc failed");
    return f;
}
PacketPtr make_packet() {
    PacketPtr p(av_packet_alloc());
    if (!p) throw Error(ErrorCode::OutOfHostMemory, "av_packet_alloc failed");
    return p;
}

std::string av_error(int code) {
    char buf[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(code, buf, sizeof buf);
    return buf;
}

const char* matrix_name(ColorMatrix m) {
    switch (m) {
    case ColorMatrix::Bt601:
        return "bt601";
    case ColorMatrix::Bt709:
        return "bt709";
    case ColorMatrix::Bt2020:
        return "bt2020";
    }
    return "?";
}

namespace {

// Messages of libav that mean "this file is cut short", counted per thread: the demuxer runs on
// the thread that calls av_read_frame, and some demuxers (Matroska) report a truncated file only
// this way, returning a plain end of file.
thread_local int truncation_messages = 0;
bool show_libav_log = false;

// An error a video decoder logs (a damaged slice it concealed, a missing reference): counted for
// the reader whose decoder it is, through the context's opaque pointer (frame-thread copies of the
// context carry it too). Decoders report some damage only this way: with frame threads, a
// concealed frame may come out before its error flags are set.
void count_decoder_error(void* avcl, int level) {
    if (level > AV_LOG_ERROR || !avcl) return;
    const AVClass* cls = *static_cast<const AVClass* const*>(avcl);
    if (!cls || !cls->class_name || std::strcmp(cls->class_name, "AVCodecContext") != 0) return;
    const auto* ctx = static_cast<const AVCodecContext*>(avcl);
    if (ctx->codec && av_codec_is_decoder(ctx->codec) && ctx->opaque)
        static_cast<std::atomic<int>*>(ctx->opaque)->fetch_add(1);
}

void libav_log(void* avcl, int level, const char* fmt, va_list args) {
    count_decoder_error(avcl, level);
    if (level <= AV_LOG_WARNING) {
        char line[512];
        va_list copy;
        va_copy(copy, args);
        std::vsnprintf(line, sizeof line, fmt, copy);
        va_end(copy);
        const std::string_view l(line);
        if (l.find("ended prematurely") != l.npos || l.find("runcat") != l.npos ||
            l.find("Read error") != l.npos || l.find("end of file") != l.npos)
            ++truncation_messages;
    }
    if (show_libav_log) av_log_default_callback(avcl, level, fmt, args);
}

} // namespace

void quiet_libav_log() {
    static std::once_flag once;
    std::call_once(once, [] {
        const char* v = std::getenv("VKML_AV_LOG");
        show_libav_log = v && *v && *v != '0';
        av_log_set_level(show_libav_log ? AV_LOG_INFO : AV_LOG_WARNING);
        av_log_set_callback(libav_log);
    });
}

bool verbose_libav() {
    quiet_libav_log();
    return show_libav_log;
}

struct VideoReader::Decoder {
    AVCodecContext* ctx = nullptr;
    PacketPtr pkt = make_packet();
    std::atomic<int> errors{0}; // logged by the decoder (count_decoder_error)
    int errors_seen = 0;
    ~Decoder() { avcodec_free_context(&ctx); }
};

namespace {

[[noreturn]] void fail(const fs::path& p, const std::string& what, ErrorCode code = ErrorCode::Io) {
    throw Error(code, "'" + p.string() + "': " + what);
}

ColorMatrix matrix_of(AVColorSpace cs, int height) {
    switch (cs) {
    case AVCOL_SPC_BT709:
        return ColorMatrix::Bt709;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL:
        return ColorMatrix::Bt2020;
    case AVCOL_SPC_BT470BG:
    case AVCOL_SPC_SMPTE170M:
    case AVCOL_SPC_SMPTE240M:
    case AVCOL_SPC_FCC:
        return ColorMatrix::Bt601;
    default:
        // Untagged streams: what players assume (HD sizes are BT.709, SD ones BT.601).
        return height >= 720 ? ColorMatrix::Bt709 : ColorMatrix::Bt601;
    }
}

int rotation_of(const AVStream* st) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#if LIBAVFORMAT_VERSION_MAJOR >= 61
    const AVPacketSideData* sd = av_packet_side_data_get(
        st->codecpar->coded_side_data, st->codecpar->nb_coded_side_data, AV_PKT_DATA_DISPLAYMATRIX);
    const uint8_t* m = sd && sd->size >= 36 ? sd->data : nullptr;
#else
    size_t size = 0;
    const uint8_t* m = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (size < 36) m = nullptr;
#endif
#pragma GCC diagnostic pop
    if (!m) return 0;
    const double r = av_display_rotation_get(reinterpret_cast<const int32_t*>(m));
    if (std::isnan(r)) return 0;
    int deg = static_cast<int>(std::lround(r)) % 360;
    return deg < 0 ? deg + 360 : deg;
}

} // namespace

VideoReader::VideoReader(const ReaderDesc& desc)
    : path_(desc.path), dec_(std::make_unique<Decoder>()), tolerate_(desc.tolerate_errors) {
    quiet_libav_log();
    std::error_code ec;
    if (!fs::exists(path_, ec)) fail(path_, "no such file");
    if (fs::is_directory(path_, ec))
        fail(path_, "is a directory, not a video file", ErrorCode::InvalidArgument);
    int ret = avformat_open_input(&fmt_, path_.c_str(), nullptr, nullptr);
    if (ret < 0) {
        fmt_ = nullptr;
        if (ret == AVERROR(EACCES)) fail(path_, "cannot read the file (permission denied)");
        fail(path_, "not a readable video file (" + av_error(ret) + ")", ErrorCode::InvalidArgument);
    }
    ret = avformat_find_stream_info(fmt_, nullptr);
    if (ret < 0) {
        avformat_close_input(&fmt_);
        fail(path_, "cannot read the streams (" + av_error(ret) + "); is the file truncated?",
             ErrorCode::InvalidArgument);
    }
    // The first video stream that is a real video, not a cover picture.
    for (unsigned i = 0; i < fmt_->nb_streams; ++i) {
        const AVStream* st = fmt_->streams[i];
        if (st->codecpar->codec_type == AVMEDIA_TYPE_VIDEO &&
            !(st->disposition & AV_DISPOSITION_ATTACHED_PIC) && st->codecpar->width > 0) {
            video_index_ = static_cast<int>(i);
            break;
        }
    }
    if (video_index_ < 0) {
        avformat_close_input(&fmt_);
        fail(path_, "has no video stream (is it a video file?)", ErrorCode::InvalidArgument);
    }
    AVStream* st = fmt_->streams[video_index_];
    const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
    if (!codec) {
        avformat_close_input(&fmt_);
        fail(path_,
             std::string("no decoder for its video codec '") + avcodec_get_name(st->codecpar->codec_id) + "'",
             ErrorCode::Unsupported);
    }
    dec_->ctx = avcodec_alloc_context3(codec);
    avcodec_parameters_to_context(dec_->ctx, st->codecpar);
    dec_->ctx->pkt_timebase = st->time_base;
    dec_->ctx->opaque = &dec_->errors;
    dec_->ctx->thread_count = desc.threads;
    dec_->ctx->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    ret = avcodec_open2(dec_->ctx, codec, nullptr);
    if (ret < 0) {
        avformat_close_input(&fmt_);
        fail(path_, "cannot open the " + std::string(codec->name) + " decoder (" + av_error(ret) + ")");
    }

    VideoInfo& in = info_;
    in.size = {st->codecpar->width, st->codecpar->height};
    in.codec = codec->name;
    in.pix_fmt_id = st->codecpar->format;
    const char* pf = av_get_pix_fmt_name(static_cast<AVPixelFormat>(st->codecpar->format));
    in.pix_fmt = pf ? pf : "unknown";
    in.time_base = {st->time_base.num, st->time_base.den};
    const AVRational rate = av_guess_frame_rate(fmt_, st, nullptr);
    in.frame_rate = {rate.num, rate.den};
    if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
        in.duration = static_cast<double>(st->duration) * av_q2d(st->time_base);
    else if (fmt_->duration > 0)
        in.duration = static_cast<double>(fmt_->duration) / AV_TIME_BASE;
    in.frame_count = st->nb_frames > 0
                         ? st->nb_frames
                         : static_cast<int64_t>(std::llround(in.duration * in.frame_rate.value()));
    in.start_pts = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
    in.matrix = matrix_of(st->codecpar->color_space, in.size.height);
    const bool jpeg_fmt = in.pix_fmt.rfind("yuvj", 0) == 0;
    // YUV is limited range unless it says full; grey is full range unless it says limited
    // (FFmpeg's convention for gray formats; PNG, TIFF and FFV1 grey are full range).
    const AVColorRange range = st->codecpar->color_range;
    if (is_grey_format(st->codecpar->format))
        in.range = range == AVCOL_RANGE_MPEG ? ColorRange::Limited : ColorRange::Full;
    else
        in.range = range == AVCOL_RANGE_JPEG || jpeg_fmt ? ColorRange::Full : ColorRange::Limited;
    in.color_primaries = st->codecpar->color_primaries;
    in.color_trc = st->codecpar->color_trc;
    in.colorspace = st->codecpar->color_space;
    in.rotation = rotation_of(st);
    for (unsigned i = 0; i < fmt_->nb_streams; ++i) {
        const auto type = fmt_->streams[i]->codecpar->codec_type;
        if (static_cast<int>(i) == video_index_) continue;
        if (type == AVMEDIA_TYPE_AUDIO) in.has_audio = true;
        if (type == AVMEDIA_TYPE_AUDIO || type == AVMEDIA_TYPE_SUBTITLE) ++in.other_streams;
    }
    next_pts_ = in.start_pts;
}

VideoReader::~VideoReader() {
    dec_.reset();
    avformat_close_input(&fmt_);
}

// Damaged input: an error, or with tolerate_errors a warning the first time and a count.
void VideoReader::damage(const std::string& what) {
    ++damaged_;
    if (!tolerate_) throw DamagedInput(ErrorCode::InvalidArgument, "'" + path_.string() + "': " + what);
    if (!warned_)
        std::fprintf(stderr, "vkml: warning: '%s': %s; going on (--tolerate-errors)\n", path_.c_str(),
                     what.c_str());
    warned_ = true;
}

// At the end of the file: whether it ended where it should.
void VideoReader::check_complete() {
    if (checked_end_) return;
    checked_end_ = true;
    const int64_t listed = fmt_->streams[video_index_]->nb_frames;
    std::string what;
    if (listed > 0 && video_packets_ < listed)
        what = "the file ends after " + std::to_string(frames_out_) + " frames; its index lists " +
               std::to_string(listed) + " (truncated)";
    else if (truncated_)
        what = "the file ends early after " + std::to_string(frames_out_) + " frames (truncated or damaged)";
    if (what.empty()) return;
    truncated_ = true;
    end_problem_ = what;
    if (!tolerate_) throw DamagedInput(ErrorCode::InvalidArgument, "'" + path_.string() + "': " + what);
    std::fprintf(stderr, "vkml: warning: '%s': %s; going on (--tolerate-errors)\n", path_.c_str(),
                 what.c_str());
}

std::string VideoReader::problems() const {
    std::string s;
    if (damaged_ > 0)
        s = std::to_string(damaged_) + " damaged frame" + (damaged_ == 1 ? "" : "s") + " or packet" +
            (damaged_ == 1 ? "" : "s");
    if (!end_problem_.empty()) s += (s.empty() ? "" : "; ") + end_problem_;
    return s;
}

FramePtr VideoReader::read_frame() {
    FramePtr frame = make_frame();
    AVCodecContext* ctx = dec_->ctx;
    // Errors the decoder logged since the last look (its threads may log them at any time).
    auto check_decoder = [&] {
        const int n = dec_->errors.load();
        if (n == dec_->errors_seen) return;
        dec_->errors_seen = n;
        damage("damaged video data near frame " + std::to_string(frames_out_ + 1) +
               " (the decoder reported errors and concealed them)");
    };
    for (;;) {
        check_decoder();
        int ret = avcodec_receive_frame(ctx, frame.get());
        if (ret == 0) {
            int64_t pts = frame->best_effort_timestamp;
            if (pts == AV_NOPTS_VALUE) pts = frame->pts;
            if (pts == AV_NOPTS_VALUE) pts = next_pts_;
            frame->pts = pts;
            int64_t dur = frame_duration(*frame);
            if (dur <= 0 && info_.frame_rate.num > 0)
                dur = av_rescale_q(1, av_inv_q({info_.frame_rate.num, info_.frame_rate.den}),
                                   {info_.time_base.num, info_.time_base.den});
            dur = std::max<int64_t>(dur, 1);
#if LIBAVUTIL_VERSION_MAJOR >= 58
            frame->duration = dur;
#else
            frame->pkt_duration = dur;
#endif
            next_pts_ = pts + dur;
            // A frame the decoder pieced together around damaged data (players show it as is).
            if (frame->decode_error_flags != 0 || (frame->flags & AV_FRAME_FLAG_CORRUPT))
                damage("frame " + std::to_string(frames_out_ + 1) +
                       " is damaged (the decoder had to conceal errors in it)");
            ++frames_out_;
            return frame;
        }
        if (ret == AVERROR_EOF) {
            check_decoder();
            check_complete();
            return nullptr;
        }
        if (ret != AVERROR(EAGAIN)) {
            damage("a frame after frame " + std::to_string(frames_out_) + " failed to decode (" +
                   av_error(ret) + ")");
            continue;
        }
        if (eof_) {
            // Drained already and still EAGAIN: nothing more will come.
            if (flushed_) {
                check_decoder();
                check_complete();
                return nullptr;
            }
            avcodec_send_packet(ctx, nullptr);
            flushed_ = true;
            continue;
        }
        AVPacket* pkt = dec_->pkt.get();
        const int before = truncation_messages;
        ret = av_read_frame(fmt_, pkt);
        if (truncation_messages != before) truncated_ = true;
        if (ret < 0) {
            // Anything but a clean end of file (an I/O error, data cut mid-packet) is truncation;
            // so is a short last packet (check_complete says so, not damage()).
            if (ret != AVERROR_EOF || (fmt_->pb && fmt_->pb->error < 0) || !pending_damage_.empty())
                truncated_ = true;
            pending_damage_.clear();
            eof_ = true;
            continue;
        }
        if (!pending_damage_.empty()) {
            const std::string what = std::move(pending_damage_);
            pending_damage_.clear();
            damage(what); // (tolerated: on with this packet)
        }
        const bool corrupt = (pkt->flags & AV_PKT_FLAG_CORRUPT) != 0;
        if (corrupt) {
            // A packet the demuxer could not read whole: damage, unless it is the last one (the file
            // is cut short there); decided when the next read shows which.
            const double at = packet_seconds(fmt_, *pkt);
            char when[48] = "";
            if (at > -1e300) std::snprintf(when, sizeof when, " at %.2f s", at);
            pending_damage_ = std::string("damaged or missing data") + when + " in stream #" +
                              std::to_string(pkt->stream_index) +
                              (pkt->stream_index == video_index_ ? " (video)" : "");
            if (pkt->stream_index != video_index_) { // not worth copying; a decoder conceals video
                av_packet_unref(pkt);
                continue;
            }
        }
        if (pkt->stream_index == video_index_) {
            ++video_packets_;
            ret = avcodec_send_packet(ctx, pkt);
            av_packet_unref(pkt);
            if (ret < 0 && ret != AVERROR(EAGAIN))
                damage("damaged video data after frame " + std::to_string(frames_out_) + " (" +
                       av_error(ret) + ")");
        } else if (on_other_packet) {
            PacketPtr copy = make_packet();
            av_packet_move_ref(copy.get(), pkt);
            on_other_packet(std::move(copy));
        } else {
            av_packet_unref(pkt);
        }
    }
}

} // namespace vkml::media

namespace vkml::media {

int64_t frame_duration(const AVFrame& frame) {
#if LIBAVUTIL_VERSION_MAJOR >= 58
    return frame.duration;
#else
    return frame.pkt_duration;
#endif
}

double packet_seconds(const AVFormatContext* fmt, const AVPacket& packet) {
    const int64_t t = packet.pts != AV_NOPTS_VALUE ? packet.pts : packet.dts;
    if (t == AV_NOPTS_VALUE || packet.stream_index < 0 ||
        static_cast<unsigned>(packet.stream_index) >= fmt->nb_streams)
        return -std::numeric_limits<double>::infinity();
    return static_cast<double>(t) * av_q2d(fmt->streams[packet.stream_index]->time_base);
}

void VideoReader::read_other_packets(double until) {
    // Each copied stream is done once a packet of it starts at `until` or later (the demuxer
    // interleaves by time, so what follows is later still), or at the end of the file.
    std::vector<bool> done(fmt_->nb_streams, true);
    size_t left = 0;
    for (unsigned i = 0; i < fmt_->nb_streams; ++i) {
        const auto type = fmt_->streams[i]->codecpar->codec_type;
        if (static_cast<int>(i) != video_index_ &&
            (type == AVMEDIA_TYPE_AUDIO || type == AVMEDIA_TYPE_SUBTITLE)) {
            done[i] = false;
            ++left;
        }
    }
    AVPacket* pkt = dec_->pkt.get();
    while (left > 0 && !eof_) {
        const int ret = av_read_frame(fmt_, pkt);
        if (ret < 0) {
            eof_ = true;
            break;
        }
        const int si = pkt->stream_index;
        if (si < 0 || static_cast<unsigned>(si) >= fmt_->nb_streams || si == video_index_ || done[si]) {
            av_packet_unref(pkt);
            continue;
        }
        if (packet_seconds(fmt_, *pkt) >= until) {
            done[si] = true;
            --left;
            av_packet_unref(pkt);
            continue;
        }
        if (on_other_packet) {
            PacketPtr copy = make_packet();
            av_packet_move_ref(copy.get(), pkt);
            on_other_packet(std::move(copy));
        } else {
            av_packet_unref(pkt);
        }
    }
}

} // namespace vkml::media
