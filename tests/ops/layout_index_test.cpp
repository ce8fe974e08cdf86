// The layout family's indexing ops against ref/layout_index.cpp: exact results (they move or
// select bits) in every dtype the device stores, at odd sizes.
#include <gtest/gtest.h>

#include "op_test.hpp"
#include "ref/layout_index.hpp"
#include "vkml/ops/layout.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
namespace ref = ref_layout_index;

class LayoutIndexTest : public GpuTest {
protected:
    std::vector<DType> dtypes() {
        std::vector<DType> v{DType::f32, DType::i32, DType::i64};
        if (dev().caps().storage16) v.push_back(DType::f16);
        if (dev().caps().storage8) v.push_back(DType::u8);
        return v;
    }
    static HostTensor data(const Shape& shape, DType dtype, uint32_t seed) {
        switch (dtype) {
        case DType::f32:
        case DType::f16:
            return random_tensor(shape, dtype, seed);
        case DType::u8:
            return random_ints(shape, dtype, seed, 1, 255);
        default:
            return random_ints(shape, dtype, seed, -5'000'000, 5'000'000);
        }
    }
};

TEST_F(LayoutIndexTest, TriluUpperLowerAndK) {
    uint32_t seed = 1;
    for (DType dt : dtypes())
        for (const Shape& shape : {Shape{5, 7}, Shape{3, 7, 5}, Shape{2, 3, 1, 9}, Shape{4, 0, 3}})
            for (bool upper : {true, false})
                for (int64_t k : {int64_t{0}, int64_t{2}, int64_t{-3}, int64_t{40}, int64_t{-1} << 40}) {
                    const HostTensor x = data(shape, dt, seed++);
                    auto op = ops::Trilu::create(dev(), {.input = x.desc, .k = k, .upper = upper});
                    expect_equal(run_op(dev(), *op, {x}, 2)[0], ref::trilu(x, k, upper),
                                 std::string("Trilu ") + gpu::dtype_name(dt) + shape.str() +
                                     (upper ? " upper k " : " lower k ") + std::to_string(k));
                }
    expect_error([&] { (void)ops::Trilu::create(dev(), {.input = {{5}, DType::f32}}); },
                 {"Trilu", "input", "rank 2"});
}

TEST_F(LayoutIndexTest, ScatterElementsAxesReductionsAndIndexDtypes) {
    uint32_t seed = 100;
    struct Case {
        Shape data, indices;
        int64_t axis;
    };
    const std::vector<Case> cases = {{{7, 5}, {3, 5}, 0}, {{3, 11, 2}, {3, 4, 2}, -2}, {{2, 3, 5}, {2, 2, 9}, 2}};
    for (DType dt : dtypes())
        for (const Case& c : cases)
            for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
                const bool arith = dt == DType::f32 || dt == DType::f16 || dt == DType::i32;
                if (std::string(reduction) != "none" && !arith) continue;
                for (DType index : {DType::i32, DType::i64}) {
                    const int64_t len = c.data[size_t(c.axis < 0 ? c.axis + int64_t(c.data.rank()) : c.axis)];
                    // Random indices (repeats likely) for the reductions; none gets distinct targets
                    // (duplicates may land in any order there), set below.
                    HostTensor idx = random_ints(c.indices, index, seed++, -len, len - 1);
                    const HostTensor x = dt == DType::f16 || dt == DType::f32
                                             ? random_tensor(c.data, dt, seed++, 0.5, 1.5)
                                         : dt == DType::i32 ? random_ints(c.data, dt, seed++, -20, 20) // no overflow
                                                            : data(c.data, dt, seed++);
                    HostTensor upd = dt == DType::f16 || dt == DType::f32 ? random_tensor(c.indices, dt, seed++, 0.5, 1.5)
                                     : dt == DType::i32 ? random_ints(c.indices, dt, seed++, -9, 9)
                                                        : data(c.indices, dt, seed++);
                    if (std::string(reduction) == "none") {
                        // Distinct targets: index j of each line is the line's position j (shifted).
                        // A line longer than the axis cannot have them (duplicates land in any order
                        // on a GPU that runs the updates in parallel, an H100 did): not for none.
                        const auto strides = strides_of(c.indices);
                        const size_t a = size_t(c.axis < 0 ? c.axis + int64_t(c.data.rank()) : c.axis);
                        if (c.indices[a] > len) continue;
                        for (size_t e = 0; e < idx.size(); ++e) {
                            const int64_t j = (int64_t(e) / strides[a]) % c.indices[a];
                            idx[e] = double((j * 2 + 1) % len - (e % 2 ? len : 0));
                        }
                    }
                    auto op = ops::Scatter::create(dev(), {.data = x.desc, .indices = idx.desc, .updates = upd.desc,
                                                           .axis = c.axis, .reduction = reduction});
                    const HostTensor want = ref::scatter_elements(x, idx, upd, c.axis < 0 ? c.axis + int64_t(c.data.rank()) : c.axis, reduction);
                    const std::string what = std::string("ScatterElements ") + gpu::dtype_name(dt) + c.data.str() + " " +
                                             reduction + " " + gpu::dtype_name(index);
                    const auto got = run_op(dev(), *op, {x, idx, upd}, 2)[0];
                    const std::string red = reduction;
                    if ((dt == DType::f16 || dt == DType::f32) && (red == "add" || red == "mul")) {
                        // Sums and products rounded per step in the storage type.
                        expect_close(got, want, tolerance(dt, 1e-6, 2e-3), what);
                    } else {
                        expect_equal(got, want, what);
                    }
                }
            }
}

TEST_F(LayoutIndexTest, ScatterNDSlicesAndReductions) {
    uint32_t seed = 300;
    struct Case {
        Shape data, indices;
    };
    const std::vector<Case> cases = {{{7, 5}, {3, 1}}, {{4, 3, 5}, {2, 2}}, {{3, 4, 5}, {2, 3, 3}}, {{6}, {4, 1}}};
    for (DType dt : dtypes())
        for (const Case& c : cases)
            for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
                const bool arith = dt == DType::f32 || dt == DType::f16 || dt == DType::i32;
                if (std::string(reduction) != "none" && !arith) continue;
                const size_t q = size_t(c.indices[c.indices.rank() - 1]);
                std::vector<int64_t> ud(c.indices.dims().begin(), c.indices.dims().end() - 1);
                for (size_t k = q; k < c.data.rank(); ++k) ud.push_back(c.data[k]);
                const Shape us{std::span<const int64_t>(ud)};
                const size_t tuples = size_t(c.indices.elements()) / q;
                HostTensor idx(c.indices, DType::i64);
                // Distinct tuples for none (tuple t: coordinates of t spread over the leading dims),
                // random (repeats likely) for the reductions; negatives count from the end.
                for (size_t t = 0; t < tuples; ++t)
                    for (size_t m = 0; m < q; ++m) {
                        const int64_t len = c.data[m];
                        int64_t v = std::string(reduction) == "none" ? int64_t((t + m * 7) % size_t(len)) : int64_t((t * 5 + m * 3 + seed) % size_t(len));
                        if (m == 0 && std::string(reduction) == "none") v = int64_t(t % size_t(len));
                        idx[t * q + m] = double((t + m) % 2 ? v - len : v);
                    }
                ++seed;
                const HostTensor x = dt == DType::f16 || dt == DType::f32 ? random_tensor(c.data, dt, seed++, 0.5, 1.5)
                                     : dt == DType::i32 ? random_ints(c.data, dt, seed++, -20, 20) // no overflow
                                                        : data(c.data, dt, seed++);
                const HostTensor upd = dt == DType::f16 || dt == DType::f32 ? random_tensor(us, dt, seed++, 0.5, 1.5)
                                       : dt == DType::i32 ? random_ints(us, dt, seed++, -9, 9)
                                                          : data(us, dt, seed++);
                auto op = ops::Scatter::create(dev(), {.nd = true, .data = x.desc, .indices = idx.desc,
                                                       .updates = upd.desc, .reduction = reduction});
                const HostTensor want = ref::scatter_nd(x, idx, upd, reduction);
                const std::string what = std::string("ScatterND ") + gpu::dtype_name(dt) + c.data.str() + c.indices.str() +
                                         " " + reduction;
                const auto got = run_op(dev(), *op, {x, idx, upd}, 2)[0];
                const std::string red = reduction;
                if ((dt == DType::f16 || dt == DType::f32) && (red == "add" || red == "mul"))
                    expect_close(got, want, tolerance(dt, 1e-6, 2e-3), what);
                else
                    expect_equal(got, want, what);
            }
}

TEST_F(LayoutIndexTest, GatherNDBatchDims) {
    uint32_t seed = 500;
    struct Case {
        Shape data, indices;
        int64_t batch_dims;
    };
    const std::vector<Case> cases = {
        {{5, 7}, {3, 2}, 0}, {{5, 7, 3}, {4, 1}, 0}, {{3, 5, 7}, {3, 2, 1}, 1}, {{2, 3, 5, 3}, {2, 3, 4, 2}, 2}};
    for (DType dt : dtypes())
        for (const Case& c : cases)
            for (DType index : {DType::i32, DType::i64}) {
                const size_t q = size_t(c.indices[c.indices.rank() - 1]);
                HostTensor idx = random_ints(c.indices, index, seed++, -2, 2);
                for (size_t e = 0; e < idx.size(); ++e) {
                    const int64_t len = c.data[size_t(c.batch_dims) + e % q];
                    idx[e] = double(int64_t(idx[e] + 2 * len) % (2 * len) - len); // in [-len, len)
                }
                idx[0] = double(c.data[size_t(c.batch_dims)] + 3); // out of range: zeros
                const HostTensor x = data(c.data, dt, seed++);
                auto op = ops::GatherND::create(dev(), {.data = x.desc, .indices = idx.desc, .batch_dims = c.batch_dims});
                expect_equal(run_op(dev(), *op, {x, idx}, 2)[0], ref::gather_nd(x, idx, c.batch_dims),
                             std::string("GatherND ") + gpu::dtype_name(dt) + c.data.str() + c.indices.str());
            }
}

// GridSample interpolates: f32 1e-5 (fp32 coordinates and weights), f16 the output's rounding,
// 2e-3. Grid points reach past [-1, 1] so every padding mode matters.
TEST_F(LayoutIndexTest, GridSampleModesAndPaddings) {
    uint32_t seed = 900;
    for (DType dt : float_dtypes(dev()))
        for (const char* mode : {"bilinear", "nearest", "bicubic"})
            for (const char* padding : {"zeros", "border", "reflection"})
                for (int64_t align : {0, 1}) {
                    const HostTensor x = random_tensor({2, 3, 5, 7}, dt, seed++);
                    const HostTensor grid = random_tensor({2, 4, 3, 2}, dt, seed++, -1.4, 1.4, 0.0);
                    auto op = ops::GridSample::create(dev(), {.input = x.desc, .grid = grid.desc, .mode = mode,
                                                              .padding_mode = padding, .align_corners = align});
                    expect_close(run_op(dev(), *op, {x, grid}, 2)[0], ref::grid_sample(x, grid, mode, padding, align),
                                 tolerance(dt, 1e-5, 2e-3),
                                 std::string("GridSample ") + gpu::dtype_name(dt) + " " + mode + " " + padding +
                                     " align " + std::to_string(align));
                }
    expect_error([&] {
        (void)ops::GridSample::create(dev(), {.input = {{1, 2, 3, 4}, DType::f32}, .grid = {{1, 3, 3, 3}, DType::f32}});
    }, {"GridSample", "grid"});
}

TEST_F(LayoutIndexTest, OneHotAxesAndIndexDtypes) {
    uint32_t seed = 700;
    for (DType dt : dtypes())
        for (const Shape& shape : {Shape{7}, Shape{3, 5}, Shape{2, 3, 5}})
            for (int64_t axis : {int64_t{-1}, int64_t{0}, int64_t{1}})
                for (DType index : {DType::i32, DType::i64, DType::f32}) {
                    const int64_t depth = 11;
                    HostTensor idx = index == DType::f32 ? random_tensor(shape, index, seed++, -depth - 2, depth + 2, 0.0)
                                                         : random_ints(shape, index, seed++, -depth - 2, depth + 2);
                    const HostTensor values = data({2}, dt, seed++);
                    auto op = ops::OneHot::create(dev(), {.indices = idx.desc, .values = values.desc, .depth = depth, .axis = axis});
                    expect_equal(run_op(dev(), *op, {idx, values}, 2)[0], ref::one_hot(idx, depth, values, axis),
                                 std::string("OneHot ") + gpu::dtype_name(dt) + shape.str() + " axis " +
                                     std::to_string(axis) + " " + gpu::dtype_name(index));
                }
    expect_error([&] { (void)ops::OneHot::create(dev(), {.indices = {{3}, DType::i64}, .values = {{3}, DType::f32}, .depth = 4}); },
                 {"OneHot", "values", "[2]"});
    expect_error([&] {
        (void)ops::Scatter::create(dev(), {.nd = true, .data = {{4, 3}, DType::f32}, .indices = {{2, 3}, DType::i64},
                                           .updates = {{2}, DType::f32}});
    }, {"ScatterND", "indices", "last dimension"});
}

} // namespace
} // namespace vkml::test
