#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <mutex>

#include "gpu_test.hpp"

namespace vkml::test {
namespace {
std::mutex mutex;
std::vector<std::string> collected;
std::unique_ptr<gpu::Device> shared;

// A crash prints the faulting thread's stack before the default action ends the process: a rare
// SIGSEGV once ended a suite run with nothing to go on. Installed only where nothing else handles
// the signal (the sanitizer builds keep their own reports).
void crash_handler(int sig) {
    void* frames[64];
    const int n = backtrace(frames, 64);
    static const char header[] = "vkml test: fatal signal; the faulting thread's stack:\n";
    [[maybe_unused]] const ssize_t w = write(STDERR_FILENO, header, sizeof header - 1);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

const bool crash_trace_installed = [] {
    void* warm[1];
    backtrace(warm, 1); // loads the unwinder now rather than inside the handler
    bool any = false;
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
        struct sigaction old {};
        if (sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa {};
        sa.sa_handler = crash_handler;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, &sa, nullptr) == 0 && sig == SIGSEGV) any = true;
    }
    return any;
}();
} // namespace

bool crash_trace_active() {
    return crash_trace_installed;
}

std::vector<std::string> take_validation_messages() {
    std::lock_guard lock(mutex);
    return std::exchange(collected, {});
}

gpu::DeviceDesc device_desc(std::vector<std::string>* vkml_messages) {
    gpu::DeviceDesc desc;
    desc.on_message = [vkml_messages](const gpu::Message& m) {
        if (m.source == "validation") {
            // Printed as it arrives as well (the test fails on it in TearDown): a crash right after
            // a message still leaves it in the log.
            std::fprintf(stderr, "validation: %.*s\n", int(m.text.size()), m.text.data());
            std::lock_guard lock(mutex);
            collected.emplace_back(m.text);
        } else if (vkml_messages) {
            vkml_messages->emplace_back(m.text);
        } else if (m.severity != gpu::Severity::Info) {
            std::fprintf(stderr, "vkml: %.*s\n", int(m.text.size()), m.text.data());
        }
    };
    return desc;
}

gpu::Device& device() {
    if (!shared) {
        shared = gpu::Device::create(device_desc());
        // Which tensor-core path the suite exercises (VKML_COOPMAT), for GPU logs.
        const gpu::Capabilities& c = shared->caps();
        std::fprintf(stderr, "vkml test device: %s, cooperative matrices %s\n", c.device_name.c_str(),
                     gpu::coopmat_api_name(c.coopmat_api));
    }
    return *shared;
}

void release_device() {
    shared.reset();
}

} // namespace vkml::test

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    const int rc = RUN_ALL_TESTS();
    vkml::test::release_device();
    // Messages raised while tearing the shared device down belong to no test; they still fail the run.
    const auto late = vkml::test::take_validation_messages();
    for (const auto& m : late) std::fprintf(stderr, "validation at shutdown: %s\n", m.c_str());
    return rc != 0 || !late.empty() ? 1 : 0;
}
