// Checked shape arithmetic in the operators (issue 14, item 9): a model's huge Resize scales, Pad
// pads, Tile repeats, Slice steps, block sizes, convolution pads and strides are errors naming the
// op and the field, not wrapped sizes (UBSan saw signed overflow and out-of-range float casts).
// gpu::Shape's own checks are in tests/gpu/shape_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "op_test.hpp"
#include "vkml/ops/conv.hpp"
#include "vkml/ops/layout.hpp"
#include "vkml/ops/reduce.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using V = std::vector<int64_t>;

constexpr int64_t i64_max = std::numeric_limits<int64_t>::max();
constexpr int64_t i64_min = std::numeric_limits<int64_t>::min();

TEST_F(GpuTest, HugeLayoutParametersAreErrorsNamingTheField) {
    const ops::TensorDesc x{{1, 3, 8, 8}, DType::f32};
    for (float scale : {1e30f, INFINITY, 3e18f})
        expect_error(
            [&] {
                ops::Resize::create(dev(), {.input = x, .scales = {1, 1, scale, scale}});
            },
            {"Resize", "scales"});
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = x, .sizes = {1, 3, i64_max, i64_max}});
        },
        {"Resize"});
    expect_error(
        [&] {
            ops::Pad::create(dev(), {.input = x, .pads = {0, 0, 0, i64_max, 0, 0, 0, i64_max}});
        },
        {"Pad", "pads"});
    expect_error(
        [&] {
            ops::Pad::create(dev(), {.input = x, .pads = {0, 0, 0, i64_min, 0, 0, 0, 0}});
        },
        {"Pad", "pads"});
    expect_error(
        [&] {
            ops::Pad::create(dev(),
                             {.input = x, .pads = {0, 0, 0, int64_t{1} << 61, 0, 0, 0, int64_t{1} << 61}});
        },
        {"Pad"});
    expect_error(
        [&] {
            ops::Tile::create(dev(), {.input = x, .repeats = {1, 1, i64_max, 2}});
        },
        {"Tile", "repeats"});
    expect_error(
        [&] {
            ops::Tile::create(dev(), {.input = x, .repeats = {1, 1, int64_t{1} << 30, 8}});
        },
        {"Tile", "32-bit"});
    expect_error(
        [&] {
            ops::Expand::create(dev(),
                                {.input = {{1}, DType::f32}, .shape = {int64_t{1} << 40, int64_t{1} << 40}});
        },
        {"64 bits"});
    expect_error([&] { ops::DepthToSpace::create(dev(), {.input = x, .blocksize = int64_t{1} << 33}); },
                 {"DepthToSpace", "blocksize"});
    expect_error([&] { ops::SpaceToDepth::create(dev(), {.input = x, .blocksize = i64_max}); },
                 {"SpaceToDepth", "blocksize"});
    expect_error(
        [&] {
            ops::Concat::create(
                dev(), {.inputs = {{{1, i64_max / 2 + 1}, DType::f32}, {{1, i64_max / 2 + 1}, DType::f32}},
                        .axis = 1});
        },
        {"Concat"});
    // Steps at the ends of int64 take one element (they overflowed the count and the stride).
    auto first =
        ops::Slice::create(dev(), {.input = x, .starts = {0}, .ends = {8}, .axes = {3}, .steps = {i64_max}});
    EXPECT_EQ(first->outputs()[0].shape, (Shape{1, 3, 8, 1}));
    auto last = ops::Slice::create(
        dev(), {.input = x, .starts = {-1}, .ends = {i64_min}, .axes = {2}, .steps = {i64_min}});
    EXPECT_EQ(last->outputs()[0].shape, (Shape{1, 3, 1, 8}));
}

TEST_F(GpuTest, HugeConvolutionParametersAreErrorsNamingTheField) {
    const ops::TensorDesc x{{1, 2, 8, 8}, DType::f32}, w{{2, 2, 3, 3}, DType::f32};
    expect_error(
        [&] {
            ops::Conv::create(dev(), {.input = x, .weight = w, .pads = {0, 0, i64_max, i64_max}});
        },
        {"Conv", "pads", "32-bit"});
    expect_error(
        [&] {
            ops::Conv::create(dev(), {.input = x, .weight = w, .dilations = {int64_t{1} << 40, 1}});
        },
        {"Conv", "dilations"});
    expect_error([&] { ops::Conv::create(dev(), {.input = x, .weight = w, .group = i64_max}); },
                 {"Conv", "group"});
    expect_error(
        [&] {
            ops::ConvTranspose::create(dev(), {.input = x, .weight = w, .strides = {int64_t{1} << 40, 1}});
        },
        {"ConvTranspose", "strides"});
    expect_error(
        [&] {
            ops::MaxPool::create(
                dev(), {.input = x, .window = {.kernel_shape = {2, 2}, .pads = {0, 0, i64_max, 0}}});
        },
        {"MaxPool", "pads"});
}

} // namespace
} // namespace vkml::test
