// MaxPool, AveragePool and LpPool (2-D, NCHW) against ref_reduce::pool.
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
namespace ref = ref_reduce;

class ReducePoolTest : public GpuTest {};

struct Case {
    Shape shape;
    ops::PoolWindow window;
};

std::string list(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

std::string describe(const char* op, DType dtype, const Case& c) {
    const auto& w = c.window;
    return std::string(op) + " " + gpu::dtype_name(dtype) + c.shape.str() + " k" + list(w.kernel_shape) +
           " s" + list(w.strides) + " p" + list(w.pads) + " d" + list(w.dilations) + " " + w.auto_pad +
           " ceil " + std::to_string(w.ceil_mode);
}

ref::PoolArgs ref_args(const ops::PoolWindow& w) {
    ref::PoolArgs a;
    a.kernel = w.kernel_shape;
    if (!w.strides.empty()) a.strides = w.strides;
    if (!w.pads.empty()) a.pads = w.pads;
    if (!w.dilations.empty()) a.dilations = w.dilations;
    a.auto_pad = w.auto_pad;
    a.ceil_mode = w.ceil_mode != 0;
    return a;
}

// Every window attribute that changes the output size or the taps: odd and prime sizes, strides,
// asymmetric pads, dilation, ceil_mode (with and without pads, with a window dropped for starting
// in the end padding), each auto_pad.
const std::vector<Case>& cases() {
    static const std::vector<Case> c = {
        {{2, 3, 11, 13}, {.kernel_shape = {3, 3}}},
        {{2, 3, 11, 13}, {.kernel_shape = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}}},
        {{1, 2, 9, 10}, {.kernel_shape = {2, 3}, .strides = {2, 1}, .pads = {0, 1, 1, 2}}},
        {{1, 3, 13, 11}, {.kernel_shape = {3, 2}, .strides = {1, 2}, .dilations = {2, 3}}},
        {{1, 2, 12, 11}, {.kernel_shape = {3, 3}, .strides = {2, 2}, .pads = {1, 0, 1, 2}, .ceil_mode = 1}},
        {{1, 2, 10, 7}, {.kernel_shape = {3, 2}, .strides = {3, 2}, .ceil_mode = 1}},
        // in 5, k 2, s 2, pads 1/1: ceil gives 4 windows, the last would start in the end padding
        {{1, 2, 5, 5}, {.kernel_shape = {2, 2}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .ceil_mode = 1}},
        {{1, 2, 11, 9},
         {.kernel_shape = {3, 3},
          .strides = {2, 2},
          .pads = {2, 1, 1, 2},
          .dilations = {2, 2},
          .ceil_mode = 1}},
        {{2, 2, 11, 10}, {.kernel_shape = {3, 4}, .strides = {2, 3}, .auto_pad = "SAME_UPPER"}},
        {{2, 2, 11, 10}, {.kernel_shape = {3, 4}, .strides = {2, 3}, .auto_pad = "SAME_LOWER"}},
        {{1, 2, 7, 8},
         {.kernel_shape = {2, 2}, .strides = {1, 1}, .dilations = {2, 3}, .auto_pad = "SAME_UPPER"}},
        {{1, 3, 11, 10}, {.kernel_shape = {3, 2}, .strides = {2, 2}, .auto_pad = "VALID"}},
        {{1, 2, 7, 7}, {.kernel_shape = {1, 1}, .strides = {3, 2}}},
        {{1, 1, 5, 6}, {.kernel_shape = {5, 6}}}, // the window is the whole plane
    };
    return c;
}

TEST_F(ReducePoolTest, MaxPool) {
    uint32_t seed = 1;
    for (DType dtype : float_dtypes(dev()))
        for (const Case& c : cases()) {
            const HostTensor x = random_tensor(c.shape, dtype, seed++);
            auto op = ops::MaxPool::create(dev(), {.input = x.desc, .window = c.window});
            // Max selects an input: exact.
            expect_close(run_op(dev(), *op, {x}, 2)[0],
                         ref::pool(ref::PoolKind::Max, x, ref_args(c.window)).first, 0.0,
                         describe("MaxPool", dtype, c));
        }
}

// The optional Indices output, in both storage orders. Ties (f16 holds few values) follow the
// same first-maximum rule in kernel and reference.
TEST_F(ReducePoolTest, MaxPoolIndices) {
    uint32_t seed = 50;
    for (DType dtype : float_dtypes(dev()))
        for (const Case& c : cases())
            for (int64_t order : {0, 1}) {
                const HostTensor x = random_tensor(c.shape, dtype, seed++);
                auto op = ops::MaxPool::create(
                    dev(), {.input = x.desc, .window = c.window, .indices = true, .storage_order = order});
                ASSERT_EQ(op->outputs().size(), 2u);
                EXPECT_EQ(op->outputs()[1].dtype, DType::i64);
                ref::PoolArgs args = ref_args(c.window);
                args.storage_order = order;
                const auto want = ref::pool(ref::PoolKind::Max, x, args);
                const auto got = run_op(dev(), *op, {x}, 2);
                const std::string what =
                    describe("MaxPool", dtype, c) + " storage_order " + std::to_string(order);
                expect_close(got[0], want.first, 0.0, what);
                expect_equal(got[1], want.second, what + " indices");
            }
}

TEST_F(ReducePoolTest, AveragePool) {
    uint32_t seed = 100;
    for (DType dtype : float_dtypes(dev()))
        for (const Case& c : cases())
            for (int64_t include : {0, 1}) {
                const HostTensor x = random_tensor(c.shape, dtype, seed++);
                auto op = ops::AveragePool::create(
                    dev(), {.input = x.desc, .window = c.window, .count_include_pad = include});
                ref::PoolArgs args = ref_args(c.window);
                args.count_include_pad = include != 0;
                // fp32 sums of at most 30 terms: 1e-6; f16: output rounding, 1e-3.
                expect_close(run_op(dev(), *op, {x}, 2)[0], ref::pool(ref::PoolKind::Average, x, args).first,
                             tolerance(dtype, 1e-6, 1e-3),
                             describe("AveragePool", dtype, c) + " count_include_pad " +
                                 std::to_string(include));
            }
}

TEST_F(ReducePoolTest, LpPool) {
    uint32_t seed = 200;
    for (DType dtype : float_dtypes(dev()))
        for (const Case& c : cases())
            for (int64_t p : {1, 2, 3}) {
                const HostTensor x = random_tensor(c.shape, dtype, seed++);
                auto op = ops::LpPool::create(dev(), {.input = x.desc, .window = c.window, .p = p});
                ref::PoolArgs args = ref_args(c.window);
                args.p = p;
                // fp32 pow() is accurate to a few ulps: 1e-5; f16: output rounding, 1e-3.
                expect_close(run_op(dev(), *op, {x}, 2)[0], ref::pool(ref::PoolKind::Lp, x, args).first,
                             tolerance(dtype, 1e-5, 1e-3),
                             describe("LpPool", dtype, c) + " p " + std::to_string(p));
            }
}

// Output sizes ONNX fixes, independent of the reference: ceil_mode drops a window that would
// start in the end padding; SAME keeps ceil(in / stride).
TEST_F(ReducePoolTest, OutputShapes) {
    const TensorDesc x{{1, 1, 5, 5}, DType::f32};
    auto ceil = ops::MaxPool::create(
        dev(), {.input = x,
                .window = {.kernel_shape = {2, 2}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .ceil_mode = 1}});
    EXPECT_EQ(ceil->outputs()[0].shape, (Shape{1, 1, 3, 3}));
    auto floor = ops::MaxPool::create(
        dev(), {.input = x, .window = {.kernel_shape = {2, 2}, .strides = {2, 2}, .pads = {1, 1, 1, 1}}});
    EXPECT_EQ(floor->outputs()[0].shape, (Shape{1, 1, 3, 3}));
    auto ceil2 = ops::AveragePool::create(
        dev(), {.input = {{1, 1, 6, 6}, DType::f32},
                .window = {.kernel_shape = {3, 3}, .strides = {2, 2}, .ceil_mode = 1}});
    EXPECT_EQ(ceil2->outputs()[0].shape, (Shape{1, 1, 3, 3}));
    auto same = ops::LpPool::create(
        dev(), {.input = {{1, 1, 7, 8}, DType::f32},
                .window = {.kernel_shape = {3, 3}, .strides = {2, 3}, .auto_pad = "SAME_LOWER"}});
    EXPECT_EQ(same->outputs()[0].shape, (Shape{1, 1, 4, 3}));
    // H: total 2, split evenly; W: total 1, which SAME_LOWER puts at the beginning.
    EXPECT_EQ(same->effective_pads(), (std::vector<int64_t>{1, 1, 1, 0}));
    auto upper = ops::LpPool::create(
        dev(), {.input = {{1, 1, 8, 8}, DType::f32},
                .window = {.kernel_shape = {4, 4}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"}});
    EXPECT_EQ(upper->outputs()[0].shape, (Shape{1, 1, 4, 4}));
    EXPECT_EQ(upper->effective_pads(), (std::vector<int64_t>{1, 1, 1, 1}));
    auto lower = ops::LpPool::create(
        dev(), {.input = {{1, 1, 8, 8}, DType::f32},
                .window = {.kernel_shape = {3, 3}, .strides = {2, 2}, .auto_pad = "SAME_LOWER"}});
    EXPECT_EQ(lower->effective_pads(), (std::vector<int64_t>{1, 1, 0, 0}));
}

TEST_F(ReducePoolTest, DescriptorErrors) {
    const TensorDesc x{{1, 2, 5, 6}, DType::f32};
    expect_error(
        [&] {
            ops::MaxPool::create(dev(), {.input = x, .window = {.kernel_shape = {6, 3}}});
        },
        {"MaxPool", "kernel_shape", "larger than the padded input"});
    expect_error(
        [&] {
            ops::AveragePool::create(dev(),
                                     {.input = x, .window = {.kernel_shape = {3, 3}, .dilations = {1, 3}}});
        },
        {"AveragePool", "kernel_shape", "larger than the padded input"});
    expect_error(
        [&] {
            ops::MaxPool::create(dev(), {.input = x, .window = {.kernel_shape = {3, 3}, .auto_pad = "SAME"}});
        },
        {"MaxPool", "auto_pad", "SAME"});
    expect_error(
        [&] {
            ops::LpPool::create(
                dev(),
                {.input = x, .window = {.kernel_shape = {3, 3}, .pads = {1, 1, 1, 1}, .auto_pad = "VALID"}});
        },
        {"LpPool", "pads", "auto_pad"});
    expect_error([&] { ops::MaxPool::create(dev(), {.input = x, .window = {.kernel_shape = {3}}}); },
                 {"MaxPool", "kernel_shape", "2 values"});
    expect_error([&] { ops::MaxPool::create(dev(), {.input = x, .window = {}}); },
                 {"MaxPool", "kernel_shape", "required"});
    expect_error(
        [&] {
            ops::MaxPool::create(dev(), {.input = x, .window = {.kernel_shape = {2, 2}, .strides = {0, 1}}});
        },
        {"MaxPool", "strides"});
    expect_error(
        [&] {
            ops::MaxPool::create(dev(), {.input = x, .window = {.kernel_shape = {2, 2}, .pads = {1, 1}}});
        },
        {"MaxPool", "pads", "4 values"});
    expect_error(
        [&] {
            ops::MaxPool::create(dev(),
                                 {.input = x, .window = {.kernel_shape = {2, 2}, .pads = {2, 0, 0, 0}}});
        },
        {"MaxPool", "pads", "smaller than the window"});
    expect_error(
        [&] {
            ops::MaxPool::create(dev(), {.input = x, .window = {.kernel_shape = {2, 2}, .ceil_mode = 2}});
        },
        {"MaxPool", "ceil_mode"});
    expect_error(
        [&] {
            ops::MaxPool::create(dev(), {.input = x, .window = {.kernel_shape = {2, 2}}, .storage_order = 2});
        },
        {"MaxPool", "storage_order"});
    expect_error(
        [&] {
            ops::AveragePool::create(
                dev(), {.input = x, .window = {.kernel_shape = {2, 2}}, .count_include_pad = 2});
        },
        {"AveragePool", "count_include_pad"});
    expect_error(
        [&] {
            ops::LpPool::create(dev(), {.input = x, .window = {.kernel_shape = {2, 2}}, .p = 0});
        },
        {"LpPool", "p", "at least 1"});
    expect_error(
        [&] {
            ops::MaxPool::create(dev(),
                                 {.input = {{2, 5, 6}, DType::f32}, .window = {.kernel_shape = {2, 2}}});
        },
        {"MaxPool", "input", "4-D"});
    expect_error(
        [&] {
            ops::MaxPool::create(dev(),
                                 {.input = {{1, 2, 5, 6}, DType::i32}, .window = {.kernel_shape = {2, 2}}});
        },
        {"MaxPool", "input", "f32 or f16"});
}

} // namespace
} // namespace vkml::test
