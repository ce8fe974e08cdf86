// Gemm and MatMul against the double-precision reference, in f32 and f16 storage, plus
// descriptor errors.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "op_test.hpp"
#include "ref/conv_ref.hpp"
#include "vkml/ops/conv.hpp"

namespace vkml::test {
namespace {

constexpr double gemm_tol_f32 = 1e-5;
constexpr double gemm_tol_f16 = 3e-3;

class ConvGemmTest : public GpuTest {
protected:
    void check(const std::string& name, int64_t m, int64_t k, int64_t n, bool ta, bool tb,
               std::optional<gpu::Shape> c_shape, float alpha, float beta, ops::Activation act = {}) {
        uint32_t seed = 11;
        for (char ch : name) seed = seed * 31 + uint32_t(ch);
        const gpu::Shape as = ta ? gpu::Shape{k, m} : gpu::Shape{m, k};
        const gpu::Shape bs = tb ? gpu::Shape{n, k} : gpu::Shape{k, n};
        for (gpu::DType dt : float_dtypes(dev())) {
            const std::string what = name + " " + gpu::dtype_name(dt);
            const HostTensor a = random_tensor(as, dt, seed);
            const HostTensor b = random_tensor(bs, dt, seed + 1);
            const HostTensor c = random_tensor(c_shape.value_or(gpu::Shape{1}), dt, seed + 2);
            const HostTensor want = ref_conv::fuse(
                ref_conv::gemm(a, b, c_shape ? &c : nullptr, alpha, beta, ta, tb), nullptr, act);
            auto op = ops::Gemm::create(
                dev(), {.a = {as, dt},
                        .b = {bs, dt},
                        .c = c_shape ? std::optional<TensorDesc>(TensorDesc{*c_shape, dt}) : std::nullopt,
                        .alpha = alpha,
                        .beta = beta,
                        .trans_a = ta,
                        .trans_b = tb,
                        .activation = act});
            std::vector<HostTensor> in{a, b};
            if (c_shape) in.push_back(c);
            const auto out = run_op(dev(), *op, in, 2);
            expect_close(out[0], want, tolerance(dt, gemm_tol_f32, gemm_tol_f16), what);
        }
    }
};

TEST_F(ConvGemmTest, EveryTranspose) {
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            check(std::string("trans ") + (ta ? "A" : "-") + (tb ? "B" : "-"), 13, 7, 11, ta, tb,
                  gpu::Shape{13, 11}, 0.75f, -1.5f);
}

TEST_F(ConvGemmTest, AlphaBetaAndCBroadcast) {
    check("no C", 5, 3, 7, false, false, std::nullopt, 1.25f, 1.f);
    check("C scalar", 5, 3, 7, false, true, gpu::Shape{}, 1.f, 0.5f);
    check("C [1]", 5, 3, 7, true, false, gpu::Shape{1}, 2.f, 1.f);
    check("C [N]", 5, 3, 7, false, false, gpu::Shape{7}, 1.f, 1.f);
    check("C [1, N]", 5, 3, 7, false, false, gpu::Shape{1, 7}, 0.5f, 2.f);
    check("C [M, 1]", 5, 3, 7, true, true, gpu::Shape{5, 1}, 1.f, -1.f);
    check("C [1, 1]", 5, 3, 7, false, false, gpu::Shape{1, 1}, 1.f, 3.f);
    check("beta 0", 5, 3, 7, false, false, gpu::Shape{5, 7}, 1.f, 0.f);
}

TEST_F(ConvGemmTest, TileBoundaries) {
    // M and N beyond one 64 x 64 tile, K beyond two 16-deep slices, all prime.
    check("67x37x71", 67, 37, 71, false, false, gpu::Shape{71}, 1.f, 1.f);
    check("67x37x71 tt", 67, 37, 71, true, true, gpu::Shape{67, 71}, 0.5f, 1.f);
    check("vector-like", 1, 131, 3, false, true, std::nullopt, 1.f, 1.f);
}

TEST_F(ConvGemmTest, AlignedShapesTakeTheVectorPaths) {
    // Multiples of 8 elements: 16-byte loads of A and B rows and 8-wide stores in the tensor-core
    // tile; the transposed operands keep the 8-element gathers. M past one 128-row tile.
    check("aligned 136x40x48", 136, 40, 48, false, false, gpu::Shape{48}, 1.f, 1.f);
    check("aligned 24x72x16 tt", 24, 72, 16, true, true, gpu::Shape{24, 16}, 0.5f, 2.f);
    check("aligned relu", 32, 16, 56, false, true, gpu::Shape{32, 1}, 1.f, 1.f, {ops::ActivationKind::Relu});
}

TEST_F(ConvGemmTest, FusedActivation) {
    check("relu", 13, 7, 11, false, true, gpu::Shape{11}, 1.f, 1.f, {ops::ActivationKind::Relu});
    check("gelu", 13, 7, 11, true, false, gpu::Shape{13, 1}, 1.f, 1.f, {ops::ActivationKind::Gelu});
}

TEST_F(ConvGemmTest, FewRowsTakeTheVectorKernel) {
    // One to four rows of A (a classifier at batch 1): conv/gemv.comp, K split across the
    // workgroup (odd K past several passes of its 32 or 8 invocations per column), both layouts of
    // B, C broadcast, alpha, beta and an activation; five rows take a tile again.
    for (int64_t m = 1; m <= 5; ++m) {
        for (bool tb : {false, true}) {
            const bool ta = m == 3;
            check("rows " + std::to_string(m) + (tb ? " tB" : ""), m, 517, 37, ta, tb,
                  m == 2 ? gpu::Shape{m, 37} : gpu::Shape{37}, 0.75f, -1.25f,
                  {m == 4 ? ops::ActivationKind::Relu : ops::ActivationKind::None});
            const gpu::Shape as = ta ? gpu::Shape{517, m} : gpu::Shape{m, 517};
            const auto op = ops::Gemm::create(
                dev(), {.a = {as}, .b = {tb ? gpu::Shape{37, 517} : gpu::Shape{517, 37}}, .trans_a = ta, .trans_b = tb});
            EXPECT_EQ(op->vector_kernel(), m <= 4) << m;
        }
    }
}

TEST_F(ConvGemmTest, DescriptorErrors) {
    const ops::GemmDesc good{.a = {{5, 3}}, .b = {{3, 7}}};
    auto with = [&](auto edit) {
        ops::GemmDesc d = good;
        edit(d);
        return [d, this] { ops::Gemm::create(dev(), d); };
    };
    expect_error(with([](auto& d) { d.trans_b = true; }), {"Gemm", "b", "inner dimensions differ"});
    expect_error(with([](auto& d) { d.a.shape = {2, 5, 3}; }), {"Gemm", "a", "2-D"});
    expect_error(with([](auto& d) { d.c = TensorDesc{{5, 2}}; }), {"Gemm", "c", "does not broadcast"});
    expect_error(with([](auto& d) { d.c = TensorDesc{{5}}; }), {"Gemm", "c", "does not broadcast"});
    expect_error(with([](auto& d) { d.c = TensorDesc{{1, 5, 7}}; }), {"Gemm", "c", "rank"});
    expect_error(with([](auto& d) { d.b.dtype = gpu::DType::f16; }), {"Gemm", "b", "f16"});
}

class ConvMatMulTest : public GpuTest {
protected:
    void check(const std::string& name, const gpu::Shape& as, const gpu::Shape& bs,
               const gpu::Shape& want_shape) {
        uint32_t seed = 13;
        for (char ch : name) seed = seed * 31 + uint32_t(ch);
        for (gpu::DType dt : float_dtypes(dev())) {
            const std::string what = name + " " + gpu::dtype_name(dt);
            const HostTensor a = random_tensor(as, dt, seed);
            const HostTensor b = random_tensor(bs, dt, seed + 1);
            const HostTensor want = ref_conv::matmul(a, b);
            ASSERT_EQ(want.shape(), want_shape) << what << " (reference)";
            auto op = ops::MatMul::create(dev(), {.a = {as, dt}, .b = {bs, dt}});
            ASSERT_EQ(op->outputs()[0].shape, want_shape) << what;
            const auto out = run_op(dev(), *op, {a, b}, 2);
            expect_close(out[0], want, tolerance(dt, gemm_tol_f32, gemm_tol_f16), what);
        }
    }
};

TEST_F(ConvMatMulTest, OneDimensionalOperands) {
    check("vec . vec", {13}, {13}, gpu::Shape{});
    check("vec x mat", {7}, {7, 5}, {5});
    check("mat x vec", {5, 7}, {7}, {5});
    check("vec x batched", {7}, {3, 7, 5}, {3, 5});
    check("batched x vec", {2, 3, 5, 7}, {7}, {2, 3, 5});
}

TEST_F(ConvMatMulTest, Plain) {
    check("2-D", {13, 7}, {7, 11}, {13, 11});
    check("2-D tiles", {67, 19}, {19, 71}, {67, 71});
}

TEST_F(ConvMatMulTest, AlignedBatchedBroadcast) {
    // 16-byte rows in every batch (the tensor-core tile's vector loads), M of 12 to 40 rows.
    check("aligned batched", {3, 16, 24}, {3, 24, 32}, {3, 16, 32});
    check("aligned B broadcast", {2, 40, 8}, {8, 48}, {2, 40, 48});
    check("aligned 12 rows", {12, 32}, {2, 32, 16}, {2, 12, 16});
}

TEST_F(ConvMatMulTest, LargeProductsTakeTheWideTiles) {
    // On tensor cores, 128 rows or more: cm256 (128 x 256) where its tiles are at least one per
    // multiprocessor, else cm128q (128 x 128, 4x4 fragments a subgroup) where its are, else cm128.
    // Sizes made for this device's count (259 rows: three row blocks, the last of 3 rows; K 75).
    const int64_t blocks = (std::max<int64_t>(dev().caps().multiprocessors, 1) + 2) / 3; // per row block
    const int64_t n256 = 256 * blocks - 5, n128 = 128 * blocks - 5;
    check("cm256", {259, 75}, {75, n256}, {259, n256});
    check("cm128q", {259, 75}, {75, n128}, {259, n128});
    if (!dev().caps().coopmat_nv) GTEST_SKIP() << "no tensor cores: the scalar tile ran";
    auto kernel = [&](int64_t n) {
        return ops::MatMul::create(dev(),
                                   {.a = {{259, 75}, gpu::DType::f16}, .b = {{75, n}, gpu::DType::f16}})
            ->kernel();
    };
    EXPECT_EQ(kernel(n256), "conv_gemm_cm256_f16");
    EXPECT_EQ(kernel(n128), "conv_gemm_cm128q_f16");
    EXPECT_EQ(kernel(n128 / 2), "conv_gemm_cm128_f16");
}

TEST_F(ConvMatMulTest, BatchedBroadcast) {
    check("batched", {3, 5, 7}, {3, 7, 2}, {3, 5, 2});
    check("B broadcast", {2, 3, 5, 7}, {7, 11}, {2, 3, 5, 11});
    check("A broadcast", {5, 7}, {3, 7, 11}, {3, 5, 11});
    check("both broadcast", {3, 1, 5, 7}, {2, 7, 3}, {3, 2, 5, 3});
    check("rank 6", {2, 1, 3, 1, 5, 7}, {1, 2, 1, 2, 7, 3}, {2, 2, 3, 2, 5, 3});
}

TEST_F(ConvMatMulTest, FewRowsTakeTheVectorKernel) {
    check("batched 3 rows", {2, 3, 131}, {131, 9}, {2, 3, 9});
    check("B batched 2 rows", {2, 130}, {3, 130, 17}, {3, 2, 17});
    check("vec x long mat", {300}, {300, 41}, {41});
    EXPECT_TRUE(ops::MatMul::create(dev(), {.a = {{2, 3, 131}}, .b = {{131, 9}}})->vector_kernel());
    EXPECT_FALSE(ops::MatMul::create(dev(), {.a = {{2, 5, 131}}, .b = {{131, 9}}})->vector_kernel());
}

TEST_F(ConvMatMulTest, DescriptorErrors) {
    expect_error(
        [&] {
            ops::MatMul::create(dev(), {.a = {{5, 7}}, .b = {{5, 7}}});
        },
        {"MatMul", "b", "inner dimensions differ"});
    expect_error(
        [&] {
            ops::MatMul::create(dev(), {.a = {{3, 5, 7}}, .b = {{2, 7, 5}}});
        },
        {"MatMul", "do not broadcast"});
    expect_error([&] { ops::MatMul::create(dev(), {.a = {{7}}, .b = {{5}}}); }, {"MatMul", "b", "inner"});
    expect_error([&] { ops::MatMul::create(dev(), {.a = {{}}, .b = {{5}}}); }, {"MatMul", "a", "rank"});
    expect_error(
        [&] {
            ops::MatMul::create(dev(), {.a = {{2, 0, 5}}, .b = {{5, 3}}});
        },
        {"MatMul", "a", "empty"});
    expect_error(
        [&] {
            ops::MatMul::create(dev(), {.a = {{2, 5}, gpu::DType::i32}, .b = {{5, 3}}});
        },
        {"MatMul", "a", "f32 or f16"});
}

} // namespace
} // namespace vkml::test
