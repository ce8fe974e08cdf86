#include "fuzz_common.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <system_error>
#include <unistd.h>

#include "vkml/error.hpp"
#include "graph/passes.hpp"

namespace vkml::fuzz {

namespace fs = std::filesystem;

namespace {

struct Scratch {
    fs::path dir;
    Scratch() {
        // Memory-backed when possible: the harnesses write files thousands of times a second,
        // and a disk-backed /tmp made them 7 times slower.
        const char* tmp = std::getenv("TMPDIR");
        std::string base = tmp && *tmp ? tmp : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        std::string pattern = base + "/vkml-fuzz-XXXXXX";
        if (!mkdtemp(pattern.data())) std::abort();
        dir = pattern;
    }
    ~Scratch() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
};

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

} // namespace

const fs::path& scratch_dir() {
    static Scratch scratch;
    return scratch.dir;
}

void write_file(const fs::path& path, std::string_view bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) std::abort(); // the scratch folder itself is broken: not a finding about vkml
}

std::vector<File> split_files(std::string_view input, const std::string& first_name) {
    std::vector<File> files;
    size_t at = input.find(file_marker);
    files.push_back({first_name, input.substr(0, at)});
    while (at != std::string_view::npos) {
        const size_t name_at = at + file_marker.size();
        const size_t eol = input.find('\n', name_at);
        if (eol == std::string_view::npos) break;
        std::string name;
        for (char c : input.substr(name_at, std::min<size_t>(eol - name_at, 64)))
            if (name_char(c)) name += c;
        if (name.empty() || name == "." || name == "..") name = "file";
        at = input.find(file_marker, eol + 1);
        files.push_back({name, input.substr(eol + 1, at == std::string_view::npos ? at : at - eol - 1)});
    }
    return files;
}

void write_files(const fs::path& folder, const std::vector<File>& files) {
    std::error_code ec;
    fs::remove_all(folder, ec);
    fs::create_directories(folder);
    for (const File& f : files) write_file(folder / f.name, f.bytes);
}

void host_passes(graph::Graph& g) {
    try {
        g.validate();
        (void)graph::dump(g);
        graph::prune(g);
        std::map<std::string, int64_t, std::less<>> free_dims;
        for (const std::string& d : g.free_dimensions()) free_dims[d] = 3;
        try {
            graph::fix_input_shapes(g, free_dims, {});
        } catch (const Error&) {
            // Inputs without shapes: folding and fusion still apply to the rest.
        }
        {
            // Sequences and control flow, resolved as far as the host can (a copy: what it
            // cannot resolve, e.g. a loop over computed values, is an error here but not for
            // the passes below).
            graph::Graph copy = g;
            try {
                graph::expand_on_host(copy, int64_t{1} << 22);
                copy.validate();
                (void)graph::dump(copy);
                graph::prune(copy);
                copy.remove_unused_values();
                copy.validate();
            } catch (const Error& e) {
                expected(e);
            }
        }
        graph::fold_constants(g, int64_t{1} << 22);
        graph::fuse(g, {.residual = false});
        g.validate();
        (void)graph::dump(g);
        (void)graph::op_histogram(g);
        g.remove_unused_values();
        g.validate();
        if (std::getenv("VKML_FUZZ_VERBOSE"))
            std::fprintf(stderr, "host passes done: %zu nodes, %zu values\n", g.nodes().size(),
                         g.value_count());
    } catch (const Error& e) {
        expected(e);
    }
}

void expected(const Error& error) {
    static const bool verbose = std::getenv("VKML_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "vkml::Error: %s\n", error.what());
}

} // namespace vkml::fuzz
