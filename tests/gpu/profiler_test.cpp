#include <algorithm>
#include <string>

#include "gpu_test.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::test {
namespace {

TEST_F(GpuTest, TimestampsMeasureEachScopeInOrder) {
    if (!dev().caps().timestamps) GTEST_SKIP() << "no timestamps on this device";
    gpu::Profiler profiler(dev(), 8);
    ASSERT_TRUE(profiler.supported());
    const uint32_t small = 1 << 12, big = 1 << 20;
    gpu::Tensor a(dev(), {big}, gpu::DType::f32), b(dev(), {big}, gpu::DType::f32);
    const gpu::Pipeline& fill =
        dev().pipeline({.shader = gpu::ShaderId::fill_f32, .bindings = 1, .push_constant_bytes = 8});
    struct Push {
        uint32_t n;
        float v;
    };
    dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        profiler.reset(cmd);
        const gpu::BufferRange ra[] = {a.range()}, rb[] = {b.range()};
        ASSERT_TRUE(profiler.begin(cmd, "small fill"));
        cmd.dispatch(fill, ra, Push{small, 1.f}, cmd.groups_for(fill, small));
        profiler.end(cmd);
        ASSERT_TRUE(profiler.begin(cmd, "big fill"));
        cmd.dispatch(fill, rb, Push{big, 2.f}, cmd.groups_for(fill, big));
        profiler.end(cmd);
    });
    const auto records = profiler.results();
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].name, "small fill");
    EXPECT_EQ(records[1].name, "big fill");
    EXPECT_EQ(records[0].queue, gpu::QueueRole::Compute);
    EXPECT_DOUBLE_EQ(records[0].start_us, 0.0);
    EXPECT_GE(records[1].start_us, records[0].start_us + records[0].duration_us * 0.999);
    EXPECT_GT(records[1].duration_us, 0.0);
    // No comparison of durations: timings are measured in bench/, never asserted by tests.
    const std::string table = gpu::timing_table(records);
    EXPECT_NE(table.find("big fill"), std::string::npos);
    EXPECT_NE(gpu::chrome_trace_json(records).find("\"small fill\""), std::string::npos);
}

TEST_F(GpuTest, ProfilerRefusesScopesBeyondItsCapacity) {
    gpu::Profiler profiler(dev(), 1);
    dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        profiler.reset(cmd);
        EXPECT_EQ(profiler.begin(cmd, "one"), dev().caps().timestamps);
        profiler.end(cmd);
        EXPECT_FALSE(profiler.begin(cmd, "two"));
    });
    EXPECT_EQ(profiler.results().size(), dev().caps().timestamps ? 1u : 0u);
}

// One profiler times scopes on two queues (the frame graph's graphics and async compute batches):
// each queue's reset() forgets only its own scopes, and start times share one origin.
TEST_F(GpuTest, ProfilerTimesScopesOnSeveralQueues) {
    if (!dev().caps().timestamps) GTEST_SKIP() << "no timestamps on this device";
    gpu::Profiler profiler(dev(), 2, "two queues");
    gpu::Tensor a(dev(), {1u << 12}, gpu::DType::f32);
    const gpu::BufferRange ra[] = {a.range()};
    auto scope = [&](gpu::QueueRole role, const char* name) {
        dev().run_now(role, [&](gpu::CommandBuffer& cmd) {
            profiler.reset(cmd);
            ASSERT_TRUE(profiler.begin(cmd, name));
            cmd.fill(ra[0], 0, a.range().size);
            profiler.end(cmd);
        });
    };
    scope(gpu::QueueRole::Compute, "stale compute");
    scope(gpu::QueueRole::Graphics, "graphics");
    scope(gpu::QueueRole::Compute, "compute"); // replaces "stale compute", keeps "graphics"
    const auto records = profiler.results();
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].name, "graphics");
    EXPECT_EQ(records[0].queue, gpu::QueueRole::Graphics);
    EXPECT_EQ(records[1].name, "compute");
    EXPECT_EQ(records[1].queue, gpu::QueueRole::Compute);
    EXPECT_DOUBLE_EQ(std::min(records[0].start_us, records[1].start_us), 0.0);
}

// reset() with a number of scopes grows the pool past the constructor's size.
TEST_F(GpuTest, ProfilerGrowsWhenAFrameHasMoreScopes) {
    if (!dev().caps().timestamps) GTEST_SKIP() << "no timestamps on this device";
    gpu::Profiler profiler(dev(), 1);
    for (uint32_t scopes : {1u, 5u, 3u}) {
        dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
            profiler.reset(cmd, scopes);
            for (uint32_t i = 0; i < scopes; ++i) {
                EXPECT_TRUE(profiler.begin(cmd, "scope " + std::to_string(i)));
                profiler.end(cmd);
            }
        });
        EXPECT_EQ(profiler.results().size(), scopes);
    }
}

// A begin() that records nothing (the pool is full) still pairs with its end(): the outer scope
// stays open until its own end() and is the only one reported.
TEST_F(GpuTest, ProfilerEndMatchesARefusedBegin) {
    if (!dev().caps().timestamps) GTEST_SKIP() << "no timestamps on this device";
    gpu::Profiler profiler(dev(), 1);
    dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        profiler.reset(cmd);
        EXPECT_TRUE(profiler.begin(cmd, "outer"));
        EXPECT_FALSE(profiler.begin(cmd, "inner"));
        profiler.end(cmd); // inner's
        profiler.end(cmd); // outer's
        profiler.end(cmd); // unmatched: ignored
    });
    const auto records = profiler.results();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].name, "outer");
}

// poll() does not wait: nothing while the recorded work has not run, the times once it has.
TEST_F(GpuTest, ProfilerPollDoesNotWaitForUnsubmittedWork) {
    if (!dev().caps().timestamps) GTEST_SKIP() << "no timestamps on this device";
    gpu::Profiler profiler(dev(), 1);
    gpu::CommandBuffer cmd(dev(), gpu::QueueRole::Compute);
    cmd.begin();
    profiler.reset(cmd);
    ASSERT_TRUE(profiler.begin(cmd, "later"));
    profiler.end(cmd);
    cmd.end();
    EXPECT_FALSE(profiler.poll().has_value());
    dev().wait(gpu::QueueRole::Compute, dev().submit(gpu::QueueRole::Compute, cmd));
    const auto records = profiler.poll();
    ASSERT_TRUE(records.has_value());
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ((*records)[0].name, "later");
}

} // namespace
} // namespace vkml::test
