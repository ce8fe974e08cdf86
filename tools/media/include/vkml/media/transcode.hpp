#pragma once
// media::transcode: a video (or an image, or a folder of images) through a GPU frame processor and
// back to a file, pipelined in three stages that run concurrently with bounded queues between them:
//
//   load (demux + decode, libavcodec threads) -> proc (upload planes, YUV->RGB on the GPU, the
//   processor, RGB->YUV on the GPU, read back) -> save (encode + mux, audio/subtitles copied)
//
// so that the slowest stage, on a real GPU usually the encoder, sets the pace. The processor sees
// every frame as a GPU tensor [1, 3, H, W] (RGB, values 0..1, f16 or f32 as it asks) and writes a
// tensor of the size it declares. `vkml upscale`, `vkml detect` and the style-transfer sample plug
// their own processors in:
//
//   struct Invert final : media::FrameProcessor {
//       media::Size output_size(int w, int h) const override { return {w, h}; }
//       void process(media::FrameContext& f) override { my_op->record(f.cmd(), {&f.input(), 1}, {&f.output(),
//       1}); }
//   };
//   media::TranscodeDesc desc{.input = "in.mp4", .output = "out.mp4"};
//   Invert p;
//   media::TranscodeStats stats = media::transcode(desc, p);   // throws vkml::Error
//
// Failures (missing, unreadable, truncated or non-video input, unknown codec, unwritable output)
// throw vkml::Error with one line naming the file; a failed run never leaves a file under the
// output name: every output (a video, an image, each image of a folder) is written to
// `<output dir>/.<name>.partial-<pid>.<ext>` with every write checked, flushed to the disk and
// renamed when complete (output_file.hpp); a full disk is an error naming the output.
// Such hidden files left by a killed run (SIGKILL, a crash) are removed by the next run on the
// same output once their process is gone.
// Ctrl-C or SIGTERM (when TranscodeDesc::handle_signals) or TranscodeDesc::cancel stops reading,
// drops the frames not yet on the GPU, stops the frame being processed at its next piece (see
// FrameContext::cancelled), finishes the frames already done, flushes the encoder and keeps the
// playable partial file under the output name (stats.cancelled; removed instead with no_partial).
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/stream.hpp"
#include "vkml/gpu/tensor.hpp"

namespace vkml::media {

struct Size {
    int width = 0;
    int height = 0;
    bool operator==(const Size&) const = default;
};

// Where a frame sits in its stream.
struct FrameInfo {
    int64_t index = 0;    // 0-based, in decode (presentation) order
    int64_t pts = 0;      // in the input stream's time base (AV_NOPTS_VALUE-free: estimated if absent)
    int64_t duration = 0; // in the same time base (estimated from the frame rate if absent)
    double seconds = 0;   // pts as seconds from the stream start
    std::string file;     // the source file (images: each image's path)
    bool alpha = false;   // this is the frame's alpha channel as a grey image (processes_alpha())
};

// Setup handed to FrameProcessor::prepare once, on the processing thread, before the first frame.
struct ProcessorSetup {
    gpu::Device* device = nullptr;
    Size input;   // the decoded frame size (before rotation metadata, which is kept as is)
    int tile = 0; // TranscodeDesc::tile (0 = automatic): for processors that tile
    int frames_in_flight = 1;
    // Bits per sample of the frames (8; 10 to 16 for deep video and 16-bit images): a processor
    // that computes in f16 (11 significant bits) keeps more than 10 only in f32.
    int bits = 8;
};

// One frame's GPU work, handed to FrameProcessor::process on the processing thread.
// cmd() is a command buffer in the recording state that already holds the colour conversion
// writing input(), followed by a compute->compute barrier, so the processor records its
// dispatches right away. The processor must leave output() fully written by compute shader (or
// transfer) writes; the transcoder records the barrier after it. A processor that needs results
// on the host mid-frame (detector boxes) calls submit_and_wait(): what is recorded so far runs,
// and cmd() is a fresh recording buffer afterwards. A processor with long work (a big image
// through a slow model) calls flush() between pieces of it, so that every submission stays short.
// Either way, cmd() must be asked for again afterwards: it is another buffer. Such a processor
// also asks cancelled() between pieces and returns early when it is true (Ctrl-C, SIGTERM): the
// frame is then dropped, so a slow device stops within a piece or two, not after the frame.
class FrameContext {
public:
    virtual ~FrameContext() = default;
    virtual gpu::Device& device() = 0;
    virtual gpu::CommandBuffer& cmd() = 0;
    virtual const gpu::Tensor& input() const = 0;  // [1, 3, H, W], RGB 0..1
    virtual const gpu::Tensor& output() const = 0; // [1, 3, OH, OW], write RGB 0..1 (clamped later)
    virtual const FrameInfo& info() const = 0;
    virtual void submit_and_wait() = 0;
    // Submits what cmd() holds so far without waiting, and continues in another command buffer:
    // the frame's work becomes several bounded submissions (the GPU shows progress, a Ctrl-C or an
    // error stops after the current piece, no single submission runs for minutes). `progress`
    // (0..1) is the share of the frame's work submitted so far; the progress line shows it once
    // the GPU has done that much. At most a few pieces are queued: the next cmd() waits for the
    // oldest when they are all in flight.
    virtual void flush(double progress) = 0;
    // Whether the run is being stopped (Ctrl-C, SIGTERM, TranscodeDesc::cancel). A processor that
    // sees true may return at once, leaving output() unfinished: the frame is not written.
    virtual bool cancelled() const = 0;
};

class FrameProcessor {
public:
    virtual ~FrameProcessor() = default;
    // The output frame size for an input of in_w x in_h (called before prepare()).
    virtual Size output_size(int in_w, int in_h) const = 0;
    // The dtype of the input and output tensors (f16 halves the conversion traffic); asked after
    // prepare().
    virtual gpu::DType dtype() const { return gpu::DType::f32; }
    // Builds sessions/pipelines for the input size. Called once per distinct input size (a folder
    // of images of several sizes calls it again when the size changes).
    virtual void prepare(const ProcessorSetup& setup) { (void)setup; }
    virtual void process(FrameContext& frame) = 0;
    // Shown in the stats line ("proc: esrgan-slim x2").
    virtual std::string name() const { return "process"; }
    // True to keep the alpha channel of inputs that have one (RGBA PNGs, yuva420p or bgra video):
    // process() is then called a second time for each such frame with the alpha as a grey image
    // (R = G = B = alpha, FrameInfo::alpha set), and the output's G channel becomes the output's
    // alpha. False: the alpha is dropped (with a note). An upscaler upscales its alpha this way.
    virtual bool processes_alpha() const { return false; }
};

// Threads per stage, like the ncnn tools' -j load:proc:save. Video: load = decoder threads,
// proc = frames in flight on the GPU (1..4), save = encoder threads (0 = the codec's automatic
// choice). Images: loader threads, frames in flight, writer threads.
struct ThreadCounts {
    int load = 0;
    int proc = 2;
    int save = 0;
};
// Parses "L:P:S" (each a non-negative integer); throws vkml::Error(InvalidArgument).
ThreadCounts parse_thread_counts(std::string_view text);

struct Progress {
    int64_t frames_done = 0;
    int64_t frames_total = 0;  // estimate; 0 when unknown
    double seconds = 0;        // since the start
    double fps = 0;            // recent average (frames, with the current frame's done share)
    uint64_t output_bytes = 0; // written so far
    double frame_progress = 0; // share of the frame in progress the GPU has done (0: unknown/none)
};

struct TranscodeDesc {
    std::filesystem::path input;  // a video file, an image (PNG/JPEG), or a folder of images
    std::filesystem::path output; // a video file, an image, or a folder (images: created if missing)

    // Encoder: libavcodec's name (libx264, libx265, libvpx-vp9, mpeg4, ffv1, ...). Empty: libx264
    // when the container takes H.264, else the container's default video codec.
    std::string codec;
    int crf = -1;        // constant rate factor where the encoder has one; -1: 18 for x264/x265
    std::string preset;  // encoder preset (x264/x265: ultrafast..veryslow); empty: encoder default
    std::string pix_fmt; // e.g. yuv420p, yuv444p, yuv420p10le; empty: the input's if the encoder takes it
    std::vector<std::pair<std::string, std::string>> encoder_options; // -e key=value, passed as AVOptions

    ThreadCounts threads;
    int tile = 0;            // forwarded to the processor (ProcessorSetup::tile)
    bool quiet = false;      // no progress output
    bool no_partial = false; // on cancel, remove the partial output instead of keeping it
    bool benchmark = false;  // decode + process (+ read back), no encode, no output file
    // Damaged or truncated input (a frame that fails to decode, a file cut short, an unreadable
    // image of a folder): false, an error naming the file; true, a warning and on with what can be
    // read (see VideoReader). tolerate_hint is added to the error, e.g. "; --tolerate-errors ...".
    bool tolerate_errors = false;
    std::string tolerate_hint;
    int64_t max_frames = 0; // stop after this many frames (0 = all); the copied streams (audio,
                            // subtitles) are cut at the end of the last frame too

    // The device to run on; null: transcode creates one for the run, so a processor that keeps GPU
    // resources after transcode() returns must pass its own (resources die before their device).
    gpu::Device* device = nullptr;
    bool handle_signals = true;          // SIGINT and SIGTERM handlers for the run (restored afterwards)
    std::atomic<bool>* cancel = nullptr; // set to true from anywhere to stop like Ctrl-C
    // Progress callback, called about 4 times a second; empty: a bar on a terminal (stderr), plain
    // lines every few seconds otherwise.
    std::function<void(const Progress&)> on_progress;
    // Prefix of the messages transcode prints ("vkml upscale").
    std::string log_name = "vkml";
};

// Per-stage throughput. Each stage's fps is frames / the time that stage was busy (not waiting on a
// queue), so the smallest one names the bottleneck; `fps` is frames / wall time.
struct StageStats {
    std::string name;
    double busy_seconds = 0;
    double fps = 0;
};

struct TranscodeStats {
    int64_t frames = 0;
    double seconds = 0;
    double fps = 0;
    std::vector<StageStats> stages; // decode, upload+convert, process, convert+readback, encode
    Size input_size, output_size;
    uint64_t output_bytes = 0;
    std::filesystem::path output; // where the result went (empty for --benchmark)
    bool cancelled = false;       // stopped by SIGINT / SIGTERM / cancel
    int signal = 0;               // the signal that stopped it (SIGINT, SIGTERM), 0 for none or cancel
    bool partial_kept = false;    // cancelled and the partial file left under the output name
    // "1234 frames in 12.3 s (100.3 fps); decode 400 fps, gpu 120 fps, encode 101 fps"
    std::string summary() const;
};

TranscodeStats transcode(const TranscodeDesc& desc, FrameProcessor& processor);

// Whether a path names an image file vkml reads and writes (.png, .jpg, .jpeg; case-insensitive).
bool is_image_path(const std::filesystem::path& path);

} // namespace vkml::media
