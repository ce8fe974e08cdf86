// 3-D Conv and ConvTranspose (ops::Conv3d) against a double-precision reference written here:
// groups, strides, pads, dilations, output_padding, bias, a fused activation and a residual, odd
// sizes, random data, f32 and f16 storage.
#include <algorithm>
#include <cmath>
#include <string>

#include "op_test.hpp"
#include "vkml/ops/conv3d.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;

struct Geometry {
    std::vector<int64_t> s, pads, dil, opad;
    int64_t group;
};

// y[n, m, o] = sum over c of m's group and taps k of x * w (Conv: x at o * s - pad + k * dil;
// ConvTranspose: x at i with i * s - pad + k * dil = o).
HostTensor conv3d_ref(bool transpose, const HostTensor& x, const HostTensor& w, const HostTensor* b,
                      const Geometry& g, const Shape& out) {
    const Shape &xs = x.shape(), &ws = w.shape();
    const int64_t C = xs[1], M = out[1], cg = C / g.group, mg = M / g.group;
    HostTensor y(out, x.desc.dtype);
    for (size_t e = 0; e < y.size(); ++e) {
        int64_t r = int64_t(e);
        int64_t o[3];
        for (size_t a = 3; a-- > 0;) {
            o[a] = r % out[2 + a];
            r /= out[2 + a];
        }
        const int64_t m = r % M, n = r / M, grp = m / mg;
        double acc = b ? (*b)[size_t(m)] : 0.0;
        for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t kd = 0; kd < ws[2]; ++kd)
                for (int64_t kh = 0; kh < ws[3]; ++kh)
                    for (int64_t kw = 0; kw < ws[4]; ++kw) {
                        const int64_t k[3] = {kd, kh, kw};
                        int64_t i[3];
                        bool ok = true;
                        for (size_t a = 0; a < 3; ++a) {
                            if (!transpose) {
                                i[a] = o[a] * g.s[a] - g.pads[a] + k[a] * g.dil[a];
                            } else {
                                const int64_t v = o[a] + g.pads[a] - k[a] * g.dil[a];
                                ok = ok && v >= 0 && v % g.s[a] == 0;
                                i[a] = v / g.s[a];
                            }
                            ok = ok && i[a] >= 0 && i[a] < xs[2 + a];
                        }
                        if (!ok) continue;
                        const int64_t c = grp * cg + ci;
                        const double xv = x[size_t((((n * C + c) * xs[2] + i[0]) * xs[3] + i[1]) * xs[4] + i[2])];
                        const int64_t wi = transpose ? (((c * mg + (m - grp * mg)) * ws[2] + kd) * ws[3] + kh) * ws[4] + kw
                                                     : (((m * cg + ci) * ws[2] + kd) * ws[3] + kh) * ws[4] + kw;
                        acc += xv * w[size_t(wi)];
                    }
        y[e] = acc;
    }
    return y;
}

using Conv3dTest = GpuTest;

TEST_F(Conv3dTest, MatchesReference) {
    const std::vector<Geometry> geos = {{{1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
                                        {{2, 1, 2}, {1, 0, 1, 0, 1, 1}, {1, 2, 1}, {1, 0, 1}, 2}};
    for (DType dt : float_dtypes(dev()))
        for (bool transpose : {false, true})
            for (const Geometry& g : geos) {
                const int64_t C = 4, M = 6;
                const HostTensor x = random_tensor({2, C, 5, 4, 7}, dt, 3);
                const Shape ws = transpose ? Shape{C, M / g.group, 3, 2, 3} : Shape{M, C / g.group, 3, 2, 3};
                const HostTensor w = random_tensor(ws, dt, 4), b = random_tensor({M}, dt, 5);
                ops::Conv3dDesc d{.transpose = transpose, .input = x.desc, .weight = w.desc, .bias = b.desc,
                                  .strides = g.s, .pads = g.pads, .dilations = g.dil, .group = g.group};
                if (transpose) d.output_padding = g.opad;
                auto op = ops::Conv3d::create(dev(), d);
                const Shape out = op->outputs()[0].shape;
                for (size_t a = 0; a < 3; ++a) {
                    const int64_t extent = (ws[2 + a] - 1) * g.dil[a] + 1, in = x.shape()[2 + a];
                    const int64_t want = transpose ? g.s[a] * (in - 1) + g.opad[a] + extent - g.pads[a] - g.pads[a + 3]
                                                   : (in + g.pads[a] + g.pads[a + 3] - extent) / g.s[a] + 1;
                    ASSERT_EQ(out[2 + a], want) << "axis " << a;
                }
                const std::string what = std::string(op->type()) + " 3-D group " + std::to_string(g.group) + " " +
                                         gpu::dtype_name(dt);
                expect_close(run_op(dev(), *op, {x, w, b})[0], conv3d_ref(transpose, x, w, &b, g, out),
                             tolerance(dt, 1e-5, 3e-3), what);
            }
}

// Conv's fused tail: y = relu(conv + bias + residual).
TEST_F(Conv3dTest, ResidualAndActivation) {
    for (DType dt : float_dtypes(dev())) {
        const HostTensor x = random_tensor({1, 3, 4, 5, 3}, dt, 6), w = random_tensor({5, 3, 1, 3, 3}, dt, 7);
        const Geometry g{{1, 1, 1}, {0, 1, 1, 0, 1, 1}, {1, 1, 1}, {}, 1};
        auto op = ops::Conv3d::create(dev(), {.input = x.desc, .weight = w.desc, .pads = g.pads,
                                              .activation = {.kind = ops::ActivationKind::Relu}, .residual = true});
        const Shape out = op->outputs()[0].shape;
        const HostTensor r = random_tensor(out, dt, 8);
        HostTensor want = conv3d_ref(false, x, w, nullptr, g, out);
        for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0, want[i] + r[i]);
        expect_close(run_op(dev(), *op, {x, w, r})[0], want, tolerance(dt, 1e-5, 3e-3),
                     std::string("Conv 3-D residual relu ") + gpu::dtype_name(dt));
    }
    const TensorDesc x{{1, 4, 3, 3, 3}, DType::f32};
    EXPECT_THROW(ops::Conv3d::create(dev(), {.input = x, .weight = {{2, 3, 1, 1, 1}, DType::f32}}), Error) << "C / group";
    EXPECT_THROW(ops::Conv3d::create(dev(), {.input = x, .weight = {{2, 4, 5, 1, 1}, DType::f32}}), Error) << "kernel";
    EXPECT_THROW(ops::Conv3d::create(dev(), {.input = x, .weight = {{2, 2, 1, 1, 1}, DType::f32}, .group = 3}), Error);
    EXPECT_THROW(ops::Conv3d::create(dev(), {.transpose = true, .input = x, .weight = {{4, 2, 1, 1, 1}, DType::f32},
                                             .output_padding = {2, 0, 0}}),
                 Error)
        << "output_padding past the stride";
}

} // namespace
} // namespace vkml::test
