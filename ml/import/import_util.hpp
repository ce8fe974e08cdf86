#pragma once
// Shared by the importers: errors that always start with the file they are about, and whole-file
// reads that turn every failure into such an error.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "vkml/error.hpp"

namespace vkml::import {

// Throws vkml::Error "'<file>': <problem>".
[[noreturn]] void fail(const std::string& file, const std::string& problem,
                       ErrorCode code = ErrorCode::InvalidArgument);

// The whole file; a missing, unreadable or oversized (> max_bytes) file is an Io error naming it
// and, when given, the model file that referred to it.
std::vector<std::byte> read_file(const std::filesystem::path& path, uint64_t max_bytes = uint64_t{1} << 34,
                                 const std::string& referrer = {});

// `length` bytes at `offset` of `path`, checked against the file's size; errors name `path` and,
// as the file that referred to it, `referrer`.
std::vector<std::byte> read_file_range(const std::filesystem::path& path, uint64_t offset, uint64_t length,
                                       const std::string& referrer);

// Resolves a file name found inside a model (external data, weight shards) against the model's
// directory. Absolute names, names with ".." and names that resolve through a symbolic link to a
// file outside the directory are refused: a model must not make vkml read files outside its own
// directory.
std::filesystem::path resolve_beside(const std::filesystem::path& dir, const std::string& name,
                                     const std::string& referrer);

} // namespace vkml::import
