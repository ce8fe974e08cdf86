// Softmax / LogSoftmax (opset 13, along one axis) against ref_reduce::softmax.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "op_test.hpp"
#include "ref/reduce_ref.hpp"
#include "vkml/ops/reduce.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using ops::ReducePath;
using ops::SoftmaxKind;
namespace ref = ref_reduce;

class ReduceSoftmaxTest : public GpuTest {};

struct Case {
    Shape shape;
    int64_t axis;
};

// Relative L2 error of the whole output. f32: exp/log in fp32 plus a sum of up to ~1000 terms,
// 1e-5 (Softmax) and 1e-6 (LogSoftmax, whose outputs are dominated by x - max, exact in fp32 for
// these inputs up to one rounding). f16: the output's own rounding (2^-11 relative), 1e-3.
double softmax_tolerance(SoftmaxKind kind, DType dtype) {
    return tolerance(dtype, kind == SoftmaxKind::Softmax ? 1e-5 : 1e-6, 1e-3);
}

void check(gpu::Device& dev, SoftmaxKind kind, const HostTensor& x, const Case& c, ReducePath path) {
    auto op = ops::Softmax::create(dev, {.kind = kind, .input = x.desc, .axis = c.axis, .path = path});
    const std::string what = std::string(kind == SoftmaxKind::Softmax ? "Softmax " : "LogSoftmax ") +
                             gpu::dtype_name(x.desc.dtype) + x.shape().str() + " axis " +
                             std::to_string(c.axis) + " " + ops::reduce_path_name(op->path());
    if (path != ReducePath::Auto) {
        EXPECT_EQ(op->path(), path) << what;
    }
    expect_close(run_op(dev, *op, {x}, 2)[0], ref::softmax(x, c.axis, kind == SoftmaxKind::LogSoftmax),
                 softmax_tolerance(kind, x.desc.dtype), what);
}

TEST_F(ReduceSoftmaxTest, AxesAndPaths) {
    const std::vector<Case> cases = {
        {{3, 7, 5}, 1}, {{3, 7, 5}, -1}, {{3, 7, 5}, 0}, {{2, 3, 4, 5}, -3},
        {{29}, 0},      {{3, 1031}, 1}, // long contiguous rows: Auto takes the workgroup kernel
        {{263, 3}, 0},                  // long strided rows, few of them: workgroup too
    };
    uint32_t seed = 1;
    for (SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax})
        for (DType dtype : float_dtypes(dev()))
            for (const Case& c : cases) {
                const HostTensor x = random_tensor(c.shape, dtype, seed++, -4.0, 4.0);
                for (ReducePath path : {ReducePath::PerOutput, ReducePath::Workgroup})
                    check(dev(), kind, x, c, path);
            }
    auto big = ops::Softmax::create(dev(), {.input = {{3, 1031}, DType::f32}});
    EXPECT_EQ(big->path(), ReducePath::Rows); // contiguous rows
    auto strided = ops::Softmax::create(dev(), {.input = {{263, 3}, DType::f32}, .axis = 0});
    EXPECT_EQ(strided->path(), ReducePath::Workgroup);
    auto small = ops::Softmax::create(dev(), {.input = {{3, 7, 5}, DType::f32}, .axis = 1});
    EXPECT_EQ(small->path(), ReducePath::PerOutput);
}

// The rows kernel (contiguous rows, shaders/reduce/softmax_rows.comp): 16-byte units where rows
// are whole units (f32: 4 floats; f16: 8 halves), 8-byte f16 units for rows of whole 4-vectors,
// scalar loads otherwise; one to 1024 invocations per row, several rows per workgroup with a
// partial last workgroup, rows held in registers up to 1024 x 32 elements and looped over beyond
// that. Auto takes it for every innermost-axis Softmax.
TEST_F(ReduceSoftmaxTest, RowsKernel) {
    const std::vector<Case> cases = {
        {{5, 8}, -1},     // two vectors a row (f16: one 16-byte unit), one invocation a row
        {{300, 12}, 1},   // 300 rows of one invocation: 3 workgroups, the last partial; f16 8-byte units
        {{129, 64}, -1},  // 2 invocations a row
        {{7, 37}, -1},    // odd rows: scalar loads, 8 invocations x 5 elements
        {{3, 1000}, -1},  // 32 invocations x 8 vectors (f16: x 4 units of 8)
        {{3, 1004}, -1},  // f16: rows of 4-vectors but not of 8 (8-byte units)
        {{2, 3, 40}, 2},  // rank 3
        {{9, 1}, -1},     // rows of one element
        {{2, 1031}, -1},  // odd and long: 256 invocations x 5 elements
        {{1, 4099}, -1},  // one odd row: 1024 invocations, the last ones partly idle
        {{2, 32768}, -1}, // 1024 x 32 elements: the longest row held in registers, one workgroup a row
        {{2, 32776}, -1}, // one unit more: looped over
        {{1, 40001}, 1},  // odd, looped over
    };
    uint32_t seed = 300;
    for (SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax})
        for (DType dtype : float_dtypes(dev()))
            for (const Case& c : cases) {
                const HostTensor x = random_tensor(c.shape, dtype, seed++, -4.0, 4.0);
                check(dev(), kind, x, c, ReducePath::Rows);
                auto op = ops::Softmax::create(dev(), {.kind = kind, .input = x.desc, .axis = c.axis});
                EXPECT_EQ(op->path(), ReducePath::Rows) << c.shape.str();
                // Rows longer than 1024 elements take 128 invocations or more, a workgroup each:
                // subgroup arithmetic merges their states where the device has it; shorter rows
                // share workgroups and merge in shared memory.
                EXPECT_EQ(op->rows_subgroup(),
                          c.shape.dims().back() > 1024 && dev().caps().subgroup_arithmetic)
                    << c.shape.str();
            }
    // Not the innermost axis: the other kernels, and Rows is refused.
    auto strided = ops::Softmax::create(dev(), {.input = {{4, 300, 2}, DType::f32}, .axis = 1});
    EXPECT_NE(strided->path(), ReducePath::Rows);
    const HostTensor x = random_tensor({4, 300, 2}, DType::f32, 77, -4.0, 4.0);
    check(dev(), SoftmaxKind::Softmax, x, {{4, 300, 2}, 1}, ReducePath::Auto);
    expect_error([&] { ops::Softmax::create(dev(), {.input = x.desc, .axis = 1, .path = ReducePath::Rows}); },
                 {"Softmax", "path", "innermost"});
    expect_error(
        [&] {
            ops::Softmax::create(
                dev(),
                {.kind = SoftmaxKind::Hardmax, .input = {{2, 8}, DType::f32}, .path = ReducePath::Rows});
        },
        {"Hardmax", "path"});
}

// Inputs far from zero: exp() overflows (or underflows to 0 for every element) unless the row's
// maximum is subtracted first.
TEST_F(ReduceSoftmaxTest, LargeMagnitudesAreStable) {
    for (SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax})
        for (DType dtype : float_dtypes(dev()))
            for (double centre : {200.0, -200.0}) {
                const Case c{{4, 300}, -1};
                const HostTensor x = random_tensor(c.shape, dtype, 9, centre - 8, centre + 8);
                for (ReducePath path : {ReducePath::PerOutput, ReducePath::Workgroup, ReducePath::Rows})
                    check(dev(), kind, x, c, path);
                // A long row: one workgroup, its states merged across subgroups.
                const Case longer{{2, 5003}, -1};
                check(dev(), kind, random_tensor(longer.shape, dtype, 10, centre - 8, centre + 8), longer,
                      ReducePath::Rows);
            }
}

// Hardmax: exact; values from a small set, so rows have ties (the first maximum wins).
TEST_F(ReduceSoftmaxTest, HardmaxFirstMaximum) {
    uint32_t seed = 40;
    for (DType dtype : float_dtypes(dev()))
        for (const Case& c :
             std::vector<Case>{{{3, 7, 5}, 1}, {{3, 7, 5}, -1}, {{29}, 0}, {{2, 3, 4, 5}, 0}}) {
            HostTensor x = random_ints(c.shape, DType::i32, seed++, -4, 4);
            x.desc.dtype = dtype;
            const auto op =
                ops::Softmax::create(dev(), {.kind = SoftmaxKind::Hardmax, .input = x.desc, .axis = c.axis});
            EXPECT_STREQ(op->type(), "Hardmax");
            expect_equal(run_op(dev(), *op, {x}, 2)[0], ref::hardmax(x, c.axis),
                         std::string("Hardmax ") + gpu::dtype_name(dtype) + c.shape.str() + " axis " +
                             std::to_string(c.axis));
        }
}

// CumSum: f32 1e-6 (fp32 running sums of up to 13 terms), f16 the output's rounding, 1e-3; i32
// exact.
TEST_F(ReduceSoftmaxTest, CumSumAxesExclusiveReverse) {
    uint32_t seed = 60;
    std::vector<DType> dtypes = float_dtypes(dev());
    dtypes.push_back(DType::i32);
    for (DType dtype : dtypes)
        for (const Case& c :
             std::vector<Case>{{{3, 13, 5}, 1}, {{3, 7, 5}, -1}, {{29}, 0}, {{2, 3, 4, 5}, 0}})
            for (bool exclusive : {false, true})
                for (bool reverse : {false, true}) {
                    const HostTensor x = dtype == DType::i32
                                             ? random_ints(c.shape, dtype, seed++, -1000, 1000)
                                             : random_tensor(c.shape, dtype, seed++);
                    const auto op = ops::CumSum::create(
                        dev(), {.input = x.desc, .axis = c.axis, .exclusive = exclusive, .reverse = reverse});
                    const std::string what = std::string("CumSum ") + gpu::dtype_name(dtype) + c.shape.str() +
                                             " axis " + std::to_string(c.axis) +
                                             (exclusive ? " exclusive" : "") + (reverse ? " reverse" : "");
                    const HostTensor want = ref::cumsum(x, c.axis, exclusive, reverse);
                    if (dtype == DType::i32)
                        expect_equal(run_op(dev(), *op, {x}, 2)[0], want, what);
                    else
                        expect_close(run_op(dev(), *op, {x}, 2)[0], want, tolerance(dtype, 1e-6, 1e-3), what);
                }
}

TEST_F(ReduceSoftmaxTest, DescriptorErrors) {
    expect_error(
        [&] {
            ops::Softmax::create(dev(), {.input = {{3, 4}, DType::f32}, .axis = 2});
        },
        {"Softmax", "axis", "out of range"});
    expect_error(
        [&] {
            ops::Softmax::create(
                dev(), {.kind = SoftmaxKind::LogSoftmax, .input = {{3, 4}, DType::f32}, .axis = -3});
        },
        {"LogSoftmax", "axis", "out of range"});
    expect_error(
        [&] {
            ops::Softmax::create(dev(), {.input = {{3, 4}, DType::i32}});
        },
        {"Softmax", "input", "f32 or f16"});
}

} // namespace
} // namespace vkml::test
