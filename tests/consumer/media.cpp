// Built against an installed vkml::media: writes a short clip with libavcodec and reads its header
// back, so the media library, its public headers and its FFmpeg link line are exercised.
#include <cstdio>

#include "vkml/media/reader.hpp"
#include "vkml/media/testclip.hpp"

int main() try {
    vkml::media::TestClipDesc clip;
    clip.path = "consumer_clip.mp4";
    clip.frames = 3;
    clip.audio_codec.clear();
    vkml::media::write_test_clip(clip);
    vkml::media::VideoReader reader({.path = clip.path});
    const auto& info = reader.info();
    std::printf("media consumer: %dx%d\n", info.size.width, info.size.height);
    return info.size.width == 64 && info.size.height == 48 ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "media consumer: %s\n", e.what());
    return 1;
}
