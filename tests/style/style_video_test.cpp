// The stylizer as vkml_media's frame processor (the sample's video path): every frame of a short
// generated clip comes out as the standalone run of the same frame would, and the sample itself
// turns a clip into a video file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "gpu_test.hpp"
#include "vkml/media/testclip.hpp"
#include "vkml/media/transcode.hpp"
#include "style_paths.hpp"
#include "vkml/passes/stylizer.hpp"

using namespace vkml;
using namespace vkml::test;

namespace {

class StyleVideo : public GpuTest {};

// Stylizes each frame, then checks it against Stylizer::run on the same input pixels.
class CheckingProcessor final : public media::FrameProcessor {
public:
    explicit CheckingProcessor(passes::Stylizer& style) : style_(style) {}
    media::Size output_size(int w, int h) const override { return {w, h}; }
    void prepare(const media::ProcessorSetup& s) override {
        style_.prepare(uint32_t(s.input.width), uint32_t(s.input.height));
    }
    void process(media::FrameContext& f) override {
        style_.record(f.cmd(), f.input(), f.output());
        gpu::barrier::compute_to_transfer(f.cmd());
        f.submit_and_wait();
        const std::vector<float> in = gpu::download_floats(f.device(), f.input());
        const std::vector<float> out = gpu::download_floats(f.device(), f.output());
        const auto& s = f.input().shape();
        const std::vector<float> want =
            style_.run(graph::TensorData::from_floats({s[0], s[1], s[2], s[3]}, in)).to_floats();
        double worst = 0;
        for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, double(std::abs(out[i] - want[i])));
        worst_ = std::max(worst_, worst);
        ++frames_;
    }
    double worst_ = 0;
    int frames_ = 0;

private:
    passes::Stylizer& style_;
};

} // namespace

TEST_F(StyleVideo, FramesMatchTheStandaloneRunAndTheSampleWritesAVideo) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("vkml_style_video_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto clip = dir / "clip.mp4";
    media::write_test_clip({.path = clip, .size = {40, 30}, .frames = 3, .audio_codec = ""});

    passes::Stylizer style(dev(),
                           {.model = style_fixture("style_tiny_9.onnx"), .fp32 = true, .strength = 0.9f});
    CheckingProcessor proc(style);
    media::TranscodeDesc desc{.input = clip, .output = dir / "styled.mp4"};
    desc.device = &dev();
    desc.quiet = true;
    desc.handle_signals = false;
    const media::TranscodeStats stats = media::transcode(desc, proc);
    EXPECT_EQ(stats.frames, 3);
    EXPECT_EQ(proc.frames_, 3);
    EXPECT_EQ(stats.output_size, (media::Size{40, 30}));
    EXPECT_LT(proc.worst_, 2e-6) << "the frame processor's result differs from Stylizer::run";
    EXPECT_TRUE(std::filesystem::exists(dir / "styled.mp4"));

#ifdef VKML_STYLE_SAMPLE
    // The sample's own video path, as a user runs it.
    const auto out = dir / "sample.mp4";
    const std::string cmd = std::string(VKML_STYLE_SAMPLE) + " --input " + clip.string() + " --output " +
                            out.string() + " --style " + style_fixture("style_tiny_8.onnx").string() +
                            " --max-frames 2 --strength 0.5";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    EXPECT_TRUE(std::filesystem::exists(out)) << cmd;
#endif
    std::filesystem::remove_all(dir);
}
