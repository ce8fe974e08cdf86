// `vkml detect` on a short video end to end: a clip generated here (darknet's dog.jpg, shifted a
// little every frame, encoded with libx264), detected through the media library's transcoder,
// written as an annotated video and a JSON record per frame.
#include <gtest/gtest.h>
#include <stb_image.h>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
}

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "vkml/media/reader.hpp"
#include "vkml/media/testclip.hpp"
#include "vkml/passes/detector.hpp"

namespace {

namespace fs = std::filesystem;

TEST(DetectVideo, ToolAnnotatesAClip) {
    const fs::path model = vkml::passes::resolve_model("nanodet"), photo = "/usr/share/darknet/data/dog.jpg";
    if (!fs::exists(model) || !fs::exists(photo)) GTEST_SKIP() << "needs " << model << " and " << photo;
    if (!fs::exists(VKML_TOOL_PATH)) GTEST_SKIP() << "vkml tool not at " << VKML_TOOL_PATH;
    int w = 0, h = 0, c = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load(photo.c_str(), &w, &h, &c, 3), stbi_image_free);
    ASSERT_TRUE(px);
    const fs::path dir = fs::temp_directory_path() / ("vkml-detect-video-" + std::to_string(getpid()));
    fs::create_directories(dir);
    // 320x240 frames: the photo scaled down (nearest), moved right by 4 pixels per frame; 5 frames
    // with AAC audio, of which --frames takes 3 (issue 14, item 7: the audio is cut with them).
    const int fw = 320, fh = 240, frames = 3;
    vkml::media::TestClipDesc clip;
    clip.path = dir / "clip.mp4";
    clip.size = {fw, fh};
    clip.frames = frames + 2;
    clip.paint = [&](int64_t index, AVFrame& f) {
        std::vector<uint8_t> rgb(size_t(fw) * fh * 3);
        for (int y = 0; y < fh; ++y)
            for (int x = 0; x < fw; ++x) {
                const int sx = std::clamp((x - int(index) * 4) * w / fw, 0, w - 1), sy = y * h / fh;
                std::memcpy(&rgb[(size_t(y) * fw + x) * 3], px.get() + (size_t(sy) * w + sx) * 3, 3);
            }
        vkml::media::fill_from_rgb(f, rgb.data(), fw * 3);
    };
    vkml::media::write_test_clip(clip);

    const std::string cmd = std::string(VKML_TOOL_PATH) + " detect " + clip.path.string() + " -o " +
                            (dir / "out.mp4").string() + " --json " + (dir / "dets.json").string() +
                            " --frames " + std::to_string(frames) + " --quiet 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    const int status = pclose(p);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;

    vkml::media::VideoReader reader({.path = dir / "out.mp4"});
    EXPECT_EQ(reader.info().size.width, fw);
    EXPECT_EQ(reader.info().size.height, fh);
    double audio_start = -1, audio_end = -1, video_end = 0;
    reader.on_other_packet = [&](vkml::media::PacketPtr packet) {
        const double tb = av_q2d(reader.format()->streams[packet->stream_index]->time_base);
        audio_start = double(packet->pts) * tb;
        audio_end = double(packet->pts + packet->duration) * tb;
    };
    int decoded = 0;
    while (vkml::media::FramePtr f = reader.read_frame()) {
        ++decoded;
        video_end = double(f->pts + vkml::media::frame_duration(*f)) * reader.info().time_base.value();
    }
    EXPECT_EQ(decoded, frames);
    EXPECT_NEAR(video_end, frames / 25.0, 1e-3);
    EXPECT_LT(audio_start, video_end) << "the last audio packet starts before the video ends";
    EXPECT_GE(audio_end, video_end);
    EXPECT_LT(audio_end, video_end + 0.03) << "and ends with it, not " << audio_end << " s";
    std::ifstream jf(dir / "dets.json");
    const nlohmann::json j = nlohmann::json::parse(jf);
    ASSERT_EQ(j.size(), size_t(frames)) << j.dump();
    int with_dog = 0;
    for (int i = 0; i < frames; ++i) {
        EXPECT_EQ(j[size_t(i)]["frame"], i);
        for (const auto& d : j[size_t(i)]["detections"]) {
            with_dog += d["class"] == "dog";
            EXPECT_LE(d["box"][2].get<double>(), double(fw));
        }
    }
    EXPECT_GE(with_dog, 2) << j.dump();
    fs::remove_all(dir);
}

} // namespace
