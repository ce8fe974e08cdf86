// BatchNormalization in training mode against a double-precision reference written here: batch
// statistics, the normalized output and the momentum-updated running statistics, odd sizes,
// random data, f32 and f16 storage.
#include <cmath>
#include <string>

#include "op_test.hpp"
#include "vkml/ops/norm.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;

using NormBatchTraining = GpuTest;

TEST_F(NormBatchTraining, MatchesReference) {
    for (DType dt : float_dtypes(dev()))
        for (const Shape& s : {Shape{3, 5, 7, 2}, Shape{4, 3}, Shape{2, 7, 11}}) {
            const int64_t C = s[1], N = s[0], inner = s.elements() / (N * C);
            const HostTensor x = random_tensor(s, dt, 3), sc = random_tensor({C}, dt, 4), b = random_tensor({C}, dt, 5);
            const HostTensor m = random_tensor({C}, dt, 6), v = random_tensor({C}, dt, 7, 0.1, 2.0);
            const float eps = 1e-3f, mom = 0.8f;
            auto op = ops::BatchNormTraining::create(dev(), {x.desc, sc.desc, b.desc, m.desc, v.desc, eps, mom});
            HostTensor y(s, dt), rm({C}, dt), rv({C}, dt);
            for (int64_t c = 0; c < C; ++c) {
                double sum = 0, sq = 0;
                for (int64_t n = 0; n < N; ++n)
                    for (int64_t i = 0; i < inner; ++i) sum += x[size_t((n * C + c) * inner + i)];
                const double mean = sum / double(N * inner);
                for (int64_t n = 0; n < N; ++n)
                    for (int64_t i = 0; i < inner; ++i) {
                        const double d = x[size_t((n * C + c) * inner + i)] - mean;
                        sq += d * d;
                    }
                const double var = sq / double(N * inner);
                for (int64_t n = 0; n < N; ++n)
                    for (int64_t i = 0; i < inner; ++i) {
                        const size_t at = size_t((n * C + c) * inner + i);
                        y[at] = (x[at] - mean) / std::sqrt(var + double(eps)) * sc[size_t(c)] + b[size_t(c)];
                    }
                rm[size_t(c)] = m[size_t(c)] * mom + mean * (1 - double(mom));
                rv[size_t(c)] = v[size_t(c)] * mom + var * (1 - double(mom));
            }
            const auto got = run_op(dev(), *op, {x, sc, b, m, v});
            const std::string what = "BatchNormalization training " + s.str() + " " + gpu::dtype_name(dt);
            expect_close(got[0], y, tolerance(dt, 1e-5, 3e-3), what + " Y");
            expect_close(got[1], rm, tolerance(dt, 1e-5, 2e-3), what + " running_mean");
            expect_close(got[2], rv, tolerance(dt, 1e-5, 2e-3), what + " running_var");
        }
    const TensorDesc x{{2, 3, 4}, DType::f32}, c{{3}, DType::f32};
    EXPECT_THROW(ops::BatchNormTraining::create(dev(), {x, {{4}, DType::f32}, c, c, c}), Error);
    EXPECT_THROW(ops::BatchNormTraining::create(dev(), {{{3}, DType::f32}, c, c, c, c}), Error);
}

} // namespace
} // namespace vkml::test
