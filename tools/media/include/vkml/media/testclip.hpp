#pragma once
// Short clips written with libavcodec, for tests and for remaking the bundled default clip:
// frames painted by a callback (RGB, converted on the CPU with BT.601 limited range, an
// implementation independent of the GPU colour ops), optional explicit (variable-rate)
// timestamps, a rotation tag, container metadata and a synthetic audio track.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "vkml/media/reader.hpp"

namespace vkml::media {

struct TestClipDesc {
    std::filesystem::path path;
    Size size{64, 48};
    int frames = 8;
    Rational frame_rate{25, 1};
    Rational time_base{1, 25}; // of the video stream; pts below are in it
    std::vector<int64_t> pts;  // per frame; empty: i * time_base.den / (frame_rate * time_base.num)
    std::string codec = "libx264";
    std::string pix_fmt = "yuv420p";
    // AVColorRange the stream says; -1: limited (MPEG) for YUV and grey, nothing for RGB.
    int color_range = -1;
    std::vector<std::pair<std::string, std::string>> options; // encoder options (e.g. crf, qp)
    std::string audio_codec = "aac";                          // empty: no audio
    int sample_rate = 48000;
    double audio_seconds = 0; // 0: as long as the video
    int rotation = 0;         // display matrix, degrees (counter-clockwise, as libavutil/display.h)
    std::map<std::string, std::string> metadata;                    // container tags
    std::vector<std::pair<std::string, std::string>> muxer_options; // e.g. {"movflags", "+faststart"}
    // Paints frame `index` into `frame` (allocated in pix_fmt at `size`). Default: a moving gradient
    // with a bright square, distinct per frame.
    std::function<void(int64_t index, AVFrame& frame)> paint;
};

void write_test_clip(const TestClipDesc& desc);

// RGB24 pixels (row stride `stride`) into a frame in planar YUV of 8 to 16 bits (yuv420p,
// yuv422p10le, yuva444p, ...: BT.601, limited range, chroma the mean of its block, alpha opaque),
// rgb24, rgba, rgb0, bgra or bgr0 (alpha opaque).
void fill_from_rgb(AVFrame& frame, const uint8_t* rgb, int stride);

} // namespace vkml::media

namespace vkml::media {

// The bundled default clip of `vkml upscale`: $VKML_CLIP, else <prefix>/share/vkml/clips/ next to
// an installed binary, else the source tree's assets/clips/.
std::filesystem::path bundled_clip_path();
inline constexpr const char* bundled_clip_name = "pedestrians.mp4";

} // namespace vkml::media
