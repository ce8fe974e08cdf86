#include "ref/norm_ref.hpp"

#include <algorithm>
#include <cmath>

namespace vkml::test::ref_norm {

double activate(const ops::Activation& act, double x) {
    const double a = act.alpha, b = act.beta;
    switch (act.kind) {
    case ops::ActivationKind::None:
        return x;
    case ops::ActivationKind::Relu:
        return x > 0 ? x : 0;
    case ops::ActivationKind::LeakyRelu:
        return x >= 0 ? x : a * x;
    case ops::ActivationKind::Clip:
        return std::min(std::max(x, a), b);
    case ops::ActivationKind::Sigmoid:
        return 1 / (1 + std::exp(-x));
    case ops::ActivationKind::HardSigmoid:
        return std::min(1.0, std::max(0.0, a * x + b));
    case ops::ActivationKind::HardSwish:
        return x * std::min(1.0, std::max(0.0, x / 6 + 0.5));
    case ops::ActivationKind::Tanh:
        return std::tanh(x);
    case ops::ActivationKind::Silu:
        return x / (1 + std::exp(-x));
    case ops::ActivationKind::Gelu:
        return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case ops::ActivationKind::Elu:
        return x >= 0 ? x : a * (std::exp(x) - 1);
    case ops::ActivationKind::Mish:
        return x * std::tanh(std::log1p(std::exp(x)));
    }
    return x;
}

namespace {

int64_t product(const gpu::Shape& s, size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t i = begin; i < end; ++i) p *= s[i];
    return p;
}

struct MeanVar {
    double mean = 0, var = 0;
};
// Two passes: the mean, then the mean squared deviation (population variance, as ONNX).
template <class At>
MeanVar mean_var(int64_t count, At at) {
    MeanVar r;
    for (int64_t i = 0; i < count; ++i) r.mean += at(i);
    r.mean /= double(count);
    for (int64_t i = 0; i < count; ++i) r.var += (at(i) - r.mean) * (at(i) - r.mean);
    r.var /= double(count);
    return r;
}

// Index into `param` (broadcast unidirectionally to `shape`) of the element of `shape` at `flat`.
size_t broadcast_index(const gpu::Shape& shape, const gpu::Shape& param, int64_t flat) {
    const auto xs = strides_of(shape);
    const auto ps = strides_of(param);
    const size_t lead = shape.rank() - param.rank();
    int64_t index = 0;
    for (size_t d = 0; d < shape.rank(); ++d) {
        const int64_t coord = flat / xs[d] % shape[d];
        if (d >= lead && param[d - lead] != 1) index += coord * ps[d - lead];
    }
    return size_t(index);
}

} // namespace

HostTensor batch_norm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias,
                      const HostTensor& mean, const HostTensor& var, float epsilon,
                      const ops::Activation& act) {
    HostTensor y(x.shape(), x.desc.dtype);
    const int64_t n = x.shape()[0], c = x.shape()[1], inner = product(x.shape(), 2, x.shape().rank());
    for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t k = 0; k < inner; ++k) {
                const size_t at = size_t((i * c + ch) * inner + k);
                const double v = (x[at] - mean[size_t(ch)]) / std::sqrt(var[size_t(ch)] + double(epsilon)) *
                                     scale[size_t(ch)] +
                                 bias[size_t(ch)];
                y[at] = activate(act, v);
            }
    return y;
}

HostTensor instance_norm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias, float epsilon,
                         const ops::Activation& act) {
    HostTensor y(x.shape(), x.desc.dtype);
    const int64_t n = x.shape()[0], c = x.shape()[1], inner = product(x.shape(), 2, x.shape().rank());
    for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < c; ++ch) {
            const size_t base = size_t((i * c + ch) * inner);
            const MeanVar mv = mean_var(inner, [&](int64_t k) { return x[base + size_t(k)]; });
            for (int64_t k = 0; k < inner; ++k) {
                const double v = (x[base + size_t(k)] - mv.mean) / std::sqrt(mv.var + double(epsilon));
                y[base + size_t(k)] = activate(act, v * scale[size_t(ch)] + bias[size_t(ch)]);
            }
        }
    return y;
}

LayerNormResult layer_norm(const HostTensor& x, const HostTensor& scale, const HostTensor* bias, int64_t axis,
                           float epsilon, const ops::Activation& act) {
    const gpu::Shape& shape = x.shape();
    const size_t ax = size_t(axis < 0 ? axis + int64_t(shape.rank()) : axis);
    gpu::Shape stats_shape = shape;
    for (size_t d = ax; d < shape.rank(); ++d) stats_shape[d] = 1;
    LayerNormResult r{HostTensor(shape, x.desc.dtype), HostTensor(stats_shape, gpu::DType::f32),
                      HostTensor(stats_shape, gpu::DType::f32)};
    const int64_t rows = product(shape, 0, ax), m = product(shape, ax, shape.rank());
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t base = row * m;
        const MeanVar mv = mean_var(m, [&](int64_t k) { return x[size_t(base + k)]; });
        const double inv = 1 / std::sqrt(mv.var + double(epsilon));
        r.mean[size_t(row)] = mv.mean;
        r.inv_std_dev[size_t(row)] = inv;
        for (int64_t k = 0; k < m; ++k) {
            const int64_t at = base + k;
            double v = (x[size_t(at)] - mv.mean) * inv * scale[broadcast_index(shape, scale.shape(), at)];
            if (bias) v += (*bias)[broadcast_index(shape, bias->shape(), at)];
            r.y[size_t(at)] = activate(act, v);
        }
    }
    return r;
}

HostTensor group_norm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias,
                      int64_t num_groups, float epsilon, const ops::Activation& act) {
    HostTensor y(x.shape(), x.desc.dtype);
    const int64_t n = x.shape()[0], c = x.shape()[1], inner = product(x.shape(), 2, x.shape().rank());
    const int64_t per_group = c / num_groups;
    const bool per_channel = int64_t(scale.size()) == c;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t g = 0; g < num_groups; ++g) {
            const int64_t base = (i * c + g * per_group) * inner, count = per_group * inner;
            const MeanVar mv = mean_var(count, [&](int64_t k) { return x[size_t(base + k)]; });
            for (int64_t k = 0; k < count; ++k) {
                const size_t p = size_t(per_channel ? g * per_group + k / inner : g);
                const double v = (x[size_t(base + k)] - mv.mean) / std::sqrt(mv.var + double(epsilon));
                y[size_t(base + k)] = activate(act, v * scale[p] + bias[p]);
            }
        }
    return y;
}

HostTensor lrn(const HostTensor& x, float alpha, float beta, float bias, int64_t size) {
    HostTensor y(x.shape(), x.desc.dtype);
    const int64_t n = x.shape()[0], c = x.shape()[1], inner = product(x.shape(), 2, x.shape().rank());
    for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t k = 0; k < inner; ++k) {
                // ONNX: channels max(0, c - floor((size-1)/2)) .. min(C-1, c + ceil((size-1)/2)).
                const int64_t lo = std::max<int64_t>(0, ch - (size - 1) / 2);
                const int64_t hi = std::min<int64_t>(c - 1, ch + int64_t(std::ceil(double(size - 1) / 2)));
                double sum = 0;
                for (int64_t j = lo; j <= hi; ++j) {
                    const double v = x[size_t((i * c + j) * inner + k)];
                    sum += v * v;
                }
                const size_t at = size_t((i * c + ch) * inner + k);
                y[at] = x[at] / std::pow(double(bias) + double(alpha) / double(size) * sum, double(beta));
            }
    return y;
}

} // namespace vkml::test::ref_norm
