// The ONNX types vkml holds in another device type (graph/dtype.hpp): f64 computed in the float
// policy's storage, i8/i16/u16 in i32 and u32/u64 in i64, converted on the way in and out of a
// Session, with the graph types kept on the outputs.
#include <gtest/gtest.h>

#include <cstring>

#include "session_util.hpp"

namespace vkml::test {
namespace {

class DtypeTest : public GpuTest {};

TensorData doubles(std::vector<int64_t> dims, const std::vector<double>& v) {
    return TensorData::from_doubles(DType::f64, std::move(dims), v);
}

TEST_F(DtypeTest, TensorDataConvertsAsACastDoes) {
    const TensorData d = doubles({4}, {1.75, -2.5, 300.9, -129.0});
    EXPECT_EQ(d.converted(DType::i8).to_int64s(), (std::vector<int64_t>{1, -2, 44, 127})); // 300 wraps, -129 too
    EXPECT_EQ(d.converted(DType::u16).to_int64s(), (std::vector<int64_t>{1, 65534, 300, 65407}));
    EXPECT_EQ(d.converted(DType::f32).to_floats(), (std::vector<float>{1.75f, -2.5f, 300.9f, -129.f}));
    const TensorData u = TensorData::from_ints(DType::u32, {2}, std::vector<int64_t>{4000000000, -1});
    EXPECT_EQ(u.to_int64s(), (std::vector<int64_t>{4000000000, 4294967295}));
    EXPECT_EQ(u.converted(DType::f64).to_doubles(), (std::vector<double>{4e9, 4294967295.0}));
    const TensorData big = TensorData::from_doubles(DType::u64, {1}, std::vector<double>{1.8e19});
    EXPECT_EQ(big.to_doubles()[0], 1.8e19);
    EXPECT_EQ(doubles({2}, {0.0, -0.5}).converted(DType::boolean).to_int64s(), (std::vector<int64_t>{0, 1}));
}

// f64 in, f64 out: Add and Cast to f32 and back, in f32 and in f16 storage.
TEST_F(DtypeTest, DoublesRunInTheFloatPolicy) {
    const std::vector<int64_t> dims = {3, 7};
    Graph g = new_graph("f64");
    const ValueId x = input(g, "x", dims, DType::f64), y = input(g, "y", dims, DType::f64);
    const ValueId s = node(g, "Add", {x, y}, "s");
    const ValueId f = node(g, "Cast", {s}, "f", {{"to", int64_t{1}}});
    g.outputs() = {s, node(g, "Cast", {f}, "d", {{"to", int64_t{11}}})};
    std::vector<double> xv(21), yv(21);
    const auto rx = random_floats(21, 7, -4.f, 4.f), ry = random_floats(21, 8, -4.f, 4.f);
    for (size_t k = 0; k < 21; ++k) {
        xv[k] = rx[k] + 1e-9; // digits f32 cannot hold: the result is rounded to f32
        yv[k] = ry[k];
    }
    for (bool fp32 : {true, false}) {
        Session sess(dev(), g, {.fp32 = fp32});
        const auto out = sess.run(std::vector<TensorData>{doubles(dims, xv), doubles(dims, yv)});
        ASSERT_EQ(out.size(), 2u);
        for (const TensorData& o : out) {
            EXPECT_EQ(o.dtype(), DType::f64);
            EXPECT_EQ(o.dims(), dims);
            const auto v = o.to_doubles();
            const double tol = fp32 ? 1e-6 : 1e-2;
            for (size_t k = 0; k < 21; ++k) EXPECT_NEAR(v[k], xv[k] + yv[k], tol * (1 + std::fabs(xv[k] + yv[k]))) << k;
        }
    }
}

// Narrow and unsigned integers: Max of i8, Min of u32 above 2^31 (exact in i64 storage, then
// compared in i32: vkml's integer kernels are 32-bit, so only values that fit are compared), and
// Mod of i16 with mixed signs.
TEST_F(DtypeTest, NarrowAndUnsignedIntegers) {
    {
        Graph g = new_graph("i8");
        const ValueId a = input(g, "a", {5}, DType::i8), b = input(g, "b", {5}, DType::i8);
        g.outputs() = {node(g, "Max", {a, b}, "m")};
        Session sess(dev(), g, {.fp32 = true});
        const auto out = sess.run(std::vector<TensorData>{
            TensorData::from_ints(DType::i8, {5}, std::vector<int64_t>{-128, 5, 127, -3, 0}),
            TensorData::from_ints(DType::i8, {5}, std::vector<int64_t>{-127, -5, 100, -4, -1})});
        EXPECT_EQ(out[0].dtype(), DType::i8);
        EXPECT_EQ(out[0].to_int64s(), (std::vector<int64_t>{-127, 5, 127, -3, 0}));
    }
    {
        Graph g = new_graph("i16");
        const ValueId a = input(g, "a", {4}, DType::i16), b = input(g, "b", {4}, DType::i16);
        g.outputs() = {node(g, "Mod", {a, b}, "m")};
        Session sess(dev(), g, {.fp32 = true});
        const auto out = sess.run(std::vector<TensorData>{
            TensorData::from_ints(DType::i16, {4}, std::vector<int64_t>{-4000, 7, 30000, -9}),
            TensorData::from_ints(DType::i16, {4}, std::vector<int64_t>{7, -3, 11, -4})});
        EXPECT_EQ(out[0].dtype(), DType::i16);
        EXPECT_EQ(out[0].to_int64s(), (std::vector<int64_t>{4, -2, 3, -1})); // Python's sign rule
    }
    {
        Graph g = new_graph("u32");
        const ValueId a = input(g, "a", {3}, DType::u32);
        g.outputs() = {node(g, "Identity", {a}, "y")};
        Session sess(dev(), g, {.fp32 = true});
        const TensorData in = TensorData::from_ints(DType::u32, {3}, std::vector<int64_t>{4000000000, 1, 77});
        const auto out = sess.run(std::vector<TensorData>{in});
        EXPECT_EQ(out[0], in) << "u32 is stored in i64: values past 2^31 survive a copy";
    }
}

} // namespace
} // namespace vkml::test
