#include "media_util.hpp"

#include <stb_image.h>
#include <zlib.h>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace vkml::test {

namespace fs = std::filesystem;

namespace {

uint8_t clamp8(double v) {
    return static_cast<uint8_t>(std::clamp(std::lround(v), 0l, 255l));
}

std::vector<uint8_t> to_rgb(const AVFrame& f, const media::VideoInfo& info) {
    const int w = f.width, h = f.height;
    std::vector<uint8_t> out(size_t(w) * h * 3);
    const auto fmt = static_cast<AVPixelFormat>(f.format);
    if (fmt == AV_PIX_FMT_RGB24 || fmt == AV_PIX_FMT_BGR0 || fmt == AV_PIX_FMT_BGRA ||
        fmt == AV_PIX_FMT_RGB0 || fmt == AV_PIX_FMT_RGBA) {
        const int bpp = fmt == AV_PIX_FMT_RGB24 ? 3 : 4;
        const bool bgr = fmt == AV_PIX_FMT_BGR0 || fmt == AV_PIX_FMT_BGRA;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                const uint8_t* s = f.data[0] + int64_t(y) * f.linesize[0] + int64_t(x) * bpp;
                uint8_t* d = &out[(size_t(y) * w + x) * 3];
                d[0] = bgr ? s[2] : s[0];
                d[1] = s[1];
                d[2] = bgr ? s[0] : s[2];
            }
        return out;
    }
    const AVPixFmtDescriptor* pd = av_pix_fmt_desc_get(fmt);
    if (!pd || pd->nb_components < 3 || pd->comp[0].depth != 8 || (pd->flags & AV_PIX_FMT_FLAG_RGB) ||
        !(pd->flags & AV_PIX_FMT_FLAG_PLANAR))
        throw std::runtime_error(std::string("decode_clip: no reference conversion for ") +
                                 av_get_pix_fmt_name(fmt));
    double kr = 0.299, kb = 0.114;
    if (info.matrix == media::ColorMatrix::Bt709) kr = 0.2126, kb = 0.0722;
    if (info.matrix == media::ColorMatrix::Bt2020) kr = 0.2627, kb = 0.0593;
    const double kg = 1 - kr - kb;
    const bool full = info.range == media::ColorRange::Full;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double Y = f.data[0][int64_t(y) * f.linesize[0] + x];
            const int cx = x >> pd->log2_chroma_w, cy = y >> pd->log2_chroma_h;
            const double U = f.data[1][int64_t(cy) * f.linesize[1] + cx],
                         V = f.data[2][int64_t(cy) * f.linesize[2] + cx];
            const double l = full ? Y / 255 : (Y - 16) / 219;
            const double cb = full ? (U - 128) / 255 : (U - 128) / 224,
                         cr = full ? (V - 128) / 255 : (V - 128) / 224;
            const double r = l + 2 * (1 - kr) * cr, b = l + 2 * (1 - kb) * cb, g = (l - kr * r - kb * b) / kg;
            uint8_t* d = &out[(size_t(y) * w + x) * 3];
            d[0] = clamp8(255 * r);
            d[1] = clamp8(255 * g);
            d[2] = clamp8(255 * b);
        }
    return out;
}

} // namespace

DecodedClip decode_clip(const fs::path& path) {
    DecodedClip c;
    media::VideoReader reader({path, 1});
    c.info = reader.info();
    reader.on_other_packet = [&](media::PacketPtr p) {
        const double tb = av_q2d(reader.format()->streams[p->stream_index]->time_base);
        PacketRecord r{p->stream_index,
                       p->pts,
                       p->dts,
                       p->duration,
                       {p->data, p->data + p->size},
                       double(p->pts) * tb,
                       double(p->pts + p->duration) * tb};
        c.others.push_back(std::move(r));
    };
    while (media::FramePtr f = reader.read_frame()) {
        c.rgb.push_back(to_rgb(*f, c.info));
        c.seconds.push_back(double(f->pts - c.info.start_pts) * c.info.time_base.value());
        c.video_end = double(f->pts + media::frame_duration(*f)) * c.info.time_base.value();
    }
    const AVDictionaryEntry* e = nullptr;
    while ((e = av_dict_get(reader.format()->metadata, "", e, AV_DICT_IGNORE_SUFFIX)))
        c.metadata[e->key] = e->value;
    return c;
}

std::string run_tool(const std::string& args, int& status) {
    const std::string cmd = std::string(VKML_TOOL_PATH) + " " + args + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    if (!pipe) throw std::runtime_error("popen failed");
    std::string out;
    std::array<char, 4096> buf{};
    size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
    const int raw = pclose(pipe.release());
    status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
    return out;
}

ToolProcess::ToolProcess(const std::vector<std::string>& args, uint64_t file_size_limit) {
    static int counter = 0;
    log_ = fs::temp_directory_path() /
           ("vkml-media-test-" + std::to_string(::getpid()) + "-child-" + std::to_string(counter++) + ".log");
    std::vector<std::string> argv_s{VKML_TOOL_PATH};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot create " + log_.string());
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
        // The test runner may block or ignore signals; the child starts with the defaults.
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        std::signal(SIGINT, SIG_DFL);
        std::signal(SIGTERM, SIG_DFL);
        if (file_size_limit > 0) {
            std::signal(SIGXFSZ, SIG_IGN);
            const rlimit lim{file_size_limit, file_size_limit};
            ::setrlimit(RLIMIT_FSIZE, &lim);
        }
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ::close(fd);
}

ToolProcess::~ToolProcess() {
    if (pid_ > 0 && status_ < 0) {
        ::kill(pid_, SIGKILL);
        int raw = 0;
        ::waitpid(pid_, &raw, 0);
    }
    std::error_code ec;
    fs::remove(log_, ec);
}

void ToolProcess::signal(int sig) const {
    if (pid_ > 0 && status_ < 0) ::kill(pid_, sig);
}

bool ToolProcess::wait(double seconds) {
    if (status_ >= 0) return true;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        int raw = 0;
        const pid_t r = ::waitpid(pid_, &raw, WNOHANG);
        if (r == pid_) {
            status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
            return true;
        }
        if (std::chrono::steady_clock::now() >= end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::string ToolProcess::output() const {
    std::ifstream f(log_, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string run_tool_limited(const std::vector<std::string>& args, uint64_t file_size_limit, int& status) {
    ToolProcess p(args, file_size_limit);
    if (!p.wait(300)) {
        status = -1;
        return "timed out: " + p.output();
    }
    status = p.status();
    return p.output();
}

void write_png(const fs::path& path, const Png& png) {
    const int bytes = png.bits / 8;
    std::vector<uint8_t> raw;
    for (int y = 0; y < png.height; ++y) {
        raw.push_back(0); // no filter
        for (int i = 0; i < png.width * png.channels; ++i) {
            const uint16_t v = png.samples.at(size_t(y) * png.width * png.channels + i);
            if (bytes == 2) raw.push_back(uint8_t(v >> 8));
            raw.push_back(uint8_t(v & 0xff));
        }
    }
    uLongf zsize = compressBound(uLong(raw.size()));
    std::vector<uint8_t> z(zsize);
    if (compress(z.data(), &zsize, raw.data(), uLong(raw.size())) != Z_OK)
        throw std::runtime_error("compress");
    z.resize(zsize);
    std::string out("\x89PNG\r\n\x1a\n", 8);
    auto be32 = [](std::string& s, uint32_t v) {
        for (int k = 3; k >= 0; --k) s.push_back(char((v >> (8 * k)) & 0xff));
    };
    auto chunk = [&](const char* type, const std::string& body) {
        be32(out, uint32_t(body.size()));
        const std::string typed = std::string(type, 4) + body;
        out += typed;
        be32(out, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(typed.data()), uInt(typed.size()))));
    };
    std::string ihdr;
    be32(ihdr, uint32_t(png.width));
    be32(ihdr, uint32_t(png.height));
    static constexpr char colour_type[5] = {0, 0, 4, 2, 6};
    ihdr += {char(png.bits), colour_type[png.channels], 0, 0, 0};
    chunk("IHDR", ihdr);
    chunk("IDAT", std::string(z.begin(), z.end()));
    chunk("IEND", "");
    std::ofstream(path, std::ios::binary).write(out.data(), std::streamsize(out.size()));
}

Png read_png(const fs::path& path) {
    Png png;
    png.bits = stbi_is_16_bit(path.c_str()) ? 16 : 8;
    void* data =
        png.bits == 16
            ? static_cast<void*>(stbi_load_16(path.c_str(), &png.width, &png.height, &png.channels, 0))
            : static_cast<void*>(stbi_load(path.c_str(), &png.width, &png.height, &png.channels, 0));
    if (!data) return {};
    const size_t n = size_t(png.width) * png.height * png.channels;
    png.samples.resize(n);
    for (size_t i = 0; i < n; ++i)
        png.samples[i] =
            png.bits == 16 ? static_cast<const uint16_t*>(data)[i] : static_cast<const uint8_t*>(data)[i];
    stbi_image_free(data);
    return png;
}

std::vector<std::string> list_dir(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

fs::path scratch_dir(const std::string& name) {
    const fs::path d =
        fs::temp_directory_path() / ("vkml-media-test-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

Diff diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    Diff d;
    if (a.size() != b.size() || a.empty()) return {1e9, 255};
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const int v = std::abs(int(a[i]) - int(b[i]));
        sum += v;
        d.max = std::max(d.max, v);
    }
    d.mean = sum / double(a.size());
    return d;
}

fs::path model_cache() {
    if (const char* env = std::getenv("VKML_MODELS"); env && *env) return env;
    const char* home = std::getenv("HOME");
    return fs::path(home ? home : ".") / ".cache/vkml/models";
}

} // namespace vkml::test
