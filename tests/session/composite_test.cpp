// The ops a session expands into others when it is built (ml/graph/composite.cpp), each against a
// double-precision (floats) or exact int64 (integers) CPU reference on random non-zero inputs of
// odd sizes, in f32 and f16 sessions: MeanVarianceNormalization, MaxPool of uint8 and int8,
// MatMulInteger and ConvInteger (reductions long enough to be split into chunks), and the errors
// for what they refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "session_util.hpp"

namespace vkml::test {
namespace {

class CompositeTest : public GpuTest {};

TensorData random_bytes(DType dtype, std::vector<int64_t> dims, uint32_t seed) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::mt19937 rng(seed);
    std::vector<std::byte> b(static_cast<size_t>(n));
    for (auto& x : b) x = static_cast<std::byte>(rng() & 0xff);
    return TensorData(dtype, std::move(dims), std::move(b));
}

std::vector<int64_t> values(const TensorData& t) {
    return t.to_int64s();
}

// MVN over `axes` of x [N, C, H, W] in double: (x - mean) / (sqrt(var) + 1e-9).
std::vector<double> mvn_ref(const TensorData& x, const std::vector<int64_t>& axes) {
    const auto d = x.dims();
    const auto v = x.to_floats();
    std::vector<double> y(v.size());
    auto reduced = [&](size_t a) { return std::find(axes.begin(), axes.end(), static_cast<int64_t>(a)) != axes.end(); };
    // Group key: the index with the reduced axes zeroed.
    std::vector<int64_t> strides(d.size(), 1);
    for (size_t a = d.size() - 1; a > 0; --a) strides[a - 1] = strides[a] * d[a];
    auto key = [&](size_t i) {
        int64_t k = 0;
        for (size_t a = 0; a < d.size(); ++a)
            if (!reduced(a)) k += (static_cast<int64_t>(i) / strides[a] % d[a]) * strides[a];
        return k;
    };
    std::map<int64_t, std::pair<double, double>> stats; // sum, count
    for (size_t i = 0; i < v.size(); ++i) {
        auto& s = stats[key(i)];
        s.first += v[i];
        s.second += 1;
    }
    std::map<int64_t, double> var;
    for (size_t i = 0; i < v.size(); ++i) {
        const auto& s = stats[key(i)];
        const double c = v[i] - s.first / s.second;
        var[key(i)] += c * c / s.second;
    }
    for (size_t i = 0; i < v.size(); ++i) {
        const auto& s = stats[key(i)];
        y[i] = (v[i] - s.first / s.second) / (std::sqrt(var[key(i)]) + 1e-9);
    }
    return y;
}

TEST_F(CompositeTest, MeanVarianceNormalization) {
    for (const bool fp32 : {true, false})
        for (const auto& axes : {std::vector<int64_t>{0, 2, 3}, std::vector<int64_t>{1, 3}}) {
            Graph g = new_graph("mvn");
            const ValueId x = input(g, "x", {3, 5, 7, 9});
            graph::Node& n = g.add_node("MeanVarianceNormalization", {x}, {g.add_value("y")}, "mvn");
            if (axes[0] != 0) n.attributes.insert_or_assign("axes", graph::Attribute(axes));
            g.outputs().push_back(n.outputs[0]);
            // Non-zero and off-centre, so the mean matters.
            TensorData xv = rand_tensor({3, 5, 7, 9}, 11, 0.25f, 3.f);
            Session s(dev(), g, {.fp32 = fp32});
            const auto y = s.run(std::vector<TensorData>{xv}).at(0).to_floats();
            const auto want = mvn_ref(xv, axes);
            ASSERT_EQ(y.size(), want.size());
            double worst = 0;
            for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(y[i] - want[i]));
            EXPECT_LT(worst, fp32 ? 1e-4 : 2e-2) << (fp32 ? "f32" : "f16") << " axes " << axes.size();
        }
}

// STFT of a real signal [2, 53, 1]: frames of 12 every 5 samples (9 frames), with a window or
// (frame_length only) without, onesided; double-precision DFT as the reference.
TEST_F(CompositeTest, Stft) {
    const int64_t batch = 2, len = 53, step = 5, frame = 12, frames = (len - frame) / step + 1, bins = frame / 2 + 1;
    for (const bool with_window : {true, false})
        for (const bool fp32 : {true, false}) {
            Graph g = new_graph("stft", 17);
            const ValueId x = input(g, "x", {batch, len, 1});
            const TensorData wv = rand_tensor({frame}, 31, 0.25f, 1.f);
            std::vector<ValueId> ins = {x, g.add_constant("step", TensorData::from_int64s({}, std::vector<int64_t>{step}))};
            if (with_window) {
                ins.push_back(g.add_constant("window", wv));
            } else {
                ins.push_back(graph::no_value);
                ins.push_back(g.add_constant("frame_length", TensorData::from_int64s({}, std::vector<int64_t>{frame})));
            }
            g.outputs().push_back(node(g, "STFT", ins, "y"));
            const TensorData xv = rand_tensor({batch, len, 1}, 32);
            Session s(dev(), g, {.fp32 = fp32});
            const TensorData y = s.run(std::vector<TensorData>{xv}).at(0);
            ASSERT_EQ(y.dims(), (std::vector<int64_t>{batch, frames, bins, 2}));
            const auto xs = xv.to_floats(), ws = wv.to_floats(), got = y.to_floats();
            const double pi = 3.14159265358979323846;
            double worst = 0, scale = 0;
            for (int64_t b = 0; b < batch; ++b)
                for (int64_t f = 0; f < frames; ++f)
                    for (int64_t k = 0; k < bins; ++k) {
                        double re = 0, im = 0;
                        for (int64_t j = 0; j < frame; ++j) {
                            const double v = xs[static_cast<size_t>(b * len + f * step + j)] *
                                             (with_window ? ws[static_cast<size_t>(j)] : 1.0);
                            const double a = -2 * pi * static_cast<double>(j * k) / static_cast<double>(frame);
                            re += v * std::cos(a);
                            im += v * std::sin(a);
                        }
                        const size_t o = static_cast<size_t>(((b * frames + f) * bins + k) * 2);
                        worst = std::max({worst, std::fabs(got[o] - re), std::fabs(got[o + 1] - im)});
                        scale = std::max({scale, std::fabs(re), std::fabs(im)});
                    }
            EXPECT_LT(worst / scale, fp32 ? 1e-5 : 5e-3) << (with_window ? "window" : "frame_length") << (fp32 ? " f32" : " f16");
        }
}

TEST_F(CompositeTest, MaxPoolOfEightBitIntegers) {
    for (const DType t : {DType::u8, DType::i8})
        for (const bool fp32 : {true, false}) {
            Graph g = new_graph("maxpool8");
            const ValueId x = input(g, "x", {2, 3, 9, 7}, t);
            g.outputs().push_back(node(g, "MaxPool", {x}, "y",
                                       {{"kernel_shape", std::vector<int64_t>{3, 2}},
                                        {"strides", std::vector<int64_t>{2, 1}},
                                        {"pads", std::vector<int64_t>{1, 0, 1, 1}}}));
            const TensorData xv = random_bytes(t, {2, 3, 9, 7}, 5);
            Session s(dev(), g, {.fp32 = fp32});
            const TensorData y = s.run(std::vector<TensorData>{xv}).at(0);
            ASSERT_EQ(y.dtype(), t);
            ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 5, 7}));
            const auto xi = values(xv), yi = values(y);
            for (int64_t p = 0; p < 6; ++p)
                for (int64_t oh = 0; oh < 5; ++oh)
                    for (int64_t ow = 0; ow < 7; ++ow) {
                        int64_t m = INT64_MIN;
                        for (int64_t kh = 0; kh < 3; ++kh)
                            for (int64_t kw = 0; kw < 2; ++kw) {
                                const int64_t h = oh * 2 - 1 + kh, w = ow + kw;
                                if (h >= 0 && h < 9 && w < 7) m = std::max(m, xi[static_cast<size_t>((p * 9 + h) * 7 + w)]);
                            }
                        ASSERT_EQ(yi[static_cast<size_t>((p * 5 + oh) * 7 + ow)], m) << p << " " << oh << " " << ow;
                    }
        }
}

// MatMulInteger A [2, 5, K] x B [K, 7] with per-row and per-column zero points, exact in int64.
TEST_F(CompositeTest, MatMulIntegerIsExact) {
    const int64_t k = 611; // more than 258 products: three f32 chunks for uint8 x uint8
    for (const bool b_constant : {false, true})
        for (const bool fp32 : {true, false}) {
            Graph g = new_graph("matmulinteger");
            const ValueId a = input(g, "a", {2, 5, k}, DType::u8);
            const TensorData bv = random_bytes(DType::u8, {k, 7}, 3);
            const ValueId b = b_constant ? g.add_constant("b", bv) : input(g, "b", {k, 7}, DType::u8);
            const TensorData az = random_bytes(DType::u8, {5}, 7), bz = random_bytes(DType::u8, {7}, 8);
            const ValueId y = node(g, "MatMulInteger", {a, b, g.add_constant("az", az), g.add_constant("bz", bz)}, "y");
            g.outputs().push_back(y);
            const TensorData av = random_bytes(DType::u8, {2, 5, k}, 4);
            Session s(dev(), g, {.fp32 = fp32});
            std::vector<TensorData> in{av};
            if (!b_constant) in.push_back(bv);
            const TensorData out = s.run(in).at(0);
            ASSERT_EQ(out.dtype(), DType::i32);
            ASSERT_EQ(out.dims(), (std::vector<int64_t>{2, 5, 7}));
            const auto ai = values(av), bi = values(bv), azi = values(az), bzi = values(bz), yi = values(out);
            for (int64_t bt = 0; bt < 2; ++bt)
                for (int64_t m = 0; m < 5; ++m)
                    for (int64_t j = 0; j < 7; ++j) {
                        int64_t sum = 0;
                        for (int64_t p = 0; p < k; ++p)
                            sum += (ai[static_cast<size_t>((bt * 5 + m) * k + p)] - azi[static_cast<size_t>(m)]) *
                                   (bi[static_cast<size_t>(p * 7 + j)] - bzi[static_cast<size_t>(j)]);
                        ASSERT_EQ(yi[static_cast<size_t>((bt * 5 + m) * 7 + j)], sum)
                            << bt << " " << m << " " << j << (fp32 ? " f32" : " f16");
                    }
        }
}

TEST_F(CompositeTest, MatMulIntegerSignedOneDimensional) {
    // int8 x int8 with scalar zero points; A 1-D (the promoted dimension dropped).
    const int64_t k = 301;
    Graph g = new_graph("matmulinteger_i8");
    const ValueId a = input(g, "a", {k}, DType::i8);
    const ValueId b = input(g, "b", {k, 3}, DType::i8);
    const TensorData az = random_bytes(DType::i8, {}, 1), bz = random_bytes(DType::i8, {}, 2);
    g.outputs().push_back(node(g, "MatMulInteger", {a, b, g.add_constant("az", az), g.add_constant("bz", bz)}, "y"));
    const TensorData av = random_bytes(DType::i8, {k}, 9), bv = random_bytes(DType::i8, {k, 3}, 10);
    Session s(dev(), g, {.fp32 = false});
    const TensorData out = s.run(std::vector<TensorData>{av, bv}).at(0);
    ASSERT_EQ(out.dims(), (std::vector<int64_t>{3}));
    const auto ai = values(av), bi = values(bv), yi = values(out);
    const int64_t za = values(az)[0], zb = values(bz)[0];
    for (int64_t j = 0; j < 3; ++j) {
        int64_t sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += (ai[static_cast<size_t>(p)] - za) * (bi[static_cast<size_t>(p * 3 + j)] - zb);
        EXPECT_EQ(yi[static_cast<size_t>(j)], sum) << j;
    }
}

// ConvInteger X [2, 37, 9, 8] (37 x 9 taps: split over input channels), W [5, 37, 3, 3] with a
// per-output-channel zero point, pads and strides, exact in int64.
TEST_F(CompositeTest, ConvIntegerIsExact) {
    const int64_t n = 2, c = 37, h = 9, w = 8, m = 5;
    for (const bool fp32 : {true, false}) {
        Graph g = new_graph("convinteger");
        const ValueId x = input(g, "x", {n, c, h, w}, DType::u8);
        const ValueId wi_in = input(g, "w", {m, c, 3, 3}, DType::u8);
        const TensorData wv = random_bytes(DType::u8, {m, c, 3, 3}, 21);
        const TensorData xz = random_bytes(DType::u8, {}, 22), wz = random_bytes(DType::u8, {m}, 23);
        g.outputs().push_back(node(g, "ConvInteger",
                                   {x, wi_in, g.add_constant("xz", xz), g.add_constant("wz", wz)},
                                   "y", {{"pads", std::vector<int64_t>{1, 0, 1, 1}}, {"strides", std::vector<int64_t>{2, 1}}}));
        const TensorData xv = random_bytes(DType::u8, {n, c, h, w}, 24);
        Session s(dev(), g, {.fp32 = fp32});
        const TensorData out = s.run(std::vector<TensorData>{xv, wv}).at(0);
        const int64_t oh = (h + 2 - 3) / 2 + 1, ow = w + 1 - 3 + 1;
        ASSERT_EQ(out.dims(), (std::vector<int64_t>{n, m, oh, ow}));
        const auto xi = values(xv), wi = values(wv), wzi = values(wz), yi = values(out);
        const int64_t zx = values(xz)[0];
        for (int64_t b = 0; b < n; ++b)
            for (int64_t o = 0; o < m; ++o)
                for (int64_t y = 0; y < oh; ++y)
                    for (int64_t xq = 0; xq < ow; ++xq) {
                        int64_t sum = 0;
                        for (int64_t ci = 0; ci < c; ++ci)
                            for (int64_t kh = 0; kh < 3; ++kh)
                                for (int64_t kw = 0; kw < 3; ++kw) {
                                    const int64_t iy = y * 2 - 1 + kh, ix = xq + kw;
                                    if (iy < 0 || iy >= h || ix >= w) continue;
                                    sum += (xi[static_cast<size_t>(((b * c + ci) * h + iy) * w + ix)] - zx) *
                                           (wi[static_cast<size_t>(((o * c + ci) * 3 + kh) * 3 + kw)] - wzi[static_cast<size_t>(o)]);
                                }
                        ASSERT_EQ(yi[static_cast<size_t>(((b * m + o) * oh + y) * ow + xq)], sum)
                            << b << " " << o << " " << y << " " << xq << (fp32 ? " f32" : " f16");
                    }
    }
}

// y = saturate(round_half_even(acc x sa x sb / ys) + yz) for uint8 y, against the exact int64
// accumulator in double: equal, except within 1e-3 of a rounding tie (the device multiplies in
// f32), where one step either way is allowed.
void expect_requantized(const std::vector<int64_t>& got, const std::vector<int64_t>& acc,
                        const std::vector<double>& multiplier, int64_t yz, const std::string& what) {
    ASSERT_EQ(got.size(), acc.size());
    for (size_t i = 0; i < acc.size(); ++i) {
        const double v = static_cast<double>(acc[i]) * multiplier[i];
        const double r = std::nearbyint(v); // the default rounding mode: half to even
        const int64_t want = std::clamp<int64_t>(static_cast<int64_t>(r) + yz, 0, 255);
        const bool tie = std::fabs(std::fabs(v - std::floor(v)) - 0.5) < 1e-3;
        if (tie)
            EXPECT_LE(std::abs(got[i] - want), 1) << what << " " << i;
        else
            ASSERT_EQ(got[i], want) << what << " " << i << " (" << v << ")";
    }
}

TEST_F(CompositeTest, QLinearMatMulAndConv) {
    for (const bool fp32 : {true, false}) {
        // QLinearMatMul [3, 5, 29] x [29, 7]: per-tensor A, per-column B scales and zero points.
        Graph g = new_graph("qlinearmatmul");
        const ValueId a = input(g, "a", {3, 5, 29}, DType::u8);
        const TensorData bv = random_bytes(DType::u8, {29, 7}, 41), bz = random_bytes(DType::u8, {7}, 42);
        const TensorData bs = rand_tensor({7}, 43, 0.001f, 0.01f);
        const float as = 0.0173f, ys = 0.37f;
        const uint8_t az = 113, yz = 121;
        auto u8 = [](std::vector<int64_t> dims, uint8_t v) { return TensorData(DType::u8, std::move(dims), {std::byte{v}}); };
        g.outputs().push_back(node(g, "QLinearMatMul",
                                   {a, g.add_constant("as", TensorData::scalar(as)), g.add_constant("az", u8({}, az)),
                                    g.add_constant("b", bv), g.add_constant("bs", bs), g.add_constant("bz", bz),
                                    g.add_constant("ys", TensorData::scalar(ys)), g.add_constant("yz", u8({}, yz))},
                                   "y"));
        const TensorData av = random_bytes(DType::u8, {3, 5, 29}, 44);
        Session s(dev(), g, {.fp32 = fp32});
        const TensorData y = s.run(std::vector<TensorData>{av}).at(0);
        ASSERT_EQ(y.dtype(), DType::u8);
        ASSERT_EQ(y.dims(), (std::vector<int64_t>{3, 5, 7}));
        const auto ai = values(av), bi = values(bv), bzi = values(bz);
        const auto bsf = bs.to_floats();
        std::vector<int64_t> acc;
        std::vector<double> mult;
        for (int64_t r = 0; r < 15; ++r)
            for (int64_t j = 0; j < 7; ++j) {
                int64_t sum = 0;
                for (int64_t p = 0; p < 29; ++p)
                    sum += (ai[static_cast<size_t>(r * 29 + p)] - az) * (bi[static_cast<size_t>(p * 7 + j)] - bzi[static_cast<size_t>(j)]);
                acc.push_back(sum);
                mult.push_back(double(as) * double(bsf[static_cast<size_t>(j)]) / double(ys));
            }
        expect_requantized(values(y), acc, mult, yz, fp32 ? "matmul f32" : "matmul f16");

        // QLinearConv [1, 5, 7, 6] with W [4, 5, 3, 3], per-channel w scale and zero point, bias, pads 1.
        Graph c = new_graph("qlinearconv");
        const ValueId x = input(c, "x", {1, 5, 7, 6}, DType::u8);
        const TensorData wv = random_bytes(DType::u8, {4, 5, 3, 3}, 51), wz = random_bytes(DType::u8, {4}, 52);
        const TensorData ws = rand_tensor({4}, 53, 0.001f, 0.01f);
        const std::vector<int32_t> bias = {-1234, 0, 777, 40000};
        c.outputs().push_back(node(c, "QLinearConv",
                                   {x, c.add_constant("xs", TensorData::scalar(as)), c.add_constant("xz", u8({}, az)),
                                    c.add_constant("w", wv), c.add_constant("ws", ws), c.add_constant("wz", wz),
                                    c.add_constant("ys", TensorData::scalar(ys)), c.add_constant("yz", u8({}, yz)),
                                    c.add_constant("bias", TensorData::from_int32s({4}, bias))},
                                   "y", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
        const TensorData xv = random_bytes(DType::u8, {1, 5, 7, 6}, 54);
        Session sc(dev(), c, {.fp32 = fp32});
        const TensorData yc = sc.run(std::vector<TensorData>{xv}).at(0);
        ASSERT_EQ(yc.dims(), (std::vector<int64_t>{1, 4, 7, 6}));
        const auto xi = values(xv), wi = values(wv), wzi = values(wz);
        const auto wsf = ws.to_floats();
        acc.clear();
        mult.clear();
        for (int64_t o = 0; o < 4; ++o)
            for (int64_t h = 0; h < 7; ++h)
                for (int64_t w = 0; w < 6; ++w) {
                    int64_t sum = bias[static_cast<size_t>(o)];
                    for (int64_t ci = 0; ci < 5; ++ci)
                        for (int64_t kh = 0; kh < 3; ++kh)
                            for (int64_t kw = 0; kw < 3; ++kw) {
                                const int64_t iy = h - 1 + kh, ix = w - 1 + kw;
                                if (iy < 0 || iy >= 7 || ix < 0 || ix >= 6) continue;
                                sum += (xi[static_cast<size_t>((ci * 7 + iy) * 6 + ix)] - az) *
                                       (wi[static_cast<size_t>(((o * 5 + ci) * 3 + kh) * 3 + kw)] - wzi[static_cast<size_t>(o)]);
                            }
                    acc.push_back(sum);
                    mult.push_back(double(as) * double(wsf[static_cast<size_t>(o)]) / double(ys));
                }
        expect_requantized(values(yc), acc, mult, yz, fp32 ? "conv f32" : "conv f16");
    }
}

TEST_F(CompositeTest, MalformedOrInexactNodesAreErrorsNamingThem) {
    auto expect_error = [&](Graph& g, ErrorCode code, const std::string& words) {
        try {
            Session s(dev(), g, {.fp32 = true});
            FAIL() << "expected an error saying " << words;
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), code) << e.what();
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        }
    };
    {
        // group 2 with 200 x 9 products per output: more than one exact chunk, and no split at group > 1.
        Graph g = new_graph("convinteger_group");
        const ValueId x = input(g, "x", {1, 400, 5, 5}, DType::u8);
        g.outputs().push_back(node(g, "ConvInteger", {x, g.add_constant("w", random_bytes(DType::u8, {4, 200, 3, 3}, 1))},
                                   "y", {{"group", int64_t{2}}}));
        expect_error(g, ErrorCode::Unsupported, "group 2");
    }
    {
        Graph g = new_graph("stft_step", 17);
        const ValueId x = input(g, "x", {1, 20, 1});
        const ValueId step = input(g, "step", {}, DType::i64);
        g.outputs().push_back(node(g, "STFT", {x, step, graph::no_value,
                                               g.add_constant("len", TensorData::from_int64s({}, std::vector<int64_t>{8}))}, "y"));
        expect_error(g, ErrorCode::Unsupported, "frame_step 'step' must be a constant");
    }
    {
        Graph g = new_graph("stft_long", 17);
        const ValueId x = input(g, "x", {1, 6, 1});
        g.outputs().push_back(node(g, "STFT", {x, g.add_constant("step", TensorData::from_int64s({}, std::vector<int64_t>{1})),
                                               graph::no_value,
                                               g.add_constant("len", TensorData::from_int64s({}, std::vector<int64_t>{8}))}, "y"));
        expect_error(g, ErrorCode::InvalidArgument, "longer than the signal");
    }
    {
        // A reduction of 1.1 million products would be over 4096 chunks of 258: refused up front.
        Graph g = new_graph("matmulinteger_long");
        const ValueId a = input(g, "a", {1, 1100000}, DType::u8);
        const ValueId b = input(g, "b", {1100000, 1}, DType::u8);
        g.outputs().push_back(node(g, "MatMulInteger", {a, b}, "y"));
        expect_error(g, ErrorCode::Unsupported, "exact f32 chunks of 258");
    }
    {
        Graph g = new_graph("mvn_int");
        const ValueId x = input(g, "x", {1, 2, 3, 3}, DType::i32);
        g.outputs().push_back(node(g, "MeanVarianceNormalization", {x}, "y"));
        expect_error(g, ErrorCode::InvalidArgument, "takes a float tensor");
    }
    {
        Graph g = new_graph("convinteger_rank");
        const ValueId x = input(g, "x", {1, 2, 5, 5}, DType::u8);
        g.outputs().push_back(node(g, "ConvInteger", {x, g.add_constant("w", random_bytes(DType::u8, {3, 2, 3}, 1))}, "y"));
        expect_error(g, ErrorCode::InvalidArgument, "W of the same rank");
    }
    {
        Graph g = new_graph("qlinearconv_bias");
        const ValueId x = input(g, "x", {1, 2, 5, 5}, DType::u8);
        auto f = [&](const char* name) { return g.add_constant(name, TensorData::scalar(0.5f)); };
        auto z = [&](const char* name) { return g.add_constant(name, TensorData(DType::u8, {}, {std::byte{3}})); };
        g.outputs().push_back(node(g, "QLinearConv",
                                   {x, f("xs"), z("xz"), g.add_constant("w", random_bytes(DType::u8, {3, 2, 3, 3}, 1)),
                                    f("ws"), z("wz"), f("ys"), z("yz"),
                                    g.add_constant("b", TensorData::from_int32s({2}, std::vector<int32_t>{1, 2}))},
                                   "y"));
        expect_error(g, ErrorCode::InvalidArgument, "bias must be [M]");
    }
    {
        Graph g = new_graph("matmulinteger_float");
        const ValueId a = input(g, "a", {3, 4});
        g.outputs().push_back(node(g, "MatMulInteger", {a, g.add_constant("b", rand_tensor({4, 2}, 1))}, "y"));
        expect_error(g, ErrorCode::InvalidArgument, "takes uint8 or int8");
    }
    {
        Graph g = new_graph("matmulinteger_k");
        const ValueId a = input(g, "a", {3, 4}, DType::u8);
        g.outputs().push_back(node(g, "MatMulInteger", {a, g.add_constant("b", random_bytes(DType::u8, {5, 2}, 1))}, "y"));
        expect_error(g, ErrorCode::InvalidArgument, "are not B's rows");
    }
}

} // namespace
} // namespace vkml::test
