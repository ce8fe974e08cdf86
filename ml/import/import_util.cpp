#include "import_util.hpp"

#include <fstream>
#include <system_error>

namespace vkml::import {

void fail(const std::string& file, const std::string& problem, ErrorCode code) {
    throw Error(code, "'" + file + "': " + problem);
}

std::vector<std::byte> read_file(const std::filesystem::path& path, uint64_t max_bytes,
                                 const std::string& referrer) {
    const std::string who = referrer.empty() ? "" : " (referred to by '" + referrer + "')";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fail(path.string(), "no such file" + who, ErrorCode::Io);
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) fail(path.string(), "cannot read its size: " + ec.message(), ErrorCode::Io);
    if (size > max_bytes)
        fail(path.string(),
             "is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
                 " this reader accepts" + who,
             ErrorCode::Unsupported);
    return read_file_range(path, 0, size, referrer.empty() ? path.string() : referrer);
}

std::vector<std::byte> read_file_range(const std::filesystem::path& path, uint64_t offset, uint64_t length,
                                       const std::string& referrer) {
    const std::string who = referrer == path.string() ? "" : " (referred to by '" + referrer + "')";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fail(path.string(), "no such file" + who, ErrorCode::Io);
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) fail(path.string(), "cannot read its size: " + ec.message() + who, ErrorCode::Io);
    if (offset > size || length > size - offset)
        fail(path.string(), "is " + std::to_string(size) + " bytes, too short for " + std::to_string(length) +
                                " bytes at offset " + std::to_string(offset) + who);
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path.string(), "cannot be opened" + who, ErrorCode::Io);
    std::vector<std::byte> bytes(static_cast<size_t>(length));
    in.seekg(static_cast<std::streamoff>(offset));
    if (!bytes.empty()) in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length));
    if (!in) fail(path.string(), "read failed" + who, ErrorCode::Io);
    return bytes;
}

std::filesystem::path resolve_beside(const std::filesystem::path& dir, const std::string& name,
                                     const std::string& referrer) {
    const std::filesystem::path rel(name);
    if (name.empty()) fail(referrer, "refers to a file with an empty name");
    if (rel.is_absolute())
        fail(referrer, "refers to the absolute path '" + name + "'; only paths beside the model are read");
    for (const auto& part : rel)
        if (part == "..") fail(referrer, "refers to '" + name + "', outside the model's directory");
    // A symbolic link inside the directory may still lead out of it (a model archive can carry
    // one to ~/.ssh/id_rsa): the resolved path must stay inside the resolved directory.
    const std::filesystem::path path = dir / rel;
    std::error_code ec, ec_dir;
    const auto real = std::filesystem::weakly_canonical(path, ec);
    const auto real_dir = std::filesystem::weakly_canonical(dir.empty() ? "." : dir, ec_dir);
    if (!ec && !ec_dir) {
        auto d = real_dir.begin(), p = real.begin();
        for (; d != real_dir.end() && !d->empty(); ++d, ++p)
            if (p == real.end() || *p != *d)
                fail(referrer, "refers to '" + name + "', which is a link to '" + real.string() +
                                   "', outside the model's directory; copy the file beside the model");
    }
    return path;
}

} // namespace vkml::import
