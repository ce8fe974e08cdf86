#pragma once
// media::VideoReader: demuxes a file with libavformat and decodes its first video stream with
// libavcodec (frame threads), handing other streams' packets (audio, subtitles) to a callback
// untouched so a writer can copy them. Stream facts the rest of the pipeline needs (size, time
// base, frame rate, frame count estimate, colour matrix and range, rotation) are in info().
// Errors are vkml::Error(Io / InvalidArgument) with one line naming the file.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "vkml/error.hpp"
#include "vkml/media/transcode.hpp"

struct AVFrame;
struct AVPacket;
struct AVFormatContext;

namespace vkml::media {

struct AvFrameDeleter {
    void operator()(AVFrame* f) const;
};
struct AvPacketDeleter {
    void operator()(AVPacket* p) const;
};
using FramePtr = std::unique_ptr<AVFrame, AvFrameDeleter>;
using PacketPtr = std::unique_ptr<AVPacket, AvPacketDeleter>;
FramePtr make_frame();
PacketPtr make_packet();

enum class ColorMatrix : uint8_t { Bt601, Bt709, Bt2020 };
enum class ColorRange : uint8_t { Limited, Full };
const char* matrix_name(ColorMatrix m);

struct Rational {
    int num = 0;
    int den = 1;
    double value() const { return den ? double(num) / den : 0.0; }
};

struct VideoInfo {
    Size size;
    std::string codec;       // decoder name, e.g. "h264"
    std::string pix_fmt;     // decoded pixel format, e.g. "yuv420p"
    int pix_fmt_id = -1;     // AVPixelFormat
    Rational time_base;      // of the video stream
    Rational frame_rate;     // average (guessed) frame rate; VFR streams keep their own timestamps
    int64_t frame_count = 0; // estimate (stream header, else duration * rate); 0 when unknown
    double duration = 0;     // seconds, 0 when unknown
    int64_t start_pts = 0;   // the stream's start time in its time base (0 when unknown)
    ColorMatrix matrix = ColorMatrix::Bt601;
    ColorRange range = ColorRange::Limited;
    int color_primaries = 2, color_trc = 2,
        colorspace = 2; // AVColorPrimaries/Trc/Space as tagged (2 = unspecified)
    int rotation = 0;   // display rotation, degrees counter-clockwise as the display matrix says
    bool has_audio = false;
    int other_streams = 0; // audio + subtitle streams that a writer copies
};

struct ReaderDesc {
    std::filesystem::path path;
    int threads = 0; // decoder threads; 0 = automatic
    // Damaged or cut input (see read_frame): false, an error at the first sign of it; true, a
    // warning the first time, a count (problems()), and on with what decodes, as players do.
    bool tolerate_errors = false;
};

// The error read_frame throws for damaged or truncated input (so a caller can add how to go on).
class DamagedInput : public Error {
public:
    using Error::Error;
};

class VideoReader {
public:
    explicit VideoReader(const ReaderDesc& desc);
    ~VideoReader();
    VideoReader(const VideoReader&) = delete;
    VideoReader& operator=(const VideoReader&) = delete;

    const VideoInfo& info() const { return info_; }
    const std::filesystem::path& path() const { return path_; }
    // The next decoded video frame, or null at the end of the stream. Packets of copied streams
    // read on the way go to `on_other_packet` (if set), in file order. Damaged input throws
    // DamagedInput naming the file (unless ReaderDesc::tolerate_errors): a packet the demuxer
    // flags corrupt, video data the decoder rejects, a frame it had to conceal errors in, a read
    // error, and, at the end, a file cut short (fewer video packets than the index lists, or the
    // demuxer saying the data ends early).
    FramePtr read_frame();
    std::function<void(PacketPtr)> on_other_packet;
    // After the last video frame wanted (--frames N): reads on without decoding video, handing the
    // copied streams' packets that start before `until` (seconds, the container's clock) to
    // on_other_packet, until every copied stream has reached `until` or the file ends.
    void read_other_packets(double until);
    bool truncated() const { return truncated_; }
    // What was tolerated so far (tolerate_errors): damaged frames or packets, and whether the file
    // ended early; "" when nothing was wrong.
    int64_t damaged() const { return damaged_; }
    std::string problems() const;
    // For the writer: the demuxer and the video stream's index.
    AVFormatContext* format() const { return fmt_; }
    int video_stream() const { return video_index_; }

private:
    std::filesystem::path path_;
    AVFormatContext* fmt_ = nullptr;
    struct Decoder;
    std::unique_ptr<Decoder> dec_;
    int video_index_ = -1;
    VideoInfo info_;
    void damage(const std::string& what);
    void check_complete();
    bool tolerate_ = false;
    bool eof_ = false, flushed_ = false, truncated_ = false, warned_ = false, checked_end_ = false;
    int64_t next_pts_ = 0;
    int64_t frames_out_ = 0, video_packets_ = 0, damaged_ = 0;
    std::string end_problem_, pending_damage_;
};

// A libav error code as text ("Invalid data found when processing input").
std::string av_error(int code);

// A decoded frame's duration in its stream's time base (read_frame fills it in when the stream
// has none).
int64_t frame_duration(const AVFrame& frame);
// When a packet starts, in seconds on the container's clock (its pts, else its dts, times its
// stream's time base); -infinity when it has no timestamp.
double packet_seconds(const AVFormatContext* fmt, const AVPacket& packet);

} // namespace vkml::media
