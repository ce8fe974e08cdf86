// Adagrad, Momentum (standard, Nesterov) and Adam steps against double-precision references
// written here from ONNX's definitions, on two tensors of odd sizes with random values.
#include <cmath>
#include <string>

#include "op_test.hpp"
#include "vkml/ops/train.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using ops::OptimizerKind;

using TrainOptimizer = GpuTest;

TEST_F(TrainOptimizer, MatchesReference) {
    const std::vector<Shape> shapes = {{3, 7}, {13}};
    for (int kind = 0; kind < 4; ++kind) {
        const OptimizerKind k = kind == 0 ? OptimizerKind::Adagrad : kind == 3 ? OptimizerKind::Adam : OptimizerKind::Momentum;
        const size_t states = k == OptimizerKind::Adam ? 2 : 1;
        ops::OptimizerDesc d{.kind = k};
        HostTensor r({}, DType::f32), t({}, DType::i32);
        r[0] = 0.1;
        t[0] = 3;
        d.r = r.desc;
        d.t = t.desc;
        d.decay_factor = 0.1f;
        d.epsilon = 1e-3f;
        d.norm_coefficient = 0.01f;
        d.norm_coefficient_post = 0.02f;
        d.alpha = k == OptimizerKind::Adam ? 0.9f : 0.95f;
        d.beta = k == OptimizerKind::Adam ? 0.999f : 0.1f;
        d.nesterov = kind == 2;
        std::vector<HostTensor> in = {r, t};
        uint32_t seed = 40;
        for (size_t group = 0; group < 2 + states; ++group)
            for (const Shape& s : shapes) {
                // States (H, V's squares) are non-negative where a square root reads them.
                const bool square = (k == OptimizerKind::Adagrad && group == 2) || (k == OptimizerKind::Adam && group == 3);
                in.push_back(square ? random_tensor(s, DType::f32, seed++, 0.1, 2.0) : random_tensor(s, DType::f32, seed++));
            }
        for (const Shape& s : shapes) d.x.push_back({s, DType::f32});
        auto op = ops::Optimizer::create(dev(), d);
        const auto got = run_op(dev(), *op, in);
        ASSERT_EQ(got.size(), 2 * (1 + states));
        const double R = 0.1, T = 3, nc = d.norm_coefficient, eps = d.epsilon, a = d.alpha, b = d.beta;
        for (size_t j = 0; j < 2; ++j) {
            const HostTensor &X = in[2 + j], &G = in[4 + j], &S1 = in[6 + j];
            HostTensor xn(shapes[j], DType::f32), s1n(shapes[j], DType::f32), s2n(shapes[j], DType::f32);
            for (size_t i = 0; i < X.size(); ++i) {
                const double g = nc * X[i] + G[i];
                if (k == OptimizerKind::Adagrad) {
                    const double rate = R / (1 + T * d.decay_factor), h = S1[i] + g * g;
                    xn[i] = X[i] - rate * g / (std::sqrt(h) + eps);
                    s1n[i] = h;
                } else if (k == OptimizerKind::Momentum) {
                    const double v = a * S1[i] + b * g;
                    xn[i] = d.nesterov ? X[i] - R * (g + a * v) : X[i] - R * v;
                    s1n[i] = v;
                } else {
                    const double v = a * S1[i] + (1 - a) * g, h = b * in[8 + j][i] + (1 - b) * g * g;
                    const double rate = R * std::sqrt(1 - std::pow(b, T)) / (1 - std::pow(a, T));
                    xn[i] = (1 - d.norm_coefficient_post) * (X[i] - rate * (v / (std::sqrt(h) + eps)));
                    s1n[i] = v;
                    s2n[i] = h;
                }
            }
            const std::string what = std::string(op->type()) + (d.nesterov ? " nesterov" : "") + " tensor " + std::to_string(j);
            expect_close(got[j], xn, 1e-5, what + " X");
            expect_close(got[2 + j], s1n, 1e-5, what + " state 1");
            if (states == 2) expect_close(got[4 + j], s2n, 1e-5, what + " state 2");
        }
    }
    const TensorDesc r{{}, DType::f32}, t{{}, DType::i32};
    EXPECT_THROW(ops::Optimizer::create(dev(), {.r = r, .t = t}), Error) << "no tensors";
    EXPECT_THROW(ops::Optimizer::create(dev(), {.r = r, .t = t, .x = {{{3}, DType::f16}}}), Error) << "f16";
    EXPECT_THROW(ops::Optimizer::create(dev(), {.r = {{2}, DType::f32}, .t = t, .x = {{{3}, DType::f32}}}), Error);
}

} // namespace
} // namespace vkml::test
