// Reduce* and the global pools against the double-precision references in ref/reduce_ref.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "op_test.hpp"
#include "ref/reduce_ref.hpp"
#include "vkml/ops/reduce.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using ops::ReduceKind;
using ops::ReducePath;
namespace ref = ref_reduce;

class ReduceTest : public GpuTest {};

constexpr ReduceKind all_kinds[] = {ReduceKind::Sum, ReduceKind::Mean,      ReduceKind::Max,
                                    ReduceKind::Min, ReduceKind::Prod,      ReduceKind::L1,
                                    ReduceKind::L2,  ReduceKind::LogSumExp, ReduceKind::SumSquare,
                                    ReduceKind::LogSum};

// Products of thousands of factors stay well inside f16's range when |x| is near 1.
HostTensor input_for(ReduceKind kind, const Shape& shape, DType dtype, uint32_t seed) {
    if (kind == ReduceKind::Prod) return random_tensor(shape, dtype, seed, -1.1, 1.1, 0.9);
    if (kind == ReduceKind::LogSum) return random_tensor(shape, dtype, seed, 0.1, 2.0); // a positive sum
    return random_tensor(shape, dtype, seed);
}

// Relative L2 error of the whole output. Max/Min return one of their inputs: exact. f32: fp32
// sums of up to ~3000 terms (rounding grows like sqrt(n)·2^-24 for random signs) stay below 1e-5;
// Prod compounds the rounding of every factor, 3e-5. f16: the output's own rounding (2^-11
// relative at worst) dominates, 1e-3.
double tolerance_for(ReduceKind kind, DType dtype) {
    if (kind == ReduceKind::Max || kind == ReduceKind::Min) return 0.0;
    return tolerance(dtype, kind == ReduceKind::Prod ? 3e-5 : 1e-5, 1e-3);
}

struct Case {
    Shape shape;
    std::vector<int64_t> axes;
    int64_t keepdims = 1;
    int64_t noop = 0;
};

std::string describe(ReduceKind kind, DType dtype, const Case& c, ReducePath path) {
    std::string axes;
    for (int64_t a : c.axes) axes += std::to_string(a) + " ";
    return std::string(ops::reduce_op_name(kind)) + " " + gpu::dtype_name(dtype) + c.shape.str() + " axes {" +
           axes + "} keepdims " + std::to_string(c.keepdims) + " noop " + std::to_string(c.noop) + " " +
           ops::reduce_path_name(path);
}

void check(gpu::Device& dev, ReduceKind kind, DType dtype, const Case& c, ReducePath path, uint32_t seed,
           const HostTensor* given = nullptr) {
    const HostTensor x = given ? *given : input_for(kind, c.shape, dtype, seed);
    auto op = ops::Reduce::create(dev, {.kind = kind,
                                        .input = {c.shape, dtype},
                                        .axes = c.axes,
                                        .keepdims = c.keepdims,
                                        .noop_with_empty_axes = c.noop,
                                        .path = path});
    const std::string what = describe(kind, dtype, c, path);
    if (path != ReducePath::Auto) {
        EXPECT_EQ(op->path(), path) << what;
    }
    const auto got = run_op(dev, *op, {x}, 2);
    expect_close(got[0], ref::reduce(kind, x, c.axes, c.keepdims, c.noop), tolerance_for(kind, dtype), what);
}

// Small reduced extents, every axes form, both kernels.
TEST_F(ReduceTest, AxesAndKeepdimsEveryKind) {
    const std::vector<Case> cases = {
        {{3, 5, 7}, {1}, 1},
        {{2, 3, 5, 7}, {0, 2}, 0},          // non-adjacent
        {{4, 6, 5}, {-1, -3}, 1},           // negative, unordered
        {{3, 4, 5}, {}, 0},                 // empty: every axis, scalar output
        {{3, 4, 5}, {}, 1},                 // every axis, [1, 1, 1]
        {{2, 3, 5}, {}, 1, 1},              // noop_with_empty_axes
        {{2, 3, 2, 3, 2, 3}, {1, 3, 5}, 0}, // three kept and three reduced groups
        {{3, 2, 3, 2, 3, 2}, {0, 2, 4}, 1}, // ... starting with a reduced one
        {{5, 1, 7}, {1}, 0},                // a size-1 axis
        {{6, 13, 5, 11}, {0, -2}, 1},
    };
    uint32_t seed = 1;
    for (ReduceKind kind : all_kinds)
        for (DType dtype : float_dtypes(dev()))
            for (const Case& c : cases)
                for (ReducePath path : {ReducePath::PerOutput, ReducePath::Workgroup})
                    check(dev(), kind, dtype, c, path, seed++);
}

// Large reduced extents, contiguous and strided, on both kernels, and which kernel Auto picks.
TEST_F(ReduceTest, LargeExtentsBothPaths) {
    struct Big {
        Case c;
        ReducePath automatic;
    };
    const std::vector<Big> cases = {
        {{{3, 1031}, {1}, 1}, ReducePath::Workgroup},         // contiguous
        {{{263, 2, 3}, {0}, 0}, ReducePath::Workgroup},       // strided, few outputs
        {{{2, 67, 3, 41}, {1, 3}, 1}, ReducePath::Workgroup}, // two reduced groups, 2747 elements
        {{{7, 11}, {0, 1}, 0}, ReducePath::PerOutput},        // 77 < 128
    };
    uint32_t seed = 100;
    for (ReduceKind kind : all_kinds) {
        for (DType dtype : float_dtypes(dev())) {
            for (const Big& b : cases) {
                const HostTensor x = input_for(kind, b.c.shape, dtype, seed++);
                auto op =
                    ops::Reduce::create(dev(), {.kind = kind, .input = {b.c.shape, dtype}, .axes = b.c.axes});
                EXPECT_EQ(op->path(), b.automatic) << describe(kind, dtype, b.c, ReducePath::Auto);
                for (ReducePath path : {ReducePath::PerOutput, ReducePath::Workgroup})
                    check(dev(), kind, dtype, b.c, path, 0, &x);
            }
        }
    }
}

// Many outputs with a strided reduced axis: neighbouring invocations read neighbouring words, so
// Auto keeps one invocation per output even for a long axis.
TEST_F(ReduceTest, AutoPrefersPerOutputForStridedAxisWithManyOutputs) {
    auto op = ops::Reduce::create(dev(),
                                  {.kind = ReduceKind::Sum, .input = {{300, 4099}, DType::f32}, .axes = {0}});
    EXPECT_EQ(op->path(), ReducePath::PerOutput);
    auto contiguous = ops::Reduce::create(
        dev(), {.kind = ReduceKind::Sum, .input = {{4099, 300}, DType::f32}, .axes = {1}});
    EXPECT_EQ(contiguous->path(), ReducePath::Workgroup);
}

// More outputs than one grid row of workgroups holds (maxComputeWorkGroupCount[0], 65535 on
// most devices): the grid folds into y and the kernel must unfold it. ArgMax, Softmax and TopK's
// sort use the same pair (groups_per_item, reduce_group_id); one op keeps lavapipe's time short.
TEST_F(ReduceTest, WorkgroupGridFoldsIntoY) {
    // max_x + 3 rows of 2 elements: cheap for lavapipe's 65535, but 2^32 elements (past the 32-bit
    // indices, and a 34 GB host tensor of doubles) on devices with a 2^31 - 1 row. Decide first.
    const uint32_t max_x = dev().caps().max_workgroup_count[0];
    if (max_x > (1u << 20)) GTEST_SKIP() << "grid limit " << max_x << " too large to exceed cheaply";
    const int64_t rows = int64_t(max_x) + 3;
    const Case c{{rows, 2}, {1}, 0};
    check(dev(), ReduceKind::Sum, DType::f32, c, ReducePath::Workgroup, 11);
}

// Inputs near 100: exp() of them overflows f32, so only a max-subtracting LogSumExp gets them right.
TEST_F(ReduceTest, LogSumExpOfLargeValues) {
    for (DType dtype : float_dtypes(dev())) {
        for (ReducePath path : {ReducePath::PerOutput, ReducePath::Workgroup}) {
            const Case c{{3, 517}, {1}, 0};
            const HostTensor x = random_tensor(c.shape, dtype, 7, 90.0, 110.0);
            check(dev(), ReduceKind::LogSumExp, dtype, c, path, 0, &x);
            const HostTensor neg = random_tensor(c.shape, dtype, 8, -110.0, -90.0);
            check(dev(), ReduceKind::LogSumExp, dtype, c, path, 0, &neg);
        }
    }
}

TEST_F(ReduceTest, DescriptorErrors) {
    const TensorDesc x{{3, 4, 5}, DType::f32};
    expect_error([&] { ops::Reduce::create(dev(), {.kind = ReduceKind::Sum, .input = x, .axes = {3}}); },
                 {"ReduceSum", "axes", "out of range"});
    expect_error([&] { ops::Reduce::create(dev(), {.kind = ReduceKind::Mean, .input = x, .axes = {-4}}); },
                 {"ReduceMean", "axes", "out of range"});
    expect_error(
        [&] {
            ops::Reduce::create(dev(), {.kind = ReduceKind::L2, .input = x, .axes = {1, -2}});
        },
        {"ReduceL2", "axes", "twice"});
    expect_error([&] { ops::Reduce::create(dev(), {.kind = ReduceKind::Max, .input = x, .keepdims = 2}); },
                 {"ReduceMax", "keepdims"});
    expect_error(
        [&] {
            ops::Reduce::create(dev(), {.kind = ReduceKind::Min, .input = x, .noop_with_empty_axes = -1});
        },
        {"ReduceMin", "noop_with_empty_axes"});
    expect_error(
        [&] {
            ops::Reduce::create(dev(), {.kind = ReduceKind::Prod, .input = {{3, 4}, DType::i32}});
        },
        {"ReduceProd", "input", "f32 or f16"});
    expect_error(
        [&] {
            ops::Reduce::create(dev(), {.kind = ReduceKind::L1, .input = {{3, 0, 2}, DType::f32}});
        },
        {"ReduceL1", "input", "empty"});
}

// ---- global pools ----

std::string global_name(ops::GlobalPoolKind kind, int64_t p) {
    switch (kind) {
    case ops::GlobalPoolKind::Average:
        return "GlobalAveragePool";
    case ops::GlobalPoolKind::Max:
        return "GlobalMaxPool";
    case ops::GlobalPoolKind::Lp:
        return "GlobalLpPool p=" + std::to_string(p);
    }
    return "?";
}

TEST_F(ReduceTest, GlobalPools) {
    struct Kind {
        ops::GlobalPoolKind kind;
        int64_t p;
    };
    const Kind kinds[] = {{ops::GlobalPoolKind::Average, 2},
                          {ops::GlobalPoolKind::Max, 2},
                          {ops::GlobalPoolKind::Lp, 1},
                          {ops::GlobalPoolKind::Lp, 2},
                          {ops::GlobalPoolKind::Lp, 3}};
    const Shape shapes[] = {{2, 3, 7, 9}, {1, 5, 37, 41}, {2, 3, 17}, {1, 2, 3, 4, 5}};
    uint32_t seed = 300;
    for (const Kind& k : kinds) {
        for (DType dtype : float_dtypes(dev())) {
            for (const Shape& shape : shapes) {
                const HostTensor x = random_tensor(shape, dtype, seed++);
                const HostTensor want = ref::global_pool(k.kind, x, k.p);
                for (ReducePath path : {ReducePath::Auto, ReducePath::PerOutput, ReducePath::Workgroup}) {
                    auto op = ops::GlobalPool::create(
                        dev(), {.kind = k.kind, .input = {shape, dtype}, .p = k.p, .path = path});
                    const std::string what = global_name(k.kind, k.p) + " " + gpu::dtype_name(dtype) +
                                             shape.str() + " " + ops::reduce_path_name(op->path());
                    if (path == ReducePath::Auto) {
                        const int64_t reduced = shape.elements() / (shape[0] * shape[1]);
                        EXPECT_EQ(op->path(), reduced >= 128 ? ReducePath::Workgroup : ReducePath::PerOutput)
                            << what;
                    }
                    // Max selects an input; the others as Reduce*: f32 1e-5, f16 output rounding 1e-3.
                    const double tol =
                        k.kind == ops::GlobalPoolKind::Max ? 0.0 : tolerance(dtype, 1e-5, 1e-3);
                    expect_close(run_op(dev(), *op, {x}, 2)[0], want, tol, what);
                }
            }
        }
    }
}

TEST_F(ReduceTest, GlobalPoolDescriptorErrors) {
    expect_error(
        [&] {
            ops::GlobalPool::create(dev(),
                                    {.kind = ops::GlobalPoolKind::Average, .input = {{3, 4}, DType::f32}});
        },
        {"GlobalAveragePool", "input", "rank 3 to 6"});
    expect_error(
        [&] {
            ops::GlobalPool::create(
                dev(), {.kind = ops::GlobalPoolKind::Lp, .input = {{1, 2, 3, 3}, DType::f32}, .p = 0});
        },
        {"GlobalLpPool", "p", "at least 1"});
    expect_error(
        [&] {
            ops::GlobalPool::create(dev(),
                                    {.kind = ops::GlobalPoolKind::Max, .input = {{1, 2, 3, 3}, DType::i32}});
        },
        {"GlobalMaxPool", "input", "f32 or f16"});
}

} // namespace
} // namespace vkml::test
