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

} // namespace
} // namespace vkml::test
