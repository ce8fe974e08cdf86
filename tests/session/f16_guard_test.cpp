// The f16 guard (SessionOptions::f16_guard): models whose activations f16 cannot hold, built here,
// return all zeros (or inf) in plain f16 storage; with the guard, a calibration run finds the node
// that loses them, keeps it and its neighbours in f32, and the answer matches a double-precision
// reference. The criteria themselves are checked on their own first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph/f16_guard.hpp"
#include "session_util.hpp"

namespace vkml::test {
namespace {

using graph::detail::f16_failure;
using graph::detail::value_stats;

TEST(F16GuardCriteria, StatsAndFailures) {
    const std::vector<float> v = {0.f, 1e-6f, -2e-5f, 0.5f, -70000.f, INFINITY, NAN, 3.f};
    const auto s = value_stats(v);
    EXPECT_EQ(s.count, 8u);
    EXPECT_EQ(s.nonfinite, 2u);
    EXPECT_EQ(s.nonzero, 5u);
    EXPECT_EQ(s.subnormal, 2u);
    EXPECT_EQ(s.max_abs, 70000.0);
    EXPECT_EQ(f16_failure(s, nullptr, true), "overflow"); // beyond 65504 in f32

    const std::vector<float> ok = {0.25f, -1.f, 0.f, 1e-6f};
    const auto fine = value_stats(ok);
    EXPECT_EQ(f16_failure(fine, &fine, true), "");
    const auto tiny = value_stats(std::vector<float>{1e-6f, -3e-5f, 0.5f});
    EXPECT_EQ(f16_failure(tiny, nullptr, true), "underflow"); // two of three nonzero below 2^-14
    // Compared with the f16 run: zeros where f32 has values, inf where f32 has none.
    const auto zeros = value_stats(std::vector<float>{0.f, 0.f, 0.f, 0.f});
    const auto infs = value_stats(std::vector<float>{INFINITY, -1.f, 0.f, 1e-6f});
    EXPECT_EQ(f16_failure(fine, &zeros, true), "underflow");
    EXPECT_EQ(f16_failure(fine, &infs, true), "overflow");
    // ... charged to the node only when its inputs came through f16 intact.
    EXPECT_EQ(f16_failure(fine, &zeros, false), "");
    EXPECT_EQ(f16_failure(fine, &infs, false), "");
}

class F16Guard : public GpuTest {
protected:
    void SetUp() override {
        GpuTest::SetUp();
        if (!dev().caps().storage16) GTEST_SKIP() << "no 16-bit storage: f16 mode is f32 here";
    }
};

const std::vector<int64_t> dims = {1, 3, 7, 5};

// Random signs and magnitudes in [0.5, 1]: scaled by the chains below, every element lands in a
// known range (no values near zero that a criterion could count either way).
TensorData input_data(uint32_t seed, float scale = 1.f) {
    auto v = random_floats(105, seed, -1.f, 1.f);
    for (float& x : v) x = std::copysign(0.5f + 0.5f * std::fabs(x), x) * scale;
    return TensorData::from_floats(dims, v);
}

// y = x * f[0] * f[1] * ... as a chain of Mul nodes named `names`, each by a scalar constant.
Graph mul_chain(const std::string& name, const std::vector<std::string>& names, const std::vector<float>& f) {
    Graph g = new_graph(name);
    ValueId v = input(g, "x", dims);
    for (size_t k = 0; k < f.size(); ++k)
        v = node(g, "Mul", {v, g.add_constant(names[k] + "_c", TensorData::scalar(f[k]))}, names[k]);
    g.outputs() = {v};
    return g;
}

std::vector<double> reference(const TensorData& x, const std::vector<float>& f) {
    std::vector<double> y;
    for (float e : x.to_floats()) {
        double d = e;
        for (float c : f) d *= c;
        y.push_back(d);
    }
    return y;
}

double max_rel_error(const TensorData& got, const std::vector<double>& want) {
    const auto g = got.to_floats();
    double worst = 0;
    for (size_t i = 0; i < g.size(); ++i)
        worst = std::max(worst, std::fabs(g[i] - want[i]) / std::max(std::fabs(want[i]), 1e-30));
    return worst;
}

std::vector<std::pair<std::string, std::string>> pairs(const std::vector<KeptInF32>& kept) {
    std::vector<std::pair<std::string, std::string>> p;
    for (const KeptInF32& k : kept) p.emplace_back(k.node, k.reason);
    std::sort(p.begin(), p.end());
    return p;
}

// The step named `name` stores its output in f32 ("... -> f32[...]").
bool step_in_f32(const Session& s, const std::string& name) {
    for (const StepInfo& st : s.steps())
        if (st.name == name) return st.detail.find("-> f32") != std::string::npos;
    return false;
}

// Activations of about 1e-8 between two scalings: f16 flushes them to zero.
const std::vector<std::string> tiny_names = {"shrink1", "shrink2", "grow1", "grow2"};
const std::vector<float> tiny_factors = {1e-4f, 1e-4f, 1e4f, 1e4f};

TEST_F(F16Guard, TinyActivationsAllZeroInF16AreRightWithTheGuard) {
    const Graph g = mul_chain("tiny", tiny_names, tiny_factors);
    const TensorData x = input_data(11);
    const auto want = reference(x, tiny_factors);
    {
        Session plain(dev(), g);
        const auto out = plain.run(std::vector<TensorData>{x});
        for (float v : out[0].to_floats()) ASSERT_EQ(v, 0.f) << "plain f16 should lose the tiny values";
        EXPECT_TRUE(plain.calibrated());
        EXPECT_TRUE(plain.kept_in_f32().empty());
    }
    Session guarded(dev(), g, {.f16_guard = true});
    EXPECT_FALSE(guarded.calibrated());
    const auto out = guarded.run(std::vector<TensorData>{x});
    EXPECT_TRUE(guarded.calibrated());
    EXPECT_LT(max_rel_error(out[0], want), 3e-3);
    using P = std::pair<std::string, std::string>;
    EXPECT_EQ(pairs(guarded.kept_in_f32()), (std::vector<P>{{"grow1", "neighbour of shrink2"},
                                                            {"shrink1", "neighbour of shrink2"},
                                                            {"shrink2", "underflow"}}));
    for (const char* n : {"shrink1", "shrink2", "grow1"}) EXPECT_TRUE(step_in_f32(guarded, n)) << n;
    EXPECT_FALSE(step_in_f32(guarded, "grow2")) << "a node the guard did not name stays f16";
    EXPECT_NE(guarded.describe().find("kept in f32: "), std::string::npos);
    // Later runs run the mixed plan without calibrating again.
    const size_t steps = guarded.steps().size();
    const TensorData x2 = input_data(12);
    const auto out2 = guarded.run(std::vector<TensorData>{x2});
    EXPECT_EQ(guarded.steps().size(), steps);
    EXPECT_EQ(guarded.kept_in_f32().size(), 3u);
    EXPECT_LT(max_rel_error(out2[0], reference(x2, tiny_factors)), 3e-3);
}

// Activations of about 2e5: f16 overflows to inf; scaled back down, the answer is inf.
const std::vector<std::string> big_names = {"up1", "up2", "down1", "down2"};
const std::vector<float> big_factors = {300.f, 1000.f, 1e-3f, 1.f / 300.f};

TEST_F(F16Guard, OverflowInfInF16IsRightWithTheGuard) {
    const Graph g = mul_chain("big", big_names, big_factors);
    const TensorData x = input_data(21);
    const auto want = reference(x, big_factors);
    {
        Session plain(dev(), g);
        for (float v : plain.run(std::vector<TensorData>{x})[0].to_floats())
            ASSERT_FALSE(std::isfinite(v)) << "plain f16 should overflow";
    }
    Session guarded(dev(), g, {.f16_guard = true});
    const auto out = guarded.run(std::vector<TensorData>{x});
    EXPECT_LT(max_rel_error(out[0], want), 3e-3);
    using P = std::pair<std::string, std::string>;
    EXPECT_EQ(
        pairs(guarded.kept_in_f32()),
        (std::vector<P>{{"down1", "neighbour of up2"}, {"up1", "neighbour of up2"}, {"up2", "overflow"}}));
}

// A node the caller pins to f16 stays f16 (and the answer stays wrong, as asked); nothing else is
// charged with its loss. Pinning the op type does the same.
TEST_F(F16Guard, ExplicitF16EntriesWin) {
    const Graph g = mul_chain("tiny", tiny_names, tiny_factors);
    const TensorData x = input_data(31);
    for (const char* key : {"shrink2", "Mul"}) {
        Session s(dev(), g, {.precision = {{key, Precision::F16}}, .f16_guard = true});
        const auto out = s.run(std::vector<TensorData>{x});
        EXPECT_TRUE(s.calibrated()) << key;
        EXPECT_TRUE(s.kept_in_f32().empty()) << key;
        for (float v : out[0].to_floats()) ASSERT_EQ(v, 0.f) << key;
    }
    // An explicit f32 entry stays too, and the guard adds what else is needed.
    Session s(dev(), g, {.precision = {{"grow1", Precision::F32}}, .f16_guard = true});
    const auto out = s.run(std::vector<TensorData>{x});
    EXPECT_LT(max_rel_error(out[0], reference(x, tiny_factors)), 3e-3);
    using P = std::pair<std::string, std::string>;
    EXPECT_EQ(pairs(s.kept_in_f32()),
              (std::vector<P>{{"shrink1", "neighbour of shrink2"}, {"shrink2", "underflow"}}));
}

// An ordinary model (Conv, Relu, residual Add, Sigmoid on values of order 1): nothing to keep, and
// the guarded session runs exactly the plain f16 plan.
TEST_F(F16Guard, NothingToFixKeepsEverythingF16) {
    Graph g = new_graph("ordinary");
    const ValueId x = input(g, "x", dims);
    const ValueId w = g.add_constant("w", rand_tensor({3, 3, 3, 3}, 41, -0.5f, 0.5f));
    const ValueId b = g.add_constant("b", rand_tensor({3}, 42));
    const ValueId c = node(g, "Conv", {x, w, b}, "conv", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    const ValueId r = node(g, "Relu", {c}, "relu");
    g.outputs() = {node(g, "Sigmoid", {node(g, "Add", {r, x}, "add")}, "sig")};
    const TensorData in = rand_tensor(dims, 43);
    Session plain(dev(), g);
    Session guarded(dev(), g, {.f16_guard = true});
    const auto a = plain.run(std::vector<TensorData>{in});
    const auto out = guarded.run(std::vector<TensorData>{in});
    EXPECT_TRUE(guarded.calibrated());
    EXPECT_TRUE(guarded.kept_in_f32().empty());
    EXPECT_EQ(out[0], a[0]);
    EXPECT_EQ(guarded.describe().find("kept in f32"), std::string::npos);
    Session f32(dev(), g, {.fp32 = true});
    EXPECT_LT(max_rel_diff(out[0], f32.run(std::vector<TensorData>{in})[0]), 2e-3);
}

// Calibration on the caller's inputs decides: small inputs fit f16, so nothing is kept and large
// ones overflow later; calibrating on large ones keeps the overflowing node.
TEST_F(F16Guard, CalibratesOnTheInputsGiven) {
    const Graph g = mul_chain("big", big_names, big_factors);
    const TensorData small = input_data(51, 0.01f), large = input_data(52);
    Session s(dev(), g, {.f16_guard = true});
    EXPECT_TRUE(s.calibrate(std::vector<TensorData>{small}).empty());
    EXPECT_TRUE(s.calibrated());
    EXPECT_LT(max_rel_error(s.run(std::vector<TensorData>{small})[0], reference(small, big_factors)), 3e-3);
    for (float v : s.run(std::vector<TensorData>{large})[0].to_floats()) ASSERT_FALSE(std::isfinite(v));
    const auto kept = s.calibrate(std::vector<TensorData>{large});
    EXPECT_EQ(kept.size(), 3u);
    EXPECT_EQ(pairs(kept), pairs(s.kept_in_f32()));
    EXPECT_LT(max_rel_error(s.run(std::vector<TensorData>{large})[0], reference(large, big_factors)), 3e-3);
    // Calibrating again on the small inputs starts from f16: nothing is kept any more.
    EXPECT_TRUE(s.calibrate(std::vector<TensorData>{small}).empty());
    EXPECT_TRUE(s.kept_in_f32().empty());
    EXPECT_FALSE(step_in_f32(s, "up2"));
}

// In f32 mode the guard has nothing to do.
TEST_F(F16Guard, Fp32SessionsNeedNoCalibration) {
    const Graph g = mul_chain("tiny", tiny_names, tiny_factors);
    Session s(dev(), g, {.fp32 = true, .f16_guard = true});
    EXPECT_TRUE(s.calibrated());
    const TensorData x = input_data(61);
    EXPECT_TRUE(s.calibrate(std::vector<TensorData>{x}).empty());
    EXPECT_LT(max_rel_error(s.run(std::vector<TensorData>{x})[0], reference(x, tiny_factors)), 1e-5);
}

} // namespace
} // namespace vkml::test
