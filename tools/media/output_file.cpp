#include "vkml/media/output_file.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include "vkml/error.hpp"

namespace vkml::media {

namespace fs = std::filesystem;

namespace {

std::string partial_prefix(const fs::path& out) {
    return "." + out.stem().string() + ".partial-";
}

fs::path folder_of(const fs::path& p) {
    return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

[[noreturn]] void fail(const fs::path& output, const std::string& what, int err) {
    throw Error(ErrorCode::Io, "'" + output.string() + "': " + what + " (" + std::strerror(err) + ")");
}

// fsync of a path (a file or a folder). 0 or an errno.
int sync_path(const fs::path& p, bool folder) {
    const int fd = ::open(p.c_str(), (folder ? O_RDONLY | O_DIRECTORY : O_WRONLY) | O_CLOEXEC);
    if (fd < 0) return errno;
    int err = 0;
    while (::fsync(fd) != 0) {
        if (errno == EINTR) continue;
        // Folders on some file systems cannot be synced: that only costs durability.
        if (!(folder && (errno == EINVAL || errno == EBADF))) err = errno;
        break;
    }
    if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
    return err;
}

} // namespace

fs::path temporary_for(const fs::path& out) {
    return folder_of(out) / (partial_prefix(out) + std::to_string(::getpid()) + out.extension().string());
}

void remove_stale_partials(const fs::path& dir, const std::vector<fs::path>& outputs) {
    std::error_code ec;
    fs::directory_iterator it(dir.empty() ? fs::path(".") : dir, ec);
    if (ec) return;
    for (const fs::directory_entry& e : it) {
        const std::string name = e.path().filename().string();
        if (name.size() < 2 || name[0] != '.' || name.find(".partial-") == std::string::npos) continue;
        for (const fs::path& out : outputs) {
            const std::string prefix = partial_prefix(out), ext = out.extension().string();
            if (name.size() <= prefix.size() + ext.size() || name.compare(0, prefix.size(), prefix) != 0 ||
                name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
                continue;
            const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - ext.size());
            if (digits.empty() || digits.size() > 9 ||
                !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
                continue;
            const pid_t pid = static_cast<pid_t>(std::stol(digits));
            if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
            fs::remove(e.path(), ec);
            break;
        }
    }
}

void commit_temporary(const fs::path& temporary, const fs::path& output) {
    std::error_code ec;
    if (const int err = sync_path(temporary, false)) {
        fs::remove(temporary, ec);
        fail(output, "cannot write the file to the disk", err);
    }
    if (::rename(temporary.c_str(), output.c_str()) != 0) {
        const int err = errno;
        fs::remove(temporary, ec);
        fail(output, "cannot move the finished file into place", err);
    }
    sync_path(folder_of(output), true);
}

void write_file_atomically(const fs::path& output, std::span<const uint8_t> bytes) {
    const fs::path tmp = temporary_for(output);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) fail(output, "cannot write", errno);
    size_t done = 0;
    int err = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            err = n < 0 ? errno : EIO;
            break;
        }
        done += static_cast<size_t>(n);
    }
    while (err == 0 && ::fsync(fd) != 0) {
        if (errno == EINTR) continue;
        err = errno;
    }
    if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
    if (err != 0) {
        std::error_code ec;
        fs::remove(tmp, ec);
        fail(output, "cannot write", err);
    }
    if (::rename(tmp.c_str(), output.c_str()) != 0) {
        err = errno;
        std::error_code ec;
        fs::remove(tmp, ec);
        fail(output, "cannot move the finished file into place", err);
    }
    sync_path(folder_of(output), true);
}

} // namespace vkml::media
