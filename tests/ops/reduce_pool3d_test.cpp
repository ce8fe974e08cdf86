// MaxPool and AveragePool over three spatial dimensions against a double-precision reference
// written here: pads, strides, dilations, ceil_mode, auto_pad and count_include_pad, odd sizes,
// random data, f32 and f16 storage.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "op_test.hpp"
#include "vkml/ops/reduce.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;

using ReducePool3d = GpuTest;

TEST_F(ReducePool3d, MatchesReference) {
    struct Case {
        std::vector<int64_t> kernel, strides, pads, dilations;
        std::string auto_pad;
        int64_t ceil;
    };
    const std::vector<Case> cases = {{{2, 2, 2}, {}, {}, {}, "NOTSET", 0},
                                     {{3, 2, 3}, {2, 1, 2}, {1, 0, 1, 1, 1, 0}, {}, "NOTSET", 1},
                                     {{2, 3, 2}, {1, 2, 1}, {}, {2, 1, 1}, "NOTSET", 0},
                                     {{3, 3, 3}, {2, 2, 2}, {}, {}, "SAME_UPPER", 0}};
    const Shape s{2, 3, 5, 7, 6};
    for (DType dt : float_dtypes(dev()))
        for (const Case& c : cases)
            for (int kind = 0; kind < 3; ++kind) { // max, average, average counting pads
                const HostTensor x = random_tensor(s, dt, 31);
                ops::Pool3dDesc d{.max = kind == 0, .input = x.desc,
                                  .window = {c.kernel, c.strides, c.pads, c.dilations, c.auto_pad, c.ceil},
                                  .count_include_pad = kind == 2};
                auto op = ops::Pool3d::create(dev(), d);
                const Shape os = op->outputs()[0].shape;
                std::vector<int64_t> st = c.strides.empty() ? std::vector<int64_t>{1, 1, 1} : c.strides;
                std::vector<int64_t> dl = c.dilations.empty() ? std::vector<int64_t>{1, 1, 1} : c.dilations;
                std::vector<int64_t> pd = c.pads.empty() ? std::vector<int64_t>(6, 0) : c.pads;
                if (c.auto_pad == "SAME_UPPER")
                    for (size_t a = 0; a < 3; ++a) {
                        const int64_t total = std::max<int64_t>(0, (os[2 + a] - 1) * st[a] + (c.kernel[a] - 1) * dl[a] + 1 - s[2 + a]);
                        pd[a] = total / 2;
                        pd[a + 3] = total - total / 2;
                    }
                for (size_t a = 0; a < 3; ++a) {
                    const int64_t span = s[2 + a] + pd[a] + pd[a + 3] - ((c.kernel[a] - 1) * dl[a] + 1);
                    int64_t o = c.ceil ? (span + st[a] - 1) / st[a] + 1 : span / st[a] + 1;
                    if (c.ceil && (o - 1) * st[a] >= s[2 + a] + pd[a]) --o;
                    if (c.auto_pad == "SAME_UPPER") o = (s[2 + a] + st[a] - 1) / st[a];
                    ASSERT_EQ(os[2 + a], o) << "axis " << a;
                }
                HostTensor want(os, dt);
                for (size_t e = 0; e < want.size(); ++e) {
                    int64_t rest = int64_t(e);
                    int64_t o[3];
                    for (size_t a = 3; a-- > 0;) {
                        o[a] = rest % os[2 + a];
                        rest /= os[2 + a];
                    }
                    double acc = kind == 0 ? -std::numeric_limits<double>::infinity() : 0.0;
                    int64_t inside = 0, padded = 0;
                    for (int64_t kd = 0; kd < c.kernel[0]; ++kd)
                        for (int64_t kh = 0; kh < c.kernel[1]; ++kh)
                            for (int64_t kw = 0; kw < c.kernel[2]; ++kw) {
                                const int64_t p[3] = {o[0] * st[0] - pd[0] + kd * dl[0], o[1] * st[1] - pd[1] + kh * dl[1],
                                                      o[2] * st[2] - pd[2] + kw * dl[2]};
                                bool in_pads = true, in = true;
                                for (size_t a = 0; a < 3; ++a) {
                                    in_pads = in_pads && p[a] < s[2 + a] + pd[a + 3];
                                    in = in && p[a] >= 0 && p[a] < s[2 + a];
                                }
                                padded += in_pads;
                                if (!in) continue;
                                const double v = x[size_t(((rest * s[2] + p[0]) * s[3] + p[1]) * s[4] + p[2])];
                                acc = kind == 0 ? std::max(acc, v) : acc + v;
                                ++inside;
                            }
                    if (kind) acc /= double(kind == 2 ? padded : inside);
                    want[e] = acc;
                }
                expect_close(run_op(dev(), *op, {x})[0], want, tolerance(dt, 1e-6, 2e-3),
                             std::string(op->type()) + " 3-D case kind " + std::to_string(kind) + " " + gpu::dtype_name(dt));
            }
    const TensorDesc x{{1, 1, 4, 4, 4}, DType::f32};
    EXPECT_THROW(ops::Pool3d::create(dev(), {.input = x}), Error) << "no kernel";
    EXPECT_THROW(ops::Pool3d::create(dev(), {.input = x, .window = {{2, 2}}}), Error) << "two kernel values";
    EXPECT_THROW(ops::Pool3d::create(dev(), {.input = x, .window = {{5, 1, 1}}}), Error) << "window past the input";
    EXPECT_THROW(ops::Pool3d::create(dev(), {.input = {{1, 4, 4, 4}, DType::f32}, .window = {{2, 2, 2}}}), Error);
}

} // namespace
} // namespace vkml::test
