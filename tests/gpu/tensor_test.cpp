#include <cstring>

#include "gpu_test.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using gpu::Tensor;

class TensorRoundTrip : public GpuTest, public ::testing::WithParamInterface<std::tuple<DType, Shape>> {};

TEST_P(TensorRoundTrip, FloatsSurviveUploadAndDownload) {
    const auto [dtype, shape] = GetParam();
    Tensor t(dev(), shape, dtype, "round trip");
    const auto data = random_floats(size_t(shape.elements()), uint32_t(shape.elements()), -100.f, 100.f);
    gpu::upload(dev(), t, data);
    const auto back = gpu::download_floats(dev(), t);
    ASSERT_EQ(back.size(), data.size());
    for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(back[i], stored(data[i], dtype)) << "element " << i;
    if (dtype == DType::f16) { // and f16 really is stored as halves: check the raw bits
        const auto raw = gpu::download_raw(dev(), t);
        uint16_t h;
        std::memcpy(&h, raw.data(), 2);
        EXPECT_EQ(h, gpu::float_to_half(data[0]));
    }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, TensorRoundTrip,
                         ::testing::Combine(::testing::Values(DType::f32, DType::f16),
                                            ::testing::Values(Shape{1}, Shape{3, 5, 7}, Shape{1, 17, 33, 3},
                                                              Shape{100003}, Shape{2, 1, 3, 1, 5, 7})));

TEST_F(GpuTest, IntegerTensorsRoundTrip) {
    for (DType dtype : {DType::i32, DType::i64, DType::u8}) {
        Tensor t(dev(), {7, 13}, dtype);
        std::vector<float> data(91);
        for (size_t i = 0; i < data.size(); ++i) data[i] = float((i * 37) % 251);
        gpu::upload(dev(), t, data);
        EXPECT_EQ(gpu::download_floats(dev(), t), data) << gpu::dtype_name(dtype);
        EXPECT_EQ(t.bytes(), 91 * gpu::dtype_size(dtype));
    }
}

TEST_F(GpuTest, ViewsShareMemoryWithoutCopies) {
    Tensor t(dev(), {4, 3, 5}, DType::f32, "base");
    const auto data = random_floats(60, 3);
    gpu::upload(dev(), t, data);

    const Tensor flat = t.reshape({-1});
    EXPECT_EQ(flat.shape(), (Shape{60}));
    EXPECT_EQ(flat.buffer(), t.buffer());

    const Tensor rows = t.slice(1, 3); // rows 1 and 2 of the outer dim
    EXPECT_EQ(rows.shape(), (Shape{2, 3, 5}));
    EXPECT_EQ(rows.byte_offset(), 15u * 4);
    const auto got = gpu::download_floats(dev(), rows);
    EXPECT_EQ(got, std::vector<float>(data.begin() + 15, data.begin() + 45));

    const Tensor u = t.unsqueeze(1);
    EXPECT_EQ(u.shape(), (Shape{4, 1, 3, 5}));
    EXPECT_TRUE(u.contiguous());
    const Tensor s = u.squeeze(-3);
    EXPECT_EQ(s.shape(), t.shape());
    EXPECT_EQ(std::vector<int64_t>(s.strides().begin(), s.strides().end()), (std::vector<int64_t>{15, 5, 1}));

    // Writing through a view changes the base.
    const std::vector<float> five(15, 5.f);
    gpu::upload(dev(), t.slice(3, 4), five);
    EXPECT_EQ(gpu::download_floats(dev(), t)[45], 5.f);
}

TEST_F(GpuTest, BadViewsAndShapesAreClearErrors) {
    Tensor t(dev(), {4, 3, 5}, DType::f16, "base");
    auto expect_error = [](auto&& fn, const char* needle) {
        try {
            fn();
            ADD_FAILURE() << "expected an error mentioning " << needle;
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_error([&] { (void)t.reshape({7, 9}); }, "[4, 3, 5]");
    expect_error([&] { (void)t.reshape({-1, -1}); }, "-1");
    expect_error([&] { (void)t.squeeze(0); }, "squeeze");
    expect_error([&] { (void)t.slice(2, 9); }, "slice");
    expect_error([&] { Shape({1, 2, 3, 4, 5, 6, 7}); }, "rank 7");
    expect_error([&] { gpu::upload(dev(), t, std::vector<float>(59, 1.f)); }, "59 elements");
}

} // namespace
} // namespace vkml::test

namespace vkml::test {
// Element counts are checked: a product past 64 bits (a model's huge Resize scales or pads) is an
// error naming the shape, not a wrapped count (UBSan saw the signed overflow).
TEST(ShapeElements, OverflowIsAnErrorNamingTheShape) {
    EXPECT_EQ((gpu::Shape{3, 5, 7}).elements(), 105);
    EXPECT_EQ((gpu::Shape{int64_t(1) << 31, int64_t(1) << 31}).elements(), int64_t(1) << 62);
    try {
        (void)(gpu::Shape{int64_t(1) << 32, int64_t(1) << 32}).elements();
        ADD_FAILURE() << "a 2^64-element shape was counted";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("[4294967296, 4294967296]"), std::string::npos) << e.what();
    }
}
} // namespace vkml::test
