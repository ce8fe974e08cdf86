#include "ref/conv_ref.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vkml::test::ref_conv {
namespace {

using Dims = std::vector<int64_t>;

// The multi-index of `flat` in a row-major array of shape `dims`.
Dims unflatten(int64_t flat, const Dims& dims) {
    Dims idx(dims.size());
    for (size_t i = dims.size(); i-- > 0;) {
        idx[i] = flat % dims[i];
        flat /= dims[i];
    }
    return idx;
}

int64_t product(const Dims& d) {
    int64_t p = 1;
    for (int64_t v : d) p *= v;
    return p;
}

Dims or_default(const Dims& v, size_t n, int64_t fallback) {
    return v.empty() ? Dims(n, fallback) : v;
}

int64_t floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

gpu::Shape make_shape(const Dims& d) {
    return gpu::Shape(std::span<const int64_t>(d));
}

Dims dims_of(const gpu::Shape& s) {
    return Dims(s.dims().begin(), s.dims().end());
}

} // namespace

HostTensor conv(const HostTensor& x, const HostTensor& w, const HostTensor* bias, const ConvAttrs& attrs) {
    const size_t sp = x.shape().rank() - 2;
    const int64_t n_batch = x.shape()[0], c_in = x.shape()[1], m_out = w.shape()[0], cg = w.shape()[1];
    const int64_t mg = m_out / attrs.group;
    Dims in(sp), k(sp), out(sp), pad_begin(sp);
    const Dims s = or_default(attrs.strides, sp, 1), d = or_default(attrs.dilations, sp, 1);
    const Dims pads = or_default(attrs.pads, 2 * sp, 0);
    for (size_t i = 0; i < sp; ++i) {
        in[i] = x.shape()[2 + i];
        k[i] = w.shape()[2 + i];
        const int64_t ext = d[i] * (k[i] - 1) + 1;
        if (attrs.auto_pad == "NOTSET") {
            pad_begin[i] = pads[i];
            out[i] = floor_div(in[i] + pads[i] + pads[sp + i] - ext, s[i]) + 1;
        } else if (attrs.auto_pad == "VALID") {
            pad_begin[i] = 0;
            out[i] = (in[i] - ext + 1 + s[i] - 1) / s[i]; // ceil((in - ext + 1) / s)
        } else {
            out[i] = (in[i] + s[i] - 1) / s[i];
            const int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + ext - in[i]);
            pad_begin[i] = attrs.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        }
    }
    Dims yd{n_batch, m_out};
    yd.insert(yd.end(), out.begin(), out.end());
    HostTensor y(make_shape(yd), x.desc.dtype);
    const int64_t out_px = product(out), in_px = product(in), k_px = product(k);
    for (int64_t n = 0; n < n_batch; ++n)
        for (int64_t m = 0; m < m_out; ++m) {
            const int64_t g = m / mg;
            for (int64_t op = 0; op < out_px; ++op) {
                const Dims o = unflatten(op, out);
                double sum = bias ? (*bias)[size_t(m)] : 0.0;
                for (int64_t cc = 0; cc < cg; ++cc) {
                    const int64_t c = g * cg + cc;
                    for (int64_t kp = 0; kp < k_px; ++kp) {
                        const Dims kk = unflatten(kp, k);
                        int64_t flat = 0;
                        bool inside = true;
                        for (size_t i = 0; i < sp; ++i) {
                            const int64_t p = o[i] * s[i] - pad_begin[i] + kk[i] * d[i];
                            inside = inside && p >= 0 && p < in[i];
                            flat = flat * in[i] + p;
                        }
                        if (!inside) continue;
                        sum +=
                            x[size_t((n * c_in + c) * in_px + flat)] * w[size_t((m * cg + cc) * k_px + kp)];
                    }
                }
                y[size_t((n * m_out + m) * out_px + op)] = sum;
            }
        }
    return y;
}

HostTensor conv_transpose(const HostTensor& x, const HostTensor& w, const HostTensor* bias,
                          const ConvTransposeAttrs& attrs) {
    const size_t sp = x.shape().rank() - 2;
    const int64_t n_batch = x.shape()[0], c_in = x.shape()[1], mg = w.shape()[1];
    const int64_t m_out = mg * attrs.group, cg = c_in / attrs.group;
    Dims in(sp), k(sp), full(sp), out(sp), pad_begin(sp);
    const Dims s = or_default(attrs.strides, sp, 1), d = or_default(attrs.dilations, sp, 1);
    const Dims pads = or_default(attrs.pads, 2 * sp, 0);
    const Dims opad = or_default(attrs.output_padding, sp, 0);
    for (size_t i = 0; i < sp; ++i) {
        in[i] = x.shape()[2 + i];
        k[i] = w.shape()[2 + i];
        full[i] = s[i] * (in[i] - 1) + opad[i] + (k[i] - 1) * d[i] + 1;
        const bool same = attrs.auto_pad == "SAME_UPPER" || attrs.auto_pad == "SAME_LOWER";
        if (!attrs.output_shape.empty() || same) {
            // output_shape lists the spatial sizes, or the whole shape: take its last sp values.
            out[i] = !attrs.output_shape.empty() ? attrs.output_shape[attrs.output_shape.size() - sp + i]
                                                 : in[i] * s[i];
            const int64_t total = full[i] - out[i];
            const int64_t half = floor_div(total, 2);
            pad_begin[i] = attrs.auto_pad == "SAME_UPPER" ? half : total - half;
        } else if (attrs.auto_pad == "VALID") {
            out[i] = full[i];
            pad_begin[i] = 0;
        } else {
            out[i] = full[i] - pads[i] - pads[sp + i];
            pad_begin[i] = pads[i];
        }
    }
    // Scatter every input pixel times every tap into the uncropped output, then crop.
    const int64_t full_px = product(full), in_px = product(in), k_px = product(k), out_px = product(out);
    std::vector<double> acc(size_t(n_batch * m_out * full_px), 0.0);
    for (int64_t n = 0; n < n_batch; ++n)
        for (int64_t c = 0; c < c_in; ++c) {
            const int64_t g = c / cg;
            for (int64_t ip = 0; ip < in_px; ++ip) {
                const Dims i_idx = unflatten(ip, in);
                const double xv = x[size_t((n * c_in + c) * in_px + ip)];
                for (int64_t j = 0; j < mg; ++j)
                    for (int64_t kp = 0; kp < k_px; ++kp) {
                        const Dims kk = unflatten(kp, k);
                        int64_t flat = 0;
                        for (size_t a = 0; a < sp; ++a)
                            flat = flat * full[a] + i_idx[a] * s[a] + kk[a] * d[a];
                        const int64_t m = g * mg + j;
                        acc[size_t((n * m_out + m) * full_px + flat)] +=
                            xv * w[size_t((c * mg + j) * k_px + kp)];
                    }
            }
        }
    Dims yd{n_batch, m_out};
    yd.insert(yd.end(), out.begin(), out.end());
    HostTensor y(make_shape(yd), x.desc.dtype);
    for (int64_t n = 0; n < n_batch; ++n)
        for (int64_t m = 0; m < m_out; ++m)
            for (int64_t op = 0; op < out_px; ++op) {
                const Dims o = unflatten(op, out);
                int64_t flat = 0;
                bool inside = true;
                for (size_t a = 0; a < sp; ++a) {
                    const int64_t p = o[a] + pad_begin[a];
                    inside = inside && p >= 0 && p < full[a];
                    flat = flat * full[a] + p;
                }
                double v = inside ? acc[size_t((n * m_out + m) * full_px + flat)] : 0.0;
                if (bias) v += (*bias)[size_t(m)];
                y[size_t((n * m_out + m) * out_px + op)] = v;
            }
    return y;
}

HostTensor gemm(const HostTensor& a, const HostTensor& b, const HostTensor* c, double alpha, double beta,
                bool trans_a, bool trans_b) {
    const int64_t m = trans_a ? a.shape()[1] : a.shape()[0];
    const int64_t k = trans_a ? a.shape()[0] : a.shape()[1];
    const int64_t n = trans_b ? b.shape()[0] : b.shape()[1];
    HostTensor y(gpu::Shape{m, n}, a.desc.dtype);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < k; ++p) {
                const double av = trans_a ? a[size_t(p * m + i)] : a[size_t(i * k + p)];
                const double bv = trans_b ? b[size_t(j * k + p)] : b[size_t(p * n + j)];
                sum += av * bv;
            }
            double cv = 0;
            if (c) {
                const auto& cs = c->shape();
                if (cs.rank() == 0) {
                    cv = (*c)[0];
                } else if (cs.rank() == 1) {
                    cv = (*c)[size_t(cs[0] == 1 ? 0 : j)];
                } else {
                    const int64_t ci = cs[0] == 1 ? 0 : i, cj = cs[1] == 1 ? 0 : j;
                    cv = (*c)[size_t(ci * cs[1] + cj)];
                }
            }
            y[size_t(i * n + j)] = alpha * sum + beta * cv;
        }
    return y;
}

HostTensor matmul(const HostTensor& a, const HostTensor& b) {
    Dims ad = dims_of(a.shape()), bd = dims_of(b.shape());
    const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
    if (a_vec) ad.insert(ad.begin(), 1);
    if (b_vec) bd.push_back(1);
    const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
    if (bd[bd.size() - 2] != k) throw std::invalid_argument("matmul reference: inner dimensions differ");
    const Dims ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
    const size_t rank = std::max(ab.size(), bb.size());
    Dims batch(rank), a_full(rank, 1), b_full(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
        if (i >= rank - ab.size()) a_full[i] = ab[i - (rank - ab.size())];
        if (i >= rank - bb.size()) b_full[i] = bb[i - (rank - bb.size())];
        if (a_full[i] != b_full[i] && a_full[i] != 1 && b_full[i] != 1)
            throw std::invalid_argument("matmul reference: batch dimensions do not broadcast");
        batch[i] = std::max(a_full[i], b_full[i]);
    }
    Dims yd = batch;
    if (!a_vec) yd.push_back(m);
    if (!b_vec) yd.push_back(n);
    HostTensor y(make_shape(yd), a.desc.dtype);
    const int64_t batches = product(batch);
    for (int64_t t = 0; t < batches; ++t) {
        const Dims bi = unflatten(t, batch);
        int64_t a_off = 0, b_off = 0;
        for (size_t i = 0; i < rank; ++i) {
            a_off = a_off * a_full[i] + (a_full[i] == 1 ? 0 : bi[i]);
            b_off = b_off * b_full[i] + (b_full[i] == 1 ? 0 : bi[i]);
        }
        a_off *= m * k;
        b_off *= k * n;
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
                double sum = 0;
                for (int64_t p = 0; p < k; ++p)
                    sum += a[size_t(a_off + i * k + p)] * b[size_t(b_off + p * n + j)];
                y[size_t((t * m + i) * n + j)] = sum;
            }
    }
    return y;
}

double activate(const ops::Activation& act, double v) {
    const double alpha = act.alpha, beta = act.beta;
    switch (act.kind) {
    case ops::ActivationKind::None:
        return v;
    case ops::ActivationKind::Relu:
        return v > 0 ? v : 0.0;
    case ops::ActivationKind::LeakyRelu:
        return v >= 0 ? v : alpha * v;
    case ops::ActivationKind::Clip:
        return std::min(std::max(v, alpha), beta);
    case ops::ActivationKind::Sigmoid:
        return 1.0 / (1.0 + std::exp(-v));
    case ops::ActivationKind::HardSigmoid:
        return std::max(0.0, std::min(1.0, alpha * v + beta));
    case ops::ActivationKind::HardSwish:
        return v * std::max(0.0, std::min(1.0, v / 6.0 + 0.5));
    case ops::ActivationKind::Tanh:
        return std::tanh(v);
    case ops::ActivationKind::Silu:
        return v / (1.0 + std::exp(-v));
    case ops::ActivationKind::Gelu:
        return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    case ops::ActivationKind::Elu:
        return v >= 0 ? v : alpha * (std::exp(v) - 1.0);
    case ops::ActivationKind::Mish:
        return v * std::tanh(std::log1p(std::exp(v)));
    }
    throw std::invalid_argument("activation reference: unknown kind");
}

HostTensor fuse(HostTensor y, const HostTensor* residual, const ops::Activation& act) {
    for (size_t i = 0; i < y.size(); ++i) y[i] = activate(act, y[i] + (residual ? (*residual)[i] : 0.0));
    return y;
}

} // namespace vkml::test::ref_conv
