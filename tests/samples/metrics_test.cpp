// PSNR and SSIM against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/metrics.hpp"
#include "vkml/error.hpp"

namespace vkml::samples {
namespace {

std::vector<uint8_t> filled(int w, int h, int c, uint8_t v) {
    std::vector<uint8_t> p(size_t(w) * h * c, v);
    if (c == 4)
        for (size_t i = 3; i < p.size(); i += 4) p[i] = 255;
    return p;
}

TEST(Metrics, IdenticalImagesHaveInfinitePsnrAndSsimOne) {
    std::vector<uint8_t> a(16 * 12 * 3);
    for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 37 % 251);
    const ImageView8 v{a.data(), 16, 12, 3};
    EXPECT_EQ(psnr(v, v), std::numeric_limits<double>::infinity());
    EXPECT_DOUBLE_EQ(ssim(v, v), 1.0);
}

TEST(Metrics, PsnrOfAConstantOffset) {
    // Every R, G, B value off by 10: MSE 100, PSNR = 10 log10(255^2 / 100) = 28.1308 dB. Alpha
    // differs too and must be ignored.
    std::vector<uint8_t> a = filled(7, 5, 4, 100), b = filled(7, 5, 4, 110);
    for (size_t i = 3; i < b.size(); i += 4) b[i] = 0;
    const ImageView8 va{a.data(), 7, 5, 4}, vb{b.data(), 7, 5, 4};
    EXPECT_DOUBLE_EQ(mse(va, vb), 100.0);
    EXPECT_NEAR(psnr(va, vb), 28.130803608679, 1e-9);
}

TEST(Metrics, PsnrOfOnePixelOneChannel) {
    // One value of 3 * 4 * 4 = 48 off by 48: MSE = 48^2 / 48 = 48.
    std::vector<uint8_t> a = filled(4, 4, 3, 0), b = a;
    b[5 * 3 + 1] = 48;
    const ImageView8 va{a.data(), 4, 4, 3}, vb{b.data(), 4, 4, 3};
    EXPECT_DOUBLE_EQ(mse(va, vb), 48.0);
    EXPECT_NEAR(psnr(va, vb), 10 * std::log10(65025.0 / 48.0), 1e-12);
}

TEST(Metrics, SsimOfTwoConstantImages) {
    // Means 0 and 255, no variance: SSIM = C1 / (255^2 + C1) with C1 = 2.55^2 = 6.5025, in every
    // window.
    const std::vector<uint8_t> a = filled(8, 8, 3, 0), b = filled(8, 8, 3, 255);
    const ImageView8 va{a.data(), 8, 8, 3}, vb{b.data(), 8, 8, 3};
    EXPECT_NEAR(ssim(va, vb), 6.5025 / (65025.0 + 6.5025), 1e-12);
}

TEST(Metrics, SsimOfAnInvertedCheckerboard) {
    // One 8x8 window of a 0/255 grey checkerboard against its inverse: means 127.5 and 127.5,
    // variances 127.5^2, covariance -127.5^2:
    //   SSIM = (2 m^2 + C1)(-2 v + C2) / ((2 m^2 + C1)(2 v + C2)) = (C2 - 2 v) / (C2 + 2 v).
    std::vector<uint8_t> a(8 * 8 * 3), b(8 * 8 * 3);
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x)
            for (int c = 0; c < 3; ++c) {
                a[size_t(y * 8 + x) * 3 + c] = (x + y) % 2 ? 255 : 0;
                b[size_t(y * 8 + x) * 3 + c] = (x + y) % 2 ? 0 : 255;
            }
    const ImageView8 va{a.data(), 8, 8, 3}, vb{b.data(), 8, 8, 3};
    const double v = 127.5 * 127.5, c2 = 7.65 * 7.65;
    EXPECT_NEAR(ssim(va, vb), (c2 - 2 * v) / (c2 + 2 * v), 1e-9);
}

TEST(Metrics, SsimAveragesOverlappingWindows) {
    // 12x8: windows at x = 0 and x = 4 (the last one flush with the right edge). b's right four
    // columns are 120 instead of 100.
    std::vector<uint8_t> a = filled(12, 8, 3, 100), b = a;
    for (int y = 0; y < 8; ++y)
        for (int x = 8; x < 12; ++x)
            for (int c = 0; c < 3; ++c) b[size_t(y * 12 + x) * 3 + c] = 120;
    const ImageView8 va{a.data(), 12, 8, 3}, vb{b.data(), 12, 8, 3};
    const double c1 = 6.5025, c2 = 58.5225;
    // Window 0 (columns 0..7) is 100 in both: SSIM 1. Window 1 (columns 4..11) has b at 100 and
    // 120, half each (mean 110, variance 100), a constant 100 (variance 0, covariance 0).
    const double w0 = 1.0;
    const double w1 =
        ((2 * 100.0 * 110 + c1) * (0 + c2)) / ((100.0 * 100 + 110.0 * 110 + c1) * (0 + 100 + c2));
    EXPECT_NEAR(ssim(va, vb), (w0 + w1) / 2, 1e-12);
}

TEST(Metrics, SizeMismatchIsAnError) {
    const std::vector<uint8_t> a = filled(4, 4, 3, 0), b = filled(4, 5, 3, 0);
    EXPECT_THROW(psnr({a.data(), 4, 4, 3}, {b.data(), 4, 5, 3}), Error);
    EXPECT_THROW(ssim({a.data(), 4, 4, 3}, {b.data(), 4, 5, 3}), Error);
}

} // namespace
} // namespace vkml::samples
