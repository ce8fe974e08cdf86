#pragma once
// Where the importer tests find their inputs: checked-in fixtures, Debian's ONNX test data, and
// the model cache that tools/fetch-models fills (skipped with a message when absent).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#ifndef VKML_FIXTURE_DIR
#error "VKML_FIXTURE_DIR must name tests/fixtures"
#endif

namespace vkml::test {

inline std::filesystem::path fixture(const std::string& name) {
    return std::filesystem::path(VKML_FIXTURE_DIR) / name;
}

// Debian's libonnx-testdata.
inline std::filesystem::path onnx_testdata() {
    if (const char* d = std::getenv("VKML_ONNX_TESTDATA")) return d;
    return "/usr/share/libonnx-testdata/data";
}

// ${VKML_MODELS:-$HOME/.cache/vkml/models}, as tools/fetch-models fills it.
inline std::filesystem::path model_cache() {
    if (const char* d = std::getenv("VKML_MODELS"); d && *d) return d;
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home ? home : "/nonexistent") / ".cache/vkml/models";
}

inline std::vector<std::byte> read_bytes(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::byte> b(c.size());
    for (size_t i = 0; i < c.size(); ++i) b[i] = static_cast<std::byte>(c[i]);
    return b;
}

inline void write_bytes(const std::filesystem::path& p, const std::vector<std::byte>& bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A fresh, empty directory under the system temp dir for a test's corrupted copies; the process
// id keeps concurrent runs (ctest -j, two checkouts on one machine) apart.
// They are removed when the test program exits.
inline std::filesystem::path scratch_dir(const std::string& name) {
    struct Cleanup {
        std::vector<std::filesystem::path> dirs;
        ~Cleanup() {
            std::error_code ec;
            for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
        }
    };
    static Cleanup cleanup;
    auto d = std::filesystem::temp_directory_path() /
             ("vkml-import-test-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    cleanup.dirs.push_back(d);
    return d;
}

} // namespace vkml::test

// Skips the test with a message naming what is missing and how to get it.
#define VKML_REQUIRE_PATH(path, how)                                                                         \
    do {                                                                                                     \
        if (!std::filesystem::exists(path)) GTEST_SKIP() << (path).string() << " is absent: " << (how);      \
    } while (0)
