#include "ref/layout_index.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace vkml::test::ref_layout_index {

HostTensor trilu(const HostTensor& x, int64_t k, bool upper) {
    HostTensor y = x;
    const size_t r = x.shape().rank();
    const int64_t rows = x.shape()[r - 2], cols = x.shape()[r - 1];
    for (size_t e = 0; e < y.size(); ++e) {
        const int64_t j = int64_t(e) % cols, i = (int64_t(e) / cols) % rows;
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) y[e] = 0;
    }
    return y;
}

namespace {

std::vector<int64_t> unravel(int64_t flat, const gpu::Shape& s) {
    std::vector<int64_t> idx(s.rank());
    for (size_t k = s.rank(); k-- > 0;) {
        idx[k] = flat % s[k];
        flat /= s[k];
    }
    return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const gpu::Shape& s) {
    int64_t f = 0;
    for (size_t k = 0; k < s.rank(); ++k) f = f * s[k] + idx[k];
    return f;
}

double combine(double a, double b, const std::string& reduction) {
    if (reduction == "add") return a + b;
    if (reduction == "mul") return a * b;
    if (reduction == "max") return std::max(a, b);
    if (reduction == "min") return std::min(a, b);
    return b;
}

} // namespace

HostTensor scatter_elements(const HostTensor& data, const HostTensor& indices, const HostTensor& updates,
                            int64_t axis, const std::string& reduction) {
    HostTensor y = data;
    const int64_t len = data.shape()[size_t(axis)];
    for (size_t u = 0; u < updates.size(); ++u) {
        std::vector<int64_t> at = unravel(int64_t(u), updates.shape());
        int64_t k = int64_t(indices[u]);
        if (k < 0) k += len;
        if (k < 0 || k >= len) continue;
        at[size_t(axis)] = k;
        double& v = y[size_t(ravel(at, data.shape()))];
        v = combine(v, updates[u], reduction);
    }
    return y;
}

HostTensor scatter_nd(const HostTensor& data, const HostTensor& indices, const HostTensor& updates,
                      const std::string& reduction) {
    HostTensor y = data;
    const size_t q = size_t(indices.shape()[indices.shape().rank() - 1]);
    int64_t slice = 1;
    for (size_t k = q; k < data.shape().rank(); ++k) slice *= data.shape()[k];
    const size_t tuples = indices.size() / q;
    for (size_t t = 0; t < tuples; ++t) {
        std::vector<int64_t> at(data.shape().rank(), 0);
        bool ok = true;
        for (size_t m = 0; m < q; ++m) {
            int64_t c = int64_t(indices[t * q + m]);
            if (c < 0) c += data.shape()[m];
            ok &= c >= 0 && c < data.shape()[m];
            at[m] = c;
        }
        if (!ok) continue;
        const int64_t base = ravel(at, data.shape());
        for (int64_t s = 0; s < slice; ++s) {
            double& v = y[size_t(base + s)];
            v = combine(v, updates[size_t(int64_t(t) * slice + s)], reduction);
        }
    }
    return y;
}

HostTensor gather_nd(const HostTensor& data, const HostTensor& indices, int64_t batch_dims) {
    const gpu::Shape& ds = data.shape();
    const gpu::Shape& is = indices.shape();
    const size_t q = size_t(is[is.rank() - 1]), b = size_t(batch_dims);
    std::vector<int64_t> out(is.dims().begin(), is.dims().end() - 1);
    int64_t slice = 1;
    for (size_t k = b + q; k < ds.rank(); ++k) {
        out.push_back(ds[k]);
        slice *= ds[k];
    }
    HostTensor y(gpu::Shape{std::span<const int64_t>(out)}, data.desc.dtype);
    int64_t batches = 1;
    for (size_t k = 0; k < b; ++k) batches *= ds[k];
    const int64_t tuples = int64_t(indices.size() / q), per_batch = tuples / batches;
    for (int64_t t = 0; t < tuples; ++t) {
        std::vector<int64_t> at = unravel(t / per_batch, gpu::Shape{std::span<const int64_t>(ds.dims().data(), b)});
        bool ok = true;
        for (size_t m = 0; m < q; ++m) {
            int64_t c = int64_t(indices[size_t(t) * q + m]);
            if (c < 0) c += ds[b + m];
            ok &= c >= 0 && c < ds[b + m];
            at.push_back(c);
        }
        while (at.size() < ds.rank()) at.push_back(0);
        const int64_t base = ok ? ravel(at, ds) : 0;
        for (int64_t s = 0; s < slice; ++s) y[size_t(t * slice + s)] = ok ? data[size_t(base + s)] : 0.0;
    }
    return y;
}

namespace {

// Folds x into [lo, hi] as a mirror does, any number of times.
double mirror(double x, double lo, double hi) {
    const double range = hi - lo;
    if (range <= 0) return lo;
    double d = x < lo ? lo - x : x > hi ? x - hi : 0;
    if (d == 0) return x;
    const double n = std::floor(d / range), r = d - n * range;
    const bool even = std::fmod(n, 2.0) == 0;
    if (x < lo) return even ? lo + r : hi - r;
    return even ? hi - r : lo + r;
}

} // namespace

HostTensor grid_sample(const HostTensor& x, const HostTensor& grid, const std::string& mode, const std::string& padding,
                       bool align) {
    const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t Ho = grid.shape()[1], Wo = grid.shape()[2];
    HostTensor y(gpu::Shape{N, C, Ho, Wo}, x.desc.dtype);
    const double lox = align ? 0 : -0.5, hix = align ? double(W - 1) : double(W) - 0.5;
    const double loy = align ? 0 : -0.5, hiy = align ? double(H - 1) : double(H) - 0.5;
    for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
            auto px = [&](int64_t r, int64_t q) -> double {
                if (padding == "zeros") {
                    if (q < 0 || q >= W || r < 0 || r >= H) return 0;
                } else if (padding == "border") {
                    q = std::clamp<int64_t>(q, 0, W - 1);
                    r = std::clamp<int64_t>(r, 0, H - 1);
                } else {
                    q = std::clamp<int64_t>(int64_t(mirror(double(q), lox, hix)), 0, W - 1);
                    r = std::clamp<int64_t>(int64_t(mirror(double(r), loy, hiy)), 0, H - 1);
                }
                return x[size_t(((n * C + c) * H + r) * W + q)];
            };
            for (int64_t h = 0; h < Ho; ++h)
                for (int64_t w = 0; w < Wo; ++w) {
                    const size_t g = size_t(((n * Ho + h) * Wo + w) * 2);
                    double fx = align ? (grid[g] + 1) / 2 * double(W - 1) : ((grid[g] + 1) * double(W) - 1) / 2;
                    double fy = align ? (grid[g + 1] + 1) / 2 * double(H - 1) : ((grid[g + 1] + 1) * double(H) - 1) / 2;
                    if (padding == "reflection") {
                        fx = mirror(fx, lox, hix);
                        fy = mirror(fy, loy, hiy);
                    }
                    double v = 0;
                    if (mode == "nearest") {
                        v = px(int64_t(std::nearbyint(fy)), int64_t(std::nearbyint(fx)));
                    } else if (mode == "bilinear") {
                        const double x0 = std::floor(fx), y0 = std::floor(fy), ax = fx - x0, ay = fy - y0;
                        const auto ix = int64_t(x0), iy = int64_t(y0);
                        v = (1 - ay) * ((1 - ax) * px(iy, ix) + ax * px(iy, ix + 1)) +
                            ay * ((1 - ax) * px(iy + 1, ix) + ax * px(iy + 1, ix + 1));
                    } else {
                        auto kernel = [](double d) { // Keys' cubic, a = -0.75, at distance d
                            const double a = -0.75;
                            d = std::fabs(d);
                            if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
                            if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
                            return 0.0;
                        };
                        const double x0 = std::floor(fx), y0 = std::floor(fy);
                        for (int64_t i = -1; i <= 2; ++i)
                            for (int64_t j = -1; j <= 2; ++j)
                                v += kernel(fy - (y0 + double(i))) * kernel(fx - (x0 + double(j))) *
                                     px(int64_t(y0) + i, int64_t(x0) + j);
                    }
                    y[size_t(((n * C + c) * Ho + h) * Wo + w)] = v;
                }
        }
    return y;
}

HostTensor one_hot(const HostTensor& indices, int64_t depth, const HostTensor& values, int64_t axis) {
    const gpu::Shape& is = indices.shape();
    if (axis < 0) axis += int64_t(is.rank()) + 1;
    std::vector<int64_t> out(is.dims().begin(), is.dims().end());
    out.insert(out.begin() + axis, depth);
    const gpu::Shape os{std::span<const int64_t>(out)};
    HostTensor y(os, values.desc.dtype);
    for (size_t e = 0; e < y.size(); ++e) {
        std::vector<int64_t> at = unravel(int64_t(e), os);
        const int64_t j = at[size_t(axis)];
        at.erase(at.begin() + axis);
        int64_t k = int64_t(std::trunc(indices[size_t(ravel(at, is))]));
        if (k < 0) k += depth;
        y[e] = values[k == j ? 1 : 0];
    }
    return y;
}

} // namespace vkml::test::ref_layout_index
