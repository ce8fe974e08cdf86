#include "common/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "vkml/error.hpp"

namespace vkml::samples {

namespace {

void check_pair(const ImageView8& a, const ImageView8& b, const char* what) {
    auto bad = [](const ImageView8& v) {
        return !v.pixels || v.width <= 0 || v.height <= 0 || (v.channels != 3 && v.channels != 4);
    };
    if (bad(a) || bad(b))
        throw Error(ErrorCode::InvalidArgument, std::string(what) + ": empty image or channels not 3 or 4");
    if (a.width != b.width || a.height != b.height)
        throw Error(ErrorCode::InvalidArgument, std::string(what) + ": images differ in size (" +
                                                    std::to_string(a.width) + "x" + std::to_string(a.height) +
                                                    " vs " + std::to_string(b.width) + "x" +
                                                    std::to_string(b.height) + ")");
}

std::vector<double> luma(const ImageView8& v) {
    std::vector<double> y(size_t(v.width) * v.height);
    for (size_t i = 0; i < y.size(); ++i) {
        const uint8_t* p = v.pixels + i * v.channels;
        y[i] = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
    }
    return y;
}

} // namespace

double mse(const ImageView8& a, const ImageView8& b) {
    check_pair(a, b, "mse");
    const size_t n = size_t(a.width) * a.height;
    double sum = 0;
    for (size_t i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c) {
            const double d = double(a.pixels[i * a.channels + c]) - double(b.pixels[i * b.channels + c]);
            sum += d * d;
        }
    return sum / double(3 * n);
}

double psnr(const ImageView8& a, const ImageView8& b) {
    const double e = mse(a, b);
    if (e == 0) return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(255.0 * 255.0 / e);
}

double ssim(const ImageView8& a, const ImageView8& b) {
    check_pair(a, b, "ssim");
    const std::vector<double> ya = luma(a), yb = luma(b);
    const int win_w = std::min(8, a.width), win_h = std::min(8, a.height);
    const double c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255);
    double total = 0;
    int windows = 0;
    // Window origins every 4 pixels, plus one flush with the far edge so every pixel is covered.
    auto origins = [](int size, int win) {
        std::vector<int> o;
        for (int p = 0; p + win <= size; p += 4) o.push_back(p);
        if (o.back() != size - win) o.push_back(size - win);
        return o;
    };
    for (int y0 : origins(a.height, win_h))
        for (int x0 : origins(a.width, win_w)) {
            double ma = 0, mb = 0;
            for (int y = y0; y < y0 + win_h; ++y)
                for (int x = x0; x < x0 + win_w; ++x) {
                    ma += ya[size_t(y) * a.width + x];
                    mb += yb[size_t(y) * a.width + x];
                }
            const double n = double(win_w) * win_h;
            ma /= n;
            mb /= n;
            double va = 0, vb = 0, cov = 0;
            for (int y = y0; y < y0 + win_h; ++y)
                for (int x = x0; x < x0 + win_w; ++x) {
                    const double da = ya[size_t(y) * a.width + x] - ma, db = yb[size_t(y) * a.width + x] - mb;
                    va += da * da;
                    vb += db * db;
                    cov += da * db;
                }
            va /= n;
            vb /= n;
            cov /= n;
            total += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2));
            ++windows;
        }
    return total / windows;
}

} // namespace vkml::samples
