// gpu::Shape and gpu::Tensor size arithmetic without a device (issue 14, item 9): every product of
// dimensions fits 64 bits, so strides and byte sizes computed from a shape cannot overflow.
#include <gtest/gtest.h>

#include "vkml/error.hpp"
#include "vkml/gpu/tensor.hpp"

namespace vkml::test {
namespace {

using gpu::Shape;

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(ShapeChecks, ProductsPast64BitsAreRefusedEvenWhenEmpty) {
    // [0, 2^40, 2^40] has no elements, but its strides would overflow.
    EXPECT_NE(error_of([] {
                  (void)Shape{0, int64_t{1} << 40, int64_t{1} << 40};
              }).find("more elements than 64 bits"),
              std::string::npos);
    EXPECT_NE(error_of([] {
                  (void)Shape{int64_t{1} << 32, int64_t{1} << 32};
              }).find("[4294967296, 4294967296]"),
              std::string::npos);
    EXPECT_EQ((Shape{0, int64_t{1} << 40}).elements(), 0);
    EXPECT_EQ((Shape{-1, int64_t{1} << 62}).rank(), 2u); // -1: a reshape target's unknown dimension
}

} // namespace
} // namespace vkml::test
