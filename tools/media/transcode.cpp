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

namespace {

// Packets of copied streams (audio, subtitles), from the load thread to the save thread, with their
// start in seconds. The save thread writes each once the video has reached its start, so a run cut
// short (--frames, Ctrl-C) ends its audio with its video.
struct SidePacket {
    PacketPtr packet;
    double seconds = 0;
};

// Removes the temporary output on every failure path.
struct TmpGuard {
    fs::path path;
    ~TmpGuard() {
        std::error_code e;
        if (!path.empty()) fs::remove(path, e);
    }
};

// One run of transcode(), as its steps: what the input and output are (images, or a video with its
// reader and writer), the device, the three stages on their threads, progress on the calling
// thread, then the statistics and the output put in place.
class Transcoder {
public:
    Transcoder(const TranscodeDesc& desc, FrameProcessor& processor)
        : desc_(desc), processor_(processor), signals_(desc.handle_signals) {}

    TranscodeStats run() {
        check_input();
        if (images_) plan_image_outputs();
        else open_video();
        open_device();
        total_ = frame_total();
        t0_ = Clock::now();
        run_stages();
        if (error_) std::rethrow_exception(error_);
        warn_tolerated_damage();
        TranscodeStats st = stats();
        put_output_in_place(st);
        return st;
    }

private:
    bool cancelled() const { return g_signal.load() != 0 || (desc_.cancel && desc_.cancel->load()); }

    // --- what the input and output are ---

    void check_input() {
        std::error_code ec;
        if (desc_.input.empty()) throw Error(ErrorCode::InvalidArgument, "no input file");
        if (!fs::exists(desc_.input, ec)) throw Error(ErrorCode::Io, "'" + desc_.input.string() + "': no such file");
        folder_ = fs::is_directory(desc_.input, ec);
        images_ = folder_ || is_image_path(desc_.input);
    }

    // The images to read (one, or a folder's, sorted) and where each goes.
    void plan_image_outputs() {
        std::error_code ec;
        if (folder_) {
            for (const auto& e : fs::directory_iterator(desc_.input))
                if (e.is_regular_file() && is_image_path(e.path())) image_inputs_.push_back(e.path());
            std::sort(image_inputs_.begin(), image_inputs_.end());
            if (image_inputs_.empty())
                throw Error(ErrorCode::InvalidArgument,
                            "'" + desc_.input.string() + "': no PNG or JPEG images in the folder");
        } else {
            image_inputs_.push_back(desc_.input);
        }
        if (desc_.benchmark) return;
        if (desc_.output.empty()) throw Error(ErrorCode::InvalidArgument, "no output given");
        const bool out_dir = folder_ || fs::is_directory(desc_.output, ec) || !desc_.output.has_extension();
        if (out_dir) {
            fs::create_directories(desc_.output, ec);
            if (ec || ::access(desc_.output.c_str(), W_OK) != 0)
                throw Error(ErrorCode::Io, "'" + desc_.output.string() + "': cannot write into this folder" +
                                               (ec ? " (" + ec.message() + ")" : std::string()));
            for (const auto& p : image_inputs_) image_outputs_.push_back(desc_.output / p.filename());
            remove_stale_partials(desc_.output, image_outputs_);
        } else {
            if (!is_image_path(desc_.output))
                throw Error(ErrorCode::InvalidArgument,
                            "'" + desc_.output.string() +
                                "': an image's output must be a .png or .jpg file (or a folder)");
            check_output_dir(desc_.output);
            image_outputs_.push_back(desc_.output);
            remove_stale_partials(desc_.output.parent_path(), image_outputs_);
        }
        for (size_t i = 0; i < image_inputs_.size(); ++i)
            if (fs::equivalent(image_inputs_[i], image_outputs_[i], ec))
                throw Error(ErrorCode::InvalidArgument,
                            "'" + image_outputs_[i].string() + "': the output would overwrite the input");
    }

    // The reader, the output size, and (unless benchmarking) the writer into a temporary file.
    void open_video() {
        reader_ = std::make_unique<VideoReader>(ReaderDesc{desc_.input, desc_.threads.load, desc_.tolerate_errors});
        in_size_ = reader_->info().size;
        const std::string cpu_conversion_note = cpu_conversion();
        out_size_ = processor_.output_size(in_size_.width, in_size_.height);
        if (out_size_.width <= 0 || out_size_.height <= 0)
            throw Error(ErrorCode::InvalidArgument, processor_.name() + ": no output size for " +
                                                        std::to_string(in_size_.width) + "x" +
                                                        std::to_string(in_size_.height));
        if (desc_.benchmark) return;
        open_writer();
        // What could not be kept of the input (its codec, pixel format, alpha): said once.
        if (!cpu_conversion_note.empty())
            std::fprintf(stderr, "%s: note: %s\n", desc_.log_name.c_str(), cpu_conversion_note.c_str());
        for (const std::string& note : writer_->notes())
            std::fprintf(stderr, "%s: note: %s\n", desc_.log_name.c_str(), note.c_str());
        out_alpha_ = alpha_layout(writer_->pix_fmt());
    }

    // A video whose pixel format the GPU conversion lacks is converted on the CPU (convert.hpp), or
    // refused here, before anything is written. Returns the note saying so, or nothing.
    std::string cpu_conversion() const {
        int to = -1;
        try {
            to = cpu_conversion_format(reader_->info().pix_fmt_id);
        } catch (const Error& e) {
            throw Error(e.code(), "'" + desc_.input.string() + "': " + e.what());
        }
        if (to < 0) return {};
        return "'" + desc_.input.string() + "': vkml's GPU conversion does not read " + reader_->info().pix_fmt +
               ": its frames are converted to " + av_get_pix_fmt_name(static_cast<AVPixelFormat>(to)) +
               " on the CPU";
    }

    void open_writer() {
        std::error_code ec;
        if (desc_.output.empty()) throw Error(ErrorCode::InvalidArgument, "no output file given");
        if (fs::exists(desc_.output, ec) && fs::equivalent(desc_.output, desc_.input, ec))
            throw Error(ErrorCode::InvalidArgument,
                        "'" + desc_.output.string() + "': the output would overwrite the input");
        check_output_dir(desc_.output);
        remove_stale_partials(desc_.output.parent_path(), {desc_.output});
        tmp_out_ = temporary_for(desc_.output);
        WriterDesc wd{.path = tmp_out_,
                      .name_for_format = desc_.output,
                      .codec = desc_.codec,
                      .crf = desc_.crf,
                      .preset = desc_.preset,
                      .pix_fmt = desc_.pix_fmt,
                      .options = desc_.encoder_options,
                      .threads = desc_.threads.save,
                      .size = out_size_,
                      .source = reader_.get(),
                      .keep_alpha = processor_.processes_alpha()};
        try {
            writer_ = std::make_unique<VideoWriter>(wd);
        } catch (...) {
            fs::remove(tmp_out_, ec);
            throw;
        }
        tmp_guard_.path = tmp_out_;
    }

    void open_device() {
        device_ = desc_.device;
        if (!device_) {
            own_device_ = gpu::Device::create();
            device_ = own_device_.get();
        }
    }

    // Frames the run will take, or 0 when not known.
    int64_t frame_total() const {
        if (images_) return static_cast<int64_t>(image_inputs_.size());
        const int64_t in_file = reader_->info().frame_count;
        if (desc_.max_frames > 0) return in_file > 0 ? std::min(desc_.max_frames, in_file) : desc_.max_frames;
        return in_file;
    }

    // --- the pipeline ---

    void fail_with(std::exception_ptr e) {
        {
            std::lock_guard lock(error_mutex_);
            if (!error_) error_ = e;
        }
        to_proc_.abort();
        to_save_.abort();
    }
    bool failed() {
        std::lock_guard lock(error_mutex_);
        return error_ != nullptr;
    }

    // Runs the three stages on their threads and shows progress on this one until they end.
    void run_stages() {
        auto guarded = [this](void (Transcoder::*stage)()) {
            return [this, stage] {
                try {
                    (this->*stage)();
                } catch (...) {
                    fail_with(std::current_exception());
                }
            };
        };
        std::thread load(guarded(&Transcoder::load_stage));
        std::thread proc(guarded(&Transcoder::proc_stage));
        std::thread save(guarded(&Transcoder::save_stage));
        std::atomic<bool> all_done{false};
        std::thread joiner([&] {
            load.join();
            proc.join();
            save.join();
            all_done = true;
        });
        show_progress(all_done);
        joiner.join();
        if (bar_shown_) report(true);
    }

    // --- load: decode frames or read images, into the proc queue ---

    void load_stage() {
        if (reader_ && writer_)
            reader_->on_other_packet = [this](PacketPtr p) {
                const double t = packet_seconds(reader_->format(), *p);
                std::lock_guard lock(side_mutex_);
                side_packets_.push_back({std::move(p), t});
            };
        double video_end = -std::numeric_limits<double>::infinity(); // of the frames read, seconds
        for (int64_t i = 0;; ++i) {
            if (cancelled()) {
                stopped_early_ = true;
                break;
            }
            if (desc_.max_frames > 0 && i >= desc_.max_frames) {
                // --frames N: the copied streams end where the N-th frame ends.
                cut_streams_ = true;
                if (reader_ && writer_) reader_->read_other_packets(video_end);
                break;
            }
            const auto t = Clock::now();
            Item item;
            if (images_) {
                if (i >= static_cast<int64_t>(image_inputs_.size())) break;
                if (!read_image(i, item)) continue;
            } else {
                if (!read_video_frame(i, item)) break;
                const auto& vi = reader_->info();
                video_end = std::max(video_end, double(item.frame->pts + item.info.duration) * vi.time_base.value());
            }
            load_busy_.add(Clock::now() - t);
            ++frames_loaded_;
            const bool keep_alpha =
                processor_.processes_alpha() &&
                (images_ ? desc_.benchmark || image_kind_for(image_outputs_.at(size_t(i)), item.image).alpha()
                         : out_alpha_.has_value());
            if (!push_frame(std::move(item), keep_alpha)) return;
        }
        to_proc_.close();
    }

    // Image i of the input into `item`; false when it is damaged and skipped (--tolerate-errors).
    bool read_image(int64_t i, Item& item) {
        try {
            item.frame = load_image(image_inputs_[i], item.image);
        } catch (const Error& e) {
            // A damaged image of a folder, tolerated: the others go on.
            if (!desc_.tolerate_errors || !folder_) throw;
            std::fprintf(stderr, "%s: warning: %s; skipped (--tolerate-errors)\n", desc_.log_name.c_str(), e.what());
            ++skipped_images_;
            return false;
        }
        item.info = {i, i, 1, double(i), image_inputs_[i].string()};
        // What the output keeps of it: said for the first image that loses something.
        if (!image_noted_ && !desc_.benchmark) {
            std::string note = image_loss(image_outputs_.at(size_t(i)), item.image);
            if (note.empty() && item.image.alpha() && !processor_.processes_alpha())
                note = "'" + image_inputs_[i].string() + "': the alpha channel is dropped (" + processor_.name() +
                       " processes colour only)";
            if (!note.empty()) {
                std::fprintf(stderr, "%s: note: %s%s\n", desc_.log_name.c_str(), note.c_str(),
                             folder_ ? " (and so for the folder's other images like it)" : "");
                image_noted_ = true;
            }
        }
        return true;
    }

    // The video's next frame (the i-th) into `item`; false at the end of the video.
    bool read_video_frame(int64_t i, Item& item) {
        try {
            item.frame = reader_->read_frame();
        } catch (const DamagedInput& e) {
            throw DamagedInput(e.code(), std::string(e.what()) + desc_.tolerate_hint);
        }
        if (!item.frame) {
            if (i == 0)
                throw Error(ErrorCode::InvalidArgument, "'" + desc_.input.string() + "': no video frame could be decoded");
            return false;
        }
        const auto& vi = reader_->info();
        item.info = {i, item.frame->pts, frame_duration(*item.frame),
                     double(item.frame->pts - vi.start_pts) * vi.time_base.value(), desc_.input.string()};
        return true;
    }

    // A frame into the proc stage; one with an alpha channel as its colour and, when the alpha is
    // kept, its alpha as a grey frame right after it.
    bool push_frame(Item item, bool keep_alpha) {
        int to = -1;
        try {
            to = cpu_conversion_format(item.frame->format);
        } catch (const Error& e) { // a decoder that changes format mid-stream
            throw Error(e.code(), "'" + item.info.file + "': " + e.what());
        }
        if (to >= 0) {
            // Grey of limited range (the stream's, VideoReader's rule) is expanded to full range.
            const bool limited_grey =
                reader_ && reader_->info().range == ColorRange::Limited && is_grey_format(item.frame->format);
            item.frame = convert_on_cpu(*item.frame, to, limited_grey);
        }
        const std::optional<AlphaLayout> split = alpha_layout(item.frame->format);
        if (!split) return to_proc_.push(std::move(item));
        Item colour{colour_part(*item.frame, *split), item.info, keep_alpha, item.image};
        if (!to_proc_.push(std::move(colour))) return false;
        if (!keep_alpha) return true;
        Item alpha{alpha_part(*item.frame, *split), item.info, false, item.image};
        alpha.info.alpha = true;
        return to_proc_.push(std::move(alpha));
    }

    // --- proc: upload, convert, process, convert back and read back on the GPU ---

    // The proc stage's state: the slots of the frames in flight and the conversions they are
    // set up for (per part: a frame's colour [0], its alpha [1]).
    struct Proc {
        std::vector<Slot> slots;
        size_t next = 0;
        Size prepared{};
        int prepared_bits = 0;
        ConvertDesc cur_in[2]{}, cur_out[2]{};
        bool configured[2] = {false, false};
    };

    void proc_stage() {
        // Whatever ends this stage (the end, an error, an abort), the slots may go while the GPU
        // still runs their frames: their buffers and command buffers retire (gpu::Device::retire)
        // and are freed only when that work is done, so nothing here waits.
        Proc p;
        p.slots.resize(static_cast<size_t>(in_flight()));
        for (;;) {
            std::optional<Item> item = to_proc_.pop();
            if (!item) break;
            if (cancelled()) {
                // Stopping: the frames not yet on the GPU are dropped (on a slow device each may be
                // seconds of work); those in flight are finished below.
                stopped_early_ = true;
                break;
            }
            const auto t = Clock::now();
            bool told_to_stop = false;
            if (!process_frame(p, *item, told_to_stop)) return;
            if (told_to_stop) break;
            proc_busy_.add(Clock::now() - t);
        }
        // Stopped early: wake the load stage if it waits on the full queue.
        if (stopped_early_) to_proc_.abort();
        const auto t = Clock::now();
        const bool ok = finish_all(p);
        proc_busy_.add(Clock::now() - t);
        if (ok) to_save_.close();
    }

    int in_flight() const { return std::clamp(desc_.threads.proc, 1, 4); }

    // Records and submits one frame in the next slot; false when the stage must end (the save
    // queue aborted). `told_to_stop`: the processor stopped inside the frame.
    bool process_frame(Proc& p, Item& item, bool& told_to_stop) {
        AVFrame& f = *item.frame;
        const int part = item.info.alpha ? 1 : 0;
        const int out_fmt = out_format(f.format, item.info.alpha);
        if (!configure(p, f, part, out_fmt)) return false;
        Slot& s = p.slots[p.next];
        if (s.busy && !finish(s)) return false;
        s.info = item.info;
        s.pts = f.pts;
        s.has_alpha = item.has_alpha;
        s.image = item.image;
        s.read_as = read_format(item, out_fmt);
        s.up[part]->stage(f);
        item.frame.reset();
        s.up[part]->record(s.stream->cmd(), s.in);
        SlotContext ctx(*device_, s, frame_progress_, [this] { return cancelled(); });
        processor_.process(ctx);
        if (ctx.told_to_stop()) {
            // The processor stopped inside the frame: what it submitted runs out (its resources
            // retire), the unfinished frame is not written.
            s.stream->submit();
            stopped_early_ = true;
            told_to_stop = true;
            return true;
        }
        s.down[part]->record(s.stream->cmd(), s.out);
        s.done = s.stream->submit();
        s.busy = true;
        p.next = (p.next + 1) % p.slots.size();
        return true;
    }

    // Sets the slots up for frames like `f` (its size, depth and format, the output format) when
    // they are not yet: the processor prepared, the conversions and tensors made. False when the
    // stage must end.
    bool configure(Proc& p, const AVFrame& f, int part, int out_fmt) {
        const Size size{f.width, f.height};
        const int bits = sample_bits(f.format);
        if (size != p.prepared || bits != p.prepared_bits) p.configured[0] = p.configured[1] = false;
        const bool new_format =
            !p.configured[part] || f.format != p.cur_in[part].pix_fmt || out_fmt != p.cur_out[part].pix_fmt;
        if (!new_format) return true;
        if (!finish_all(p)) return false;
        const bool resize = size != p.prepared;
        if (resize || bits != p.prepared_bits) {
            processor_.prepare({device_, size, desc_.tile, in_flight(), bits});
            p.prepared = size;
            p.prepared_bits = bits;
        }
        const Size o = processor_.output_size(size.width, size.height);
        p.cur_in[part] = {.pix_fmt = f.format,
                          .size = size,
                          .matrix = reader_ ? reader_->info().matrix : ColorMatrix::Bt709,
                          .range = reader_ ? reader_->info().range : ColorRange::Full,
                          .dtype = processor_.dtype(),
                          .chroma_location = reader_ ? static_cast<int>(f.chroma_location) : 0};
        p.cur_out[part] = {.pix_fmt = out_fmt,
                           .size = o,
                           .matrix = writer_ ? writer_->matrix() : p.cur_in[part].matrix,
                           .range = writer_ ? writer_->range() : p.cur_in[part].range,
                           .dtype = processor_.dtype()};
        for (Slot& s : p.slots) {
            s.up[part] = std::make_unique<FrameUploader>(*device_, p.cur_in[part]);
            s.down[part] = std::make_unique<FrameDownloader>(*device_, p.cur_out[part]);
            if (resize || !s.in || s.in.dtype() != processor_.dtype()) {
                s.in = gpu::Tensor(*device_, {1, 3, size.height, size.width}, processor_.dtype(), "media rgb in");
                s.out = gpu::Tensor(*device_, {1, 3, o.height, o.width}, processor_.dtype(), "media rgb out");
            }
            if (!s.stream) s.stream = std::make_unique<gpu::CommandStream>(*device_, gpu::QueueRole::Compute);
        }
        p.configured[part] = true;
        return true;
    }

    // The format the GPU writes for a frame of format `in` (a colour or an alpha part). Images
    // keep their own (gbrp, gbrp16le); video writes the encoder's (its colour or its alpha part);
    // --benchmark without a writer yuv420p.
    int out_format(int in, bool alpha) const {
        if (images_) return in;
        if (!writer_) return alpha ? in : int(AV_PIX_FMT_YUV420P);
        if (out_alpha_) return alpha ? out_alpha_->alpha_format : out_alpha_->colour_format;
        if (const int grey = grey_gpu_format(writer_->pix_fmt()); grey >= 0) return grey;
        return writer_->pix_fmt();
    }

    // FrameDownloader::read's format for the item (-1: the conversion's). A colour part whose alpha
    // follows comes back in the format with alpha, its alpha plane left for the save stage to fill
    // in. (A video with alpha from an input without: its colour too, the alpha then opaque.)
    int read_format(const Item& item, int out_fmt) const {
        if (!item.info.alpha && out_alpha_) return writer_->pix_fmt();
        if (item.has_alpha) return out_fmt == AV_PIX_FMT_GBRP16LE ? int(AV_PIX_FMT_GBRAP16LE) : int(AV_PIX_FMT_GBRAP);
        if (writer_ && !out_alpha_ && out_fmt != writer_->pix_fmt())
            return writer_->pix_fmt(); // grey video: the G plane of planar RGB
        return -1;
    }

    // Waits for the slot's frame and hands it to the save stage; false when its queue aborted.
    bool finish(Slot& s) {
        device_->wait(gpu::QueueRole::Compute, s.done);
        Item out;
        out.frame = s.down[s.info.alpha ? 1 : 0]->read(s.read_as);
        out.frame->pts = s.pts;
        out.info = s.info;
        out.has_alpha = s.has_alpha;
        out.image = s.image;
        s.busy = false;
        const auto t = Clock::now();
        const bool ok = to_save_.push(std::move(out));
        proc_busy_.add(-(Clock::now() - t)); // waiting on the save queue is not GPU work
        return ok;
    }

    // Every frame in flight, in order.
    bool finish_all(Proc& p) {
        for (size_t k = 0; k < p.slots.size(); ++k) {
            Slot& s = p.slots[(p.next + k) % p.slots.size()];
            if (s.busy && !finish(s)) return false;
        }
        return true;
    }

    // --- save: merge alpha, encode or write images ---

    void save_stage() {
        const double tb = reader_ ? reader_->info().time_base.value() : 0.0;
        double written_end = -std::numeric_limits<double>::infinity(); // of the video written
        std::optional<Item> colour;                                     // a frame's colour, waiting for its alpha
        for (;;) {
            std::optional<Item> item = to_save_.pop();
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
            } else if (out_alpha_) {
                fill_alpha(*item->frame, *out_alpha_); // an input without alpha: opaque
            }
            if (writer_) {
                write_side_packets(double(item->info.pts) * tb);
                written_end = double(item->info.pts + item->info.duration) * tb;
                writer_->write_frame(item->frame.get());
                output_bytes_ = writer_->bytes_written();
            } else if (images_ && !desc_.benchmark) {
                const fs::path& out = image_outputs_.at(static_cast<size_t>(item->info.index));
                save_image(*item->frame, item->image, out);
                output_bytes_ += fs::file_size(out);
            }
            ++frames_done_;
            save_busy_.add(Clock::now() - t);
        }
        if (failed()) return;
        if (writer_) finish_video(written_end);
    }

    // Writes the copied packets that start before `until` (seconds; infinity: all).
    void write_side_packets(double until) {
        std::deque<SidePacket> batch, later;
        {
            std::lock_guard lock(side_mutex_);
            for (SidePacket& p : side_packets_) (p.seconds < until ? batch : later).push_back(std::move(p));
            side_packets_.swap(later);
        }
        for (SidePacket& p : batch) writer_->write_packet(std::move(p.packet));
    }

    // The rest of the copied packets and the encoder's flush.
    void finish_video(double written_end) {
        const auto t = Clock::now();
        // The whole input: every copied packet (audio may run past the video). Cut short (--frames,
        // Ctrl-C): those that start before the last frame written ends.
        const bool cut = cut_streams_ || stopped_early_;
        write_side_packets(cut ? written_end : std::numeric_limits<double>::infinity());
        writer_->finish();
        save_busy_.add(Clock::now() - t);
        output_bytes_ = fs::file_size(tmp_out_);
    }

    // --- progress, on the calling thread ---

    void show_progress(const std::atomic<bool>& all_done) {
        tty_ = ::isatty(STDERR_FILENO) != 0;
        auto last_print = Clock::now();
        while (!all_done) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const double interval = tty_ || desc_.on_progress ? 0.25 : 5.0;
            if (std::chrono::duration<double>(Clock::now() - last_print).count() >= interval && !all_done) {
                last_print = Clock::now();
                report(false);
            }
        }
    }

    void report(bool final_line) {
        const double s = seconds_since(t0_);
        const int64_t done = frames_done_.load();
        // A frame split into several submissions (a big image on a slow device) reports how far the
        // GPU is into it.
        const auto [part_frame, part] = frame_progress_.poll(*device_);
        const double frame_part = part_frame >= done && part > 0 && part < 1 ? part : 0.0;
        const double done_f = double(done) + frame_part;
        window_.emplace_back(s, done_f);
        while (window_.size() > 2 && window_.front().first < s - 5) window_.pop_front();
        const double dt = window_.back().first - window_.front().first;
        const double fps = dt > 0.5 ? (window_.back().second - window_.front().second) / dt : (s > 0 ? done_f / s : 0);
        Progress p{done, total_, s, fps, output_bytes_.load(), frame_part};
        if (desc_.on_progress) {
            desc_.on_progress(p);
            return;
        }
        if (desc_.quiet) return;
        const double eta = total_ > 0 && fps > 0 ? (double(total_) - done_f) / fps : -1;
        char part_text[48] = "";
        if (frame_part > 0)
            std::snprintf(part_text, sizeof part_text, " (frame %lld: %.0f%%)", static_cast<long long>(part_frame + 1),
                          frame_part * 100);
        const std::string total_text = total_ > 0 ? std::to_string(total_) : "?";
        char line[256];
        if (tty_) {
            const int width = 24;
            const int filled =
                total_ > 0 ? static_cast<int>(std::min<double>(width, done_f * width / double(std::max<int64_t>(total_, 1))))
                           : 0;
            std::string bar(static_cast<size_t>(filled), '#');
            bar.append(static_cast<size_t>(width - filled), '.');
            std::snprintf(line, sizeof line, "\r[%s] %lld/%s frames%s  %.1f fps  ETA %s  %s   ", bar.c_str(),
                          static_cast<long long>(done), total_text.c_str(), part_text, fps, clock_text(eta).c_str(),
                          human_bytes(p.output_bytes).c_str());
            std::fputs(line, stderr);
            bar_shown_ = true;
            if (final_line) std::fputs("\n", stderr);
        } else if (!final_line) {
            std::snprintf(line, sizeof line, "%s: %lld/%s frames%s, %.1f fps, ETA %s, %s\n", desc_.log_name.c_str(),
                          static_cast<long long>(done), total_text.c_str(), part_text, fps, clock_text(eta).c_str(),
                          human_bytes(p.output_bytes).c_str());
            std::fputs(line, stderr);
        }
        std::fflush(stderr);
    }

    // --- the end ---

    // Damage that was tolerated: said once more at the end, with what it cost.
    void warn_tolerated_damage() const {
        std::string problems = reader_ ? reader_->problems() : std::string();
        if (skipped_images_ > 0)
            problems = std::to_string(skipped_images_) + " unreadable image" + (skipped_images_ == 1 ? "" : "s") +
                       " skipped";
        if (!problems.empty())
            std::fprintf(stderr, "%s: warning: '%s': %s; the output has what could be read\n", desc_.log_name.c_str(),
                         desc_.input.c_str(), problems.c_str());
    }

    TranscodeStats stats() const {
        TranscodeStats st;
        st.seconds = seconds_since(t0_);
        st.frames = frames_done_.load();
        st.fps = st.seconds > 0 ? st.frames / st.seconds : 0;
        auto stage = [&](const char* name, const Busy& b) {
            const double s = b.seconds();
            st.stages.push_back({name, s, s > 0 ? st.frames / s : 0});
        };
        stage(images_ ? "load" : "decode", load_busy_);
        stage("gpu", proc_busy_);
        if (!desc_.benchmark) stage(images_ ? "save" : "encode", save_busy_);
        st.input_size = images_ ? Size{} : in_size_;
        st.output_size = images_ ? Size{} : out_size_;
        st.output_bytes = output_bytes_.load();
        st.cancelled = stopped_early_.load();
        if (st.cancelled) st.signal = g_signal.load();
        return st;
    }

    // The video's temporary file renamed to the output (kept when stopped, unless no_partial or
    // nothing was done); where the images went.
    void put_output_in_place(TranscodeStats& st) {
        if (writer_) {
            if (st.cancelled && (desc_.no_partial || st.frames == 0)) {
                std::error_code ec;
                fs::remove(tmp_out_, ec); // nothing asked for, or nothing done: no file
            } else {
                tmp_guard_.path.clear(); // commit_temporary removes it if it fails
                commit_temporary(tmp_out_, desc_.output);
                st.output = desc_.output;
                st.partial_kept = st.cancelled;
            }
            tmp_guard_.path.clear();
        } else if (images_ && !desc_.benchmark) {
            st.output = image_outputs_.size() == 1 && !folder_ ? image_outputs_[0] : desc_.output;
            st.partial_kept = st.cancelled && st.frames > 0;
        }
    }

    const TranscodeDesc& desc_;
    FrameProcessor& processor_;
    SignalScope signals_;

    // What the input and output are.
    bool folder_ = false, images_ = false;
    std::vector<fs::path> image_inputs_, image_outputs_;
    std::unique_ptr<VideoReader> reader_;
    fs::path tmp_out_;
    std::unique_ptr<VideoWriter> writer_;
    TmpGuard tmp_guard_;
    Size in_size_, out_size_;
    // The alpha layout of the video written, when it has one (its alpha comes from the input's).
    std::optional<AlphaLayout> out_alpha_;

    std::unique_ptr<gpu::Device> own_device_;
    gpu::Device* device_ = nullptr;

    // The stages and what they share.
    BoundedQueue<Item> to_proc_{static_cast<size_t>(in_flight()) + 2};
    BoundedQueue<Item> to_save_{static_cast<size_t>(in_flight()) + 2};
    std::mutex error_mutex_;
    std::exception_ptr error_;
    Busy load_busy_, proc_busy_, save_busy_;
    std::atomic<int64_t> frames_done_{0}, frames_loaded_{0};
    FrameProgress frame_progress_;
    std::atomic<uint64_t> output_bytes_{0};
    std::atomic<bool> stopped_early_{false};
    std::mutex side_mutex_;
    std::deque<SidePacket> side_packets_;
    std::atomic<bool> cut_streams_{false}; // the video stopped before the input's end: cut the rest too
    int64_t skipped_images_ = 0;           // unreadable images of a folder (tolerate_errors)
    bool image_noted_ = false;             // the load stage said what an image loses

    // Progress.
    int64_t total_ = 0;
    Clock::time_point t0_;
    bool tty_ = false, bar_shown_ = false;
    std::deque<std::pair<double, double>> window_; // (seconds, frames) for a recent fps
};

} // namespace

TranscodeStats transcode(const TranscodeDesc& desc, FrameProcessor& processor) {
    return Transcoder(desc, processor).run();
}

} // namespace vkml::media
