// Encode + mux with libavcodec/libavformat; other streams copied packet by packet.
#include "writer.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cstdio>

#include "convert.hpp"
#include "vkml/error.hpp"

namespace vkml::media {

namespace fs = std::filesystem;
void quiet_libav_log(); // reader.cpp
bool verbose_libav();   // reader.cpp: VKML_AV_LOG is set

namespace {

// Whether the GPU colour conversion writes frames of `f` (convert.hpp): with an alpha channel only
// when the alpha is kept (the frame processor processes it), else the rgba/bgra kind, written opaque.
bool writable(AVPixelFormat f, bool with_alpha) {
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(f);
    if (!d) return false;
    if (d->flags & AV_PIX_FMT_FLAG_ALPHA) {
        if (with_alpha) return alpha_layout(f).has_value();
        return gpu_layout(f).has_value(); // rgba, bgra: the alpha written as 255
    }
    return gpu_layout(f).has_value() || grey_gpu_format(f) >= 0;
}

// The encoder that keeps a codec family, where vkml writes it by default (encoders that take any
// frame size and have sensible defaults); "" for the others.
std::string family_encoder(AVCodecID id, AVPixelFormat src) {
    switch (id) {
    case AV_CODEC_ID_H264:
        return "libx264";
    case AV_CODEC_ID_HEVC:
        return "libx265";
    case AV_CODEC_ID_VP9:
        return "libvpx-vp9";
    case AV_CODEC_ID_VP8:
        return "libvpx";
    case AV_CODEC_ID_AV1: {
        // SVT-AV1 is the fast one, for the formats it takes; libaom for the others.
        const AVCodec* svt = avcodec_find_encoder_by_name("libsvtav1");
        if (svt && (src == AV_PIX_FMT_YUV420P || src == AV_PIX_FMT_YUV420P10LE)) return "libsvtav1";
        return "libaom-av1";
    }
    case AV_CODEC_ID_MPEG4:
        return "mpeg4";
    case AV_CODEC_ID_MPEG2VIDEO:
        return "mpeg2video";
    case AV_CODEC_ID_FFV1:
        return "ffv1";
    case AV_CODEC_ID_PRORES:
        return "prores_ks";
    case AV_CODEC_ID_MJPEG:
        return "mjpeg";
    case AV_CODEC_ID_PNG:
        return "png";
    case AV_CODEC_ID_UTVIDEO:
        return "utvideo";
    case AV_CODEC_ID_HUFFYUV:
        return "huffyuv";
    case AV_CODEC_ID_FFVHUFF:
        return "ffvhuff";
    case AV_CODEC_ID_THEORA:
        return "libtheora";
    default:
        return "";
    }
}

std::vector<AVPixelFormat> encoder_formats(const AVCodec* c) {
    std::vector<AVPixelFormat> v;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    if (c->pix_fmts)
        for (const AVPixelFormat* p = c->pix_fmts; *p != AV_PIX_FMT_NONE; ++p) v.push_back(*p);
#pragma GCC diagnostic pop
    return v;
}

std::string ext_of(const fs::path& p) {
    std::string e = p.extension().string();
    return e.empty() ? "(none)" : e;
}

} // namespace

bool encoder_exists(const std::string& name) {
    const AVCodec* c = avcodec_find_encoder_by_name(name.c_str());
    return c && c->type == AVMEDIA_TYPE_VIDEO;
}

VideoWriter::VideoWriter(const WriterDesc& desc)
    : path_(desc.path), display_(desc.name_for_format.empty() ? desc.path : desc.name_for_format),
      pkt_(make_packet()) {
    quiet_libav_log();
    const fs::path& named = display_;
    const AVOutputFormat* ofmt = av_guess_format(nullptr, named.c_str(), nullptr);
    if (!ofmt)
        throw Error(ErrorCode::InvalidArgument, "'" + named.string() +
                                                    "': unknown container for the extension " +
                                                    ext_of(named) + " (use e.g. .mp4, .mkv, .webm, .mov)");
    int ret = avformat_alloc_output_context2(&out_, ofmt, nullptr, path_.c_str());
    if (ret < 0 || !out_) throw Error(ErrorCode::Generic, "cannot set up the muxer: " + av_error(ret));

    // The encoder: asked for, else the input's codec family where this FFmpeg has an encoder for
    // it and the container holds it, else libx264 where the container takes H.264, else the
    // container's default; a change of family is said in a note.
    std::string codec_name = desc.codec;
    if (codec_name.empty()) {
        const AVCodecParameters* src =
            desc.source ? desc.source->format()->streams[desc.source->video_stream()]->codecpar : nullptr;
        const AVPixelFormat src_fmt =
            desc.source ? static_cast<AVPixelFormat>(desc.source->info().pix_fmt_id) : AV_PIX_FMT_NONE;
        std::string why_not;
        if (src) {
            const std::string family = family_encoder(src->codec_id, src_fmt);
            const AVCodec* fc = family.empty() ? nullptr : avcodec_find_encoder_by_name(family.c_str());
            const std::string what = std::string(avcodec_get_name(src->codec_id));
            if (!fc)
                why_not =
                    "'" + desc.source->path().string() + "' is " + what + " video, which vkml cannot write";
            else if (avformat_query_codec(ofmt, fc->id, FF_COMPLIANCE_NORMAL) == 0)
                why_not = "the " + std::string(ofmt->name) + " container cannot hold " + what +
                          " (the input's codec; .mkv can)";
            else
                codec_name = family;
        }
        if (codec_name.empty()) {
            if (avformat_query_codec(ofmt, AV_CODEC_ID_H264, FF_COMPLIANCE_NORMAL) == 1 &&
                encoder_exists("libx264"))
                codec_name = "libx264";
            else if (const AVCodec* d = avcodec_find_encoder(ofmt->video_codec))
                codec_name = d->name;
            else
                throw Error(ErrorCode::Unsupported, "'" + named.string() +
                                                        "': no default video encoder for " + ofmt->name +
                                                        "; choose one with --codec");
            if (!why_not.empty()) notes_.push_back(why_not + ": writing " + codec_name);
        }
    }
    const AVCodec* codec = avcodec_find_encoder_by_name(codec_name.c_str());
    if (!codec) {
        // A codec id name ("h264", "hevc") given instead of an encoder name also works.
        if (const AVCodecDescriptor* d = avcodec_descriptor_get_by_name(codec_name.c_str()))
            codec = avcodec_find_encoder(d->id);
    }
    if (!codec || codec->type != AVMEDIA_TYPE_VIDEO)
        throw Error(ErrorCode::InvalidArgument,
                    "unknown video encoder '" + codec_name +
                        "' (this libavcodec has e.g. libx264, libx265, libvpx-vp9, libaom-av1, mpeg4, ffv1)");
    if (avformat_query_codec(ofmt, codec->id, FF_COMPLIANCE_NORMAL) == 0)
        throw Error(ErrorCode::InvalidArgument, "'" + named.string() + "': the " + ofmt->name +
                                                    " container cannot hold " + codec->name +
                                                    " video (try .mkv)");

    // Pixel format: asked for, else the source's where the encoder takes it (its alpha too when
    // keep_alpha), else the one the encoder takes that loses the least of it (a note says what).
    const std::vector<AVPixelFormat> fmts = encoder_formats(codec);
    auto takes = [&](AVPixelFormat f) {
        return fmts.empty() || std::find(fmts.begin(), fmts.end(), f) != fmts.end();
    };
    AVPixelFormat pf = AV_PIX_FMT_NONE;
    if (!desc.pix_fmt.empty()) {
        pf = av_get_pix_fmt(desc.pix_fmt.c_str());
        if (pf == AV_PIX_FMT_NONE)
            throw Error(ErrorCode::InvalidArgument, "unknown pixel format '" + desc.pix_fmt + "'");
        if (!takes(pf)) {
            std::string list;
            for (AVPixelFormat f : fmts)
                if (writable(f, true)) list += std::string(list.empty() ? "" : ", ") + av_get_pix_fmt_name(f);
            throw Error(ErrorCode::InvalidArgument, std::string(codec->name) + " does not take " +
                                                        desc.pix_fmt + " (it takes " + list + ")");
        }
        if (!writable(pf, desc.keep_alpha))
            throw Error(
                ErrorCode::Unsupported,
                "--pix-fmt " + desc.pix_fmt +
                    ": vkml converts to yuv420p/422p/444p (8 to 16 bits, with or without alpha), nv12, "
                    "p010le, rgb24, rgba, bgra, gbrp (8 to 16 bits, gbrap with alpha), gray (8 to 16 bits)");
    } else {
        const AVPixelFormat src =
            desc.source ? static_cast<AVPixelFormat>(desc.source->info().pix_fmt_id) : AV_PIX_FMT_NONE;
        const AVPixFmtDescriptor* sd = av_pix_fmt_desc_get(src);
        const bool src_alpha = sd && (sd->flags & AV_PIX_FMT_FLAG_ALPHA);
        if (src != AV_PIX_FMT_NONE && takes(src) && writable(src, desc.keep_alpha)) {
            pf = src;
        } else {
            std::vector<AVPixelFormat> options;
            if (fmts.empty()) {
                for (AVPixelFormat f : {AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUV420P10LE})
                    options.push_back(f);
            }
            for (AVPixelFormat f : fmts)
                if (writable(f, desc.keep_alpha)) options.push_back(f);
            if (options.empty())
                throw Error(ErrorCode::Unsupported,
                            std::string(codec->name) +
                                " takes no pixel format vkml's colour conversion writes");
            if (src == AV_PIX_FMT_NONE) {
                pf = std::find(options.begin(), options.end(), AV_PIX_FMT_YUV420P) != options.end()
                         ? AV_PIX_FMT_YUV420P
                         : options[0];
            } else {
                options.push_back(AV_PIX_FMT_NONE);
                int loss = 0;
                pf = avcodec_find_best_pix_fmt_of_list(options.data(), src, src_alpha && desc.keep_alpha,
                                                       &loss);
                if (pf == AV_PIX_FMT_NONE) pf = options[0];
                loss = av_get_pix_fmt_loss(pf, src, src_alpha && desc.keep_alpha);
                std::string lost;
                auto add = [&](const char* what) { lost += std::string(lost.empty() ? "" : ", ") + what; };
                if (loss & FF_LOSS_DEPTH) add("fewer bits");
                if (loss & FF_LOSS_CHROMA) add("less colour resolution");
                if (loss & FF_LOSS_COLORSPACE)
                    add(sd && (sd->flags & AV_PIX_FMT_FLAG_RGB) ? "RGB as YUV" : "YUV as RGB");
                if (loss & FF_LOSS_ALPHA ||
                    (src_alpha && !(av_pix_fmt_desc_get(pf)->flags & AV_PIX_FMT_FLAG_ALPHA)))
                    add("no alpha");
                if (lost.empty()) lost = "the nearest it takes";
                const std::string why =
                    !writable(src, desc.keep_alpha) && !(src_alpha && !desc.keep_alpha)
                        ? "vkml does not write " + std::string(av_get_pix_fmt_name(src))
                    : src_alpha && !desc.keep_alpha
                        ? "the frame processor keeps no alpha"
                        : std::string(codec->name) + " does not take " + av_get_pix_fmt_name(src);
                notes_.push_back("'" + named.string() + "': " + why + ": writing " + av_get_pix_fmt_name(pf) +
                                 " (" + lost + ")");
            }
        }
    }
    pix_fmt_ = pf;

    enc_ = avcodec_alloc_context3(codec);
    if (!enc_) throw Error(ErrorCode::OutOfHostMemory, "avcodec_alloc_context3 failed");
    enc_->width = desc.size.width;
    enc_->height = desc.size.height;
    enc_->pix_fmt = pf;
    AVRational tb{1, 25}, rate{25, 1};
    const AVStream* src_video = nullptr;
    if (desc.source) {
        const VideoInfo& in = desc.source->info();
        src_video = desc.source->format()->streams[desc.source->video_stream()];
        tb = {in.time_base.num, in.time_base.den};
        if (in.frame_rate.num > 0) rate = {in.frame_rate.num, in.frame_rate.den};
        matrix_ = in.matrix;
        range_ = in.range;
        enc_->color_primaries = static_cast<AVColorPrimaries>(in.color_primaries);
        enc_->color_trc = static_cast<AVColorTransferCharacteristic>(in.color_trc);
        enc_->sample_aspect_ratio = src_video->sample_aspect_ratio.num
                                        ? src_video->sample_aspect_ratio
                                        : src_video->codecpar->sample_aspect_ratio;
    }
    // The source's time base keeps every timestamp exact (variable frame rate included); MPEG-4
    // part 2 caps the denominator at 16 bits, so it gets the nearest one that fits.
    if (codec->id == AV_CODEC_ID_MPEG4 && tb.den > 65535) {
        tb = av_inv_q(rate);
        if (tb.den > 65535) tb = {1, 65535};
    }
    src_tb_num_ = desc.source ? desc.source->info().time_base.num : tb.num;
    src_tb_den_ = desc.source ? desc.source->info().time_base.den : tb.den;
    enc_->time_base = tb;
    enc_->framerate = rate;
    const AVPixFmtDescriptor* pd = av_pix_fmt_desc_get(pf);
    const bool rgb = pd && (pd->flags & AV_PIX_FMT_FLAG_RGB);
    if (pf == AV_PIX_FMT_YUVJ420P || pf == AV_PIX_FMT_YUVJ422P || pf == AV_PIX_FMT_YUVJ444P)
        range_ = ColorRange::Full;
    if (!rgb) {
        enc_->colorspace = matrix_ == ColorMatrix::Bt709    ? AVCOL_SPC_BT709
                           : matrix_ == ColorMatrix::Bt2020 ? AVCOL_SPC_BT2020_NCL
                                                            : AVCOL_SPC_SMPTE170M;
        enc_->color_range = range_ == ColorRange::Full ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    }
    enc_->thread_count = desc.threads;
    if (out_->oformat->flags & AVFMT_GLOBALHEADER) enc_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;

    AVDictionary* opts = nullptr;
    const bool has_crf = av_opt_find(enc_->priv_data, "crf", nullptr, 0, 0) != nullptr;
    if (desc.crf >= 0) {
        if (!has_crf)
            throw Error(ErrorCode::InvalidArgument,
                        std::string(codec->name) +
                            " has no --crf; set its quality with -e (e.g. -e b=4M or -e q=3)");
        av_dict_set_int(&opts, "crf", desc.crf, 0);
    } else if (codec->id == AV_CODEC_ID_H264 || codec->id == AV_CODEC_ID_HEVC) {
        if (has_crf) av_dict_set(&opts, "crf", "18", 0); // upscaling is about quality: keep detail
    } else if (codec->id == AV_CODEC_ID_VP9 && has_crf) {
        av_dict_set(&opts, "crf", "30", 0);
        av_dict_set(&opts, "b", "0", 0); // constant quality mode
    } else if (codec->id == AV_CODEC_ID_MPEG4 || codec->id == AV_CODEC_ID_MPEG2VIDEO ||
               codec->id == AV_CODEC_ID_MJPEG) {
        // Constant quantizer 3: the encoders' default bitrate is far too low for upscaled video.
        av_dict_set(&opts, "flags", "+qscale", 0);
        av_dict_set(&opts, "global_quality", std::to_string(3 * FF_QP2LAMBDA).c_str(), 0);
    }
    if (!desc.preset.empty()) {
        if (!av_opt_find(enc_->priv_data, "preset", nullptr, 0, 0) &&
            !av_opt_find(enc_->priv_data, "deadline", nullptr, 0, 0))
            throw Error(ErrorCode::InvalidArgument, std::string(codec->name) + " has no --preset option");
        av_dict_set(&opts, av_opt_find(enc_->priv_data, "preset", nullptr, 0, 0) ? "preset" : "deadline",
                    desc.preset.c_str(), 0);
    }
    for (const auto& [k, v] : desc.options) av_dict_set(&opts, k.c_str(), v.c_str(), 0);
    if (std::string(codec->name) == "libx265") {
        // x265 prints its settings and statistics to stderr itself; errors only (as libav's own
        // log), unless the user set its log level.
        const AVDictionaryEntry* e = av_dict_get(opts, "x265-params", nullptr, 0);
        const std::string params = e ? e->value : "";
        if (params.find("log-level") == std::string::npos && !verbose_libav())
            av_dict_set(&opts, "x265-params",
                        ((params.empty() ? "" : params + ":") + "log-level=error").c_str(), 0);
    }
    ret = avcodec_open2(enc_, codec, &opts);
    if (ret < 0) {
        av_dict_free(&opts);
        throw Error(ErrorCode::InvalidArgument, std::string("cannot open the ") + codec->name +
                                                    " encoder at " + std::to_string(desc.size.width) + "x" +
                                                    std::to_string(desc.size.height) + " " +
                                                    av_get_pix_fmt_name(pf) + " (" + av_error(ret) + ")");
    }
    if (const AVDictionaryEntry* e = av_dict_get(opts, "", nullptr, AV_DICT_IGNORE_SUFFIX)) {
        const std::string key = e->key;
        av_dict_free(&opts);
        throw Error(ErrorCode::InvalidArgument, std::string(codec->name) + " has no option '" + key + "'");
    }
    av_dict_free(&opts);

    AVStream* vst = avformat_new_stream(out_, nullptr);
    video_out_ = vst->index;
    avcodec_parameters_from_context(vst->codecpar, enc_);
    vst->time_base = enc_->time_base;
    vst->avg_frame_rate = rate;
    vst->sample_aspect_ratio = enc_->sample_aspect_ratio;

    if (desc.source) {
        AVFormatContext* in = desc.source->format();
        av_dict_copy(&out_->metadata, in->metadata, 0);
        av_dict_copy(&vst->metadata, src_video->metadata, 0);
        av_dict_set(&vst->metadata, "encoder", nullptr, 0); // the new stream's encoder is not the old one
        vst->disposition = src_video->disposition;
        // Rotation and other display facts: the display matrix, verbatim.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#if LIBAVFORMAT_VERSION_MAJOR >= 61
        if (const AVPacketSideData* sd =
                av_packet_side_data_get(src_video->codecpar->coded_side_data,
                                        src_video->codecpar->nb_coded_side_data, AV_PKT_DATA_DISPLAYMATRIX)) {
            AVPacketSideData* nd =
                av_packet_side_data_new(&vst->codecpar->coded_side_data, &vst->codecpar->nb_coded_side_data,
                                        AV_PKT_DATA_DISPLAYMATRIX, sd->size, 0);
            if (nd) std::copy(sd->data, sd->data + sd->size, nd->data);
        }
#else
        size_t size = 0;
        if (const uint8_t* m = av_stream_get_side_data(src_video, AV_PKT_DATA_DISPLAYMATRIX, &size)) {
            if (uint8_t* d = av_stream_new_side_data(vst, AV_PKT_DATA_DISPLAYMATRIX, size))
                std::copy(m, m + size, d);
        }
#endif
#pragma GCC diagnostic pop
        stream_map_.assign(in->nb_streams, -1);
        src_time_bases_.resize(in->nb_streams);
        for (unsigned i = 0; i < in->nb_streams; ++i) {
            const AVStream* st = in->streams[i];
            src_time_bases_[i] = {st->time_base.num, st->time_base.den};
            const auto type = st->codecpar->codec_type;
            if (static_cast<int>(i) == desc.source->video_stream()) continue;
            if (type != AVMEDIA_TYPE_AUDIO && type != AVMEDIA_TYPE_SUBTITLE) continue;
            if (avformat_query_codec(ofmt, st->codecpar->codec_id, FF_COMPLIANCE_NORMAL) == 0) {
                notes_.push_back("'" + named.string() + "': the " + ofmt->name +
                                 " container cannot hold the " + avcodec_get_name(st->codecpar->codec_id) +
                                 " stream #" + std::to_string(i) + "; it is left out");
                continue;
            }
            AVStream* os = avformat_new_stream(out_, nullptr);
            avcodec_parameters_copy(os->codecpar, st->codecpar);
            os->codecpar->codec_tag = 0; // let the muxer pick its own tag for the codec
            os->time_base = st->time_base;
            os->disposition = st->disposition;
            av_dict_copy(&os->metadata, st->metadata, 0);
            stream_map_[i] = os->index;
        }
    }

    if (!(ofmt->flags & AVFMT_NOFILE)) {
        ret = avio_open(&out_->pb, path_.c_str(), AVIO_FLAG_WRITE);
        if (ret < 0)
            throw Error(ErrorCode::Io, "'" + named.string() + "': cannot write (" + av_error(ret) + ")");
    }
    ret = avformat_write_header(out_, nullptr);
    if (ret < 0)
        throw Error(ErrorCode::Io,
                    "'" + named.string() + "': cannot write the container header (" + av_error(ret) + ")");
    header_written_ = true;
}

VideoWriter::~VideoWriter() {
    avcodec_free_context(&enc_);
    if (out_) {
        if (out_->pb) avio_closep(&out_->pb);
        avformat_free_context(out_);
    }
}

std::string VideoWriter::pix_fmt_name() const {
    const char* n = av_get_pix_fmt_name(static_cast<AVPixelFormat>(pix_fmt_));
    return n ? n : "?";
}

std::string VideoWriter::codec_name() const {
    return enc_ && enc_->codec ? enc_->codec->name : "?";
}

void VideoWriter::write_failed(const char* what, int ret) const {
    // The muxer's own status can be more telling than its return (e.g. EFBIG behind an EIO).
    if (out_ && out_->pb && out_->pb->error < 0) ret = out_->pb->error;
    throw Error(ErrorCode::Io, "'" + display_.string() + "': " + what + " (" + av_error(ret) + ")");
}

void VideoWriter::drain(bool flush) {
    for (;;) {
        int ret = avcodec_receive_packet(enc_, pkt_.get());
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
        if (ret < 0)
            throw Error(ErrorCode::Generic, "'" + display_.string() + "': encoding failed: " + av_error(ret));
        pkt_->stream_index = video_out_;
        av_packet_rescale_ts(pkt_.get(), enc_->time_base, out_->streams[video_out_]->time_base);
        ret = av_interleaved_write_frame(out_, pkt_.get());
        if (ret < 0) write_failed("cannot write", ret);
    }
    (void)flush;
}

void VideoWriter::write_frame(AVFrame* frame) {
    if (src_tb_num_ != enc_->time_base.num || src_tb_den_ != enc_->time_base.den)
        frame->pts = av_rescale_q(frame->pts, {src_tb_num_, src_tb_den_}, enc_->time_base);
    frame->pict_type = AV_PICTURE_TYPE_NONE;
    const int ret = avcodec_send_frame(enc_, frame);
    if (ret < 0)
        throw Error(ErrorCode::Generic, "'" + display_.string() + "': encoding failed: " + av_error(ret));
    drain(false);
}

void VideoWriter::write_packet(PacketPtr packet) {
    const int si = packet->stream_index;
    if (si < 0 || static_cast<size_t>(si) >= stream_map_.size() || stream_map_[si] < 0) return;
    const int oi = stream_map_[si];
    av_packet_rescale_ts(packet.get(), {src_time_bases_[si].first, src_time_bases_[si].second},
                         out_->streams[oi]->time_base);
    packet->stream_index = oi;
    packet->pos = -1;
    const int ret = av_interleaved_write_frame(out_, packet.get());
    if (ret < 0) write_failed("cannot write", ret);
}

void VideoWriter::finish() {
    if (finished_) return;
    finished_ = true;
    avcodec_send_frame(enc_, nullptr);
    drain(true);
    int ret = av_write_trailer(out_);
    if (ret < 0) write_failed("cannot finish the file", ret);
    if (out_->pb) {
        // Closing flushes avio's buffer: the last bytes can fail to go out here.
        ret = avio_closep(&out_->pb);
        if (ret < 0) write_failed("cannot finish the file", ret);
    }
}

uint64_t VideoWriter::bytes_written() const {
    if (out_ && out_->pb) return static_cast<uint64_t>(std::max<int64_t>(avio_tell(out_->pb), 0));
    std::error_code ec;
    const auto n = fs::file_size(path_, ec);
    return ec ? 0 : n;
}

} // namespace vkml::media
