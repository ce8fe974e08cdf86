#pragma once
// Output files that are never seen half-written: each is written to a hidden temporary file in
// the output's folder (`.<stem>.partial-<pid><ext>`), every write checked, flushed to the disk and
// renamed over the output only when complete. Errors (a full disk, a file size limit, an I/O
// error) are vkml::Error(Io) naming the output the user asked for, never the temporary name, and
// remove the temporary file.
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace vkml::media {

// The hidden temporary name this process writes `output` under.
std::filesystem::path temporary_for(const std::filesystem::path& output);

// Removes the temporary files that runs writing `outputs` (all in `dir`) left behind when they
// were killed (SIGKILL, a crash): those whose process is gone. Files of live processes (another
// run writing the same output now) are left alone.
void remove_stale_partials(const std::filesystem::path& dir,
                           const std::vector<std::filesystem::path>& outputs);

// Flushes the finished temporary file to the disk and renames it to `output` (then flushes the
// folder, so the new name survives a crash too). Throws Error(Io) naming `output`.
void commit_temporary(const std::filesystem::path& temporary, const std::filesystem::path& output);

// The whole of `bytes` as `output`, atomically as above. Throws Error(Io) naming `output`.
void write_file_atomically(const std::filesystem::path& output, std::span<const uint8_t> bytes);

} // namespace vkml::media
