#include "ref/rnn_ref.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vkml::test::ref_rnn {

namespace {

struct Fn {
    std::string name;
    double alpha = 0, beta = 0;
    double operator()(double v) const {
        if (name == "Relu") return std::max(v, 0.0);
        if (name == "Tanh") return std::tanh(v);
        if (name == "Sigmoid") return 1 / (1 + std::exp(-v));
        if (name == "Affine") return alpha * v + beta;
        if (name == "LeakyRelu") return v >= 0 ? v : alpha * v;
        if (name == "ThresholdedRelu") return v > alpha ? v : 0;
        if (name == "ScaledTanh") return alpha * std::tanh(beta * v);
        if (name == "HardSigmoid") return std::clamp(alpha * v + beta, 0.0, 1.0);
        if (name == "Elu") return v >= 0 ? v : alpha * (std::exp(v) - 1);
        if (name == "Softsign") return v / (1 + std::fabs(v));
        if (name == "Softplus") return std::log1p(std::exp(v));
        throw std::runtime_error("reference: unknown activation " + name);
    }
};

} // namespace

std::vector<HostTensor> rnn(const ops::RnnDesc& desc, const Inputs& in) {
    const bool lstm = desc.kind == ops::RnnKind::LSTM, gru = desc.kind == ops::RnnKind::GRU;
    const int64_t G = lstm ? 4 : gru ? 3 : 1, per_dir = lstm ? 3 : gru ? 2 : 1;
    const bool bl = desc.layout == 1;
    const int64_t S = bl ? in.x.shape()[1] : in.x.shape()[0], B = bl ? in.x.shape()[0] : in.x.shape()[1];
    const int64_t I = in.x.shape()[2], D = desc.direction == "bidirectional" ? 2 : 1, H = in.w.shape()[1] / G;
    // Activations with their parameters, the defaults as the op documents them.
    std::vector<std::string> names = desc.activations;
    if (names.empty())
        for (int64_t d = 0; d < D; ++d) {
            if (lstm) names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
            else if (gru) names.insert(names.end(), {"Sigmoid", "Tanh"});
            else names.push_back("Tanh");
        }
    std::vector<Fn> fns;
    size_t na = 0, nb = 0;
    for (const std::string& n : names) {
        Fn f{n};
        int params = 0;
        if (n == "Affine") f.alpha = 1, f.beta = 0, params = 2;
        if (n == "ScaledTanh") f.alpha = 1, f.beta = 1, params = 2;
        if (n == "HardSigmoid") f.alpha = 0.2, f.beta = 0.5, params = 2;
        if (n == "LeakyRelu") f.alpha = 0.01, params = 1;
        if (n == "ThresholdedRelu" || n == "Elu") f.alpha = 1, params = 1;
        if (params >= 1 && na < desc.activation_alpha.size()) f.alpha = desc.activation_alpha[na++];
        if (params >= 2 && nb < desc.activation_beta.size()) f.beta = desc.activation_beta[nb++];
        fns.push_back(f);
    }
    auto clip = [&](double v) { return desc.clip ? std::clamp(v, -double(*desc.clip), double(*desc.clip)) : v; };
    auto xat = [&](int64_t t, int64_t b, int64_t i) { return in.x[size_t((bl ? b * S + t : t * B + b) * I + i)]; };
    auto sat = [&](int64_t d, int64_t b, int64_t j) { return size_t((bl ? b * D + d : d * B + b) * H + j); };
    const gpu::DType dt = in.x.desc.dtype;
    HostTensor y(bl ? gpu::Shape{B, S, D, H} : gpu::Shape{S, D, B, H}, dt);
    HostTensor yh(bl ? gpu::Shape{B, D, H} : gpu::Shape{D, B, H}, dt), yc = yh;
    for (int64_t d = 0; d < D; ++d) {
        const bool reverse = desc.direction == "reverse" || d == 1;
        const Fn& f = fns[size_t(d * per_dir)];
        const Fn& g = fns[size_t(std::min<int64_t>(d * per_dir + 1, int64_t(fns.size()) - 1))];
        const Fn& h = fns[size_t(std::min<int64_t>(d * per_dir + 2, int64_t(fns.size()) - 1))];
        // x . W_g[j] + Wb_g[j] and hv . R_g[j] + Rb_g[j]
        auto xw = [&](int64_t gate, int64_t b, int64_t t, int64_t j) {
            double s = in.b ? (*in.b)[size_t(d * 2 * G * H + gate * H + j)] : 0.0;
            for (int64_t i = 0; i < I; ++i) s += xat(t, b, i) * in.w[size_t(((d * G + gate) * H + j) * I + i)];
            return s;
        };
        auto hr = [&](int64_t gate, const std::vector<double>& hv, int64_t j) {
            double s = in.b ? (*in.b)[size_t(d * 2 * G * H + G * H + gate * H + j)] : 0.0;
            for (int64_t k = 0; k < H; ++k) s += hv[size_t(k)] * in.r[size_t(((d * G + gate) * H + j) * H + k)];
            return s;
        };
        for (int64_t b = 0; b < B; ++b) {
            const int64_t len = in.seq ? int64_t((*in.seq)[size_t(b)]) : S;
            std::vector<double> hs(static_cast<size_t>(H)), cs(static_cast<size_t>(H));
            for (int64_t j = 0; j < H; ++j) {
                hs[size_t(j)] = in.h0 ? (*in.h0)[sat(d, b, j)] : 0.0;
                cs[size_t(j)] = in.c0 ? (*in.c0)[sat(d, b, j)] : 0.0;
            }
            for (int64_t step = 0; step < len; ++step) {
                const int64_t t = reverse ? len - 1 - step : step;
                std::vector<double> hn(static_cast<size_t>(H)), cn(static_cast<size_t>(H));
                for (int64_t j = 0; j < H; ++j) {
                    const size_t uj = size_t(j);
                    if (!gru && !lstm) {
                        hn[uj] = f(clip(xw(0, b, t, j) + hr(0, hs, j)));
                    } else if (gru) {
                        const double z = f(clip(xw(0, b, t, j) + hr(0, hs, j)));
                        double cand;
                        if (desc.linear_before_reset) {
                            const double rg = f(clip(xw(1, b, t, j) + hr(1, hs, j)));
                            cand = xw(2, b, t, j) + rg * hr(2, hs, j);
                        } else {
                            std::vector<double> rh(static_cast<size_t>(H));
                            for (int64_t k = 0; k < H; ++k)
                                rh[size_t(k)] = f(clip(xw(1, b, t, k) + hr(1, hs, k))) * hs[size_t(k)];
                            cand = xw(2, b, t, j) + hr(2, rh, j);
                        }
                        hn[uj] = (1 - z) * g(clip(cand)) + z * hs[uj];
                    } else {
                        auto peep = [&](int64_t k) { return in.p ? (*in.p)[size_t(d * 3 * H + k * H + j)] : 0.0; };
                        const double ig = f(clip(xw(0, b, t, j) + hr(0, hs, j) + peep(0) * cs[uj]));
                        const double fg = desc.input_forget ? 1 - ig : f(clip(xw(2, b, t, j) + hr(2, hs, j) + peep(2) * cs[uj]));
                        const double cg = g(clip(xw(3, b, t, j) + hr(3, hs, j)));
                        cn[uj] = fg * cs[uj] + ig * cg;
                        const double og = f(clip(xw(1, b, t, j) + hr(1, hs, j) + peep(1) * cn[uj]));
                        hn[uj] = og * h(cn[uj]);
                    }
                }
                hs = hn;
                if (lstm) cs = cn;
                for (int64_t j = 0; j < H; ++j)
                    y[size_t((bl ? (b * S + t) * D + d : (t * D + d) * B + b) * H + j)] = hs[size_t(j)];
            }
            for (int64_t j = 0; j < H; ++j) {
                yh[sat(d, b, j)] = hs[size_t(j)];
                yc[sat(d, b, j)] = cs[size_t(j)];
            }
        }
    }
    std::vector<HostTensor> out = {y, yh};
    if (lstm) out.push_back(yc);
    return out;
}

} // namespace vkml::test::ref_rnn
