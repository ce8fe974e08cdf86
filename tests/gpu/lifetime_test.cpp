// Lifetimes (issue 14): nothing vkml frees may still be in use by the GPU, on any path. Work that
// runs long on lavapipe (chained copies of a large buffer) is submitted, and then what it uses is
// destroyed at once, after a wait that gave up, or with the device itself: the validation layer
// (which reports destroying a pending command pool or in-use memory) must stay silent and nothing
// may crash. Before issue 14 these destroyed the objects under the driver (a segfault on
// lavapipe after the fixed 60 s wait).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "gpu_test.hpp"
#include "vkml/gpu/stream.hpp"

namespace vkml::test {
namespace {

using gpu::QueueRole;

constexpr uint64_t slow_bytes = 8ull << 20;

// Two buffers and a command buffer whose work copies one into the other `copies` times, each copy
// after the previous one (a barrier between): long enough on lavapipe that the test finds it
// still running.
struct SlowWork {
    gpu::Buffer a, b;
    gpu::CommandBuffer cmd;
    SlowWork(gpu::Device& d, int copies)
        : a(d, {.size = slow_bytes, .name = "slow a"}), b(d, {.size = slow_bytes, .name = "slow b"}),
          cmd(d, QueueRole::Compute) {
        cmd.begin();
        cmd.fill(a.range(), 7u, slow_bytes);
        for (int i = 0; i < copies; ++i) {
            gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_TRANSFER_BIT,
                                 VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT,
                                 VK_PIPELINE_STAGE_2_TRANSFER_BIT,
                                 VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT);
            if (i % 2 == 0)
                cmd.copy(a.range(), b.range(), slow_bytes);
            else
                cmd.copy(b.range(), a.range(), slow_bytes);
        }
        cmd.end();
    }
};

gpu::DeviceDesc with_timeout(double seconds) {
    gpu::DeviceDesc d = device_desc();
    d.wait_timeout = seconds;
    return d;
}

// The crash, on purpose: a wait that gives up (a 2 ms limit here, 60 s before) must leave
// the command buffer and the buffers it uses alive until the GPU is done, then free them.
TEST_F(GpuTest, AWaitThatGivesUpFreesNothingTheGpuStillRuns) {
    auto device = gpu::Device::create(with_timeout(0.002));
    uint64_t value = 0;
    {
        SlowWork work(*device, 400);
        value = device->submit(QueueRole::Compute, work.cmd);
        try {
            device->wait(QueueRole::Compute, value);
            ADD_FAILURE() << "the work finished within 2 ms: the test needs longer work";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::Timeout) << e.what();
            const std::string msg = e.what();
            EXPECT_NE(msg.find("VKML_WAIT_TIMEOUT"), std::string::npos) << msg;
            EXPECT_NE(msg.find("compute queue"), std::string::npos) << msg;
        }
        // `work` is destroyed here, as an exception unwinding a real caller would.
    }
    if (!device->is_complete(QueueRole::Compute, value)) {
        EXPECT_GT(device->retired_pending(), 0u) << "destroyed while the GPU still ran it";
    }
    // The device's teardown waits for the work, then frees what was retired: all silent.
    device.reset();
}

// The normal path: objects destroyed right after their submission are retired against it, and
// freed (their memory back to the allocator) once a later wait sees the work done.
TEST_F(GpuTest, ObjectsDestroyedWhileTheGpuRunsThemAreFreedAfterwards) {
    const uint64_t in_use = dev().allocator().stats().in_use;
    uint64_t value = 0;
    {
        SlowWork work(dev(), 200);
        value = dev().submit(QueueRole::Compute, work.cmd);
    }
    if (!dev().is_complete(QueueRole::Compute, value)) {
        EXPECT_GE(dev().retired_pending(), 3u) << "two buffers and a command buffer";
        EXPECT_GE(dev().allocator().stats().in_use, in_use + 2 * slow_bytes) << "memory kept until the end";
    }
    dev().wait(QueueRole::Compute, value);
    EXPECT_EQ(dev().retired_pending(), 0u);
    EXPECT_EQ(dev().allocator().stats().in_use, in_use);
}

// Re-recording a command buffer whose work still runs waits for it rather than resetting the
// pool under the GPU.
TEST_F(GpuTest, ReRecordingWaitsForTheLastSubmission) {
    SlowWork work(dev(), 100);
    const uint64_t value = dev().submit(QueueRole::Compute, work.cmd);
    EXPECT_TRUE(work.cmd.in_flight() || dev().is_complete(QueueRole::Compute, value));
    work.cmd.begin();
    EXPECT_TRUE(dev().is_complete(QueueRole::Compute, value));
    EXPECT_FALSE(work.cmd.in_flight());
    work.cmd.end();
}

// Destroying the device while its work runs: it waits, then frees everything.
TEST_F(GpuTest, DeviceDestroyedWhileItsWorkRunsWaitsFirst) {
    auto device = gpu::Device::create(device_desc());
    auto work = std::make_unique<SlowWork>(*device, 200);
    device->submit(QueueRole::Compute, work->cmd);
    work.reset();
    device.reset();
}

// Memory retired while the GPU still uses it counts against the limit until it is freed: an
// allocation that needs it waits for the GPU instead of failing.
TEST_F(GpuTest, OutOfMemoryWaitsForRetiredMemory) {
    gpu::DeviceDesc desc = device_desc();
    desc.memory_limit = 40ull << 20;
    auto device = gpu::Device::create(desc);
    {
        SlowWork work(*device, 200); // 16 MiB of the 40
        device->submit(QueueRole::Compute, work.cmd);
    }
    gpu::Buffer big(*device, {.size = 30ull << 20, .name = "needs the retired memory"});
    EXPECT_TRUE(big);
    EXPECT_EQ(device->retired_pending(), 0u);
}

// A stream submits piece after piece through a few command buffers, in order.
TEST_F(GpuTest, CommandStreamSubmitsPiecesInOrder) {
    gpu::Buffer buf(dev(), {.size = 4096, .name = "stream target"});
    gpu::CommandStream stream(dev(), QueueRole::Compute, 2);
    uint64_t last = 0;
    for (uint32_t i = 1; i <= 7; ++i) {
        gpu::CommandBuffer& cmd = stream.cmd();
        gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
                             VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT);
        cmd.fill(buf.range(), i, 4096);
        const uint64_t v = stream.submit();
        EXPECT_GT(v, last);
        last = v;
    }
    EXPECT_EQ(stream.submit(), last) << "nothing recorded: nothing submitted";
    stream.wait();
    std::vector<std::byte> bytes(4);
    gpu::download(dev(), buf.range(), bytes);
    uint32_t got = 0;
    std::memcpy(&got, bytes.data(), 4);
    EXPECT_EQ(got, 7u);
}

// VKML_MEMORY_LIMIT takes a positive size; "lots", "0" or "-5M" are errors naming it, not ignored.
TEST(MemoryLimit, ComesFromTheEnvironmentAndIsChecked) {
    const char* old = std::getenv("VKML_MEMORY_LIMIT");
    const std::string saved = old ? old : "";
    ::setenv("VKML_MEMORY_LIMIT", "512M", 1);
    EXPECT_NO_THROW(gpu::Device::create(device_desc()));
    for (const char* bad : {"lots", "0", "-5M", "12Q"}) {
        ::setenv("VKML_MEMORY_LIMIT", bad, 1);
        try {
            gpu::Device::create(device_desc());
            ADD_FAILURE() << "VKML_MEMORY_LIMIT=" << bad << " was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("VKML_MEMORY_LIMIT"), std::string::npos) << e.what();
        }
    }
    if (old)
        ::setenv("VKML_MEMORY_LIMIT", saved.c_str(), 1);
    else
        ::unsetenv("VKML_MEMORY_LIMIT");
    for (const std::string& m : take_validation_messages()) ADD_FAILURE() << "validation: " << m;
}

// VKML_WAIT_TIMEOUT sets the no-progress limit (0: none); anything else is an error, not ignored.
TEST(WaitTimeout, ComesFromTheEnvironmentAndIsChecked) {
    const char* old = std::getenv("VKML_WAIT_TIMEOUT");
    const std::string saved = old ? old : "";
    auto made = [](const char* value) {
        ::setenv("VKML_WAIT_TIMEOUT", value, 1);
        return gpu::Device::create(device_desc());
    };
    EXPECT_DOUBLE_EQ(made("2.5")->wait_timeout(), 2.5);
    EXPECT_DOUBLE_EQ(made("0")->wait_timeout(), 0.0);
    for (const char* bad : {"lots", "-1", "10s", ""}) {
        if (!*bad) continue;
        try {
            made(bad);
            ADD_FAILURE() << "VKML_WAIT_TIMEOUT=" << bad << " was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("VKML_WAIT_TIMEOUT"), std::string::npos) << e.what();
        }
    }
    ::unsetenv("VKML_WAIT_TIMEOUT");
    EXPECT_DOUBLE_EQ(gpu::Device::create(device_desc())->wait_timeout(), 600.0);
    gpu::DeviceDesc d = device_desc();
    d.wait_timeout = 7;
    EXPECT_DOUBLE_EQ(gpu::Device::create(d)->wait_timeout(), 7.0);
    if (old) ::setenv("VKML_WAIT_TIMEOUT", saved.c_str(), 1);
    for (const std::string& m : take_validation_messages()) ADD_FAILURE() << "validation: " << m;
}

} // namespace
} // namespace vkml::test
