// Reshape, Flatten, Squeeze and Unsqueeze: ONNX shape rules and their gpu::Tensor views.
#include <gtest/gtest.h>

#include "op_test.hpp"
#include "vkml/ops/layout.hpp"
#include "vkml/ops/registry.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using V = std::vector<int64_t>;

TEST(LayoutViewShapes, Reshape) {
    EXPECT_EQ(ops::reshape_shape({2, 3, 4}, V{4, -1}), (Shape{4, 6}));
    EXPECT_EQ(ops::reshape_shape({2, 3, 4}, V{0, -1}), (Shape{2, 12})); // 0 copies dimension 0
    EXPECT_EQ(ops::reshape_shape({2, 3, 4}, V{0, 0, 2, 2}), (Shape{2, 3, 2, 2}));
    EXPECT_EQ(ops::reshape_shape({2, 3, 4}, V{-1}), (Shape{24}));
    EXPECT_EQ(ops::reshape_shape({2, 0, 4}, V{0, 4, -1}, false), (Shape{2, 4, 0}));
    EXPECT_EQ(ops::reshape_shape({2, 0, 4}, V{0, 8}, true), (Shape{0, 8})); // allowzero: a real 0
    EXPECT_EQ(ops::reshape_shape({1, 1}, V{}), Shape{});                    // to a scalar
    expect_error([] { ops::reshape_shape({2, 3, 4}, V{-1, -1}); }, {"Reshape", "shape", "more than one -1"});
    expect_error([] { ops::reshape_shape({2, 3, 4}, V{5, -1}); }, {"Reshape", "shape", "cannot infer"});
    expect_error([] { ops::reshape_shape({2, 3, 4}, V{5, 5}); }, {"Reshape", "shape", "element count"});
    expect_error([] { ops::reshape_shape({2, 3}, V{0, 0, 0}); }, {"Reshape", "shape", "copies no dimension"});
    expect_error([] { ops::reshape_shape({2, 3, 4}, V{0, -1}, true); }, {"Reshape", "shape", "allowzero"});
    expect_error([] { ops::reshape_shape({2, 3, 4}, V{-2, 12}); }, {"Reshape", "shape", "below -1"});
    expect_error(
        [] {
            ops::reshape_shape({64}, V{2, 2, 2, 2, 2, 2, 1});
        },
        {"Reshape", "shape", "maximum of 6"});
}

TEST(LayoutViewShapes, Flatten) {
    EXPECT_EQ(ops::flatten_shape({2, 3, 4, 5}), (Shape{2, 60}));
    EXPECT_EQ(ops::flatten_shape({2, 3, 4, 5}, 0), (Shape{1, 120}));
    EXPECT_EQ(ops::flatten_shape({2, 3, 4, 5}, 4), (Shape{120, 1}));
    EXPECT_EQ(ops::flatten_shape({2, 3, 4, 5}, -1), (Shape{24, 5}));
    EXPECT_EQ(ops::flatten_shape({2, 3, 4, 5}, -4), (Shape{1, 120}));
    expect_error([] { ops::flatten_shape({2, 3}, 3); }, {"Flatten", "axis"});
    expect_error([] { ops::flatten_shape({2, 3}, -3); }, {"Flatten", "axis"});
}

TEST(LayoutViewShapes, SqueezeUnsqueeze) {
    EXPECT_EQ(ops::squeeze_shape({1, 3, 1, 5}), (Shape{3, 5}));
    EXPECT_EQ(ops::squeeze_shape({1, 3, 1, 5}, V{-2}), (Shape{1, 3, 5}));
    EXPECT_EQ(ops::squeeze_shape({1, 3, 1, 5}, V{2, 0}), (Shape{3, 5}));
    EXPECT_EQ(ops::squeeze_shape({1}), Shape{});
    expect_error([] { ops::squeeze_shape({1, 3, 1, 5}, V{1}); }, {"Squeeze", "axes", "not 1"});
    expect_error([] { ops::squeeze_shape({1, 3, 1, 5}, V{0, -4}); }, {"Squeeze", "axes", "repeats"});
    expect_error([] { ops::squeeze_shape({1, 3}, V{2}); }, {"Squeeze", "axes"});
    EXPECT_EQ(ops::unsqueeze_shape({3, 5}, V{0}), (Shape{1, 3, 5}));
    EXPECT_EQ(ops::unsqueeze_shape({3, 5}, V{-1}), (Shape{3, 5, 1}));
    EXPECT_EQ(ops::unsqueeze_shape({3, 5}, V{0, 3}), (Shape{1, 3, 5, 1}));
    EXPECT_EQ(ops::unsqueeze_shape({3, 5}, V{3, 1}), (Shape{3, 1, 5, 1})); // axes in any order
    EXPECT_EQ(ops::unsqueeze_shape({}, V{0, 1}), (Shape{1, 1}));
    expect_error([] { ops::unsqueeze_shape({3, 5}, V{1, -3}); }, {"Unsqueeze", "axes", "repeats"});
    expect_error([] { ops::unsqueeze_shape({3, 5}, V{4}); }, {"Unsqueeze", "axes"});
    expect_error(
        [] {
            ops::unsqueeze_shape({2, 2, 2, 2, 2}, V{0, 1});
        },
        {"Unsqueeze", "axes", "maximum of 6"});
}

// The registry lists the view ops as such, and every kernel op of the family.
TEST(LayoutViewShapes, Registry) {
    size_t views = 0, layout = 0;
    for (const ops::OpInfo& op : ops::registry()) {
        if (op.family != "Resampling and layout") continue;
        ++layout;
        if (op.notes.find("view, no kernel") != std::string::npos) ++views;
    }
    EXPECT_EQ(layout, 26u);
    EXPECT_EQ(views, 4u);
}

class LayoutViewTest : public GpuTest {};

// Views share the buffer: what is uploaded through one reads back through the other.
TEST_F(LayoutViewTest, ViewsShareMemory) {
    gpu::Tensor t(dev(), {2, 1, 3, 4}, DType::f32, "view source");
    std::vector<float> values(24);
    for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) + 0.5f;
    gpu::upload(dev(), t, values);
    const gpu::Tensor r = ops::reshape_view(t, V{0, -1});
    const gpu::Tensor f = ops::flatten_view(t, 2);
    const gpu::Tensor s = ops::squeeze_view(t);
    const gpu::Tensor u = ops::unsqueeze_view(t, V{-1});
    EXPECT_EQ(r.shape(), (Shape{2, 12}));
    EXPECT_EQ(f.shape(), (Shape{2, 12}));
    EXPECT_EQ(s.shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(u.shape(), (Shape{2, 1, 3, 4, 1}));
    for (const gpu::Tensor* v : {&r, &f, &s, &u}) {
        EXPECT_EQ(v->buffer(), t.buffer());
        EXPECT_EQ(v->byte_offset(), t.byte_offset());
        EXPECT_EQ(gpu::download_floats(dev(), *v), values);
    }
    expect_error([&] { ops::squeeze_view(t, V{0}); }, {"Squeeze", "axes", "not 1"});
}

} // namespace
} // namespace vkml::test
