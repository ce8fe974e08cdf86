// Fault injection (issue 14, "Fault tests"): the N-th device memory allocation fails
// (MemoryAllocator::inject_failure, what VKML_FAULT_ALLOC=N sets), for every N a Session's and a
// TiledRunner's whole life takes: creation, runs, a second run. Each ends in the right result
// (the tiled runner retiles) or a clean OutOfDeviceMemory error, never a crash or a wrong result;
// the validation layer stays silent (nothing the GPU still uses is freed: it reports any such
// destruction), every device allocation is given back once the objects are gone, and the device
// works afterwards.
#include <gtest/gtest.h>

#include <cstdio>

#include "session_util.hpp"
#include "vkml/gpu/allocator.hpp"
#include "vkml/graph/tiled.hpp"

namespace vkml::test {
namespace {

// x [1, 3, H, W] -> Conv3x3 (3->8) Relu -> Conv3x3 (8->12) -> DepthToSpace 2 -> [1, 3, 2H, 2W]
Graph small_upscaler() {
    Graph g = new_graph("fault_upscale");
    const ValueId x = g.add_value(
        "x", DType::f32,
        graph::Shape(std::vector<graph::Dim>{graph::Dim::known(1), graph::Dim::known(3),
                                             graph::Dim::symbolic("H"), graph::Dim::symbolic("W")}));
    g.inputs().push_back(x);
    auto conv = [&](ValueId in, int64_t cin, int64_t cout, const std::string& name, uint32_t seed) {
        const float k = 1.f / std::sqrt(float(cin * 9));
        const ValueId w = g.add_constant(name + "_w", rand_tensor({cout, cin, 3, 3}, seed, -k, k));
        const ValueId b = g.add_constant(name + "_b", rand_tensor({cout}, seed + 1, -0.1f, 0.1f));
        return node(g, "Conv", {in, w, b}, name, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    };
    const ValueId v = node(g, "Relu", {conv(x, 3, 8, "c1", 10)}, "r1");
    g.outputs().push_back(
        node(g, "DepthToSpace", {conv(v, 8, 12, "c2", 20)}, "y", {{"blocksize", int64_t(2)}}));
    return g;
}

class FaultInjection : public GpuTest {
protected:
    void TearDown() override {
        dev().allocator().inject_failure(0);
        GpuTest::TearDown();
    }
    // Live device allocations once everything retired is freed.
    uint64_t live_allocations() {
        dev().wait_idle();
        return dev().allocator().stats().allocations;
    }
};

bool injected(const Error& e) {
    return e.code() == ErrorCode::OutOfDeviceMemory &&
           std::string(e.what()).find("fault injection (VKML_FAULT_ALLOC)") != std::string::npos;
}

TEST_F(FaultInjection, EveryAllocationOfASessionFailsCleanly) {
    const Graph g = small_upscaler();
    const TensorData x1 = rand_tensor({1, 3, 9, 13}, 1, 0.f, 1.f),
                     x2 = rand_tensor({1, 3, 9, 13}, 2, 0.f, 1.f);
    const SessionOptions options{.fp32 = true, .input_shapes = {{"x", {1, 3, 9, 13}}}};
    gpu::MemoryAllocator& allocator = dev().allocator();
    const uint64_t baseline = live_allocations();

    // The fault-free life: how many allocations it takes, the results to compare with, and how many
    // of those come after creation (at run time).
    std::vector<TensorData> want;
    uint64_t total = 0, at_creation = 0;
    {
        const uint64_t before = allocator.requests();
        Session s(dev(), g, options);
        at_creation = allocator.requests() - before;
        want.push_back(s.run(std::vector<TensorData>{x1})[0]);
        want.push_back(s.run(std::vector<TensorData>{x2})[0]);
        total = allocator.requests() - before;
    }
    ASSERT_GT(total, at_creation) << "runs allocate (staging), so faults hit them too";
    EXPECT_EQ(live_allocations(), baseline);

    int failed_creating = 0, failed_running = 0;
    for (uint64_t n = 1; n <= total + 1; ++n) {
        SCOPED_TRACE("allocation " + std::to_string(n) + " of " + std::to_string(total) + " fails");
        const uint64_t injected_before = allocator.injected_failures();
        allocator.inject_failure(n);
        std::vector<TensorData> got;
        bool created = false;
        try {
            Session s(dev(), g, options);
            created = true;
            got.push_back(s.run(std::vector<TensorData>{x1})[0]);
            got.push_back(s.run(std::vector<TensorData>{x2})[0]);
        } catch (const Error& e) {
            EXPECT_TRUE(injected(e)) << e.what();
            ++(created ? failed_running : failed_creating);
        }
        allocator.inject_failure(0);
        EXPECT_EQ(allocator.injected_failures() - injected_before, n <= total ? 1u : 0u);
        // Results that come are right (a run after a failed one included).
        for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(max_rel_diff(got[i], want[i]), 0.0) << "run " << i;
        if (n > total) {
            EXPECT_EQ(got.size(), 2u);
        }
        EXPECT_EQ(live_allocations(), baseline) << "device allocations leaked";
    }
    std::printf("fault injection: %llu allocations in a session's life (%llu at creation), each failed once: "
                "%d clean errors at creation, %d at run time\n",
                static_cast<unsigned long long>(total), static_cast<unsigned long long>(at_creation),
                failed_creating, failed_running);
    EXPECT_EQ(failed_creating, int(at_creation));
    EXPECT_EQ(failed_running, int(total - at_creation));

    // The device is fine afterwards.
    Session s(dev(), g, options);
    EXPECT_EQ(max_rel_diff(s.run(std::vector<TensorData>{x1})[0], want[0]), 0.0);
}

// A session that failed a run can run again: the failure leaves it whole.
TEST_F(FaultInjection, ASessionRunsAgainAfterAFailedRun) {
    const Graph g = small_upscaler();
    const TensorData x = rand_tensor({1, 3, 8, 8}, 3, 0.f, 1.f);
    Session s(dev(), g, {.fp32 = true, .input_shapes = {{"x", {1, 3, 8, 8}}}});
    const TensorData want = s.run(std::vector<TensorData>{x})[0];
    dev().allocator().inject_failure(1, true);
    try {
        (void)s.run(std::vector<TensorData>{x});
        ADD_FAILURE() << "the run allocated nothing";
    } catch (const Error& e) {
        EXPECT_TRUE(injected(e)) << e.what();
    }
    dev().allocator().inject_failure(0);
    EXPECT_EQ(max_rel_diff(s.run(std::vector<TensorData>{x})[0], want), 0.0);
}

// TiledRunner: a failure while it builds its tile session halves the tile and succeeds with the
// same result; every other failure is a clean error; with every allocation from the N-th on
// failing (sticky), it ends in an error naming the cause, or succeeds when N is past its needs.
TEST_F(FaultInjection, TiledRunnerRetilesOrFailsCleanly) {
    const Graph g = small_upscaler();
    const TensorData x = rand_tensor({1, 3, 21, 26}, 4, 0.f, 1.f);
    const TiledDesc desc{.tile = 16, .overlap = 3, .min_tile = 4, .session = {.fp32 = true}};
    gpu::MemoryAllocator& allocator = dev().allocator();
    const uint64_t baseline = live_allocations();
    TensorData want;
    uint64_t total = 0;
    {
        const uint64_t before = allocator.requests();
        TiledRunner r(dev(), g, desc);
        want = r.run(x);
        total = allocator.requests() - before;
    }
    EXPECT_EQ(live_allocations(), baseline);
    int retiled = 0, errors = 0;
    for (const bool sticky : {false, true}) {
        for (uint64_t n = 1; n <= total + 1; ++n) {
            SCOPED_TRACE("allocation " + std::to_string(n) + (sticky ? "+" : "") + " of " +
                         std::to_string(total) + " fails");
            allocator.inject_failure(n, sticky);
            try {
                TiledRunner r(dev(), g, desc);
                const TensorData got = r.run(x);
                EXPECT_LE(max_rel_diff(got, want), 1e-5);
                if (r.plan().retries > 0) ++retiled;
            } catch (const Error& e) {
                EXPECT_EQ(e.code(), ErrorCode::OutOfDeviceMemory) << e.what();
                EXPECT_NE(std::string(e.what()).find("VKML_FAULT_ALLOC"), std::string::npos) << e.what();
                ++errors;
            }
            allocator.inject_failure(0);
            EXPECT_EQ(live_allocations(), baseline) << "device allocations leaked";
        }
    }
    std::printf("fault injection: %llu allocations in a tiled run, each failed once and from there on: %d "
                "retiled with the right result, %d clean errors\n",
                static_cast<unsigned long long>(total), retiled, errors);
    EXPECT_GT(retiled, 0) << "a failure while building the tile session retiles";
    EXPECT_GT(errors, 0);
}

TEST(FaultInjectionEnv, AMistypedSwitchIsAnError) {
    for (const char* bad : {"0", "x", "3x", "+", "-1", "99999999999999999999"}) {
        ::setenv("VKML_FAULT_ALLOC", bad, 1);
        try {
            auto d = gpu::Device::create(device_desc());
            ADD_FAILURE() << "VKML_FAULT_ALLOC=" << bad << " was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("VKML_FAULT_ALLOC='" + std::string(bad) + "'"),
                      std::string::npos)
                << e.what();
        }
    }
    ::setenv("VKML_FAULT_ALLOC", "2", 1);
    auto d = gpu::Device::create(device_desc());
    ::unsetenv("VKML_FAULT_ALLOC");
    gpu::Tensor a(*d, {4}, gpu::DType::f32);
    EXPECT_THROW(gpu::Tensor(*d, {4}, gpu::DType::f32), Error);
    gpu::Tensor c(*d, {4}, gpu::DType::f32);
    EXPECT_EQ(d->allocator().injected_failures(), 1u);
}

} // namespace
} // namespace vkml::test
