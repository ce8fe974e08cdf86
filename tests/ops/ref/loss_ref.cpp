#include "ref/loss_ref.hpp"

#include <cmath>

namespace vkml::test::ref_loss {

HostTensor nll(const HostTensor& x, const HostTensor& t, const HostTensor* weight, const std::string& reduction,
               std::optional<int64_t> ignore_index) {
    const int64_t n = x.shape()[0], c = x.shape()[1];
    const int64_t inner = n == 0 ? 0 : t.shape().elements() / n;
    HostTensor per(t.shape(), x.desc.dtype);
    double sum = 0, wsum = 0;
    for (int64_t b = 0; b < n; ++b)
        for (int64_t d = 0; d < inner; ++d) {
            const size_t i = size_t(b * inner + d);
            const auto k = int64_t(t[i]);
            if ((ignore_index && k == *ignore_index) || k < 0 || k >= c) continue;
            const double w = weight ? (*weight)[size_t(k)] : 1.0;
            per[i] = -x[size_t((b * c + k) * inner + d)] * w;
            sum += per[i];
            wsum += w;
        }
    if (reduction == "none") return per;
    HostTensor out(gpu::Shape{}, x.desc.dtype);
    out[0] = reduction == "sum" ? sum : sum / wsum;
    return out;
}

HostTensor log_softmax_axis1(const HostTensor& x) {
    const int64_t n = x.shape()[0], c = x.shape()[1];
    const int64_t inner = n * c == 0 ? 0 : x.shape().elements() / (n * c);
    HostTensor out(x.shape(), x.desc.dtype);
    for (int64_t b = 0; b < n; ++b)
        for (int64_t d = 0; d < inner; ++d) {
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < c; ++k) m = std::max(m, x[size_t((b * c + k) * inner + d)]);
            for (int64_t k = 0; k < c; ++k) s += std::exp(x[size_t((b * c + k) * inner + d)] - m);
            for (int64_t k = 0; k < c; ++k) {
                const size_t i = size_t((b * c + k) * inner + d);
                out[i] = x[i] - m - std::log(s);
            }
        }
    return out;
}

} // namespace vkml::test::ref_loss
