// ReverseSequence, MaxUnpool and RoiAlign against double-precision references written here, on
// random data at odd sizes, in f32 and f16 storage (ReverseSequence also i32 and i64).
#include <algorithm>
#include <cmath>
#include <string>

#include "op_test.hpp"
#include "vkml/ops/layout.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;

using LayoutMore = GpuTest;

TEST_F(LayoutMore, ReverseSequence) {
    std::vector<DType> dts = float_dtypes(dev());
    dts.push_back(DType::i32);
    dts.push_back(DType::i64);
    for (DType dt : dts)
        for (int batch_first = 0; batch_first < 2; ++batch_first) {
            const int64_t T = 7, B = 5, inner = 3;
            const Shape s = batch_first ? Shape{B, T, inner} : Shape{T, B, inner};
            const HostTensor x = dt == DType::i32 || dt == DType::i64 ? random_ints(s, dt, 3, -1000, 1000)
                                                                      : random_tensor(s, dt, 3);
            HostTensor lens({B}, DType::i32);
            const double l[] = {7, 1, 4, 9, 0}; // 9 is past T (clamped), 0 reverses nothing
            for (size_t b = 0; b < 5; ++b) lens[b] = l[b];
            auto op = ops::ReverseSequence::create(dev(), {x.desc, lens.desc, batch_first ? 1 : 0, batch_first ? 0 : 1});
            HostTensor want(s, dt);
            for (int64_t t = 0; t < T; ++t)
                for (int64_t b = 0; b < B; ++b) {
                    const int64_t len = std::min<int64_t>(int64_t(lens[size_t(b)]), T);
                    const int64_t src = t < len ? len - 1 - t : t;
                    for (int64_t i = 0; i < inner; ++i) {
                        auto at = [&](int64_t tt) {
                            return size_t(((batch_first ? b * T + tt : tt * B + b)) * inner + i);
                        };
                        want[at(t)] = x[at(src)];
                    }
                }
            expect_equal(run_op(dev(), *op, {x, lens})[0], want,
                         std::string("ReverseSequence ") + gpu::dtype_name(dt) + (batch_first ? " batch first" : ""));
        }
    const TensorDesc x{{4, 3}, DType::f32};
    EXPECT_THROW(ops::ReverseSequence::create(dev(), {x, {{4}, DType::i32}, 0, 1}), Error) << "lens must be [B]";
    EXPECT_THROW(ops::ReverseSequence::create(dev(), {x, {{3}, DType::i32}, 0, 2}), Error) << "axes 0 and 1";
}

TEST_F(LayoutMore, MaxUnpool) {
    for (DType dt : float_dtypes(dev())) {
        const Shape s{2, 3, 3, 5};
        const HostTensor x = random_tensor(s, dt, 7);
        // Indices as a 2x2 / stride 2 MaxPool of a [2, 3, 6, 10] input gives them (flat in the
        // default 6 x 10 output; one position per window, chosen at random), and one index
        // outside it (skipped). A 7 x 11 output_shape keeps every value at its (row, column).
        HostTensor idx(s, DType::i32);
        const int64_t DH = 6, DW = 10, OH = 7, OW = 11;
        HostTensor want({2, 3, OH, OW}, dt);
        for (int64_t nc = 0; nc < 6; ++nc)
            for (int64_t h = 0; h < 3; ++h)
                for (int64_t w = 0; w < 5; ++w) {
                    const size_t e = size_t((nc * 3 + h) * 5 + w);
                    const int64_t dy = int64_t(e * 7) % 2, dx = int64_t(e * 3) % 2;
                    idx[e] = double(nc * DH * DW + (2 * h + dy) * DW + 2 * w + dx);
                    if (e != 4) want[size_t((nc * OH + 2 * h + dy) * OW + 2 * w + dx)] = x[e];
                }
        idx[4] = 1e7;
        auto op = ops::MaxUnpool::create(dev(), {x.desc, idx.desc, {2, 2}, {2, 2}, {}, {2, 3, OH, OW}});
        expect_equal(run_op(dev(), *op, {x, idx})[0], want, std::string("MaxUnpool ") + gpu::dtype_name(dt));
        auto plain = ops::MaxUnpool::create(dev(), {x.desc, idx.desc, {2, 2}, {2, 2}, {}, {}});
        EXPECT_EQ(plain->outputs()[0].shape, (Shape{2, 3, 6, 10}));
    }
    EXPECT_THROW(ops::MaxUnpool::create(dev(), {{{1, 1, 2, 2}, DType::f32}, {{1, 1, 2, 2}, DType::i32}, {2}, {}, {}, {}}),
                 Error);
}

// ONNX Runtime's bilinear sample with its weights, in double.
double roi_sample(const HostTensor& x, size_t plane, int64_t H, int64_t W, double yy, double xx, bool max_mode) {
    if (yy < -1.0 || yy > double(H) || xx < -1.0 || xx > double(W)) return 0;
    yy = std::max(yy, 0.0);
    xx = std::max(xx, 0.0);
    int64_t y0 = int64_t(yy), x0 = int64_t(xx), y1, x1;
    if (y0 >= H - 1) {
        y0 = y1 = H - 1;
        yy = double(y0);
    } else {
        y1 = y0 + 1;
    }
    if (x0 >= W - 1) {
        x0 = x1 = W - 1;
        xx = double(x0);
    } else {
        x1 = x0 + 1;
    }
    const double ly = yy - double(y0), lx = xx - double(x0), hy = 1 - ly, hx = 1 - lx;
    const double v[] = {hy * hx * x[plane + size_t(y0 * W + x0)], hy * lx * x[plane + size_t(y0 * W + x1)],
                        ly * hx * x[plane + size_t(y1 * W + x0)], ly * lx * x[plane + size_t(y1 * W + x1)]};
    return max_mode ? std::max(std::max(v[0], v[1]), std::max(v[2], v[3])) : v[0] + v[1] + v[2] + v[3];
}

TEST_F(LayoutMore, RoiAlign) {
    const int64_t N = 2, C = 3, H = 9, W = 11, R = 5, OH = 3, OW = 4;
    for (DType dt : float_dtypes(dev()))
        for (const char* mode : {"avg", "max"})
            for (const char* ctm : {"half_pixel", "output_half_pixel"})
                for (int64_t sampling : {0, 2}) {
                    const HostTensor x = random_tensor({N, C, H, W}, dt, 11);
                    HostTensor rois({R, 4}, dt), batch({R}, DType::i32);
                    const double boxes[R][4] = {
                        {0, 0, 8, 6}, {1.5, 2.25, 9.5, 7.5}, {-2, -1, 3, 2}, {4, 4, 4.5, 4.25}, {6, 1, 12, 10}};
                    for (int64_t r = 0; r < R; ++r) {
                        for (int64_t k = 0; k < 4; ++k) rois[size_t(r * 4 + k)] = round_to(boxes[r][k], dt);
                        batch[size_t(r)] = double(r % N);
                    }
                    const float scale = 0.75f;
                    const bool half = std::string(ctm) == "half_pixel", max_mode = std::string(mode) == "max";
                    auto op = ops::RoiAlign::create(dev(), {x.desc, rois.desc, batch.desc, mode, OH, OW, sampling, scale, ctm});
                    HostTensor want({R, C, OH, OW}, dt);
                    for (int64_t r = 0; r < R; ++r) {
                        const double off = half ? 0.5 : 0.0;
                        const double x1 = rois[size_t(r * 4)] * scale - off, y1 = rois[size_t(r * 4 + 1)] * scale - off;
                        double rw = rois[size_t(r * 4 + 2)] * scale - off - x1, rh = rois[size_t(r * 4 + 3)] * scale - off - y1;
                        if (!half) {
                            rw = std::max(rw, 1.0);
                            rh = std::max(rh, 1.0);
                        }
                        const double bh = rh / OH, bw = rw / OW;
                        const int64_t gh = sampling ? sampling : std::max<int64_t>(1, int64_t(std::ceil(rh / OH)));
                        const int64_t gw = sampling ? sampling : std::max<int64_t>(1, int64_t(std::ceil(rw / OW)));
                        for (int64_t c = 0; c < C; ++c)
                            for (int64_t ph = 0; ph < OH; ++ph)
                                for (int64_t pw = 0; pw < OW; ++pw) {
                                    const size_t plane = size_t(((r % N) * C + c) * H * W);
                                    double acc = 0;
                                    bool first = true;
                                    for (int64_t iy = 0; iy < gh; ++iy)
                                        for (int64_t ix = 0; ix < gw; ++ix) {
                                            const double yy = y1 + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
                                            const double xx = x1 + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
                                            const double v = roi_sample(x, plane, H, W, yy, xx, max_mode);
                                            acc = max_mode ? (first ? v : std::max(acc, v)) : acc + v;
                                            first = false;
                                        }
                                    want[size_t(((r * C + c) * OH + ph) * OW + pw)] = max_mode ? acc : acc / double(gh * gw);
                                }
                    }
                    expect_close(run_op(dev(), *op, {x, rois, batch})[0], want, tolerance(dt, 1e-5, 3e-3),
                                 std::string("RoiAlign ") + mode + " " + ctm + " sampling " + std::to_string(sampling) +
                                     " " + gpu::dtype_name(dt));
                }
    const TensorDesc x{{1, 2, 5, 5}, DType::f32}, rois{{3, 4}, DType::f32}, b{{3}, DType::i32};
    EXPECT_THROW(ops::RoiAlign::create(dev(), {x, rois, b, "median"}), Error);
    EXPECT_THROW(ops::RoiAlign::create(dev(), {x, {{3, 5}, DType::f32}, b}), Error);
    EXPECT_THROW(ops::RoiAlign::create(dev(), {x, rois, {{2}, DType::i32}}), Error);
    EXPECT_THROW(ops::RoiAlign::create(dev(), {x, rois, b, "avg", 0}), Error);
}

} // namespace
} // namespace vkml::test
