#include "gpu_test.hpp"

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

} // namespace
} // namespace vkml::test
