#include "ref/reduce_ref.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace vkml::test::ref_reduce {

namespace {

std::vector<int64_t> coords_of(int64_t flat, const gpu::Shape& shape) {
    std::vector<int64_t> c(shape.rank());
    for (size_t i = shape.rank(); i-- > 0;) {
        c[i] = flat % shape[i];
        flat /= shape[i];
    }
    return c;
}

int64_t flat_of(const std::vector<int64_t>& coords, const gpu::Shape& shape) {
    int64_t f = 0;
    for (size_t i = 0; i < shape.rank(); ++i) f = f * shape[i] + coords[i];
    return f;
}

size_t wrap_axis(int64_t axis, size_t rank) {
    return size_t(axis < 0 ? axis + int64_t(rank) : axis);
}

double apply(ops::ReduceKind kind, const std::vector<double>& v) {
    double acc = 0;
    switch (kind) {
    case ops::ReduceKind::Sum:
        for (double x : v) acc += x;
        return acc;
    case ops::ReduceKind::Mean:
        for (double x : v) acc += x;
        return acc / double(v.size());
    case ops::ReduceKind::Max:
        return *std::max_element(v.begin(), v.end());
    case ops::ReduceKind::Min:
        return *std::min_element(v.begin(), v.end());
    case ops::ReduceKind::Prod:
        acc = 1;
        for (double x : v) acc *= x;
        return acc;
    case ops::ReduceKind::L1:
        for (double x : v) acc += std::fabs(x);
        return acc;
    case ops::ReduceKind::L2:
        for (double x : v) acc += x * x;
        return std::sqrt(acc);
    case ops::ReduceKind::LogSumExp: {
        const double m = *std::max_element(v.begin(), v.end());
        for (double x : v) acc += std::exp(x - m);
        return m + std::log(acc);
    }
    case ops::ReduceKind::SumSquare:
        for (double x : v) acc += x * x;
        return acc;
    case ops::ReduceKind::LogSum:
        for (double x : v) acc += x;
        return std::log(acc);
    }
    throw std::logic_error("unknown reduce kind");
}

// Gathers the values of `x` per output of a reduction over the dimensions flagged in `reduced`.
std::vector<std::vector<double>> gather(const HostTensor& x, const std::vector<bool>& reduced,
                                        gpu::Shape& kept) {
    std::vector<int64_t> kept_dims;
    for (size_t i = 0; i < x.shape().rank(); ++i) kept_dims.push_back(reduced[i] ? 1 : x.shape()[i]);
    kept = gpu::Shape(std::span<const int64_t>(kept_dims));
    std::vector<std::vector<double>> groups(size_t(kept.elements()));
    for (int64_t i = 0; i < int64_t(x.size()); ++i) {
        auto c = coords_of(i, x.shape());
        for (size_t d = 0; d < c.size(); ++d)
            if (reduced[d]) c[d] = 0;
        groups[size_t(flat_of(c, kept))].push_back(x[size_t(i)]);
    }
    return groups;
}

} // namespace

HostTensor reduce(ops::ReduceKind kind, const HostTensor& x, const std::vector<int64_t>& axes, bool keepdims,
                  bool noop_with_empty_axes) {
    const size_t rank = x.shape().rank();
    std::vector<bool> reduced(rank, axes.empty() && !noop_with_empty_axes);
    for (int64_t a : axes) reduced[wrap_axis(a, rank)] = true;
    gpu::Shape kept;
    const auto groups = gather(x, reduced, kept);
    std::vector<int64_t> out_dims;
    for (size_t i = 0; i < rank; ++i)
        if (!reduced[i] || keepdims) out_dims.push_back(kept[i]);
    HostTensor out(gpu::Shape(std::span<const int64_t>(out_dims)), x.desc.dtype);
    for (size_t o = 0; o < groups.size(); ++o) out[o] = apply(kind, groups[o]);
    return out;
}

HostTensor global_pool(ops::GlobalPoolKind kind, const HostTensor& x, int64_t p) {
    std::vector<bool> reduced(x.shape().rank(), true);
    reduced[0] = reduced[1] = false;
    gpu::Shape kept;
    const auto groups = gather(x, reduced, kept);
    HostTensor out(kept, x.desc.dtype);
    for (size_t o = 0; o < groups.size(); ++o) {
        const auto& v = groups[o];
        if (kind == ops::GlobalPoolKind::Average) {
            out[o] = apply(ops::ReduceKind::Mean, v);
        } else if (kind == ops::GlobalPoolKind::Max) {
            out[o] = apply(ops::ReduceKind::Max, v);
        } else {
            double s = 0;
            for (double e : v) s += std::pow(std::fabs(e), double(p));
            out[o] = std::pow(s, 1.0 / double(p));
        }
    }
    return out;
}

HostTensor arg_reduce(bool is_min, const HostTensor& x, int64_t axis_in, bool keepdims, bool select_last,
                      gpu::DType index_dtype) {
    const size_t axis = wrap_axis(axis_in, x.shape().rank());
    std::vector<bool> reduced(x.shape().rank(), false);
    reduced[axis] = true;
    gpu::Shape kept;
    const auto groups = gather(x, reduced, kept); // each group is in axis order
    std::vector<int64_t> out_dims;
    for (size_t i = 0; i < kept.rank(); ++i)
        if (i != axis || keepdims) out_dims.push_back(kept[i]);
    HostTensor out(gpu::Shape(std::span<const int64_t>(out_dims)), index_dtype);
    for (size_t o = 0; o < groups.size(); ++o) {
        const auto& v = groups[o];
        size_t best = 0;
        for (size_t j = 1; j < v.size(); ++j) {
            const bool strictly = is_min ? v[j] < v[best] : v[j] > v[best];
            if (strictly || (select_last && v[j] == v[best])) best = j;
        }
        out[o] = double(best);
    }
    return out;
}

std::pair<HostTensor, HostTensor> topk(const HostTensor& x, int64_t k, int64_t axis_in, bool largest,
                                       gpu::DType index_dtype) {
    const size_t axis = wrap_axis(axis_in, x.shape().rank());
    gpu::Shape out_shape = x.shape();
    out_shape[axis] = k;
    HostTensor values(out_shape, x.desc.dtype), indices(out_shape, index_dtype);
    const int64_t n = x.shape()[axis];
    // Walk the rows: every input coordinate with coordinate 0 on the axis starts one.
    for (int64_t i = 0; i < int64_t(x.size()); ++i) {
        auto c = coords_of(i, x.shape());
        if (c[axis] != 0) continue;
        std::vector<double> row(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) {
            c[axis] = j;
            row[size_t(j)] = x[size_t(flat_of(c, x.shape()))];
        }
        std::vector<int64_t> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        // stable: equal values keep index order, ONNX's tie rule.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return largest ? row[size_t(a)] > row[size_t(b)] : row[size_t(a)] < row[size_t(b)];
        });
        for (int64_t j = 0; j < k; ++j) {
            c[axis] = j;
            const auto o = size_t(flat_of(c, out_shape));
            values[o] = row[size_t(order[size_t(j)])];
            indices[o] = double(order[size_t(j)]);
        }
    }
    return {values, indices};
}

HostTensor cumsum(const HostTensor& x, int64_t axis_in, bool exclusive, bool reverse) {
    const size_t axis = wrap_axis(axis_in, x.shape().rank());
    HostTensor out(x.shape(), x.desc.dtype);
    const int64_t n = x.shape()[axis];
    int64_t inner = 1;
    for (size_t k = axis + 1; k < x.shape().rank(); ++k) inner *= x.shape()[k];
    const int64_t outer = x.shape().elements() / (n * inner);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            double s = 0;
            for (int64_t k = 0; k < n; ++k) {
                const int64_t j = reverse ? n - 1 - k : k;
                const size_t at = size_t((o * n + j) * inner + i);
                if (exclusive) {
                    out[at] = s;
                    s += x[at];
                } else {
                    s += x[at];
                    out[at] = s;
                }
            }
        }
    return out;
}

HostTensor hardmax(const HostTensor& x, int64_t axis_in) {
    const size_t axis = wrap_axis(axis_in, x.shape().rank());
    HostTensor out(x.shape(), x.desc.dtype);
    const int64_t n = x.shape()[axis];
    int64_t inner = 1;
    for (size_t k = axis + 1; k < x.shape().rank(); ++k) inner *= x.shape()[k];
    const int64_t outer = x.shape().elements() / (n * inner);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            int64_t best = 0;
            for (int64_t j = 1; j < n; ++j)
                if (x[size_t((o * n + j) * inner + i)] > x[size_t((o * n + best) * inner + i)]) best = j;
            out[size_t((o * n + best) * inner + i)] = 1;
        }
    return out;
}

HostTensor softmax(const HostTensor& x, int64_t axis_in, bool log) {
    const size_t axis = wrap_axis(axis_in, x.shape().rank());
    HostTensor out(x.shape(), x.desc.dtype);
    const int64_t n = x.shape()[axis];
    for (int64_t i = 0; i < int64_t(x.size()); ++i) {
        auto c = coords_of(i, x.shape());
        if (c[axis] != 0) continue;
        std::vector<size_t> at(static_cast<size_t>(n));
        double m = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
            c[axis] = j;
            at[size_t(j)] = size_t(flat_of(c, x.shape()));
            m = std::max(m, x[at[size_t(j)]]);
        }
        double s = 0;
        for (size_t f : at) s += std::exp(x[f] - m);
        for (size_t f : at) out[f] = log ? x[f] - m - std::log(s) : std::exp(x[f] - m) / s;
    }
    return out;
}

std::pair<HostTensor, HostTensor> pool(PoolKind kind, const HostTensor& x, const PoolArgs& a) {
    const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t in[2] = {H, W};
    int64_t begin[2], end[2], out[2];
    for (int d = 0; d < 2; ++d) {
        const double extent = double((a.kernel[d] - 1) * a.dilations[d] + 1);
        const double s = double(a.strides[d]);
        if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
            out[d] = int64_t(std::ceil(double(in[d]) / s));
            const int64_t total = std::max<int64_t>(0, int64_t(double(out[d] - 1) * s + extent) - in[d]);
            begin[d] = a.auto_pad == "SAME_UPPER" ? int64_t(std::floor(total / 2.0))
                                                  : int64_t(std::ceil(total / 2.0));
            end[d] = total - begin[d];
            continue;
        }
        begin[d] = a.auto_pad == "VALID" ? 0 : a.pads[d];
        end[d] = a.auto_pad == "VALID" ? 0 : a.pads[d + 2];
        const double size = (double(in[d] + begin[d] + end[d]) - extent) / s + 1;
        out[d] = int64_t(a.ceil_mode ? std::ceil(size) : std::floor(size));
        if (a.ceil_mode && (out[d] - 1) * a.strides[d] >= in[d] + begin[d]) --out[d];
    }
    const gpu::Shape out_shape{N, C, out[0], out[1]};
    HostTensor values(out_shape, x.desc.dtype);
    HostTensor indices = kind == PoolKind::Max ? HostTensor(out_shape, gpu::DType::i64) : HostTensor();
    size_t o = 0;
    for (int64_t nc = 0; nc < N * C; ++nc) {
        for (int64_t oy = 0; oy < out[0]; ++oy) {
            for (int64_t ox = 0; ox < out[1]; ++ox, ++o) {
                double acc = kind == PoolKind::Max ? -INFINITY : 0.0;
                int64_t best = 0, count = 0;
                for (int64_t ky = 0; ky < a.kernel[0]; ++ky) {
                    const int64_t y = oy * a.strides[0] - begin[0] + ky * a.dilations[0];
                    for (int64_t kx = 0; kx < a.kernel[1]; ++kx) {
                        const int64_t xx = ox * a.strides[1] - begin[1] + kx * a.dilations[1];
                        const bool inside = y >= 0 && y < H && xx >= 0 && xx < W;
                        const bool in_padding = y < H + end[0] && xx < W + end[1];
                        if (a.count_include_pad ? in_padding : inside) ++count;
                        if (!inside) continue;
                        const double v = x[size_t((nc * H + y) * W + xx)];
                        if (kind == PoolKind::Max) {
                            if (v > acc) {
                                acc = v;
                                best = a.storage_order == 0 ? (nc * H + y) * W + xx : nc * H * W + xx * H + y;
                            }
                        } else if (kind == PoolKind::Average) {
                            acc += v;
                        } else {
                            acc += std::pow(std::fabs(v), double(a.p));
                        }
                    }
                }
                if (kind == PoolKind::Average) acc /= double(count);
                if (kind == PoolKind::Lp) acc = std::pow(acc, 1.0 / double(a.p));
                values[o] = acc;
                if (kind == PoolKind::Max) indices[o] = double(best);
            }
        }
    }
    return {values, indices};
}

HostTensor distinct_rows(const gpu::Shape& shape, int64_t axis_in, gpu::DType dtype, uint32_t seed) {
    const size_t axis = wrap_axis(axis_in, shape.rank());
    const int64_t n = shape[axis];
    if (dtype == gpu::DType::f16 && n > 4096)
        throw std::invalid_argument("distinct_rows: f16 rows hold <= 4096 values");
    // Nonzero integers in [-half, half], scaled by 1/512: exact in f16 while |integer| <= 2048.
    const int64_t half = dtype == gpu::DType::f16 ? 2048 : std::max<int64_t>(2048, 2 * n);
    std::vector<int64_t> pool;
    for (int64_t v = -half; v <= half; ++v)
        if (v != 0) pool.push_back(v);
    std::mt19937 rng(seed * 2246822519u + 5);
    HostTensor t(shape, dtype);
    for (int64_t i = 0; i < int64_t(t.size()); ++i) {
        auto c = coords_of(i, shape);
        if (c[axis] != 0) continue;
        // A partial Fisher-Yates shuffle draws n distinct pool entries.
        for (int64_t j = 0; j < n; ++j) {
            std::uniform_int_distribution<size_t> pick(size_t(j), pool.size() - 1);
            std::swap(pool[size_t(j)], pool[pick(rng)]);
            c[axis] = j;
            t[size_t(flat_of(c, shape))] = double(pool[size_t(j)]) / 512.0;
        }
    }
    return t;
}

} // namespace vkml::test::ref_reduce
