#pragma once
// media::VideoWriter: encodes frames with a libavcodec encoder chosen by name, with crf / preset /
// pix_fmt / free-form options, and muxes them with libavformat, copying the input's audio and
// subtitle streams packet by packet (bit-identical) with their timestamps, and the container and
// stream metadata and the rotation (display matrix) of the video stream.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "vkml/media/reader.hpp"

struct AVCodecContext;

namespace vkml::media {

struct WriterDesc {
    std::filesystem::path path;            // the file written (may be a temporary name)
    std::filesystem::path name_for_format; // picks the container from its extension (the final name)
    std::string codec; // empty: the source's codec family (h264 -> libx264, hevc -> libx265, vp9,
                       // av1, ffv1, prores, ...) where the container holds it, else libx264 if the
                       // container takes H.264, else its default; notes() says when the family changes
    int crf = -1;
    std::string preset;
    std::string pix_fmt; // empty: the source's if the encoder takes it, else the one that loses least
                         // of it (bits, chroma, alpha); notes() says what changed
    std::vector<std::pair<std::string, std::string>> options;
    int threads = 0;
    Size size;                           // encoded frame size
    const VideoReader* source = nullptr; // time base, rate, colour tags, metadata, streams to copy
    bool keep_alpha = false;             // the frames come with their alpha (FrameProcessor::processes_alpha)
};

class VideoWriter {
public:
    explicit VideoWriter(const WriterDesc& desc);
    ~VideoWriter(); // closes without a trailer if finish() was not called (the caller removes the file)
    VideoWriter(const VideoWriter&) = delete;
    VideoWriter& operator=(const VideoWriter&) = delete;

    // The pixel format frames must be in (AVPixelFormat) and its name.
    int pix_fmt() const { return pix_fmt_; }
    std::string pix_fmt_name() const;
    ColorMatrix matrix() const { return matrix_; }
    ColorRange range() const { return range_; }
    std::string codec_name() const;
    // What the output could not keep of the source by default, one line each: "'in.avi' is
    // msmpeg4v3 video, which vkml cannot write: writing libx264", "'out.mp4': libx264 does not take
    // yuv420p12le: writing yuv420p10le (fewer bits)".
    const std::vector<std::string>& notes() const { return notes_; }
    // A frame in pix_fmt() with its pts in the source video stream's time base.
    void write_frame(AVFrame* frame);
    // A packet read from the source (its stream index is the source's); dropped when that stream
    // is not copied.
    void write_packet(PacketPtr packet);
    // Flushes the encoder, writes the trailer and closes the file; every write is checked, and a
    // failed one (a full disk, a file size limit) is Error(Io) naming the output.
    void finish();
    uint64_t bytes_written() const;

private:
    void drain(bool flush);
    [[noreturn]] void write_failed(const char* what, int ret) const;
    std::filesystem::path path_;
    std::filesystem::path display_; // the output the user named (errors never show the temporary name)
    AVFormatContext* out_ = nullptr;
    AVCodecContext* enc_ = nullptr;
    int video_out_ = -1;
    std::vector<int> stream_map_;                     // source stream index -> output index (-1 = dropped)
    std::vector<std::pair<int, int>> src_time_bases_; // per source stream
    int src_tb_num_ = 1, src_tb_den_ = 1;
    int pix_fmt_ = -1;
    ColorMatrix matrix_ = ColorMatrix::Bt709;
    ColorRange range_ = ColorRange::Limited;
    bool header_written_ = false, finished_ = false;
    std::vector<std::string> notes_;
    PacketPtr pkt_;
};

// Encoder names libavcodec knows, for error messages ("did you mean").
bool encoder_exists(const std::string& name);

} // namespace vkml::media
