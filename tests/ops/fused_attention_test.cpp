// FusedAttention against a double-precision reference of softmax(scale Q K^T [select] [+ mask]) V,
// on random inputs at odd sizes, in f32 and f16 storage: cross attention (Sq != Sk), K given as K^T,
// broadcast batch dimensions (one K and V head for several query heads), masks broadcast over batch
// and heads, every tile size (several query blocks and key tiles, the last ones partial), head
// dimensions 1 to 256, scores large enough that a softmax without the running maximum would
// overflow, and rows whose every score is -inf.
#include <cmath>
#include <limits>
#include <random>

#include "op_test.hpp"
#include "vkml/ops/fused.hpp"

using namespace vkml;
using namespace vkml::test;
using ops::AttentionDesc;
using ops::FusedAttention;

namespace {

class FusedAttentionTest : public GpuTest {};

constexpr double inf = std::numeric_limits<double>::infinity();

// The element of `t` (broadcast, numpy rules) at the multi-index `idx` of a tensor of rank idx.size().
double at(const HostTensor& t, const std::vector<int64_t>& idx) {
    const gpu::Shape& s = t.shape();
    const size_t r = s.rank(), n = idx.size();
    int64_t flat = 0;
    for (size_t i = 0; i < r; ++i) {
        const int64_t k = s[i] == 1 ? 0 : idx[n - r + i];
        flat = flat * s[i] + k;
    }
    return t[size_t(flat)];
}

struct Case {
    gpu::Shape q, k, v; // k is K^T's shape with k_transposed
    bool k_transposed = false;
    double scale = 0.3;
    bool select = false, keep = true;
    double fill = -inf;
    gpu::Shape cond;
    bool add = false;
    gpu::Shape mask;
    std::array<int, 2> tile{0, 0};
    double magnitude = 2.0; // of Q and K's values
};

struct Inputs {
    HostTensor q, k, v, cond, mask;
};

// The reference. A row whose scores are all -inf weighs its columns equally (exp(x - max) taken as 1
// where x equals the maximum), as vkml's Softmax does.
HostTensor reference(const Case& c, const Inputs& in) {
    const size_t rq = c.q.rank(), rk = c.k.rank(), rv = c.v.rank();
    const int64_t sq = c.q[rq - 2], d = c.q[rq - 1];
    const int64_t sk = c.k_transposed ? c.k[rk - 1] : c.k[rk - 2];
    const int64_t dv = c.v[rv - 1];
    size_t nb = std::max({rq, rk, rv}) - 2;
    std::vector<int64_t> ob(nb, 1);
    for (const gpu::Shape* s : {&c.q, &c.k, &c.v})
        for (size_t i = 0; i + 2 < s->rank(); ++i) {
            int64_t& o = ob[nb - (s->rank() - 2) + i];
            o = std::max(o, (*s)[i]);
        }
    std::vector<int64_t> out_dims = ob;
    out_dims.push_back(sq);
    out_dims.push_back(dv);
    HostTensor out(gpu::Shape(std::span<const int64_t>(out_dims)), in.q.desc.dtype);
    int64_t batches = 1;
    for (int64_t b : ob) batches *= b;
    std::vector<double> s(static_cast<size_t>(sk)), w(static_cast<size_t>(sk));
    for (int64_t b = 0; b < batches; ++b) {
        std::vector<int64_t> idx(nb + 2, 0);
        for (int64_t rem = b, i = int64_t(nb) - 1; i >= 0; --i) {
            idx[size_t(i)] = rem % ob[size_t(i)];
            rem /= ob[size_t(i)];
        }
        for (int64_t i = 0; i < sq; ++i) {
            idx[nb] = i;
            double m = -inf;
            for (int64_t j = 0; j < sk; ++j) {
                double dot = 0;
                for (int64_t e = 0; e < d; ++e) {
                    std::vector<int64_t> qi = idx, ki = idx;
                    qi[nb] = i;
                    qi[nb + 1] = e;
                    ki[nb] = c.k_transposed ? e : j;
                    ki[nb + 1] = c.k_transposed ? j : e;
                    dot += at(in.q, qi) * at(in.k, ki);
                }
                double x = c.scale * dot;
                std::vector<int64_t> mi = idx;
                mi[nb + 1] = j;
                if (c.select && (at(in.cond, mi) != 0) != c.keep) x = c.fill;
                if (c.add) x += at(in.mask, mi);
                s[size_t(j)] = x;
                m = std::max(m, x);
            }
            double sum = 0;
            for (int64_t j = 0; j < sk; ++j)
                sum += w[size_t(j)] = s[size_t(j)] == m ? 1.0 : std::exp(s[size_t(j)] - m);
            for (int64_t e = 0; e < dv; ++e) {
                double acc = 0;
                for (int64_t j = 0; j < sk; ++j) {
                    std::vector<int64_t> vi = idx;
                    vi[nb] = j;
                    vi[nb + 1] = e;
                    acc += w[size_t(j)] * at(in.v, vi);
                }
                out[size_t((b * sq + i) * dv + e)] = acc / sum;
            }
        }
    }
    return out;
}

void check(gpu::Device& device, const Case& c, uint32_t seed, const std::string& what) {
    for (gpu::DType dt : float_dtypes(device)) {
        if (c.select && !device.caps().storage8) continue;
        Inputs in;
        in.q = random_tensor(c.q, dt, seed, -c.magnitude, c.magnitude);
        in.k = random_tensor(c.k, dt, seed + 1, -c.magnitude, c.magnitude);
        in.v = random_tensor(c.v, dt, seed + 2);
        AttentionDesc d;
        d.q = in.q.desc;
        d.k = in.k.desc;
        d.v = in.v.desc;
        d.k_transposed = c.k_transposed;
        d.scale = float(c.scale);
        d.tile = c.tile;
        std::vector<HostTensor> inputs = {in.q, in.k, in.v};
        if (c.select) {
            in.cond = random_ints(c.cond, gpu::DType::u8, seed + 3, 0, 1);
            d.select = true;
            d.select_keep = c.keep;
            d.fill = float(c.fill);
            d.cond = in.cond.desc;
            inputs.push_back(in.cond);
        }
        if (c.add) {
            in.mask = random_tensor(c.mask, dt, seed + 4);
            d.add_mask = true;
            d.mask = in.mask.desc;
            inputs.push_back(in.mask);
        }
        auto op = FusedAttention::create(device, d);
        const std::string label = what + " " + gpu::dtype_name(dt) + " tile " +
                                  std::to_string(op->tile()[0]) + "x" + std::to_string(op->tile()[1]);
        const HostTensor want = reference(c, in);
        ASSERT_EQ(op->outputs()[0].shape, want.shape()) << label;
        const auto got = run_op(device, *op, inputs, 2);
        expect_close(got[0], want, tolerance(dt, 2e-6, 2e-3), label);
    }
}

TEST_F(FusedAttentionTest, SelfAttentionHeads) {
    check(dev(), {.q = {2, 3, 17, 8}, .k = {2, 3, 17, 8}, .v = {2, 3, 17, 8}, .scale = 1 / std::sqrt(8.0)},
          10, "self-attention");
}

TEST_F(FusedAttentionTest, CrossAttentionOddSizes) {
    check(dev(), {.q = {2, 3, 5, 7}, .k = {2, 3, 13, 7}, .v = {2, 3, 13, 11}, .scale = 0.45}, 20, "cross");
    check(dev(), {.q = {1, 1, 3}, .k = {1, 29, 3}, .v = {1, 29, 1}, .scale = -0.7}, 21, "Dv 1");
    check(dev(), {.q = {1, 1}, .k = {1, 1}, .v = {1, 1}, .scale = 2.0}, 22, "1x1");
}

TEST_F(FusedAttentionTest, KeyTransposed) {
    check(dev(), {.q = {3, 9, 24}, .k = {3, 24, 31}, .v = {3, 31, 24}, .k_transposed = true, .scale = 0.2},
          30, "K^T");
    check(dev(), {.q = {4, 6}, .k = {6, 19}, .v = {19, 5}, .k_transposed = true}, 31, "K^T rank 2");
}

TEST_F(FusedAttentionTest, BroadcastBatch) {
    // One K and V head for four query heads (multi-query attention), V's batch broadcast too.
    check(dev(), {.q = {2, 4, 5, 16}, .k = {2, 1, 9, 16}, .v = {1, 4, 9, 12}}, 40, "broadcast");
    // Q broadcast over K's batch, and a rank-3 K under a rank-5 Q.
    check(dev(), {.q = {1, 7, 6}, .k = {3, 2, 11, 6}, .v = {3, 2, 11, 6}}, 41, "Q broadcast");
    check(dev(), {.q = {2, 1, 3, 4, 5}, .k = {3, 9, 5}, .v = {3, 9, 7}}, 42, "rank 5");
}

TEST_F(FusedAttentionTest, AdditiveMask) {
    // Per (query, key) shared over batch and heads, per key (padding), and a full one.
    check(dev(), {.q = {2, 3, 11, 8}, .k = {2, 3, 21, 8}, .v = {2, 3, 21, 8}, .add = true, .mask = {11, 21}},
          50, "mask [Sq, Sk]");
    check(dev(),
          {.q = {2, 3, 11, 8}, .k = {2, 3, 21, 8}, .v = {2, 3, 21, 8}, .add = true, .mask = {2, 1, 1, 21}},
          51, "mask [B, 1, 1, Sk]");
    check(dev(),
          {.q = {2, 3, 11, 8}, .k = {2, 3, 21, 8}, .v = {2, 3, 21, 9}, .add = true, .mask = {2, 3, 11, 21}},
          52, "mask full");
    check(dev(), {.q = {5, 3}, .k = {3, 7}, .v = {7, 2}, .k_transposed = true, .add = true, .mask = {1}}, 53,
          "mask scalar");
}

TEST_F(FusedAttentionTest, SelectMask) {
    if (!dev().caps().storage8) GTEST_SKIP() << "no 8-bit storage";
    check(dev(),
          {.q = {2, 2, 9, 8},
           .k = {2, 2, 19, 8},
           .v = {2, 2, 19, 8},
           .select = true,
           .keep = true,
           .fill = -1e4,
           .cond = {9, 19}},
          60, "select keep");
    check(dev(),
          {.q = {2, 2, 9, 8},
           .k = {2, 2, 19, 8},
           .v = {2, 2, 19, 8},
           .select = true,
           .keep = false,
           .fill = -3.5,
           .cond = {2, 1, 9, 19}},
          61, "select drop");
    // Both, as GPT-2 does (causal Where, then the padding mask added).
    check(dev(),
          {.q = {1, 2, 13, 8},
           .k = {1, 2, 13, 8},
           .v = {1, 2, 13, 8},
           .select = true,
           .fill = -100.0,
           .cond = {1, 1, 13, 13},
           .add = true,
           .mask = {1, 1, 1, 13}},
          62, "select + mask");
}

TEST_F(FusedAttentionTest, EveryTile) {
    // Several query blocks and key tiles, the last of each partial.
    for (const std::array<int, 2> tile :
         {std::array<int, 2>{32, 32}, {16, 32}, {16, 16}, {8, 16}, {8, 8}, {8, 5}, {32, 3}, {16, 37}})
        check(dev(),
              {.q = {2, 70, 16},
               .k = {2, 101, 16},
               .v = {2, 101, 19},
               .add = true,
               .mask = {70, 101},
               .tile = tile},
              70, "tile");
}

TEST_F(FusedAttentionTest, HeadDimensions) {
    for (int64_t d : {1, 31, 64, 100, 128, 256})
        check(dev(),
              {.q = {1, 2, 9, d}, .k = {1, 2, 23, d}, .v = {1, 2, 23, d}, .scale = 1 / std::sqrt(double(d))},
              80 + uint32_t(d), "D " + std::to_string(d));
    check(dev(), {.q = {1, 9, 256}, .k = {1, 23, 256}, .v = {1, 23, 3}}, 90, "D 256 Dv 3");
}

TEST_F(FusedAttentionTest, LargeScoresStayFinite) {
    // Scores of several hundred, growing along the keys so the running maximum changes from tile to
    // tile: exp() without the maximum subtracted would overflow, and a missed rescale would show.
    check(
        dev(),
        {.q = {1, 33, 8}, .k = {1, 77, 8}, .v = {1, 77, 8}, .scale = 20.0, .tile = {16, 8}, .magnitude = 3.0},
        100, "large");
}

TEST_F(FusedAttentionTest, FullyMaskedRows) {
    // A -inf additive mask on whole rows (and on single entries elsewhere).
    for (gpu::DType dt : float_dtypes(dev())) {
        const gpu::Shape qs{2, 6, 4}, ks{2, 10, 4}, vs{2, 10, 5}, ms{6, 10};
        Inputs in;
        in.q = random_tensor(qs, dt, 110);
        in.k = random_tensor(ks, dt, 111);
        in.v = random_tensor(vs, dt, 112);
        in.mask = random_tensor(ms, dt, 113);
        for (int64_t j = 0; j < 10; ++j) in.mask[size_t(2 * 10 + j)] = -inf; // row 2
        in.mask[size_t(4 * 10 + 3)] = -inf;
        AttentionDesc d{
            .q = in.q.desc, .k = in.k.desc, .v = in.v.desc, .add_mask = true, .mask = in.mask.desc};
        const Case c{.q = qs, .k = ks, .v = vs, .scale = 1.0, .add = true, .mask = ms};
        auto op = FusedAttention::create(dev(), d);
        const HostTensor want = reference(c, in);
        const auto got = run_op(dev(), *op, {in.q, in.k, in.v, in.mask});
        expect_close(got[0], want, tolerance(dt, 2e-6, 2e-3),
                     std::string("masked rows ") + gpu::dtype_name(dt));
        // Row 2 of the first batch entry is the mean of its V's rows.
        for (int64_t e = 0; e < 5; ++e) {
            double mean = 0;
            for (int64_t j = 0; j < 10; ++j) mean += in.v[size_t(j * 5 + e)] / 10;
            EXPECT_NEAR(got[0][size_t(2 * 5 + e)], mean, 1e-3);
        }
    }
}

TEST_F(FusedAttentionTest, Errors) {
    const TensorDesc q{{2, 5, 8}, gpu::DType::f32}, k{{2, 7, 8}, gpu::DType::f32},
        v{{2, 7, 4}, gpu::DType::f32};
    expect_error(
        [&] {
            FusedAttention::create(dev(), {.q = q, .k = {{2, 7, 9}, gpu::DType::f32}, .v = v});
        },
        {"FusedAttention", "k", "row length 8"});
    expect_error(
        [&] {
            FusedAttention::create(dev(), {.q = q, .k = k, .v = {{2, 6, 4}, gpu::DType::f32}});
        },
        {"FusedAttention", "v", "7 rows"});
    expect_error(
        [&] {
            FusedAttention::create(dev(), {.q = q, .k = k, .v = {{3, 7, 4}, gpu::DType::f32}});
        },
        {"FusedAttention"});
    expect_error(
        [&] {
            FusedAttention::create(dev(), {.q = q, .k = {{2, 7, 8}, gpu::DType::i32}, .v = v});
        },
        {"FusedAttention", "k", "dtype"});
    expect_error(
        [&] {
            FusedAttention::create(dev(), {.q = {{5}, gpu::DType::f32}, .k = k, .v = v});
        },
        {"FusedAttention", "q", "at least 2"});
    expect_error(
        [&] {
            FusedAttention::create(
                dev(), {.q = q, .k = k, .v = v, .add_mask = true, .mask = {{5, 6}, gpu::DType::f32}});
        },
        {"FusedAttention", "mask", "broadcast"});
    expect_error(
        [&] {
            FusedAttention::create(
                dev(), {.q = {{1, 5, 257}, gpu::DType::f32}, .k = {{1, 7, 257}, gpu::DType::f32}, .v = v});
        },
        {"FusedAttention", "head dimensions up to 256"});
    expect_error(
        [&] {
            FusedAttention::create(dev(), {.q = q, .k = k, .v = v, .tile = {12, 8}});
        },
        {"FusedAttention", "tile"});
    std::string why;
    EXPECT_FALSE(FusedAttention::supported(dev(), {.q = q, .k = k, .v = {{2, 6, 4}, gpu::DType::f32}}, &why));
    EXPECT_NE(why.find("7 rows"), std::string::npos) << why;
}

} // namespace
