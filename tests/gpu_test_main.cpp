#include <cstdio>
#include <memory>
#include <mutex>

#include "gpu_test.hpp"

namespace vkml::test {
namespace {
std::mutex mutex;
std::vector<std::string> collected;
std::unique_ptr<gpu::Device> shared;
} // namespace

std::vector<std::string> take_validation_messages() {
    std::lock_guard lock(mutex);
    return std::exchange(collected, {});
}

gpu::DeviceDesc device_desc(std::vector<std::string>* vkml_messages) {
    gpu::DeviceDesc desc;
    desc.on_message = [vkml_messages](const gpu::Message& m) {
        if (m.source == "validation") {
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
