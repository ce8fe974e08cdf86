// Compute dispatches checked element by element against a double-precision CPU reference, in f32
// and f16 storage, at odd sizes, through push descriptors and through pooled descriptor sets.
#include <cmath>

#include "gpu_test.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::QueueRole;
using gpu::ShaderId;

struct AxpyPush {
    uint32_t n;
    float a;
};

// Runs y = a*x + y `times` times (with the barrier between dispatches) and checks every element.
void check_axpy(gpu::Device& device, DType dtype, uint32_t n, float a, int times, bool specialize) {
    const auto x = random_floats(n, 11 + n), y = random_floats(n, 12 + n);
    gpu::Tensor tx(device, {n}, dtype, "x"), ty(device, {n}, dtype, "y");
    gpu::upload(device, tx, x);
    gpu::upload(device, ty, y);
    gpu::ComputePipelineDesc pd{.shader = dtype == DType::f16 ? ShaderId::axpy_f16 : ShaderId::axpy_f32,
                                .bindings = 2,
                                .push_constant_bytes = sizeof(AxpyPush),
                                .workgroup = {64, 1, 1}};
    if (specialize) pd.specialization = {n}; // shape known at creation: the push constant is ignored
    const gpu::Pipeline& p = device.pipeline(pd);
    device.run_now(QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        const gpu::BufferRange bufs[] = {tx.range(), ty.range()};
        for (int t = 0; t < times; ++t) {
            if (t) gpu::barrier::compute_to_compute(cmd);
            cmd.dispatch(p, bufs, AxpyPush{specialize ? 0u : n, a}, cmd.groups_for(p, n));
        }
    });
    const auto out = gpu::download_floats(device, ty);
    for (uint32_t i = 0; i < n; ++i) {
        double want = stored(y[i], dtype);
        for (int t = 0; t < times; ++t) want = stored(float(double(a) * stored(x[i], dtype) + want), dtype);
        const double tol = dtype == DType::f16 ? std::ldexp(std::fabs(want), -10) * times + 1e-3 : 1e-5;
        ASSERT_NEAR(out[i], want, tol) << gpu::dtype_name(dtype) << " n=" << n << " element " << i;
    }
}

class Axpy : public GpuTest, public ::testing::WithParamInterface<std::tuple<DType, uint32_t>> {};

TEST_P(Axpy, MatchesCpuReference) {
    const auto [dtype, n] = GetParam();
    if (dtype == DType::f16 && !dev().caps().storage16) GTEST_SKIP() << "no 16-bit storage";
    check_axpy(dev(), dtype, n, 0.625f, 1, false);
}

TEST_P(Axpy, SpecializedShapeMatchesPushConstantShape) {
    const auto [dtype, n] = GetParam();
    if (dtype == DType::f16 && !dev().caps().storage16) GTEST_SKIP() << "no 16-bit storage";
    check_axpy(dev(), dtype, n, -1.25f, 1, true);
}

TEST_P(Axpy, ChainedDispatchesWithBarriers) {
    const auto [dtype, n] = GetParam();
    if (dtype == DType::f16 && !dev().caps().storage16) GTEST_SKIP() << "no 16-bit storage";
    check_axpy(dev(), dtype, n, 0.5f, 3, false);
}

INSTANTIATE_TEST_SUITE_P(OddSizes, Axpy,
                         ::testing::Combine(::testing::Values(DType::f32, DType::f16),
                                            ::testing::Values(1u, 63u, 65u, 1000u, 65537u)));

TEST_F(GpuTest, PooledDescriptorSetsWorkWithoutPushDescriptors) {
    auto desc = device_desc();
    desc.use_push_descriptors = false;
    auto device = gpu::Device::create(desc);
    EXPECT_FALSE(device->caps().push_descriptors);
    // Enough dispatches in one command buffer to spill into a second descriptor pool (256 sets each).
    check_axpy(*device, DType::f32, 777, 0.25f, 300, false);
}

TEST_F(GpuTest, FillAndCopyMatch) {
    for (DType dtype : {DType::f32, DType::f16}) {
        if (dtype == DType::f16 && !dev().caps().storage16) continue;
        const bool f16 = dtype == DType::f16;
        const uint32_t n = 4 * 333; // copy moves vec4s
        gpu::Tensor a(dev(), {n}, dtype), b(dev(), {n}, dtype);
        const gpu::Pipeline& fill = dev().pipeline({.shader = f16 ? ShaderId::fill_f16 : ShaderId::fill_f32,
                                                    .bindings = 1,
                                                    .push_constant_bytes = 8});
        const gpu::Pipeline& copy = dev().pipeline({.shader = f16 ? ShaderId::copy_f16 : ShaderId::copy_f32,
                                                    .bindings = 2,
                                                    .push_constant_bytes = 4});
        const auto src = random_floats(n, 5);
        struct {
            uint32_t n;
            float v;
        } fp{n - 5, 3.375f}; // leaves the last five alone
        // b <- a, then the fill overwrites all but the last five elements of b.
        gpu::upload(dev(), a, src);
        dev().run_now(QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
            const gpu::BufferRange ab[] = {a.range(), b.range()};
            cmd.dispatch(copy, ab, uint32_t(n / 4), cmd.groups_for(copy, n / 4));
            gpu::barrier::compute_to_compute(cmd);
            const gpu::BufferRange bb[] = {b.range()};
            cmd.dispatch(fill, bb, fp, cmd.groups_for(fill, fp.n));
        });
        const auto out = gpu::download_floats(dev(), b);
        for (uint32_t i = 0; i < n; ++i) {
            const float want = i < fp.n ? 3.375f : stored(src[i], dtype);
            ASSERT_EQ(out[i], want) << gpu::dtype_name(dtype) << " element " << i;
        }
    }
}

TEST_F(GpuTest, LargeGridsFoldIntoTwoDimensions) {
    // Workgroups of two invocations: more groups than maxComputeWorkGroupCount[0] on most devices,
    // and a workgroup size above 1 so the shader's folded index must use the real size.
    const uint32_t max_x = dev().caps().max_workgroup_count[0];
    if (max_x > (1u << 20)) GTEST_SKIP() << "grid limit too large to exceed cheaply";
    const uint32_t n = 2 * max_x + 1001;
    gpu::Tensor t(dev(), {n}, DType::f32);
    const gpu::Pipeline& fill = dev().pipeline({.shader = ShaderId::fill_f32, .bindings = 1, .push_constant_bytes = 8,
                                                .workgroup = {2, 1, 1}});
    gpu::CommandBuffer probe(dev(), QueueRole::Compute);
    const auto groups = probe.groups_for(fill, n);
    EXPECT_EQ(groups[0], max_x);
    EXPECT_EQ(groups[1], 2u);
    struct {
        uint32_t n;
        float v;
    } fp{n, 7.f};
    gpu::upload(dev(), t, std::vector<float>(n, 0.f));
    dev().run_now(QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        const gpu::BufferRange r[] = {t.range()};
        cmd.dispatch(fill, r, fp, groups);
    });
    const auto out = gpu::download_floats(dev(), t);
    EXPECT_EQ(std::count(out.begin(), out.end(), 7.f), std::ptrdiff_t(n)) << "every element written exactly";
}

TEST_F(GpuTest, DispatchRejectsWrongBindingsAndPushConstants) {
    const gpu::Pipeline& p =
        dev().pipeline({.shader = ShaderId::axpy_f32, .bindings = 2, .push_constant_bytes = 8});
    gpu::Tensor t(dev(), {16}, DType::f32);
    gpu::CommandBuffer cmd(dev(), QueueRole::Compute);
    cmd.begin();
    const gpu::BufferRange one[] = {t.range()};
    EXPECT_THROW(cmd.dispatch(p, one, AxpyPush{16, 1.f}, {1, 1, 1}), Error);
    const gpu::BufferRange two[] = {t.range(), t.range()};
    EXPECT_THROW(cmd.dispatch(p, two, uint32_t(16), {1, 1, 1}), Error);
    cmd.end();
}

TEST_F(GpuTest, UnsupportedWorkgroupIsRefusedAtCreation) {
    EXPECT_THROW(dev().pipeline({.shader = ShaderId::fill_f32,
                                 .bindings = 1,
                                 .push_constant_bytes = 8,
                                 .workgroup = {4096, 4096, 1}}),
                 Error);
}

} // namespace
} // namespace vkml::test
