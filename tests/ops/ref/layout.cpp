#include "ref/layout.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vkml::test::ref_layout {

std::vector<int64_t> unravel(int64_t flat, const gpu::Shape& shape) {
    std::vector<int64_t> idx(shape.rank());
    for (size_t i = shape.rank(); i-- > 0;) {
        idx[i] = flat % shape[i];
        flat /= shape[i];
    }
    return idx;
}

int64_t ravel(const std::vector<int64_t>& index, const gpu::Shape& shape) {
    int64_t flat = 0;
    for (size_t i = 0; i < shape.rank(); ++i) flat = flat * shape[i] + index[i];
    return flat;
}

gpu::Shape shape_of(const std::vector<int64_t>& dims) {
    return gpu::Shape(std::span<const int64_t>(dims));
}

namespace {
size_t axis_of(int64_t axis, size_t rank) {
    return size_t(axis < 0 ? axis + int64_t(rank) : axis);
}
} // namespace

HostTensor transpose(const HostTensor& x, const std::vector<int64_t>& perm) {
    std::vector<int64_t> dims;
    for (int64_t p : perm) dims.push_back(x.shape()[size_t(p)]);
    HostTensor y(shape_of(dims), x.desc.dtype);
    for (int64_t o = 0; o < int64_t(y.size()); ++o) {
        const auto oi = unravel(o, y.shape());
        std::vector<int64_t> ii(perm.size());
        for (size_t k = 0; k < perm.size(); ++k) ii[size_t(perm[k])] = oi[k];
        y[size_t(o)] = x[size_t(ravel(ii, x.shape()))];
    }
    return y;
}

HostTensor slice(const HostTensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
    const size_t r = x.shape().rank();
    // The input coordinates each output coordinate takes, per axis.
    std::vector<std::vector<int64_t>> picks(r);
    for (size_t a = 0; a < r; ++a)
        for (int64_t i = 0; i < x.shape()[a]; ++i) picks[a].push_back(i);
    for (size_t i = 0; i < starts.size(); ++i) {
        const size_t a = axes.empty() ? i : axis_of(axes[i], r);
        const int64_t n = x.shape()[a];
        const int64_t step = steps.empty() ? 1 : steps[i];
        double s = double(starts[i]), e = double(ends[i]);
        if (s < 0) s += double(n);
        if (e < 0) e += double(n);
        picks[a].clear();
        if (step > 0) {
            s = std::clamp(s, 0.0, double(n));
            e = std::clamp(e, 0.0, double(n));
            for (int64_t k = int64_t(s); k < int64_t(e); k += step) picks[a].push_back(k);
        } else {
            s = std::clamp(s, 0.0, double(n - 1));
            e = std::clamp(e, -1.0, double(n - 1));
            for (int64_t k = int64_t(s); k > int64_t(e); k += step) picks[a].push_back(k);
        }
    }
    std::vector<int64_t> dims;
    for (const auto& p : picks) dims.push_back(int64_t(p.size()));
    HostTensor y(shape_of(dims), x.desc.dtype);
    for (int64_t o = 0; o < int64_t(y.size()); ++o) {
        auto idx = unravel(o, y.shape());
        for (size_t a = 0; a < r; ++a) idx[a] = picks[a][size_t(idx[a])];
        y[size_t(o)] = x[size_t(ravel(idx, x.shape()))];
    }
    return y;
}

HostTensor concat(const std::vector<HostTensor>& xs, int64_t axis) {
    const size_t a = axis_of(axis, xs[0].shape().rank());
    std::vector<int64_t> dims(xs[0].shape().dims().begin(), xs[0].shape().dims().end());
    dims[a] = 0;
    for (const auto& x : xs) dims[a] += x.shape()[a];
    HostTensor y(shape_of(dims), xs[0].desc.dtype);
    int64_t offset = 0;
    for (const auto& x : xs) {
        for (int64_t i = 0; i < int64_t(x.size()); ++i) {
            auto idx = unravel(i, x.shape());
            idx[a] += offset;
            y[size_t(ravel(idx, y.shape()))] = x[size_t(i)];
        }
        offset += x.shape()[a];
    }
    return y;
}

std::vector<HostTensor> split(const HostTensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
    const size_t a = axis_of(axis, x.shape().rank());
    std::vector<HostTensor> ys;
    int64_t offset = 0;
    for (int64_t s : sizes) {
        std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
        dims[a] = s;
        HostTensor y(shape_of(dims), x.desc.dtype);
        for (int64_t o = 0; o < int64_t(y.size()); ++o) {
            auto idx = unravel(o, y.shape());
            idx[a] += offset;
            y[size_t(o)] = x[size_t(ravel(idx, x.shape()))];
        }
        ys.push_back(std::move(y));
        offset += s;
    }
    return ys;
}

HostTensor pad(const HostTensor& x, const std::vector<int64_t>& pads, const std::string& mode, double value) {
    // As ONNX's reference: crop for the negative pads first, then pad the rest like numpy.pad.
    const size_t r = x.shape().rank();
    std::vector<int64_t> starts, ends;
    for (size_t a = 0; a < r; ++a) {
        starts.push_back(std::max<int64_t>(-pads[a], 0));
        ends.push_back(x.shape()[a] - std::max<int64_t>(-pads[a + r], 0));
    }
    const HostTensor c = slice(x, starts, ends, {}, {});
    std::vector<int64_t> dims;
    for (size_t a = 0; a < r; ++a)
        dims.push_back(c.shape()[a] + std::max<int64_t>(pads[a], 0) + std::max<int64_t>(pads[a + r], 0));
    HostTensor y(shape_of(dims), x.desc.dtype);
    for (int64_t o = 0; o < int64_t(y.size()); ++o) {
        auto idx = unravel(o, y.shape());
        bool inside = true;
        for (size_t a = 0; a < r; ++a) {
            const int64_t n = c.shape()[a];
            int64_t i = idx[a] - std::max<int64_t>(pads[a], 0);
            if (i >= 0 && i < n) {
                idx[a] = i;
                continue;
            }
            if (mode == "constant") {
                inside = false;
            } else if (mode == "edge") {
                i = std::clamp<int64_t>(i, 0, n - 1);
            } else if (mode == "reflect") {
                // Reflect about the end elements (not repeating them) until inside.
                while (n > 1 && (i < 0 || i >= n)) i = i < 0 ? -i : 2 * (n - 1) - i;
                if (n == 1) i = 0;
            } else if (mode == "wrap") {
                while (i < 0) i += n;
                while (i >= n) i -= n;
            } else {
                throw std::invalid_argument("ref pad: mode " + mode);
            }
            idx[a] = i;
        }
        y[size_t(o)] = inside ? c[size_t(ravel(idx, c.shape()))] : round_to(value, x.desc.dtype);
    }
    return y;
}

HostTensor gather(const HostTensor& data, const HostTensor& indices, int64_t axis) {
    const size_t r = data.shape().rank();
    const size_t a = axis_of(axis, r);
    const size_t q = indices.shape().rank();
    std::vector<int64_t> dims;
    for (size_t i = 0; i < a; ++i) dims.push_back(data.shape()[i]);
    for (int64_t d : indices.shape().dims()) dims.push_back(d);
    for (size_t i = a + 1; i < r; ++i) dims.push_back(data.shape()[i]);
    HostTensor y(shape_of(dims), data.desc.dtype);
    for (int64_t o = 0; o < int64_t(y.size()); ++o) {
        const auto oi = unravel(o, y.shape());
        const std::vector<int64_t> ji(oi.begin() + ptrdiff_t(a), oi.begin() + ptrdiff_t(a + q));
        int64_t k = int64_t(indices[size_t(ravel(ji, indices.shape()))]);
        if (k < 0) k += data.shape()[a];
        std::vector<int64_t> di(oi.begin(), oi.begin() + ptrdiff_t(a));
        di.push_back(k);
        di.insert(di.end(), oi.begin() + ptrdiff_t(a + q), oi.end());
        y[size_t(o)] = data[size_t(ravel(di, data.shape()))];
    }
    return y;
}

HostTensor gather_elements(const HostTensor& data, const HostTensor& indices, int64_t axis) {
    const size_t a = axis_of(axis, data.shape().rank());
    HostTensor y(indices.shape(), data.desc.dtype);
    for (int64_t o = 0; o < int64_t(y.size()); ++o) {
        auto idx = unravel(o, y.shape());
        int64_t k = int64_t(indices[size_t(o)]);
        if (k < 0) k += data.shape()[a];
        idx[a] = k;
        y[size_t(o)] = data[size_t(ravel(idx, data.shape()))];
    }
    return y;
}

HostTensor expand(const HostTensor& x, const std::vector<int64_t>& shape) {
    const size_t r = std::max(x.shape().rank(), shape.size());
    std::vector<int64_t> xd(r, 1), sd(r, 1), dims(r);
    std::copy(x.shape().dims().begin(), x.shape().dims().end(), xd.end() - ptrdiff_t(x.shape().rank()));
    std::copy(shape.begin(), shape.end(), sd.end() - ptrdiff_t(shape.size()));
    for (size_t i = 0; i < r; ++i) dims[i] = xd[i] == 1 ? sd[i] : xd[i];
    HostTensor y(shape_of(dims), x.desc.dtype);
    const gpu::Shape xs = shape_of(xd);
    for (int64_t o = 0; o < int64_t(y.size()); ++o) {
        auto idx = unravel(o, y.shape());
        for (size_t i = 0; i < r; ++i)
            if (xd[i] == 1) idx[i] = 0;
        y[size_t(o)] = x[size_t(ravel(idx, xs))];
    }
    return y;
}

HostTensor tile(const HostTensor& x, const std::vector<int64_t>& repeats) {
    std::vector<int64_t> dims;
    for (size_t i = 0; i < repeats.size(); ++i) dims.push_back(x.shape()[i] * repeats[i]);
    HostTensor y(shape_of(dims), x.desc.dtype);
    for (int64_t o = 0; o < int64_t(y.size()); ++o) {
        auto idx = unravel(o, y.shape());
        for (size_t i = 0; i < idx.size(); ++i) idx[i] %= x.shape()[i];
        y[size_t(o)] = x[size_t(ravel(idx, x.shape()))];
    }
    return y;
}

HostTensor depth_to_space(const HostTensor& x, int64_t b, const std::string& mode) {
    const auto& s = x.shape();
    const int64_t c = s[1] / (b * b);
    HostTensor y(gpu::Shape{s[0], c, s[2] * b, s[3] * b}, x.desc.dtype);
    for (int64_t n = 0; n < s[0]; ++n)
        for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t h = 0; h < s[2]; ++h)
                for (int64_t i = 0; i < b; ++i)
                    for (int64_t w = 0; w < s[3]; ++w)
                        for (int64_t j = 0; j < b; ++j) {
                            // DCR: depth is [b, b, C]; CRD: [C, b, b].
                            const int64_t src = mode == "DCR" ? (i * b + j) * c + ch : (ch * b + i) * b + j;
                            y[size_t(ravel({n, ch, h * b + i, w * b + j}, y.shape()))] =
                                x[size_t(ravel({n, src, h, w}, s))];
                        }
    return y;
}

HostTensor space_to_depth(const HostTensor& x, int64_t b) {
    const auto& s = x.shape();
    HostTensor y(gpu::Shape{s[0], s[1] * b * b, s[2] / b, s[3] / b}, x.desc.dtype);
    for (int64_t n = 0; n < s[0]; ++n)
        for (int64_t c = 0; c < s[1]; ++c)
            for (int64_t h = 0; h < s[2] / b; ++h)
                for (int64_t i = 0; i < b; ++i)
                    for (int64_t w = 0; w < s[3] / b; ++w)
                        for (int64_t j = 0; j < b; ++j)
                            y[size_t(ravel({n, (i * b + j) * s[1] + c, h, w}, y.shape()))] =
                                x[size_t(ravel({n, c, h * b + i, w * b + j}, s))];
    return y;
}

// ---- Resize -------------------------------------------------------------------------------------

namespace {

// The scale of one axis as an exact ratio num / den (scales: s / 1; sizes: out / in).
struct Scale {
    double num = 1, den = 1;
    double value() const { return num / den; }
};

// ONNX's cubic coefficients for the 4 taps around a point at fraction `ratio` past the second.
std::vector<double> cubic_coeffs(double ratio, double A) {
    return {((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A,
            ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
            ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1,
            ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) - 4 * A};
}

double spec_coord(const ResizeParams& p, double x, int64_t in, int64_t out, Scale s, double roi0,
                  double roi1) {
    const std::string& m = p.ctm;
    if (m == "half_pixel") return (x + 0.5) * s.den / s.num - 0.5;
    if (m == "half_pixel_symmetric") {
        const double output_width = double(in) * s.value(); // fractional when from a scale
        const double adjustment = double(out) / output_width;
        const double center = double(in) / 2;
        const double offset = center * (1 - adjustment);
        return offset + (x + 0.5) * s.den / s.num - 0.5;
    }
    if (m == "pytorch_half_pixel") return out > 1 ? (x + 0.5) * s.den / s.num - 0.5 : 0.0;
    // ONNX's reference divides by the resized length before rounding: in * scale (out for sizes).
    if (m == "align_corners") return out > 1 ? x * double(in - 1) / (double(in) * s.value() - 1) : 0.0;
    if (m == "tf_half_pixel_for_nn") return (x + 0.5) * s.den / s.num;
    if (m == "asymmetric") return x * s.den / s.num;
    if (m == "tf_crop_and_resize")
        return out > 1 ? roi0 * double(in - 1) + x * (roi1 - roi0) * double(in - 1) / double(out - 1)
                       : 0.5 * (roi0 + roi1) * double(in - 1);
    throw std::invalid_argument("ref resize: ctm " + m);
}

// The spec's formulas in double, except that a coordinate within 1e-9 of a multiple of 1/2 is
// taken as that multiple: the exact value is a ratio of small numbers, and double rounding must
// not decide floor, ceil or a tie.
double source_coord(const ResizeParams& p, double x, int64_t in, int64_t out, Scale s, double roi0,
                    double roi1) {
    const double c = spec_coord(p, x, in, out, s, roi0, roi1);
    const double half = std::round(2 * c) / 2;
    return std::fabs(c - half) < 1e-9 ? half : c;
}

int64_t nearest_index(const std::string& mode, double c) {
    const double f = std::floor(c);
    if (c == f) return int64_t(c);
    const double ratio = c - f;
    if (mode == "round_prefer_floor") return int64_t(ratio <= 0.5 ? f : f + 1);
    if (mode == "round_prefer_ceil") return int64_t(ratio < 0.5 ? f : f + 1);
    if (mode == "floor") return int64_t(f);
    if (mode == "ceil") return int64_t(f + 1);
    throw std::invalid_argument("ref resize: nearest_mode " + mode);
}

// Resamples axis `a` of x to `out` samples.
HostTensor resize_axis(const HostTensor& x, size_t a, int64_t out, Scale s, double roi0, double roi1,
                       const ResizeParams& p) {
    const int64_t in = x.shape()[a];
    std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    dims[a] = out;
    HostTensor y(shape_of(dims), x.desc.dtype);
    // Per output coordinate: extrapolate, or the taps (input index, weight) it sums.
    std::vector<bool> extrapolate(size_t(out), false);
    auto taps = std::vector<std::vector<std::pair<int64_t, double>>>(size_t(out));
    for (int64_t xo = 0; xo < out; ++xo) {
        const double c = source_coord(p, double(xo), in, out, s, roi0, roi1);
        extrapolate[size_t(xo)] = p.ctm == "tf_crop_and_resize" && (c < 0 || c > double(in - 1));
        auto& t = taps[size_t(xo)];
        if (p.mode == "nearest") {
            t.push_back({std::clamp<int64_t>(nearest_index(p.nearest_mode, c), 0, in - 1), 1.0});
            continue;
        }
        const int64_t f = int64_t(std::floor(c));
        const double ratio = c - double(f);
        std::vector<double> w;
        int64_t first = f;
        if (p.mode == "linear") {
            w = {1 - ratio, ratio};
        } else {
            w = cubic_coeffs(ratio, p.cubic_a);
            first = f - 1;
        }
        double sum = 0;
        for (size_t k = 0; k < w.size(); ++k) {
            const int64_t i = first + int64_t(k);
            if (p.exclude_outside && (i < 0 || i >= in)) w[k] = 0;
            sum += w[k];
        }
        for (size_t k = 0; k < w.size(); ++k)
            t.push_back(
                {std::clamp<int64_t>(first + int64_t(k), 0, in - 1), p.exclude_outside ? w[k] / sum : w[k]});
    }
    // Element strides along `a` in x and y, to walk the taps without unravelling twice.
    int64_t inner = 1;
    for (size_t i = a + 1; i < dims.size(); ++i) inner *= dims[i];
    for (int64_t o = 0; o < int64_t(y.size()); ++o) {
        const int64_t xo = (o / inner) % out;
        const int64_t outer = o / inner / out, e = o % inner;
        if (extrapolate[size_t(xo)]) {
            y[size_t(o)] = p.extrapolation;
            continue;
        }
        double v = 0;
        for (const auto& [i, w] : taps[size_t(xo)]) v += w * x[size_t((outer * in + i) * inner + e)];
        y[size_t(o)] = v;
    }
    return y;
}

} // namespace

HostTensor resize(const HostTensor& x, const ResizeParams& p) {
    const size_t r = x.shape().rank();
    std::vector<size_t> axes;
    for (int64_t a : p.axes) axes.push_back(axis_of(a, r));
    if (axes.empty())
        for (size_t i = 0; i < r; ++i) axes.push_back(i);
    const size_t n = axes.size();
    const bool crop = p.ctm == "tf_crop_and_resize";
    std::vector<Scale> scales(n);
    std::vector<int64_t> outs(n);
    for (size_t i = 0; i < n; ++i) {
        const int64_t in = x.shape()[axes[i]];
        const double roi0 = crop && !p.roi.empty() ? p.roi[i] : 0.0;
        const double roi1 = crop && !p.roi.empty() ? p.roi[i + n] : 1.0;
        if (!p.scales.empty()) {
            scales[i] = {p.scales[i], 1.0};
            outs[i] = int64_t(std::floor(double(in) * (roi1 - roi0) * p.scales[i]));
        } else if (p.policy == "stretch") {
            scales[i] = {double(p.sizes[i]), double(in)};
            outs[i] = p.sizes[i];
        } else {
            // One scale for all axes: the smallest (not_larger) or largest (not_smaller) ratio.
            Scale best{double(p.sizes[0]), double(x.shape()[axes[0]])};
            for (size_t k = 1; k < n; ++k) {
                const Scale s{double(p.sizes[k]), double(x.shape()[axes[k]])};
                if (p.policy == "not_larger" ? s.value() < best.value() : s.value() > best.value()) best = s;
            }
            scales[i] = best;
            outs[i] = int64_t(std::floor(best.value() * double(in) + 0.5));
        }
    }
    HostTensor y = x;
    for (size_t i = 0; i < n; ++i) {
        const double roi0 = crop && !p.roi.empty() ? p.roi[i] : 0.0;
        const double roi1 = crop && !p.roi.empty() ? p.roi[i + n] : 1.0;
        y = resize_axis(y, axes[i], outs[i], scales[i], roi0, roi1, p);
    }
    return y;
}

} // namespace vkml::test::ref_layout
