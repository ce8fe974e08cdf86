// vkml_media in-process: clips written by the test (libavcodec), read back with their facts,
// transcoded through a trivial GPU processor (the GPU colour conversion there and back, the
// pipeline, audio copy, timestamps), Ctrl-C mid-run, and the errors users meet.
#include <gtest/gtest.h>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "gpu_test.hpp"
#include "media/convert.hpp" // private to vkml_media (tools/media)
#include "media/image.hpp"
#include "vkml/media/testclip.hpp"
#include "vkml/media/transcode.hpp"
#include "media_util.hpp"
#include "vkml/error.hpp"

using namespace vkml;
using namespace vkml::test;
namespace fs = std::filesystem;

namespace {

class MediaTest : public GpuTest {};

// Copies the frame through unchanged (so the output is the colour conversion's round trip), and
// optionally raises SIGINT or sets a cancel flag at a given frame.
struct Identity final : media::FrameProcessor {
    int64_t interrupt_at = -1;
    std::atomic<bool>* cancel = nullptr;
    int64_t seen = 0;
    media::Size output_size(int w, int h) const override { return {w, h}; }
    void process(media::FrameContext& f) override {
        gpu::barrier::memory(f.cmd(), VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_WRITE_BIT,
                             VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
        f.cmd().copy(f.input().range(), f.output().range(), f.input().bytes());
        if (f.info().index == interrupt_at) {
            if (cancel)
                cancel->store(true);
            else
                std::raise(SIGINT);
        }
        ++seen;
    }
};

// Copies the frame in `pieces` submissions (FrameContext::flush between them), taking its time on
// the host between pieces as a processor recording a long frame for a slow device does, so that
// the progress line has time to see the frame part done.
struct PiecewiseCopy final : media::FrameProcessor {
    int pieces = 8;
    media::Size output_size(int w, int h) const override { return {w, h}; }
    void process(media::FrameContext& f) override {
        const uint64_t bytes = f.input().bytes(), part = (bytes / 4 + pieces - 1) / pieces * 4;
        for (int i = 0; i < pieces; ++i) {
            if (i > 0) {
                f.flush(double(i) / pieces);
                std::this_thread::sleep_for(std::chrono::milliseconds(60));
            }
            gpu::CommandBuffer& cmd = f.cmd();
            gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_WRITE_BIT,
                                 VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
            const uint64_t off = uint64_t(i) * part;
            const gpu::BufferRange in = f.input().range(), out = f.output().range();
            if (off < bytes)
                cmd.copy({in.buffer, in.offset + off, VK_WHOLE_SIZE},
                         {out.buffer, out.offset + off, VK_WHOLE_SIZE}, std::min(part, bytes - off));
        }
    }
};

// A frame that takes `pieces` x `piece_ms` on the "device" (host sleeps between flushes, as a
// slow GPU makes a processor wait), stopping between pieces when the run is cancelled; at piece
// `cancel_piece` of frame `cancel_frame` it sets the cancel flag and notes the time.
struct SlowFrames final : media::FrameProcessor {
    int pieces = 20, piece_ms = 100;
    int64_t cancel_frame = -1;
    int cancel_piece = 0;
    std::atomic<bool>* cancel = nullptr;
    std::chrono::steady_clock::time_point cancelled_at{};
    media::Size output_size(int w, int h) const override { return {w, h}; }
    void process(media::FrameContext& f) override {
        for (int i = 0; i < pieces; ++i) {
            if (i > 0) {
                f.flush(double(i) / pieces);
                if (f.cancelled()) return;
                std::this_thread::sleep_for(std::chrono::milliseconds(piece_ms));
            }
            if (f.info().index == cancel_frame && i == cancel_piece) {
                cancelled_at = std::chrono::steady_clock::now();
                cancel->store(true);
            }
        }
        gpu::barrier::memory(f.cmd(), VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_WRITE_BIT,
                             VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
        f.cmd().copy(f.input().range(), f.output().range(), f.input().bytes());
    }
};

media::TestClipDesc lossless_clip(const fs::path& path, int frames) {
    media::TestClipDesc d;
    d.path = path;
    d.size = {48, 32};
    d.frames = frames;
    d.codec = "ffv1";
    d.pix_fmt = "yuv444p";
    return d;
}

// The format cpu_conversion_format picks for `name`, by name ("" for none).
std::string cpu_conversion_target(const std::string& name) {
    const int to = media::cpu_conversion_format(av_get_pix_fmt(name.c_str()));
    return to < 0 ? "" : av_get_pix_fmt_name(static_cast<AVPixelFormat>(to));
}

std::string error_of(const media::TranscodeDesc& desc, media::FrameProcessor& p) {
    try {
        media::transcode(desc, p);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_F(MediaTest, ReaderReportsTheStreamFacts) {
    const fs::path dir = scratch_dir("facts");
    media::TestClipDesc d;
    d.path = dir / "clip.mp4";
    d.frames = 10;
    d.rotation = 90;
    d.metadata["title"] = "facts";
    media::write_test_clip(d);
    media::VideoReader r({d.path, 1});
    EXPECT_EQ(r.info().size, (media::Size{64, 48}));
    EXPECT_EQ(r.info().codec, "h264");
    EXPECT_EQ(r.info().pix_fmt, "yuv420p");
    EXPECT_EQ(r.info().frame_count, 10);
    EXPECT_NEAR(r.info().frame_rate.value(), 25.0, 1e-9);
    // libavformat 59's MP4 muxer and demuxer disagree on the display matrix's sign, so a 90 degree
    // tag may read back as 270; the tool copies the matrix verbatim either way (see upscale_test).
    EXPECT_TRUE(r.info().rotation == 90 || r.info().rotation == 270) << r.info().rotation;
    EXPECT_TRUE(r.info().has_audio);
    EXPECT_EQ(r.info().matrix, media::ColorMatrix::Bt601);
    EXPECT_EQ(r.info().range, media::ColorRange::Limited);
    int frames = 0;
    while (r.read_frame()) ++frames;
    EXPECT_EQ(frames, 10);
    EXPECT_FALSE(r.truncated());
    fs::remove_all(dir);
}

// ffv1 4:4:4 in and out: what comes back differs from what went in only by the YUV -> RGB -> YUV
// round trip on the GPU; timestamps (variable rate) and the AAC packets are unchanged.
TEST_F(MediaTest, IdentityRoundTripKeepsPixelsTimestampsAndAudio) {
    const fs::path dir = scratch_dir("identity");
    media::TestClipDesc d = lossless_clip(dir / "in.mkv", 6);
    d.time_base = {1, 1000};
    d.pts = {0, 40, 90, 100, 180, 260};
    d.metadata["title"] = "round trip";
    media::write_test_clip(d);
    Identity p;
    media::TranscodeDesc t{.input = d.path, .output = dir / "out.mkv", .codec = "ffv1", .pix_fmt = "yuv444p"};
    t.quiet = true;
    t.device = &dev();
    const media::TranscodeStats st = media::transcode(t, p);
    EXPECT_EQ(st.frames, 6);
    EXPECT_FALSE(st.cancelled);
    ASSERT_EQ(st.stages.size(), 3u);
    EXPECT_GT(st.stages[0].fps, 0);

    const DecodedClip in = decode_clip(d.path), out = decode_clip(t.output);
    ASSERT_EQ(out.rgb.size(), 6u);
    EXPECT_EQ(out.info.size, in.info.size);
    EXPECT_EQ(out.seconds, in.seconds);
    for (size_t i = 0; i < out.rgb.size(); ++i) {
        const Diff df = diff(out.rgb[i], in.rgb[i]);
        EXPECT_LE(df.max, 3) << "frame " << i;
        EXPECT_LT(df.mean, 0.6) << "frame " << i;
    }
    ASSERT_FALSE(in.others.empty());
    ASSERT_EQ(out.others.size(), in.others.size());
    for (size_t i = 0; i < in.others.size(); ++i) {
        EXPECT_EQ(out.others[i].data, in.others[i].data) << "audio packet " << i;
        EXPECT_EQ(out.others[i].pts, in.others[i].pts) << "audio packet " << i;
    }
    EXPECT_EQ(out.metadata.count("title") ? out.metadata.at("title") : "", "round trip");
    // Nothing but the input and the output in the folder: the temporary file was renamed.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
    fs::remove_all(dir);
}

// A processor that splits its frame into several submissions (FrameContext::flush): the frames
// come out the same, every piece is its own submission, and the progress callback sees how far
// the GPU is into the frame (issue 14: long image work in bounded submissions, with progress).
TEST_F(MediaTest, FramesSplitIntoSubmissionsShowProgress) {
    const fs::path dir = scratch_dir("pieces");
    media::TestClipDesc d = lossless_clip(dir / "in.mkv", 2);
    media::write_test_clip(d);
    PiecewiseCopy p;
    media::TranscodeDesc t{.input = d.path, .output = dir / "out.mkv", .codec = "ffv1", .pix_fmt = "yuv444p"};
    t.device = &dev();
    t.threads.proc = 1;
    std::vector<double> parts;
    t.on_progress = [&](const media::Progress& pr) { parts.push_back(pr.frame_progress); };
    const uint64_t before = dev().last_submitted(gpu::QueueRole::Compute);
    const media::TranscodeStats st = media::transcode(t, p);
    EXPECT_EQ(st.frames, 2);
    EXPECT_GE(dev().last_submitted(gpu::QueueRole::Compute) - before, uint64_t(2 * p.pieces));
    const DecodedClip in = decode_clip(d.path), out = decode_clip(t.output);
    ASSERT_EQ(out.rgb.size(), 2u);
    for (size_t i = 0; i < out.rgb.size(); ++i)
        EXPECT_LE(diff(out.rgb[i], in.rgb[i]).max, 3) << "frame " << i;
    EXPECT_TRUE(std::any_of(parts.begin(), parts.end(), [](double v) { return v > 0 && v < 1; }))
        << parts.size() << " progress calls, none inside a frame";
    fs::remove_all(dir);
}

// 8-bit 4:2:0 H.264 through the default encoder (libx264 at crf 18): the upscaled stream decodes
// to frames close to the input (lossy codec, so a loose bound), same count and timestamps.
TEST_F(MediaTest, H264RoundTripThroughTheDefaultEncoder) {
    const fs::path dir = scratch_dir("h264");
    media::TestClipDesc d;
    d.path = dir / "in.mp4";
    d.frames = 5;
    d.options = {{"qp", "0"}};
    media::write_test_clip(d);
    Identity p;
    media::TranscodeDesc t{.input = d.path, .output = dir / "out.mp4"};
    t.quiet = true;
    t.device = &dev();
    media::transcode(t, p);
    const DecodedClip in = decode_clip(d.path), out = decode_clip(t.output);
    ASSERT_EQ(out.rgb.size(), 5u);
    EXPECT_EQ(out.info.codec, "h264");
    EXPECT_EQ(out.info.pix_fmt, "yuv420p");
    EXPECT_EQ(out.seconds, in.seconds);
    // Loose: x264 at crf 18 plus chroma resampling (bilinear up on the GPU, 2x2 mean down) on a
    // pattern with detail at the pixel scale; swapped planes or a wrong matrix give 30 and more.
    for (size_t i = 0; i < out.rgb.size(); ++i)
        EXPECT_LT(diff(out.rgb[i], in.rgb[i]).mean, 8.0) << "frame " << i;
    fs::remove_all(dir);
}

// Ctrl-C after frame 3 of 40: the run stops, the encoder is flushed and the file under the output
// name decodes to the frames done so far.
TEST_F(MediaTest, SigintLeavesAPlayablePartialFile) {
    const fs::path dir = scratch_dir("sigint");
    const media::TestClipDesc d = lossless_clip(dir / "in.mkv", 40);
    media::write_test_clip(d);
    Identity p;
    p.interrupt_at = 3;
    media::TranscodeDesc t{.input = d.path, .output = dir / "out.mkv", .codec = "ffv1"};
    t.quiet = true;
    t.device = &dev();
    t.threads.proc = 1;
    const media::TranscodeStats st = media::transcode(t, p);
    EXPECT_TRUE(st.cancelled);
    EXPECT_TRUE(st.partial_kept);
    EXPECT_EQ(st.output, t.output);
    ASSERT_TRUE(fs::exists(t.output));
    const DecodedClip out = decode_clip(t.output);
    EXPECT_GE(out.rgb.size(), 4u);
    EXPECT_LT(out.rgb.size(), 40u);
    EXPECT_EQ(static_cast<int64_t>(out.rgb.size()), st.frames);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
    // The handler is gone afterwards: the default action is back.
    struct sigaction now {};
    sigaction(SIGINT, nullptr, &now);
    EXPECT_EQ(now.sa_handler, SIG_DFL);
    fs::remove_all(dir);
}

TEST_F(MediaTest, CancelWithNoPartialRemovesTheOutput) {
    const fs::path dir = scratch_dir("nopartial");
    const media::TestClipDesc d = lossless_clip(dir / "in.mkv", 30);
    media::write_test_clip(d);
    std::atomic<bool> cancel{false};
    Identity p;
    p.interrupt_at = 2;
    p.cancel = &cancel;
    media::TranscodeDesc t{.input = d.path, .output = dir / "out.mkv", .codec = "ffv1"};
    t.quiet = true;
    t.no_partial = true;
    t.cancel = &cancel;
    t.device = &dev();
    const media::TranscodeStats st = media::transcode(t, p);
    EXPECT_TRUE(st.cancelled);
    EXPECT_FALSE(st.partial_kept);
    EXPECT_FALSE(fs::exists(t.output));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
    fs::remove_all(dir);
}

// Issue 14, item 7: --frames 5 of a 20-frame clip with 0.8 s of audio: 5 frames and the audio up
// to their end (0.2 s; the packet that straddles it included), the packets unchanged. Before, the
// whole 0.8 s of audio was copied.
TEST_F(MediaTest, FramesCutsTheAudioWithTheVideo) {
    const fs::path dir = scratch_dir("frames-cut");
    const media::TestClipDesc d = lossless_clip(dir / "in.mkv", 20);
    media::write_test_clip(d);
    Identity p;
    media::TranscodeDesc t{.input = d.path, .output = dir / "out.mkv", .codec = "ffv1"};
    t.quiet = true;
    t.device = &dev();
    t.max_frames = 5;
    const media::TranscodeStats st = media::transcode(t, p);
    EXPECT_EQ(st.frames, 5);
    EXPECT_FALSE(st.cancelled);
    const DecodedClip in = decode_clip(d.path), out = decode_clip(t.output);
    ASSERT_EQ(out.rgb.size(), 5u);
    EXPECT_NEAR(out.seconds.back(), 0.16, 1e-6); // (video_end is on the container's clock)
    ASSERT_FALSE(out.others.empty());
    ASSERT_LT(out.others.size(), in.others.size());
    for (size_t i = 0; i < out.others.size(); ++i) {
        EXPECT_EQ(out.others[i].data, in.others[i].data) << "audio packet " << i;
        EXPECT_LT(out.others[i].start, out.video_end) << "audio packet " << i;
    }
    EXPECT_GE(out.others.back().end, out.video_end);
    EXPECT_GE(in.others[out.others.size()].start, out.video_end)
        << "the first packet left out starts at the cut";
    fs::remove_all(dir);
}

// Issue 14, item 6: a cancel on a slow device (2 s frames, in 0.1 s pieces) stops within a piece:
// the frame being processed and the frames queued behind it are dropped, the frame done is kept.
// Before, every frame already read (up to 5 here, 10 s) was finished first.
TEST_F(MediaTest, CancelOnASlowDeviceStopsWithinAPiece) {
    const fs::path dir = scratch_dir("slow-cancel");
    const media::TestClipDesc d = lossless_clip(dir / "in.mkv", 12);
    media::write_test_clip(d);
    std::atomic<bool> cancel{false};
    SlowFrames p;
    p.cancel_frame = 1;
    p.cancel_piece = 2;
    p.cancel = &cancel;
    media::TranscodeDesc t{.input = d.path, .output = dir / "out.mkv", .codec = "ffv1"};
    t.quiet = true;
    t.cancel = &cancel;
    t.device = &dev();
    t.threads.proc = 1;
    const media::TranscodeStats st = media::transcode(t, p);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - p.cancelled_at).count();
    EXPECT_TRUE(st.cancelled);
    EXPECT_LT(took, 1.0) << "from the cancel to the end of the run";
    EXPECT_EQ(st.frames, 1);
    EXPECT_EQ(decode_clip(t.output).rgb.size(), 1u);
    EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"in.mkv", "out.mkv"}));
    fs::remove_all(dir);
}

namespace {

std::string file_bytes(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A copy of `from` with the middle half of its `which`-th video packet scrambled.
void damage_video_packet(const fs::path& from, const fs::path& to, int which) {
    std::string bytes = file_bytes(from);
    AVFormatContext* fmt = nullptr;
    ASSERT_GE(avformat_open_input(&fmt, from.c_str(), nullptr, nullptr), 0);
    ASSERT_GE(avformat_find_stream_info(fmt, nullptr), 0);
    const media::PacketPtr pkt = media::make_packet();
    for (int n = 0; av_read_frame(fmt, pkt.get()) >= 0; av_packet_unref(pkt.get())) {
        if (fmt->streams[pkt->stream_index]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO || n++ != which)
            continue;
        for (int i = pkt->size / 4; i < pkt->size * 3 / 4; ++i) bytes[size_t(pkt->pos + i)] ^= char(0x5a + i);
    }
    avformat_close_input(&fmt);
    std::ofstream(to, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

} // namespace

// Issue 14, item 5: input that is cut short or damaged is an error naming the file and leaves no
// output; with tolerate_errors the run goes on with what decodes. The cases: a fast-start MP4 (index
// first) cut in half, which before gave 8 of its 20 frames and no word, and an H.264 frame with
// scrambled data, which before was concealed without a word.
TEST_F(MediaTest, DamagedOrTruncatedInputIsAnErrorUnlessTolerated) {
    const fs::path dir = scratch_dir("damaged");
    media::TestClipDesc d;
    d.path = dir / "fast.mp4";
    d.frames = 20;
    d.muxer_options = {{"movflags", "+faststart"}};
    media::write_test_clip(d);
    {
        const std::string bytes = file_bytes(d.path);
        std::ofstream(dir / "cut.mp4", std::ios::binary)
            .write(bytes.data(), std::streamsize(bytes.size() / 2));
    }
    damage_video_packet(d.path, dir / "scrambled.mp4", 3);
    Identity p;
    auto run = [&](const char* in, const char* out, bool tolerate) {
        media::TranscodeDesc t{.input = dir / in, .output = dir / out, .codec = "ffv1"};
        t.quiet = true;
        t.device = &dev();
        t.tolerate_errors = tolerate;
        t.tolerate_hint = " (tolerate?)";
        return t;
    };
    std::string e = error_of(run("cut.mp4", "cut.mkv", false), p);
    EXPECT_NE(e.find("cut.mp4"), std::string::npos) << e;
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
    EXPECT_NE(e.find("(tolerate?)"), std::string::npos) << e;
    e = error_of(run("scrambled.mp4", "scrambled.mkv", false), p);
    EXPECT_NE(e.find("scrambled.mp4"), std::string::npos) << e;
    EXPECT_NE(e.find("damaged"), std::string::npos) << e;
    EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"cut.mp4", "fast.mp4", "scrambled.mp4"}));

    media::TranscodeStats st = media::transcode(run("cut.mp4", "cut.mkv", true), p);
    EXPECT_GT(st.frames, 0);
    EXPECT_LT(st.frames, 20);
    EXPECT_EQ(decode_clip(dir / "cut.mkv").rgb.size(), size_t(st.frames));
    st = media::transcode(run("scrambled.mp4", "scrambled.mkv", true), p);
    EXPECT_EQ(st.frames, 20);
    EXPECT_EQ(decode_clip(dir / "scrambled.mkv").rgb.size(), 20u);
    fs::remove_all(dir);
}

// Every failure is a vkml::Error naming the file, and leaves no output behind.
TEST_F(MediaTest, ErrorsNameTheFileAndLeaveNothing) {
    const fs::path dir = scratch_dir("errors");
    const media::TestClipDesc d = lossless_clip(dir / "good.mkv", 12);
    media::write_test_clip(d);
    media::TestClipDesc mp4;
    mp4.path = dir / "good.mp4";
    mp4.frames = 12;
    media::write_test_clip(mp4);
    // Truncated copies: the MP4 loses its index (at the end), the Matroska file its last frames.
    auto cut = [&](const fs::path& from, const fs::path& to, double keep) {
        std::ifstream f(from, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        std::ofstream(to, std::ios::binary)
            .write(bytes.data(), static_cast<std::streamsize>(bytes.size() * keep));
    };
    cut(mp4.path, dir / "cut.mp4", 0.5);
    cut(d.path, dir / "cut.mkv", 0.6);
    std::ofstream(dir / "notes.mp4") << "this is not a video\n";
    Identity p;
    auto err = [&](fs::path in, fs::path out, std::string codec = "") {
        media::TranscodeDesc t{.input = std::move(in), .output = std::move(out), .codec = std::move(codec)};
        t.quiet = true;
        t.device = &dev();
        return error_of(t, p);
    };
    std::string e = err(dir / "missing.mp4", dir / "o1.mp4");
    EXPECT_NE(e.find("missing.mp4"), std::string::npos) << e;
    EXPECT_NE(e.find("no such file"), std::string::npos) << e;
    e = err(dir / "notes.mp4", dir / "o2.mp4");
    EXPECT_NE(e.find("notes.mp4"), std::string::npos) << e;
    e = err(dir / "cut.mp4", dir / "o3.mp4");
    EXPECT_NE(e.find("cut.mp4"), std::string::npos) << e;
    e = err(dir / "cut.mkv", dir / "o4.mkv");
    EXPECT_NE(e.find("cut.mkv"), std::string::npos) << e;
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
    e = err(d.path, dir / "o5.mkv", "no-such-encoder");
    EXPECT_NE(e.find("no-such-encoder"), std::string::npos) << e;
    e = err(d.path, dir / "good.mkv" / "o6.mkv");
    EXPECT_NE(e.find("o6.mkv"), std::string::npos) << e;
    e = err(d.path, dir / "o7.xyz");
    EXPECT_NE(e.find("o7.xyz"), std::string::npos) << e;
    for (const char* name : {"o1.mp4", "o2.mp4", "o3.mp4", "o4.mkv", "o5.mkv", "o7.xyz"})
        EXPECT_FALSE(fs::exists(dir / name)) << name;
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 5); // the inputs only
    fs::remove_all(dir);
}

// `vkml upscale`'s image reader refuses an image larger than its pixel cap from the header, before
// decoding (a small compressed file can claim, and inflate to, gigabytes): the header alone here.
TEST(MediaImage, TooManyPixelsAreRefusedFromTheHeader) {
    auto png_header = [](uint32_t w, uint32_t h) {
        std::vector<uint8_t> b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
        for (const uint32_t v : {w, h})
            for (int k = 3; k >= 0; --k) b.push_back(uint8_t(v >> (8 * k)));
        for (const uint8_t v : {8, 0, 0, 0, 0}) b.push_back(v); // 8-bit grey
        for (int k = 0; k < 4; ++k) b.push_back(0);              // CRC (stb does not check it)
        return b;
    };
    media::ImageKind kind;
    auto error = [&](const std::vector<uint8_t>& bytes, int64_t max_pixels) {
        try {
            (void)media::decode_image(bytes, "big.png", kind, max_pixels);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // 20000 x 20000 grey: within stb's own limit (2^30 bytes), above vkml's (2^28 pixels).
    EXPECT_NE(error(png_header(20000, 20000), media::max_image_pixels)
                  .find("'big.png': 20000x20000 pixels: more than vkml reads (268435456)"),
              std::string::npos)
        << error(png_header(20000, 20000), media::max_image_pixels);
    EXPECT_NE(error(png_header(100, 100), 1000).find("100x100 pixels: more than vkml reads (1000)"), std::string::npos);
    // Below the cap the header passes and decoding reports the missing data.
    EXPECT_EQ(error(png_header(100, 100), media::max_image_pixels).find("pixels: more than"), std::string::npos);
}

TEST(MediaThreads, ParsesLoadProcSave) {
    const media::ThreadCounts t = media::parse_thread_counts("2:3:4");
    EXPECT_EQ(t.load, 2);
    EXPECT_EQ(t.proc, 3);
    EXPECT_EQ(t.save, 4);
    EXPECT_THROW(media::parse_thread_counts("2:3"), Error);
    EXPECT_THROW(media::parse_thread_counts("a:1:1"), Error);
    EXPECT_THROW(media::parse_thread_counts("1:1:1:1"), Error);
}

namespace {

// A frame's component `c` at (x, y) as stored (palette indices for pal8), read generically.
uint16_t component(const AVFrame& f, int c, int x, int y) {
    uint16_t v = 0;
    const uint8_t* data[4] = {f.data[0], f.data[1], f.data[2], f.data[3]};
    av_read_image_line2(&v, data, f.linesize, av_pix_fmt_desc_get(static_cast<AVPixelFormat>(f.format)), x, y,
                        c, 1, 0, 2);
    return v;
}

// A clip of `frames` frames in `pix_fmt`, each component painted by `value(frame, c, x, y)` (pal8:
// the index; its palette from `palette`), through a lossless encoder.
media::TestClipDesc format_clip(const fs::path& path, const std::string& codec, const std::string& pix_fmt,
                                std::function<uint16_t(int64_t, int, int, int)> value,
                                std::vector<uint32_t> palette = {}, int color_range = AVCOL_RANGE_UNSPECIFIED) {
    media::TestClipDesc d;
    d.path = path;
    d.color_range = color_range;
    d.size = {20, 14};
    d.frames = 3;
    d.codec = codec;
    d.pix_fmt = pix_fmt;
    d.audio_codec = "";
    d.paint = [value, palette](int64_t i, AVFrame& f) {
        const AVPixFmtDescriptor* pd = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(f.format));
        for (AVBufferRef* b : f.buf) // av_write_image_line2 ORs into what is there
            if (b) std::memset(b->data, 0, b->size);
        std::vector<uint16_t> line(size_t(f.width));
        for (int c = 0; c < pd->nb_components; ++c)
            for (int y = 0; y < f.height; ++y) {
                for (int x = 0; x < f.width; ++x) line[size_t(x)] = value(i, c, x, y);
                av_write_image_line2(line.data(), f.data, f.linesize, pd, 0, y, c, f.width, 2);
            }
        if (!palette.empty()) std::memcpy(f.data[1], palette.data(), palette.size() * 4);
    };
    media::write_test_clip(d);
    return d;
}

std::vector<media::FramePtr> read_frames(const fs::path& path) {
    media::VideoReader r({.path = path});
    std::vector<media::FramePtr> frames;
    while (media::FramePtr f = r.read_frame()) frames.push_back(std::move(f));
    return frames;
}

} // namespace

// Video pixel formats the GPU colour conversion has no layout for are converted on the CPU (with a
// note) or refused naming the file and the format, before anything is written. Grey video stays
// grey (8 and 16 bits, exactly, through the identity processor in f32); pal8 becomes planar RGB
// holding its palette's colours; rgb565 its 5/6-bit values widened; a Bayer clip is an error.
// Before: every one of them failed deep in the pipeline ("pixel format gray has no GPU colour
// conversion in vkml").
TEST_F(MediaTest, PixelFormatsWithoutAGpuLayoutAreConvertedOrRefused) {
    const fs::path dir = scratch_dir("pix-fmts");
    auto grey = [](int64_t i, int, int x, int y) { return uint16_t((x * 13 + y * 17 + i * 29) % 256); };
    auto grey16 = [](int64_t i, int, int x, int y) {
        return uint16_t((x * 2903 + y * 1709 + i * 4099 + 7) % 65536);
    };
    Identity p;
    auto run = [&](const fs::path& in, const fs::path& out, const std::string& codec,
                   const std::string& pix_fmt) {
        media::TranscodeDesc t{.input = in, .output = out, .codec = codec, .pix_fmt = pix_fmt};
        t.quiet = true;
        t.device = &dev();
        return media::transcode(t, p);
    };

    for (const auto& [fmt, value] :
         {std::pair<std::string, std::function<uint16_t(int64_t, int, int, int)>>{"gray", grey},
          {"gray16le", grey16}}) {
        SCOPED_TRACE(fmt);
        const auto d = format_clip(dir / (fmt + ".mkv"), "ffv1", fmt, value);
        EXPECT_EQ(cpu_conversion_target(fmt), fmt == "gray" ? "gbrp" : "gbrp16le");
        {
            const auto in = read_frames(d.path);
            int bad_in = 0;
            for (int y = 0; y < d.size.height; ++y)
                for (int x = 0; x < d.size.width; ++x)
                    bad_in += component(*in[0], 0, x, y) != value(0, 0, x, y);
            EXPECT_EQ(bad_in, 0) << "input "
                                 << av_get_pix_fmt_name(static_cast<AVPixelFormat>(in[0]->format));
        }
        const media::TranscodeStats st = run(d.path, dir / (fmt + "_out.mkv"), "", "");
        EXPECT_EQ(st.frames, 3);
        const auto frames = read_frames(dir / (fmt + "_out.mkv"));
        ASSERT_EQ(frames.size(), 3u);
        for (size_t i = 0; i < frames.size(); ++i) {
            EXPECT_EQ(av_get_pix_fmt_name(static_cast<AVPixelFormat>(frames[i]->format)), fmt)
                << "grey stays grey";
            int wrong = 0;
            for (int y = 0; y < d.size.height; ++y)
                for (int x = 0; x < d.size.width; ++x) {
                    const bool bad = component(*frames[i], 0, x, y) != value(int64_t(i), 0, x, y);
                    if (bad && wrong < 5)
                        ADD_FAILURE()
                            << "frame " << i << " at " << x << "," << y << ": "
                            << component(*frames[i], 0, x, y) << " != " << value(int64_t(i), 0, x, y);
                    wrong += bad;
                }
            EXPECT_EQ(wrong, 0) << "frame " << i;
        }
    }

    // Grey's range (issue 14): a grey stream that does not say is full range (FFmpeg's convention,
    // PNG and FFV1 grey): written back tagged full (pc), values as they were. One that says tv
    // (limited) range is expanded to full range for the model (16..235 -> 0..255, 16-bit: 4096..
    // 60160 -> 0..65535) and written back in its own range, tagged so. Before, every grey stream
    // came out tagged limited and a tv-range one reached the model unexpanded.
    {
        const auto unspecified = format_clip(dir / "gray_pc.mkv", "ffv1", "gray", grey);
        run(unspecified.path, dir / "gray_pc_out.mkv", "", "");
        const auto out = read_frames(dir / "gray_pc_out.mkv");
        ASSERT_EQ(out.size(), 3u);
        EXPECT_EQ(out[0]->color_range, AVCOL_RANGE_JPEG) << av_color_range_name(out[0]->color_range);
        EXPECT_EQ(component(*out[0], 0, 3, 2), grey(0, 0, 3, 2));
    }
    for (const int bits : {8, 16}) {
        SCOPED_TRACE(std::to_string(bits) + "-bit tv-range grey");
        const std::string fmt = bits == 8 ? "gray" : "gray16le";
        const int k = 1 << (bits - 8), max = (1 << bits) - 1;
        auto tv = [k](int64_t i, int, int x, int y) { return uint16_t(((x * 13 + y * 17 + i * 29) % 220 + 16) * k); };
        const auto d = format_clip(dir / (fmt + "_tv.mkv"), "ffv1", fmt, tv, {}, AVCOL_RANGE_MPEG);
        // Back as grey: its own range again, every value as it was.
        run(d.path, dir / (fmt + "_tv_out.mkv"), "", "");
        auto frames = read_frames(dir / (fmt + "_tv_out.mkv"));
        ASSERT_EQ(frames.size(), 3u);
        EXPECT_EQ(frames[0]->color_range, AVCOL_RANGE_MPEG) << av_color_range_name(frames[0]->color_range);
        int wrong = 0;
        for (size_t i = 0; i < frames.size(); ++i)
            for (int y = 0; y < d.size.height; ++y)
                for (int x = 0; x < d.size.width; ++x) {
                    const bool bad = component(*frames[i], 0, x, y) != tv(int64_t(i), 0, x, y);
                    if (bad && wrong < 5)
                        ADD_FAILURE() << "frame " << i << " at " << x << "," << y << ": "
                                      << component(*frames[i], 0, x, y) << " != " << tv(int64_t(i), 0, x, y);
                    wrong += bad;
                }
        EXPECT_EQ(wrong, 0);
        // As RGB: what the model saw, expanded to full range.
        const std::string rgb = bits == 8 ? "bgr0" : "gbrp16le"; // what ffv1 takes
        run(d.path, dir / (fmt + "_tv_rgb.mkv"), "ffv1", rgb);
        frames = read_frames(dir / (fmt + "_tv_rgb.mkv"));
        ASSERT_EQ(frames.size(), 3u);
        wrong = 0;
        for (int y = 0; y < d.size.height; ++y)
            for (int x = 0; x < d.size.width; ++x) {
                const double v = tv(1, 0, x, y);
                const auto want = uint16_t(std::lround((v - 16 * k) * max / (219.0 * k)));
                for (int c = 0; c < 3; ++c) {
                    const bool bad = component(*frames[1], c, x, y) != want;
                    if (bad && wrong < 5)
                        ADD_FAILURE() << x << "," << y << " c" << c << ": " << component(*frames[1], c, x, y)
                                      << " != " << want << " (tv " << v << ")";
                    wrong += bad;
                }
            }
        EXPECT_EQ(wrong, 0);
    }

    // pal8: 16 colours, indices painted; out as bgr0 (ffv1), every pixel its palette colour.
    std::vector<uint32_t> palette(256, 0xff000000u);
    for (uint32_t k = 0; k < 16; ++k)
        palette[k] = 0xff000000u | (k * 16 + 3) << 16 | (255 - k * 9) << 8 | (k * 37 % 256);
    auto index = [](int64_t i, int, int x, int y) { return uint16_t((x + 3 * y + int(i)) % 16); };
    const auto pal = format_clip(dir / "pal8.nut", "rawvideo", "pal8", index, palette);
    EXPECT_EQ(cpu_conversion_target("pal8"), "gbrap"); // pal8's palette has alpha
    media::TranscodeStats st = run(pal.path, dir / "pal8_out.mkv", "ffv1", "bgr0");
    EXPECT_EQ(st.frames, 3);
    auto frames = read_frames(dir / "pal8_out.mkv");
    ASSERT_EQ(frames.size(), 3u);
    for (size_t i = 0; i < frames.size(); ++i) {
        int wrong = 0;
        for (int y = 0; y < pal.size.height; ++y)
            for (int x = 0; x < pal.size.width; ++x) {
                const uint32_t colour = palette[index(int64_t(i), 0, x, y)];
                wrong += component(*frames[i], 0, x, y) != ((colour >> 16) & 255) ||
                         component(*frames[i], 1, x, y) != ((colour >> 8) & 255) ||
                         component(*frames[i], 2, x, y) != (colour & 255);
            }
        EXPECT_EQ(wrong, 0) << "frame " << i;
    }

    // rgb565le: R and B 5 bits, G 6, widened to 8 (v * 255 / max, rounded).
    auto rgb565 = [](int64_t i, int c, int x, int y) {
        return uint16_t((x * 3 + y * 5 + c * 7 + int(i)) % (c == 1 ? 64 : 32));
    };
    const auto r565 = format_clip(dir / "rgb565.nut", "rawvideo", "rgb565le", rgb565);
    st = run(r565.path, dir / "rgb565_out.mkv", "ffv1", "bgr0");
    frames = read_frames(dir / "rgb565_out.mkv");
    ASSERT_EQ(frames.size(), 3u);
    int wrong = 0;
    for (int c = 0; c < 3; ++c)
        for (int y = 0; y < r565.size.height; ++y)
            for (int x = 0; x < r565.size.width; ++x) {
                const int max = c == 1 ? 63 : 31;
                wrong += component(*frames[1], c, x, y) != (rgb565(1, c, x, y) * 255 + max / 2) / max;
            }
    EXPECT_EQ(wrong, 0);

    // Bayer: refused, naming the file and the format; nothing written.
    const auto bayer = format_clip(dir / "bayer.nut", "rawvideo", "bayer_rggb8", grey);
    media::TranscodeDesc t{.input = bayer.path, .output = dir / "o" / "bayer_out.mkv", .codec = "ffv1"};
    t.quiet = true;
    t.device = &dev();
    fs::create_directories(dir / "o");
    const std::string e = error_of(t, p);
    EXPECT_NE(e.find("'" + bayer.path.string() +
                     "': pixel format bayer_rggb8 (a Bayer sensor pattern) has no "
                     "conversion in vkml"),
              std::string::npos)
        << e;
    EXPECT_TRUE(list_dir(dir / "o").empty());

    // Through the tool with a model: grey video in, grey video out at twice the size, with the note;
    // the Bayer clip is one error line naming it, exit 1, nothing written.
    const fs::path anime4k = model_cache() / "websr/weights/anime4k/cnn-2x-s-rl.json";
    if (fs::exists(anime4k)) {
        int status = 0;
        std::string log = run_tool("upscale " + (dir / "gray.mkv").string() + " -o " + (dir / "o/gray_x2.mkv").string() +
                                       " -m anime4k-s -q",
                                   status);
        ASSERT_EQ(status, 0) << log;
        EXPECT_NE(log.find("vkml's GPU conversion does not read gray: its frames are converted to gbrp on the CPU"),
                  std::string::npos)
            << log;
        const auto grey_out = read_frames(dir / "o/gray_x2.mkv");
        ASSERT_EQ(grey_out.size(), 3u);
        EXPECT_EQ(grey_out[0]->format, AV_PIX_FMT_GRAY8);
        EXPECT_EQ(grey_out[0]->width, 40);
        log = run_tool("upscale " + bayer.path.string() + " -o " + (dir / "o/bayer_x2.mkv").string() + " -q", status);
        EXPECT_EQ(status, 1) << log;
        EXPECT_NE(log.find("vkml: '" + bayer.path.string() + "': pixel format bayer_rggb8"), std::string::npos) << log;
        EXPECT_EQ(list_dir(dir / "o"), std::vector<std::string>{"gray_x2.mkv"});
    }
    fs::remove_all(dir);
}
