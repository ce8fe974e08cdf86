#pragma once
// Shared by the libFuzzer harnesses in this folder (see README.md): a private scratch folder for
// inputs that must be files, the multi-file input format, and the device-free passes a model goes
// through after import. Every harness accepts any bytes; vkml::Error is the expected outcome for
// bad input, anything else (a crash, a sanitizer report, any other exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "vkml/error.hpp"
#include "vkml/graph/graph.hpp"

namespace vkml::fuzz {

// A folder of this process's own under $TMPDIR (else /dev/shm, else /tmp), created on first use,
// removed at exit.
const std::filesystem::path& scratch_dir();

// Replaces `path` with `bytes`.
void write_file(const std::filesystem::path& path, std::string_view bytes);

// Several files in one input: the first file's bytes, then any number of
//   "\n#vkml-file NAME\n" + bytes
// sections. NAME keeps only [A-Za-z0-9._-] (at most 64 characters, never "." or ".."), so a file
// always lands inside the folder it is written to.
struct File {
    std::string name;
    std::string_view bytes;
};
std::vector<File> split_files(std::string_view input, const std::string& first_name);
inline constexpr std::string_view file_marker = "\n#vkml-file ";

// Writes `files` into a fresh `folder` (emptied first).
void write_files(const std::filesystem::path& folder, const std::vector<File>& files);

// What happens to a model between import and the first device call: prune, free dimensions set
// to small sizes and input shapes fixed, host constant folding (with a low element cap so the
// fuzzer's memory stays bounded), fusion, the text dump and the histogram, and the IR checks.
// vkml::Error from any pass ends the run quietly: it is the answer to a bad model.
void host_passes(graph::Graph& graph);

// Called with each vkml::Error a harness catches: prints it when VKML_FUZZ_VERBOSE is set (to see
// how far the seeds get), else nothing.
void expected(const Error& error);

} // namespace vkml::fuzz
