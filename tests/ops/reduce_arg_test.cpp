// ArgMax / ArgMin and TopK against the references in ref/reduce_ref.cpp. Inputs have no exact
// ties within a row (ref_reduce::distinct_rows) except in the tests about ties.
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
using ops::ArgReduceKind;
using ops::ReducePath;
using ops::TopKPath;
namespace ref = ref_reduce;

class ReduceArgTest : public GpuTest {};

struct ArgCase {
    Shape shape;
    int64_t axis;
    int64_t keepdims;
};

std::string arg_what(ArgReduceKind kind, DType dtype, const ArgCase& c, int64_t last, DType out,
                     ReducePath path) {
    return std::string(kind == ArgReduceKind::ArgMax ? "ArgMax " : "ArgMin ") + gpu::dtype_name(dtype) +
           c.shape.str() + " axis " + std::to_string(c.axis) + " keepdims " + std::to_string(c.keepdims) +
           " select_last " + std::to_string(last) + " -> " + gpu::dtype_name(out) + " " +
           ops::reduce_path_name(path);
}

// Indices are exact: compared with expect_equal.
void check_arg(gpu::Device& dev, ArgReduceKind kind, const HostTensor& x, const ArgCase& c, int64_t last,
               DType out, ReducePath path) {
    auto op = ops::ArgReduce::create(dev, {.kind = kind,
                                           .input = x.desc,
                                           .axis = c.axis,
                                           .keepdims = c.keepdims,
                                           .select_last_index = last,
                                           .output_dtype = out,
                                           .path = path});
    const std::string what = arg_what(kind, x.desc.dtype, c, last, out, op->path());
    if (path != ReducePath::Auto) {
        EXPECT_EQ(op->path(), path) << what;
    }
    expect_equal(run_op(dev, *op, {x}, 2)[0],
                 ref::arg_reduce(kind == ArgReduceKind::ArgMin, x, c.axis, c.keepdims, last, out), what);
}

TEST_F(ReduceArgTest, ArgMaxArgMin) {
    const std::vector<ArgCase> cases = {
        {{5, 7, 3}, 1, 1}, {{5, 7, 3}, -1, 0}, {{11, 6}, 0, 1}, {{2, 3, 13}, -3, 0},
        {{17}, 0, 0},      {{3, 1031}, 1, 0}, // long contiguous rows: Auto takes the workgroup kernel
        {{263, 4}, 0, 1},                     // long strided rows, few outputs: workgroup too
    };
    uint32_t seed = 1;
    for (ArgReduceKind kind : {ArgReduceKind::ArgMax, ArgReduceKind::ArgMin})
        for (DType dtype : float_dtypes(dev()))
            for (const ArgCase& c : cases) {
                const HostTensor x = ref::distinct_rows(c.shape, c.axis, dtype, seed++);
                for (ReducePath path : {ReducePath::Auto, ReducePath::PerOutput, ReducePath::Workgroup})
                    check_arg(dev(), kind, x, c, 0, DType::i64, path);
                check_arg(dev(), kind, x, c, 1, DType::i32, ReducePath::Auto);
            }
    auto big = ops::ArgReduce::create(dev(), {.input = {{3, 1031}, DType::f32}, .axis = 1});
    EXPECT_EQ(big->path(), ReducePath::Workgroup);
    auto small = ops::ArgReduce::create(dev(), {.input = {{5, 7, 3}, DType::f32}, .axis = 1});
    EXPECT_EQ(small->path(), ReducePath::PerOutput);
}

// Integer-valued inputs from a small range tie often: select_last_index picks the first or last.
TEST_F(ReduceArgTest, ArgTies) {
    const std::vector<ArgCase> cases = {{{6, 9, 4}, 1, 1}, {{4, 300}, -1, 0}};
    uint32_t seed = 50;
    for (ArgReduceKind kind : {ArgReduceKind::ArgMax, ArgReduceKind::ArgMin})
        for (DType dtype : float_dtypes(dev()))
            for (const ArgCase& c : cases) {
                HostTensor x = random_ints(c.shape, dtype, seed++, -3, 3);
                for (double& v : x.data) v = v == 0 ? 4 : v; // never zero
                for (int64_t last : {0, 1})
                    for (ReducePath path : {ReducePath::PerOutput, ReducePath::Workgroup})
                        check_arg(dev(), kind, x, c, last, DType::i64, path);
            }
}

TEST_F(ReduceArgTest, ArgDescriptorErrors) {
    const TensorDesc x{{3, 4, 5}, DType::f32};
    expect_error([&] { ops::ArgReduce::create(dev(), {.input = x, .axis = 3}); },
                 {"ArgMax", "axis", "out of range"});
    expect_error(
        [&] { ops::ArgReduce::create(dev(), {.kind = ArgReduceKind::ArgMin, .input = x, .axis = -4}); },
        {"ArgMin", "axis", "out of range"});
    expect_error([&] { ops::ArgReduce::create(dev(), {.input = x, .keepdims = 3}); }, {"ArgMax", "keepdims"});
    expect_error([&] { ops::ArgReduce::create(dev(), {.input = x, .select_last_index = 2}); },
                 {"ArgMax", "select_last_index"});
    expect_error([&] { ops::ArgReduce::create(dev(), {.input = x, .output_dtype = DType::f32}); },
                 {"ArgMax", "output_dtype", "i64 or i32"});
    expect_error([&] { ops::ArgReduce::create(dev(), {.input = {{3}, DType::u8}}); }, {"ArgMax", "input"});
}

// ---- TopK ----

struct TopKCase {
    Shape shape;
    int64_t axis;
    int64_t k;
};

void check_topk(gpu::Device& dev, const HostTensor& x, const TopKCase& c, int64_t largest, DType indices,
                TopKPath path) {
    auto op = ops::TopK::create(dev, {.input = x.desc,
                                      .k = c.k,
                                      .axis = c.axis,
                                      .largest = largest,
                                      .indices_dtype = indices,
                                      .path = path});
    const std::string what = std::string("TopK ") + gpu::dtype_name(x.desc.dtype) + x.shape().str() +
                             " axis " + std::to_string(c.axis) + " k " + std::to_string(c.k) + " largest " +
                             std::to_string(largest) + " -> " + gpu::dtype_name(indices) +
                             (op->path() == TopKPath::SharedSort ? " shared-sort" : " rank");
    if (path != TopKPath::Auto) {
        EXPECT_EQ(op->path(), path) << what;
    }
    const auto got = run_op(dev, *op, {x}, 2);
    const auto want = ref::topk(x, c.k, c.axis, largest, indices);
    // Values are copies of inputs and indices are exact: both compared exactly.
    expect_equal(got[0], want.first, what + " values");
    expect_equal(got[1], want.second, what + " indices");
}

TEST_F(ReduceArgTest, TopK) {
    const std::vector<TopKCase> cases = {
        {{3, 100}, -1, 7}, {{3, 37, 5}, 1, 37}, // k = n
        {{13, 4}, 0, 1},   {{2, 5, 3}, 0, 2},
        {{1, 1}, 1, 1},    {{2, 257, 3}, -2, 19}, // padded to 512 in the sort kernel
    };
    uint32_t seed = 100;
    for (DType dtype : float_dtypes(dev()))
        for (const TopKCase& c : cases) {
            const HostTensor x = ref::distinct_rows(c.shape, c.axis, dtype, seed++);
            for (int64_t largest : {1, 0})
                for (TopKPath path : {TopKPath::SharedSort, TopKPath::Rank})
                    check_topk(dev(), x, c, largest, DType::i64, path);
            check_topk(dev(), x, c, 1, DType::i32, TopKPath::Auto);
        }
}

// Rows longer than shared memory holds take the rank kernel; rows of 4096 still fit lavapipe's
// 32 KiB (Auto picks the sort there when the device has room).
TEST_F(ReduceArgTest, TopKLongRows) {
    const uint32_t shared = dev().caps().max_shared_memory;
    const TopKCase fit{{1, 3000}, 1, 50}, longer{{2, 9001}, -1, 40};
    auto sorted = ops::TopK::create(dev(), {.input = {fit.shape, DType::f32}, .k = fit.k, .axis = fit.axis});
    EXPECT_EQ(sorted->path(), 4096u * 8 <= shared ? TopKPath::SharedSort : TopKPath::Rank);
    auto ranked = ops::TopK::create(dev(), {.input = {longer.shape, DType::f32}, .k = longer.k});
    EXPECT_EQ(ranked->path(), TopKPath::Rank);
    for (DType dtype : float_dtypes(dev())) {
        const HostTensor x = ref::distinct_rows(fit.shape, fit.axis, dtype, 7);
        check_topk(dev(), x, fit, 1, DType::i64, TopKPath::Auto);
        check_topk(dev(), x, fit, 0, DType::i64, TopKPath::Rank);
    }
    const HostTensor y = ref::distinct_rows(longer.shape, longer.axis, DType::f32, 8);
    check_topk(dev(), y, longer, 1, DType::i64, TopKPath::Auto);
    check_topk(dev(), y, longer, 0, DType::i32, TopKPath::Auto);
}

// ONNX's tie rule: of equal values, the lower index comes first, on both kernels.
TEST_F(ReduceArgTest, TopKTies) {
    const std::vector<TopKCase> cases = {{{4, 150}, 1, 20}, {{9, 3, 2}, 0, 6}};
    uint32_t seed = 200;
    for (DType dtype : float_dtypes(dev()))
        for (const TopKCase& c : cases) {
            HostTensor x = random_ints(c.shape, dtype, seed++, -3, 3);
            for (double& v : x.data) v = v == 0 ? 4 : v;
            for (int64_t largest : {1, 0})
                for (TopKPath path : {TopKPath::SharedSort, TopKPath::Rank})
                    check_topk(dev(), x, c, largest, DType::i64, path);
        }
}

TEST_F(ReduceArgTest, TopKDescriptorErrors) {
    const TensorDesc x{{3, 5}, DType::f32};
    expect_error([&] { ops::TopK::create(dev(), {.input = x, .k = 6}); }, {"TopK", "k", "larger than axis"});
    expect_error([&] { ops::TopK::create(dev(), {.input = x, .k = 4, .axis = 0}); }, {"TopK", "k", "size 3"});
    expect_error([&] { ops::TopK::create(dev(), {.input = x, .k = 0}); }, {"TopK", "k", "at least 1"});
    expect_error([&] { ops::TopK::create(dev(), {.input = x, .k = 1, .axis = 2}); },
                 {"TopK", "axis", "out of range"});
    expect_error([&] { ops::TopK::create(dev(), {.input = x, .k = 1, .largest = 2}); }, {"TopK", "largest"});
    expect_error([&] { ops::TopK::create(dev(), {.input = x, .k = 1, .sorted = -1}); }, {"TopK", "sorted"});
    expect_error([&] { ops::TopK::create(dev(), {.input = x, .k = 1, .indices_dtype = DType::f16}); },
                 {"TopK", "indices_dtype"});
    expect_error(
        [&] {
            ops::TopK::create(dev(), {.input = {{100000}, DType::f32}, .k = 3, .path = TopKPath::SharedSort});
        },
        {"TopK", "path", "shared memory"});
}

} // namespace
} // namespace vkml::test
