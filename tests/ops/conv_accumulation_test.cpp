// ops::Accumulation: Conv, Gemm and MatMul asked to sum in f16. On a device whose tensor cores do
// (f16_accumulation_available), the tensor-core kernels' f16c variants run: within an f16
// accumulation tolerance of the double-precision reference, and not bit for bit the fp32
// accumulation's result (so the variant really runs). Elsewhere (lavapipe, f32 storage, scalar
// kernels) the op reports fp32 accumulation and gives exactly the default's result.
#include <string>
#include <vector>

#include "op_test.hpp"
#include "ref/conv_ref.hpp"
#include "vkml/ops/conv.hpp"

namespace vkml::test {
namespace {

using ops::Accumulation;

// Relative RMS error of f16 sums over K up to 576 (3x3 x 64 channels) of products of values in
// [-1, 1]: every 16-deep fragment step rounds the partial sum to f16 (2^-11 relative), about
// sqrt(K / 16) such roundings, plus the f16 store.
constexpr double acc16_tol = 1e-2;

class ConvAccumulationTest : public GpuTest {
protected:
    // Runs `make(accumulation)` with F32 and F16 on the same inputs; checks both against `want`.
    template <class Make>
    void compare(const std::string& what, gpu::DType dt, const std::vector<HostTensor>& in, const HostTensor& want,
                 Make make) {
        auto f32 = make(Accumulation::F32);
        auto f16 = make(Accumulation::F16);
        EXPECT_EQ(f32->accumulation(), Accumulation::F32) << what;
        const auto a = run_op(dev(), *f32, in, 2)[0];
        const auto b = run_op(dev(), *f16, in, 2)[0];
        expect_close(a, want, tolerance(dt, 1e-5, 3e-3), what + " f32 accumulation");
        expect_close(b, want, tolerance(dt, 1e-5, acc16_tol), what + " f16 accumulation");
        size_t differ = 0;
        for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
        if (f16->accumulation() == Accumulation::F16) {
            EXPECT_GT(differ, 0u) << what << ": f16 accumulation gave the fp32 result bit for bit";
        } else {
            EXPECT_EQ(differ, 0u) << what << ": fell back to fp32 accumulation but the result changed";
        }
    }
};

TEST_F(ConvAccumulationTest, ConvOnEveryTensorCoreKernel) {
    // 3x3 64 -> 40 (the staged-window kernel), the same at stride 2 and on the implicit GEMM, a
    // 1x1 (the GEMM tile), odd pixel counts, bias, residual and ReLU.
    struct Case {
        const char* name;
        gpu::Shape x, w;
        int64_t stride, pad;
        bool halo;
    };
    const Case cases[] = {{"3x3 staged window", {1, 64, 13, 37}, {40, 64, 3, 3}, 1, 1, true},
                          {"3x3 implicit GEMM", {1, 64, 13, 37}, {40, 64, 3, 3}, 1, 1, false},
                          {"3x3 stride 2", {1, 32, 17, 35}, {24, 32, 3, 3}, 2, 1, true},
                          {"1x1 GEMM", {2, 72, 7, 9}, {48, 72, 1, 1}, 1, 0, true}};
    uint32_t seed = 5;
    for (const Case& c : cases) {
        for (gpu::DType dt : float_dtypes(dev())) {
            const std::string what = std::string(c.name) + " " + gpu::dtype_name(dt);
            const HostTensor x = random_tensor(c.x, dt, ++seed);
            const HostTensor w = random_tensor(c.w, dt, ++seed, -1.0, 1.0);
            const HostTensor b = random_tensor({c.w[0]}, dt, ++seed);
            const ref_conv::ConvAttrs attrs{{c.stride, c.stride}, {c.pad, c.pad, c.pad, c.pad}, {}, "NOTSET", 1};
            const HostTensor plain = ref_conv::conv(x, w, &b, attrs);
            const HostTensor r = random_tensor(plain.shape(), dt, ++seed);
            const HostTensor want = ref_conv::fuse(plain, &r, {ops::ActivationKind::Relu});
            compare(what, dt, {x, w, b, r}, want, [&](Accumulation acc) {
                auto op = ops::Conv::create(dev(), {.input = {c.x, dt},
                                                    .weight = {c.w, dt},
                                                    .bias = TensorDesc{{c.w[0]}, dt},
                                                    .strides = {c.stride, c.stride},
                                                    .pads = {c.pad, c.pad, c.pad, c.pad},
                                                    .activation = {ops::ActivationKind::Relu},
                                                    .residual = true,
                                                    .split_k = 1,
                                                    .halo = c.halo,
                                                    .halo_small_grids = true,
                                                    .accumulation = acc});
                const bool tc = op->kernel() == ops::ConvKernel::TensorCore;
                EXPECT_EQ(tc, ops::tensor_cores_available(dev(), dt)) << what;
                EXPECT_EQ(op->accumulation() == Accumulation::F16,
                          acc == Accumulation::F16 && tc && ops::f16_accumulation_available(dev(), dt))
                    << what;
                return op;
            });
        }
    }
}

TEST_F(ConvAccumulationTest, GemmAndMatMul) {
    uint32_t seed = 50;
    for (gpu::DType dt : float_dtypes(dev())) {
        const std::string what = std::string("Gemm 70x300x53 ") + gpu::dtype_name(dt);
        const HostTensor a = random_tensor({70, 300}, dt, ++seed);
        const HostTensor b = random_tensor({300, 53}, dt, ++seed);
        const HostTensor c = random_tensor({53}, dt, ++seed);
        const HostTensor want = ref_conv::gemm(a, b, &c, 0.5f, 1.f, false, false);
        compare(what, dt, {a, b, c}, want, [&](Accumulation acc) {
            return ops::Gemm::create(dev(), {.a = {{70, 300}, dt},
                                             .b = {{300, 53}, dt},
                                             .c = TensorDesc{{53}, dt},
                                             .alpha = 0.5f,
                                             .accumulation = acc});
        });
        const std::string mm = std::string("MatMul 2x40x264x48 ") + gpu::dtype_name(dt);
        const HostTensor ma = random_tensor({2, 40, 264}, dt, ++seed);
        const HostTensor mb = random_tensor({264, 48}, dt, ++seed);
        compare(mm, dt, {ma, mb}, ref_conv::matmul(ma, mb), [&](Accumulation acc) {
            auto op = ops::MatMul::create(dev(), {.a = {{2, 40, 264}, dt}, .b = {{264, 48}, dt}, .accumulation = acc});
            EXPECT_EQ(op->accumulation() == Accumulation::F16,
                      acc == Accumulation::F16 && ops::f16_accumulation_available(dev(), dt))
                << mm;
            return op;
        });
    }
}

TEST_F(ConvAccumulationTest, UnknownAccumulationIsAnError) {
    const auto bad = static_cast<Accumulation>(7);
    expect_error([&] { ops::Conv::create(dev(), {.input = {{1, 8, 5, 5}}, .weight = {{8, 8, 3, 3}}, .accumulation = bad}); },
                 {"Conv", "accumulation", "unknown"});
    expect_error([&] { ops::Gemm::create(dev(), {.a = {{5, 3}}, .b = {{3, 7}}, .accumulation = bad}); },
                 {"Gemm", "accumulation", "unknown"});
    expect_error([&] { ops::MatMul::create(dev(), {.a = {{5, 3}}, .b = {{3, 7}}, .accumulation = bad}); },
                 {"MatMul", "accumulation", "unknown"});
}

} // namespace
} // namespace vkml::test
