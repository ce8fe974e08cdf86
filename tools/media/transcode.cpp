// The three-stage pipeline of media::transcode (see transcode.hpp): load, proc (GPU) and save
// threads with bounded queues between them, and the calling thread showing progress.
#include "vkml/media/transcode.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <signal.h>
#include <thread>
#include <unistd.h>

#include "convert.hpp"
#include "image.hpp"
#include "vkml/media/output_file.hpp"
#include "queue.hpp"
#include "vkml/media/reader.hpp"
#include "vkml/error.hpp"
#include "writer.hpp"

namespace vkml::media {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// The signal that stops the run (SIGINT, SIGTERM), 0 while none came.
std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int sig) {
    g_signal.store(sig);
}

// Installs the SIGINT and SIGTERM handlers for the scope of a run and restores the previous ones.
// SA_RESETHAND: the handler runs once, so a second Ctrl-C (or SIGTERM) ends the process the usual
// way. SIGTERM is what `timeout`, systemd and docker send: it stops the run like Ctrl-C.
class SignalScope {
public:
    explicit SignalScope(bool enable) : enabled_(enable) {
        if (!enabled_) return;
        g_signal.store(0);
        struct sigaction sa {};
        sa.sa_handler = on_stop_signal;
        sa.sa_flags = SA_RESETHAND | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < std::size(signals_); ++i) sigaction(signals_[i], &sa, &previous_[i]);
    }
    ~SignalScope() {
        if (!enabled_) return;
        for (size_t i = 0; i < std::size(signals_); ++i) sigaction(signals_[i], &previous_[i], nullptr);
    }
    SignalScope(const SignalScope&) = delete;
    SignalScope& operator=(const SignalScope&) = delete;

private:
    static constexpr int signals_[2] = {SIGINT, SIGTERM};
    bool enabled_;
    struct sigaction previous_[2]{};
};

std::string lower_ext(const fs::path& p) {
    std::string e = p.extension().string();
    std::transform(e.begin(), e.end(), e.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return e;
}

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string human_bytes(uint64_t b) {
    char buf[32];
    if (b >= (1ull << 30))
        std::snprintf(buf, sizeof buf, "%.2f GB", b / double(1ull << 30));
    else if (b >= (1ull << 20))
        std::snprintf(buf, sizeof buf, "%.1f MB", b / double(1ull << 20));
    else
        std::snprintf(buf, sizeof buf, "%.0f KB", b / 1024.0);
    return buf;
}

std::string clock_text(double s) {
    if (!(s >= 0) || s > 360000) return "--:--";
    const long t = std::lround(s);
    char buf[32];
    if (t >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
    else
        std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

// A stage's busy time: everything but waiting on its queues.
struct Busy {
    std::atomic<int64_t> ns{0};
    void add(Clock::duration d) { ns += std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }
    double seconds() const { return double(ns.load()) * 1e-9; }
};

// A frame on its way through the pipeline. A frame with an alpha channel that is kept goes as two
// items, one after the other: its colour (has_alpha) and then its alpha as a grey frame
// (info.alpha); the save stage puts them back together.
struct Item {
    FramePtr frame;
    FrameInfo info;
    bool has_alpha = false;
    ImageKind image; // images: what the file held
};

void check_output_dir(const fs::path& out) {
    const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw Error(ErrorCode::Io, "'" + out.string() + "': cannot write: the directory '" + dir.string() +
                                       "' does not exist");
    if (::access(dir.c_str(), W_OK) != 0)
        throw Error(ErrorCode::Io,
                    "'" + out.string() + "': cannot write: no permission to write in '" + dir.string() + "'");
    if (fs::is_directory(out, ec))
        throw Error(ErrorCode::Io, "'" + out.string() + "': cannot write: it is a directory");
}

// How far the GPU is into the frame being processed, from the processor's flush() calls: each
// submitted piece's timeline value with the share of its frame done once it completes.
class FrameProgress {
public:
    void submitted(int64_t frame, uint64_t value, double progress) {
        std::lock_guard lock(mutex_);
        pending_.push_back({frame, value, progress});
    }
    // The latest completed piece's (frame, progress), or (-1, 0) when none is known.
    std::pair<int64_t, double> poll(gpu::Device& device) {
        std::lock_guard lock(mutex_);
        while (!pending_.empty() && device.is_complete(gpu::QueueRole::Compute, pending_.front().value)) {
            done_ = {pending_.front().frame, pending_.front().progress};
            pending_.pop_front();
        }
        return done_;
    }

private:
    struct Piece {
        int64_t frame;
        uint64_t value;
        double progress;
    };
    std::mutex mutex_;
    std::deque<Piece> pending_;
    std::pair<int64_t, double> done_{-1, 0.0};
};

// The GPU work of one frame in flight. Its command buffers come from a stream, so a processor can
// split a long frame into several submissions (FrameContext::flush).
struct Slot {
    // The conversions of frames' colour ([0]) and of their alpha as grey frames ([1]).
    std::unique_ptr<FrameUploader> up[2];
    std::unique_ptr<FrameDownloader> down[2];
    gpu::Tensor in, out;
    std::unique_ptr<gpu::CommandStream> stream;
    uint64_t done = 0;
    bool busy = false;
    FrameInfo info;
    int64_t pts = 0;
    bool has_alpha = false;
    ImageKind image;
    int read_as = -1; // FrameDownloader::read's format (-1: the conversion's)
};

class SlotContext final : public FrameContext {
public:
    SlotContext(gpu::Device& d, Slot& s, FrameProgress& progress, std::function<bool()> cancelled)
        : device_(d), slot_(s), progress_(progress), cancelled_(std::move(cancelled)) {}
    gpu::Device& device() override { return device_; }
    gpu::CommandBuffer& cmd() override { return slot_.stream->cmd(); }
    const gpu::Tensor& input() const override { return slot_.in; }
    const gpu::Tensor& output() const override { return slot_.out; }
    const FrameInfo& info() const override { return slot_.info; }
    void submit_and_wait() override { device_.wait(gpu::QueueRole::Compute, slot_.stream->submit()); }
    void flush(double progress) override {
        progress_.submitted(slot_.info.index, slot_.stream->submit(), progress);
    }
    bool cancelled() const override {
        if (!cancelled_()) return false;
        told_ = true;
        return true;
    }
    // Whether the processor was told to stop (and so may have left the output unfinished).
    bool told_to_stop() const { return told_; }

private:
    gpu::Device& device_;
    Slot& slot_;
    FrameProgress& progress_;
    std::function<bool()> cancelled_;
    mutable bool told_ = false;
};

} // namespace

bool is_image_path(const fs::path& path) {
    const std::string e = lower_ext(path);
    return e == ".png" || e == ".jpg" || e == ".jpeg";
}

namespace {

// Bits of the deepest colour component of a pixel format (8 when unknown).
int sample_bits(int av_pix_fmt) {
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(av_pix_fmt));
    if (!d || (d->flags & AV_PIX_FMT_FLAG_PAL)) return 8;
    int bits = 0;
    for (int c = 0; c < d->nb_components; ++c) bits = std::max(bits, int(d->comp[c].depth));
    return bits > 0 ? bits : 8;
}

} // namespace

ThreadCounts parse_thread_counts(std::string_view text) {
    ThreadCounts t;
    int* fields[3] = {&t.load, &t.proc, &t.save};
    size_t start = 0;
    for (int i = 0; i < 3; ++i) {
        const size_t colon = text.find(':', start);
        if ((colon == std::string_view::npos) != (i == 2))
            throw Error(ErrorCode::InvalidArgument,
                        "--threads '" + std::string(text) + "': expected LOAD:PROC:SAVE, e.g. 2:2:4");
        const std::string part(
            text.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
        char* end = nullptr;
        const long v = std::strtol(part.c_str(), &end, 10);
        if (part.empty() || *end || v < 0 || v > 256)
            throw Error(ErrorCode::InvalidArgument, "--threads '" + std::string(text) + "': '" + part +
                                                        "' is not a thread count (0..256)");
        *fields[i] = static_cast<int>(v);
        start = colon + 1;
    }
    if (t.proc == 0) t.proc = 1;
    return t;
}

std::string TranscodeStats::summary() const {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%lld frames in %.2f s (%.2f fps)", static_cast<long long>(frames),
                  seconds, fps);
    std::string s = buf;
    for (size_t i = 0; i < stages.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s %s %.2f fps", i ? "," : ";", stages[i].name.c_str(),
                      stages[i].fps);
        s += buf;
    }
    return s;
}

TranscodeStats transcode(const TranscodeDesc& desc, FrameProcessor& processor) {
    SignalScope signals(desc.handle_signals);
    auto cancelled = [&] { return g_signal.load() != 0 || (desc.cancel && desc.cancel->load()); };
    std::error_code ec;

    // --- what the input and output are ---
    if (desc.input.empty()) throw Error(ErrorCode::InvalidArgument, "no input file");
    if (!fs::exists(desc.input, ec))
        throw Error(ErrorCode::Io, "'" + desc.input.string() + "': no such file");
    const bool folder = fs::is_directory(desc.input, ec);
    const bool images = folder || is_image_path(desc.input);
    std::vector<fs::path> image_inputs, image_outputs;
    if (images) {
        if (folder) {
            for (const auto& e : fs::directory_iterator(desc.input))
                if (e.is_regular_file() && is_image_path(e.path())) image_inputs.push_back(e.path());
            std::sort(image_inputs.begin(), image_inputs.end());
            if (image_inputs.empty())
                throw Error(ErrorCode::InvalidArgument,
                            "'" + desc.input.string() + "': no PNG or JPEG images in the folder");
        } else {
            image_inputs.push_back(desc.input);
        }
        if (!desc.benchmark) {
            if (desc.output.empty()) throw Error(ErrorCode::InvalidArgument, "no output given");
            const bool out_dir = folder || fs::is_directory(desc.output, ec) || !desc.output.has_extension();
            if (out_dir) {
                fs::create_directories(desc.output, ec);
                if (ec || ::access(desc.output.c_str(), W_OK) != 0)
                    throw Error(ErrorCode::Io, "'" + desc.output.string() +
                                                   "': cannot write into this folder" +
                                                   (ec ? " (" + ec.message() + ")" : std::string()));
                for (const auto& p : image_inputs) image_outputs.push_back(desc.output / p.filename());
                remove_stale_partials(desc.output, image_outputs);
            } else {
                if (!is_image_path(desc.output))
                    throw Error(ErrorCode::InvalidArgument,
                                "'" + desc.output.string() +
                                    "': an image's output must be a .png or .jpg file (or a folder)");
                check_output_dir(desc.output);
                image_outputs.push_back(desc.output);
                remove_stale_partials(desc.output.parent_path(), image_outputs);
            }
            for (size_t i = 0; i < image_inputs.size(); ++i)
                if (fs::equivalent(image_inputs[i], image_outputs[i], ec))
                    throw Error(ErrorCode::InvalidArgument,
                                "'" + image_outputs[i].string() + "': the output would overwrite the input");
        }
    }

    std::unique_ptr<VideoReader> reader;
    if (!images)
        reader =
            std::make_unique<VideoReader>(ReaderDesc{desc.input, desc.threads.load, desc.tolerate_errors});
    fs::path tmp_out;
    std::unique_ptr<VideoWriter> writer;
    Size in_size = reader ? reader->info().size : Size{};
    Size out_size;
    // A video whose pixel format the GPU conversion lacks is converted on the CPU (convert.hpp), or
    // refused here, before anything is written.
    std::string cpu_conversion_note;
    if (reader) {
        int to = -1;
        try {
            to = cpu_conversion_format(reader->info().pix_fmt_id);
        } catch (const Error& e) {
            throw Error(e.code(), "'" + desc.input.string() + "': " + e.what());
        }
        if (to >= 0)
            cpu_conversion_note = "'" + desc.input.string() + "': vkml's GPU conversion does not read " +
                                  reader->info().pix_fmt + ": its frames are converted to " +
                                  av_get_pix_fmt_name(static_cast<AVPixelFormat>(to)) + " on the CPU";
    }
    if (reader) {
        out_size = processor.output_size(in_size.width, in_size.height);
        if (out_size.width <= 0 || out_size.height <= 0)
            throw Error(ErrorCode::InvalidArgument, processor.name() + ": no output size for " +
                                                        std::to_string(in_size.width) + "x" +
                                                        std::to_string(in_size.height));
        if (!desc.benchmark) {
            if (desc.output.empty()) throw Error(ErrorCode::InvalidArgument, "no output file given");
            if (fs::exists(desc.output, ec) && fs::equivalent(desc.output, desc.input, ec))
                throw Error(ErrorCode::InvalidArgument,
                            "'" + desc.output.string() + "': the output would overwrite the input");
            check_output_dir(desc.output);
            remove_stale_partials(desc.output.parent_path(), {desc.output});
            tmp_out = temporary_for(desc.output);
            WriterDesc wd{.path = tmp_out,
                          .name_for_format = desc.output,
                          .codec = desc.codec,
                          .crf = desc.crf,
                          .preset = desc.preset,
                          .pix_fmt = desc.pix_fmt,
                          .options = desc.encoder_options,
                          .threads = desc.threads.save,
                          .size = out_size,
                          .source = reader.get(),
                          .keep_alpha = processor.processes_alpha()};
            try {
                writer = std::make_unique<VideoWriter>(wd);
            } catch (...) {
                fs::remove(tmp_out, ec);
                throw;
            }
            // What could not be kept of the input (its codec, pixel format, alpha): said once.
            if (!cpu_conversion_note.empty())
                std::fprintf(stderr, "%s: note: %s\n", desc.log_name.c_str(), cpu_conversion_note.c_str());
            for (const std::string& note : writer->notes())
                std::fprintf(stderr, "%s: note: %s\n", desc.log_name.c_str(), note.c_str());
        }
    }
    // The alpha layout of the video written, when it has one (its alpha comes from the input's).
    const std::optional<AlphaLayout> out_alpha = writer ? alpha_layout(writer->pix_fmt()) : std::nullopt;
    // Removes the temporary file on every failure path.
    struct TmpGuard {
        fs::path path;
        ~TmpGuard() {
            std::error_code e;
            if (!path.empty()) fs::remove(path, e);
        }
    } tmp_guard{tmp_out};

    std::unique_ptr<gpu::Device> own_device;
    gpu::Device* device = desc.device;
    if (!device) {
        own_device = gpu::Device::create();
        device = own_device.get();
    }

    // --- the pipeline ---
    const int in_flight = std::clamp(desc.threads.proc, 1, 4);
    BoundedQueue<Item> to_proc(static_cast<size_t>(in_flight) + 2),
        to_save(static_cast<size_t>(in_flight) + 2);
    std::mutex error_mutex;
    std::exception_ptr error;
    auto fail_with = [&](std::exception_ptr e) {
        {
            std::lock_guard lock(error_mutex);
            if (!error) error = e;
        }
        to_proc.abort();
        to_save.abort();
    };
    Busy load_busy, proc_busy, save_busy;
    std::atomic<int64_t> frames_done{0}, frames_loaded{0};
    FrameProgress frame_progress;
    std::atomic<uint64_t> output_bytes{0};
    std::atomic<bool> stopped_early{false};
    // Packets of copied streams (audio, subtitles), from the load thread to the save thread, with
    // their start in seconds. The save thread writes each once the video has reached its start,
    // so a run cut short (--frames, Ctrl-C) ends its audio with its video.
    struct SidePacket {
        PacketPtr packet;
        double seconds = 0;
    };
    std::mutex side_mutex;
    std::deque<SidePacket> side_packets;
    std::atomic<bool> cut_streams{false}; // the video stopped before the input's end: cut the rest too
    int64_t skipped_images = 0;           // unreadable images of a folder (tolerate_errors)
    auto queue_side = [&](PacketPtr p) {
        const double t = packet_seconds(reader->format(), *p);
        std::lock_guard lock(side_mutex);
        side_packets.push_back({std::move(p), t});
    };
    const int64_t total = images
                              ? static_cast<int64_t>(image_inputs.size())
                              : (desc.max_frames > 0 && reader->info().frame_count > 0
                                     ? std::min(desc.max_frames, reader->info().frame_count)
                                     : (desc.max_frames > 0 ? desc.max_frames : reader->info().frame_count));
    const auto t0 = Clock::now();

    // A frame into the proc stage; one with an alpha channel as its colour and, when the alpha is
    // kept, its alpha as a grey frame right after it.
    auto push_frame = [&](Item item, bool keep_alpha) -> bool {
        int to = -1;
        try {
            to = cpu_conversion_format(item.frame->format);
        } catch (const Error& e) { // a decoder that changes format mid-stream
            throw Error(e.code(), "'" + item.info.file + "': " + e.what());
        }
        if (to >= 0) {
            // Grey of limited range (the stream's, VideoReader's rule) is expanded to full range.
            const bool limited_grey = reader && reader->info().range == ColorRange::Limited &&
                                      is_grey_format(item.frame->format);
            item.frame = convert_on_cpu(*item.frame, to, limited_grey);
        }
        const std::optional<AlphaLayout> split = alpha_layout(item.frame->format);
        if (!split) return to_proc.push(std::move(item));
        Item colour{colour_part(*item.frame, *split), item.info, keep_alpha, item.image};
        if (!to_proc.push(std::move(colour))) return false;
        if (!keep_alpha) return true;
        Item alpha{alpha_part(*item.frame, *split), item.info, false, item.image};
        alpha.info.alpha = true;
        return to_proc.push(std::move(alpha));
    };
    bool image_noted = false;

    std::thread load([&] {
        try {
            if (reader && writer) reader->on_other_packet = queue_side;
            double video_end = -std::numeric_limits<double>::infinity(); // of the frames read, seconds
            for (int64_t i = 0;; ++i) {
                if (cancelled()) {
                    stopped_early = true;
                    break;
                }
                if (desc.max_frames > 0 && i >= desc.max_frames) {
                    // --frames N: the copied streams end where the N-th frame ends.
                    cut_streams = true;
                    if (reader && writer) reader->read_other_packets(video_end);
                    break;
                }
                const auto t = Clock::now();
                Item item;
                if (images) {
                    if (i >= static_cast<int64_t>(image_inputs.size())) break;
                    try {
                        item.frame = load_image(image_inputs[i], item.image);
                    } catch (const Error& e) {
                        // A damaged image of a folder, tolerated: the others go on.
                        if (!desc.tolerate_errors || !folder) throw;
                        std::fprintf(stderr, "%s: warning: %s; skipped (--tolerate-errors)\n",
                                     desc.log_name.c_str(), e.what());
                        ++skipped_images;
                        continue;
                    }
                    item.info = {i, i, 1, double(i), image_inputs[i].string()};
                    // What the output keeps of it: said for the first image that loses something.
                    if (!image_noted && !desc.benchmark) {
                        std::string note = image_loss(image_outputs.at(size_t(i)), item.image);
                        if (note.empty() && item.image.alpha() && !processor.processes_alpha())
                            note = "'" + image_inputs[i].string() + "': the alpha channel is dropped (" +
                                   processor.name() + " processes colour only)";
                        if (!note.empty()) {
                            std::fprintf(stderr, "%s: note: %s%s\n", desc.log_name.c_str(), note.c_str(),
                                         folder ? " (and so for the folder's other images like it)" : "");
                            image_noted = true;
                        }
                    }
                } else {
                    try {
                        item.frame = reader->read_frame();
                    } catch (const DamagedInput& e) {
                        throw DamagedInput(e.code(), std::string(e.what()) + desc.tolerate_hint);
                    }
                    if (!item.frame) {
                        if (i == 0)
                            throw Error(ErrorCode::InvalidArgument,
                                        "'" + desc.input.string() + "': no video frame could be decoded");
                        break;
                    }
                    const auto& vi = reader->info();
                    item.info = {i, item.frame->pts, frame_duration(*item.frame),
                                 double(item.frame->pts - vi.start_pts) * vi.time_base.value(),
                                 desc.input.string()};
                    video_end = std::max(video_end,
                                         double(item.frame->pts + item.info.duration) * vi.time_base.value());
                }
                load_busy.add(Clock::now() - t);
                ++frames_loaded;
                const bool keep_alpha =
                    processor.processes_alpha() &&
                    (images
                         ? desc.benchmark || image_kind_for(image_outputs.at(size_t(i)), item.image).alpha()
                         : out_alpha.has_value());
                if (!push_frame(std::move(item), keep_alpha)) return;
            }
            to_proc.close();
        } catch (...) {
            fail_with(std::current_exception());
        }
    });

    std::thread proc([&] {
        try {
            // Whatever ends this stage (the end, an error, an abort), the slots may go while the GPU
            // still runs their frames: their buffers and command buffers retire (gpu::Device::retire)
            // and are freed only when that work is done, so nothing here waits.
            std::vector<Slot> slots(static_cast<size_t>(in_flight));
            size_t next = 0;
            Size prepared{};
            int prepared_bits = 0;
            ConvertDesc cur_in[2]{}, cur_out[2]{};
            bool configured[2] = {false, false};
            auto finish = [&](Slot& s) -> bool {
                device->wait(gpu::QueueRole::Compute, s.done);
                Item out;
                out.frame = s.down[s.info.alpha ? 1 : 0]->read(s.read_as);
                out.frame->pts = s.pts;
                out.info = s.info;
                out.has_alpha = s.has_alpha;
                out.image = s.image;
                s.busy = false;
                const auto t = Clock::now();
                const bool ok = to_save.push(std::move(out));
                proc_busy.add(-(Clock::now() - t)); // waiting on the save queue is not GPU work
                return ok;
            };
            auto finish_all = [&]() -> bool {
                for (size_t k = 0; k < slots.size(); ++k) {
                    Slot& s = slots[(next + k) % slots.size()];
                    if (s.busy && !finish(s)) return false;
                }
                return true;
            };
            // The format the GPU writes for a frame of format `in` (a colour or an alpha part).
            // Images keep their own (gbrp, gbrp16le); video writes the encoder's (its colour or
            // its alpha part); --benchmark without a writer yuv420p.
            auto out_format = [&](int in, bool alpha) -> int {
                if (images) return in;
                if (!writer) return alpha ? in : int(AV_PIX_FMT_YUV420P);
                if (out_alpha) return alpha ? out_alpha->alpha_format : out_alpha->colour_format;
                if (const int grey = grey_gpu_format(writer->pix_fmt()); grey >= 0) return grey;
                return writer->pix_fmt();
            };
            for (;;) {
                std::optional<Item> item = to_proc.pop();
                if (!item) break;
                if (cancelled()) {
                    // Stopping: the frames not yet on the GPU are dropped (on a slow device each
                    // may be seconds of work); those in flight are finished below.
                    stopped_early = true;
                    break;
                }
                const auto t = Clock::now();
                AVFrame& f = *item->frame;
                const Size fs_size{f.width, f.height};
                const int part = item->info.alpha ? 1 : 0;
                const int out_fmt = out_format(f.format, item->info.alpha);
                const int bits = sample_bits(f.format);
                if (fs_size != prepared || bits != prepared_bits) configured[0] = configured[1] = false;
                const bool new_format =
                    !configured[part] || f.format != cur_in[part].pix_fmt || out_fmt != cur_out[part].pix_fmt;
                if (new_format) {
                    if (!finish_all()) return;
                    const bool resize = fs_size != prepared;
                    if (resize || bits != prepared_bits) {
                        processor.prepare({device, fs_size, desc.tile, in_flight, bits});
                        prepared = fs_size;
                        prepared_bits = bits;
                    }
                    const Size o = processor.output_size(fs_size.width, fs_size.height);
                    cur_in[part] = {.pix_fmt = f.format,
                                    .size = fs_size,
                                    .matrix = reader ? reader->info().matrix : ColorMatrix::Bt709,
                                    .range = reader ? reader->info().range : ColorRange::Full,
                                    .dtype = processor.dtype(),
                                    .chroma_location = reader ? static_cast<int>(f.chroma_location) : 0};
                    cur_out[part] = {.pix_fmt = out_fmt,
                                     .size = o,
                                     .matrix = writer ? writer->matrix() : cur_in[part].matrix,
                                     .range = writer ? writer->range() : cur_in[part].range,
                                     .dtype = processor.dtype()};
                    for (Slot& s : slots) {
                        s.up[part] = std::make_unique<FrameUploader>(*device, cur_in[part]);
                        s.down[part] = std::make_unique<FrameDownloader>(*device, cur_out[part]);
                        if (resize || !s.in || s.in.dtype() != processor.dtype()) {
                            s.in = gpu::Tensor(*device, {1, 3, fs_size.height, fs_size.width},
                                               processor.dtype(), "media rgb in");
                            s.out = gpu::Tensor(*device, {1, 3, o.height, o.width}, processor.dtype(),
                                                "media rgb out");
                        }
                        if (!s.stream)
                            s.stream = std::make_unique<gpu::CommandStream>(*device, gpu::QueueRole::Compute);
                    }
                    configured[part] = true;
                }
                Slot& s = slots[next];
                if (s.busy && !finish(s)) return;
                s.info = item->info;
                s.pts = f.pts;
                s.has_alpha = item->has_alpha;
                s.image = item->image;
                // A colour part whose alpha follows comes back in the format with alpha, its
                // alpha plane left for the save stage to fill in.
                // (A video with alpha from an input without: its colour too, the alpha then opaque.)
                s.read_as = -1;
                if (!item->info.alpha && out_alpha)
                    s.read_as = writer->pix_fmt();
                else if (item->has_alpha)
                    s.read_as =
                        out_fmt == AV_PIX_FMT_GBRP16LE ? int(AV_PIX_FMT_GBRAP16LE) : int(AV_PIX_FMT_GBRAP);
                else if (writer && !out_alpha && out_fmt != writer->pix_fmt())
                    s.read_as = writer->pix_fmt(); // grey video: the G plane of planar RGB
                s.up[part]->stage(f);
                item->frame.reset();
                s.up[part]->record(s.stream->cmd(), s.in);
                SlotContext ctx(*device, s, frame_progress, cancelled);
                processor.process(ctx);
                if (ctx.told_to_stop()) {
                    // The processor stopped inside the frame: what it submitted runs out (its
                    // resources retire), the unfinished frame is not written.
                    s.stream->submit();
                    stopped_early = true;
                    break;
                }
                s.down[part]->record(s.stream->cmd(), s.out);
                s.done = s.stream->submit();
                s.busy = true;
                next = (next + 1) % slots.size();
                proc_busy.add(Clock::now() - t);
            }
            // Stopped early: wake the load stage if it waits on the full queue.
            if (stopped_early) to_proc.abort();
            const auto t = Clock::now();
            const bool ok = finish_all();
            proc_busy.add(Clock::now() - t);
            if (ok) to_save.close();
        } catch (...) {
            fail_with(std::current_exception());
        }
    });

    std::thread save([&] {
        try {
            // Writes the copied packets that start before `until` (seconds; infinity: all).
            auto drain_side = [&](double until) {
                std::deque<SidePacket> batch, later;
                {
                    std::lock_guard lock(side_mutex);
                    for (SidePacket& p : side_packets)
                        (p.seconds < until ? batch : later).push_back(std::move(p));
                    side_packets.swap(later);
                }
                for (SidePacket& p : batch) writer->write_packet(std::move(p.packet));
            };
            const double tb = reader ? reader->info().time_base.value() : 0.0;
            double written_end = -std::numeric_limits<double>::infinity(); // of the video written
            std::optional<Item> colour; // a frame's colour, waiting for its alpha
            for (;;) {
                std::optional<Item> item = to_save.pop();
                if (!item) break;
                const auto t = Clock::now();
                if (item->has_alpha) {
                    colour = std::move(item);
                    continue;
                }
                if (item->info.alpha) {
                    if (!colour || colour->info.index != item->info.index)
                        throw Error(ErrorCode::Generic, "transcode: an alpha frame without its colour");
                    merge_alpha(*colour->frame, *item->frame, *alpha_layout(colour->frame->format));
                    item = std::move(colour);
                    colour.reset();
                } else if (out_alpha) {
                    fill_alpha(*item->frame, *out_alpha); // an input without alpha: opaque
                }
                if (writer) {
                    drain_side(double(item->info.pts) * tb);
                    written_end = double(item->info.pts + item->info.duration) * tb;
                    writer->write_frame(item->frame.get());
                    output_bytes = writer->bytes_written();
                } else if (images && !desc.benchmark) {
                    const fs::path& out = image_outputs.at(static_cast<size_t>(item->info.index));
                    save_image(*item->frame, item->image, out);
                    output_bytes += fs::file_size(out);
                }
                ++frames_done;
                save_busy.add(Clock::now() - t);
            }
            {
                std::lock_guard lock(error_mutex);
                if (error) return;
            }
            if (writer) {
                const auto t = Clock::now();
                // The whole input: every copied packet (audio may run past the video). Cut short
                // (--frames, Ctrl-C): those that start before the last frame written ends.
                const bool cut = cut_streams || stopped_early;
                drain_side(cut ? written_end : std::numeric_limits<double>::infinity());
                writer->finish();
                save_busy.add(Clock::now() - t);
                output_bytes = fs::file_size(tmp_out);
            }
        } catch (...) {
            fail_with(std::current_exception());
        }
    });

    // --- progress, on this thread ---
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    auto last_print = Clock::now();
    std::deque<std::pair<double, double>> window; // (seconds, frames) for a recent fps
    bool bar_shown = false;
    auto report = [&](bool final_line) {
        const double s = seconds_since(t0);
        const int64_t done = frames_done.load();
        // A frame split into several submissions (a big image on a slow device) reports how far
        // the GPU is into it.
        const auto [part_frame, part] = frame_progress.poll(*device);
        const double frame_part = part_frame >= done && part > 0 && part < 1 ? part : 0.0;
        const double done_f = double(done) + frame_part;
        window.emplace_back(s, done_f);
        while (window.size() > 2 && window.front().first < s - 5) window.pop_front();
        const double dt = window.back().first - window.front().first;
        const double fps =
            dt > 0.5 ? (window.back().second - window.front().second) / dt : (s > 0 ? done_f / s : 0);
        Progress p{done, total, s, fps, output_bytes.load(), frame_part};
        if (desc.on_progress) {
            desc.on_progress(p);
            return;
        }
        if (desc.quiet) return;
        const double eta = total > 0 && fps > 0 ? (double(total) - done_f) / fps : -1;
        char part_text[48] = "";
        if (frame_part > 0)
            std::snprintf(part_text, sizeof part_text, " (frame %lld: %.0f%%)",
                          static_cast<long long>(part_frame + 1), frame_part * 100);
        char line[256];
        if (tty) {
            const int width = 24;
            const int filled = total > 0 ? static_cast<int>(std::min<double>(
                                               width, done_f * width / double(std::max<int64_t>(total, 1))))
                                         : 0;
            std::string bar(static_cast<size_t>(filled), '#');
            bar.append(static_cast<size_t>(width - filled), '.');
            std::snprintf(line, sizeof line, "\r[%s] %lld/%s frames%s  %.1f fps  ETA %s  %s   ", bar.c_str(),
                          static_cast<long long>(done), total > 0 ? std::to_string(total).c_str() : "?",
                          part_text, fps, clock_text(eta).c_str(), human_bytes(p.output_bytes).c_str());
            std::fputs(line, stderr);
            bar_shown = true;
            if (final_line) std::fputs("\n", stderr);
        } else if (!final_line) {
            std::snprintf(line, sizeof line, "%s: %lld/%s frames%s, %.1f fps, ETA %s, %s\n",
                          desc.log_name.c_str(), static_cast<long long>(done),
                          total > 0 ? std::to_string(total).c_str() : "?", part_text, fps,
                          clock_text(eta).c_str(), human_bytes(p.output_bytes).c_str());
            std::fputs(line, stderr);
        }
        std::fflush(stderr);
    };
    std::atomic<bool> all_done{false};
    std::thread joiner([&] {
        load.join();
        proc.join();
        save.join();
        all_done = true;
    });
    while (!all_done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const double interval = tty || desc.on_progress ? 0.25 : 5.0;
        if (std::chrono::duration<double>(Clock::now() - last_print).count() >= interval && !all_done) {
            last_print = Clock::now();
            report(false);
        }
    }
    joiner.join();
    if (bar_shown) report(true);
    if (error) std::rethrow_exception(error);
    // Damage that was tolerated: said once more at the end, with what it cost.
    std::string problems = reader ? reader->problems() : std::string();
    if (skipped_images > 0)
        problems = std::to_string(skipped_images) + " unreadable image" + (skipped_images == 1 ? "" : "s") +
                   " skipped";
    if (!problems.empty())
        std::fprintf(stderr, "%s: warning: '%s': %s; the output has what could be read\n",
                     desc.log_name.c_str(), desc.input.c_str(), problems.c_str());

    TranscodeStats st;
    st.seconds = seconds_since(t0);
    st.frames = frames_done.load();
    st.fps = st.seconds > 0 ? st.frames / st.seconds : 0;
    auto stage = [&](const char* name, const Busy& b) {
        const double s = b.seconds();
        st.stages.push_back({name, s, s > 0 ? st.frames / s : 0});
    };
    stage(images ? "load" : "decode", load_busy);
    stage("gpu", proc_busy);
    if (!desc.benchmark) stage(images ? "save" : "encode", save_busy);
    st.input_size = images ? Size{} : in_size;
    st.output_size = images ? Size{} : out_size;
    st.output_bytes = output_bytes.load();
    st.cancelled = stopped_early.load();
    if (st.cancelled) st.signal = g_signal.load();
    if (writer) {
        if (st.cancelled && (desc.no_partial || st.frames == 0)) {
            fs::remove(tmp_out, ec); // nothing asked for, or nothing done: no file
        } else {
            tmp_guard.path.clear(); // commit_temporary removes it if it fails
            commit_temporary(tmp_out, desc.output);
            st.output = desc.output;
            st.partial_kept = st.cancelled;
        }
        tmp_guard.path.clear();
    } else if (images && !desc.benchmark) {
        st.output = image_outputs.size() == 1 && !folder ? image_outputs[0] : desc.output;
        st.partial_kept = st.cancelled && st.frames > 0;
    }
    return st;
}

} // namespace vkml::media
