#pragma once
// Helpers for the media tests: clips decoded back (frames as RGB through a CPU colour reference,
// timestamps, copied packets), the vkml binary run as a user runs it, scratch folders.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "vkml/media/reader.hpp"

namespace vkml::test {

struct PacketRecord {
    int stream = 0;
    int64_t pts = 0, dts = 0, duration = 0;
    std::vector<uint8_t> data;
    double start = 0, end = 0; // seconds: pts and pts + duration in the stream's time base
    bool operator==(const PacketRecord&) const = default;
};

struct DecodedClip {
    media::VideoInfo info;
    std::vector<std::vector<uint8_t>> rgb;       // RGB24 per frame (CPU reference conversion)
    std::vector<double> seconds;                 // presentation time of each frame, from the stream start
    double video_end = 0;                        // seconds: the end of the last frame (container clock)
    std::vector<PacketRecord> others;            // audio / subtitle packets, in file order
    std::map<std::string, std::string> metadata; // container tags
};

// Decodes every frame. Colour: BT.601/709 per the stream's matrix and range; chroma of 4:2:0 /
// 4:2:2 repeated (nearest), so pixel comparisons use 4:4:4 or RGB clips.
DecodedClip decode_clip(const std::filesystem::path& path);

// Runs the vkml binary with `args` (a shell string), stdout and stderr together; status = exit code.
std::string run_tool(const std::string& args, int& status);

// The vkml binary as a child process (no shell), stdout and stderr into a log file, for tests that
// signal it or limit it: `file_size_limit` > 0 sets RLIMIT_FSIZE (bytes) with SIGXFSZ ignored, so
// a write past it fails with EFBIG as on a full disk.
class ToolProcess {
public:
    explicit ToolProcess(const std::vector<std::string>& args, uint64_t file_size_limit = 0);
    ~ToolProcess(); // kills the child if it still runs
    ToolProcess(const ToolProcess&) = delete;
    ToolProcess& operator=(const ToolProcess&) = delete;
    int pid() const { return pid_; }
    void signal(int sig) const;
    // Waits up to `seconds` for the child to end; false if it still runs. status(): the exit code,
    // or 128 + the signal that ended it.
    bool wait(double seconds);
    int status() const { return status_; }
    std::string output() const;

private:
    int pid_ = -1;
    int status_ = -1;
    std::filesystem::path log_;
};

// Runs the vkml binary to the end with a file size limit (see ToolProcess); output and status.
std::string run_tool_limited(const std::vector<std::string>& args, uint64_t file_size_limit, int& status);

// A PNG's samples, interleaved (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA channels), at 8 or 16 bits.
struct Png {
    int width = 0, height = 0, channels = 0, bits = 0;
    std::vector<uint16_t> samples;
};
// Writes a PNG (zlib, no filters) of those samples; reads one back (stb), as stored.
void write_png(const std::filesystem::path& path, const Png& png);
Png read_png(const std::filesystem::path& path);

// Names in a folder, sorted.
std::vector<std::string> list_dir(const std::filesystem::path& dir);

std::filesystem::path scratch_dir(const std::string& name);

// Mean and max absolute difference of two equally sized byte vectors.
struct Diff {
    double mean = 0;
    int max = 0;
};
Diff diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

std::filesystem::path model_cache();

} // namespace vkml::test
