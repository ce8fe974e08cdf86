// BatchNormalization (inference) and LRN against the double-precision references in
// ref/norm_ref.cpp. Instance, Layer and Group normalization are in norm_grouped_test.cpp.
#include <cstdio>
#include <cstdlib>

#include "op_test.hpp"
#include "ref/norm_ref.hpp"
#include "vkml/ops/norm.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using ops::Activation;
using ops::ActivationKind;

// Every fused activation, with parameters where it has them.
const std::vector<Activation> activations = {{ActivationKind::Relu},
                                             {ActivationKind::LeakyRelu, 0.1f},
                                             {ActivationKind::Clip, -0.5f, 0.7f},
                                             {ActivationKind::Sigmoid},
                                             {ActivationKind::HardSigmoid, 0.2f, 0.5f},
                                             {ActivationKind::HardSwish},
                                             {ActivationKind::Tanh},
                                             {ActivationKind::Silu},
                                             {ActivationKind::Gelu},
                                             {ActivationKind::Elu, 0.8f},
                                             {ActivationKind::Mish}};

// VKML_NORM_PRINT=1 prints every case's error, to re-derive the tolerances on another device.
void check(const HostTensor& got, const HostTensor& want, double tol, const std::string& what) {
    if (std::getenv("VKML_NORM_PRINT"))
        std::printf("  %-60s %.3g\n", what.c_str(), relative_error(got, want));
    expect_close(got, want, tol, what);
}

std::string label(const gpu::Shape& shape, DType dt) {
    return std::string(gpu::dtype_name(dt)) + shape.str();
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization

class NormBatchNormalization : public GpuTest {
protected:
    struct Inputs {
        HostTensor x, scale, bias, mean, var;
    };
    static Inputs make(const gpu::Shape& shape, DType dt, uint32_t seed, double offset = 0) {
        const gpu::Shape c{shape[1]};
        return {random_tensor(shape, dt, seed, offset - 2, offset + 2), random_tensor(c, dt, seed + 1),
                random_tensor(c, dt, seed + 2), random_tensor(c, dt, seed + 3, offset - 1, offset + 1),
                random_tensor(c, dt, seed + 4, 0.1, 2.0)};
    }
    std::unique_ptr<ops::BatchNormalization> create(const Inputs& in, float epsilon, Activation act = {}) {
        return ops::BatchNormalization::create(dev(), {.input = in.x.desc,
                                                       .scale = in.scale.desc,
                                                       .bias = in.bias.desc,
                                                       .input_mean = in.mean.desc,
                                                       .input_var = in.var.desc,
                                                       .epsilon = epsilon,
                                                       .activation = act});
    }
    void run(const Inputs& in, float epsilon, Activation act, double tol32, double tol16,
             const std::string& what) {
        auto op = create(in, epsilon, act);
        const auto out = run_op(dev(), *op, {in.x, in.scale, in.bias, in.mean, in.var}, 2);
        check(out[0], ref_norm::batch_norm(in.x, in.scale, in.bias, in.mean, in.var, epsilon, act),
              tolerance(in.x.desc.dtype, tol32, tol16), what);
    }
};

// f32: a handful of fp32 roundings per element (about 1e-7 measured, activations included); f16:
// the output's own rounding (at most 2^-11 relative per element, about 2e-4 measured).
constexpr double bn_f32 = 5e-7, bn_f16 = 5e-4;

TEST_F(NormBatchNormalization, ShapesAndRanks) {
    const std::vector<gpu::Shape> shapes = {{2, 3, 7, 11}, {2, 5, 13}, {1, 7, 3, 5, 2}, {5, 3}, {3, 1, 2, 3}};
    for (DType dt : float_dtypes(dev()))
        for (size_t i = 0; i < shapes.size(); ++i)
            run(make(shapes[i], dt, uint32_t(10 + i)), i % 2 ? 1e-3f : 1e-5f, {}, bn_f32, bn_f16,
                "BatchNormalization " + label(shapes[i], dt));
}

TEST_F(NormBatchNormalization, LargeOffset) {
    // x and input_mean near 100: x - mean must be formed before scaling.
    for (DType dt : float_dtypes(dev()))
        run(make({2, 5, 7, 11}, dt, 20, 100.0), 1e-5f, {}, bn_f32, bn_f16,
            "BatchNormalization offset " + label({2, 5, 7, 11}, dt));
}

TEST_F(NormBatchNormalization, FusedActivations) {
    for (DType dt : float_dtypes(dev()))
        for (const Activation& act : activations)
            run(make({2, 3, 5, 7}, dt, 30 + uint32_t(act.kind)), 1e-5f, act, bn_f32, bn_f16,
                std::string("BatchNormalization + ") + ops::activation_name(act.kind) + " " +
                    label({2, 3, 5, 7}, dt));
}

TEST_F(NormBatchNormalization, DescriptorErrors) {
    const Inputs in = make({2, 3, 4, 5}, DType::f32, 40);
    auto desc = [&] {
        return ops::BatchNormalizationDesc{.input = in.x.desc,
                                           .scale = in.scale.desc,
                                           .bias = in.bias.desc,
                                           .input_mean = in.mean.desc,
                                           .input_var = in.var.desc};
    };
    auto expect = [&](ops::BatchNormalizationDesc d, std::initializer_list<const char*> needles) {
        expect_error([&] { ops::BatchNormalization::create(dev(), d); }, needles);
    };
    auto d = desc();
    d.scale.shape = {4};
    expect(d, {"BatchNormalization", "scale", "[3]"});
    d = desc();
    d.bias.shape = {1, 3};
    expect(d, {"BatchNormalization", "bias", "[3]"});
    d = desc();
    d.input_mean.dtype = DType::f16;
    expect(d, {"BatchNormalization", "input_mean", "dtype"});
    d = desc();
    d.input_var.shape = {2};
    expect(d, {"BatchNormalization", "input_var"});
    d = desc();
    d.training_mode = 1;
    expect(d, {"BatchNormalization", "training_mode"});
    d = desc();
    d.training_mode = 2;
    expect(d, {"BatchNormalization", "training_mode", "0 or 1"});
    d = desc();
    d.input.shape = {3};
    expect(d, {"BatchNormalization", "input", "rank"});
    d = desc();
    d.input.dtype = DType::i32;
    expect(d, {"BatchNormalization", "input", "f32 or f16"});
    d = desc();
    d.epsilon = -1e-5f;
    expect(d, {"BatchNormalization", "epsilon"});
    // training_mode 1 is an unsupported feature, not a malformed descriptor.
    try {
        d = desc();
        d.training_mode = 1;
        ops::BatchNormalization::create(dev(), d);
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported) << e.what();
    }
}

// ---------------------------------------------------------------------------------------------
// LRN

class NormLRN : public GpuTest {
protected:
    void run(const gpu::Shape& shape, DType dt, uint32_t seed, const ops::LRNDesc& attrs, double tol32,
             double tol16) {
        const HostTensor x = random_tensor(shape, dt, seed);
        ops::LRNDesc d = attrs;
        d.input = x.desc;
        auto op = ops::LRN::create(dev(), d);
        const auto out = run_op(dev(), *op, {x}, 2);
        char what[160];
        std::snprintf(what, sizeof what, "LRN %s size %lld alpha %g beta %g bias %g",
                      label(shape, dt).c_str(), (long long)d.size, d.alpha, d.beta, d.bias);
        check(out[0], ref_norm::lrn(x, d.alpha, d.beta, d.bias, d.size), tolerance(dt, tol32, tol16), what);
    }
};

// As BatchNormalization: about 1e-7 (f32) and 2e-4 (f16) measured, pow() included.
constexpr double lrn_f32 = 5e-7, lrn_f16 = 5e-4;

TEST_F(NormLRN, WindowSizes) {
    // Even and odd windows (asymmetric for even sizes), one wider than C, and size 1. alpha is large
    // so that the normalization changes the result well beyond the tolerance.
    for (DType dt : float_dtypes(dev()))
        for (int64_t size : {1, 2, 3, 5, 8, 15})
            run({2, 7, 5, 3}, dt, uint32_t(50 + size),
                {.alpha = 0.9f, .beta = 0.75f, .bias = 1.f, .size = size}, lrn_f32, lrn_f16);
}

TEST_F(NormLRN, Attributes) {
    for (DType dt : float_dtypes(dev())) {
        run({2, 5, 7, 11}, dt, 60, {.size = 5}, lrn_f32, lrn_f16); // ONNX defaults (AlexNet)
        run({2, 5, 7, 11}, dt, 61, {.alpha = 2.f, .beta = 0.5f, .bias = 2.f, .size = 3}, lrn_f32, lrn_f16);
        run({2, 5, 7, 11}, dt, 62, {.alpha = 0.3f, .beta = 1.3f, .bias = 0.5f, .size = 4}, lrn_f32, lrn_f16);
        run({3, 9}, dt, 63, {.alpha = 0.5f, .beta = 0.75f, .bias = 1.f, .size = 3}, lrn_f32, lrn_f16);
        run({1, 6, 2, 3, 5}, dt, 64, {.alpha = 0.5f, .beta = 0.75f, .bias = 1.f, .size = 5}, lrn_f32,
            lrn_f16);
    }
}

TEST_F(NormLRN, DescriptorErrors) {
    const TensorDesc x{{2, 3, 4, 5}, DType::f32};
    auto expect = [&](ops::LRNDesc d, std::initializer_list<const char*> needles) {
        expect_error([&] { ops::LRN::create(dev(), d); }, needles);
    };
    expect({.input = x}, {"LRN", "size", "required"});
    expect({.input = x, .size = -3}, {"LRN", "size"});
    expect({.input = {{7}, DType::f32}, .size = 3}, {"LRN", "input", "rank"});
    expect({.input = {{2, 3, 4}, DType::i32}, .size = 3}, {"LRN", "input", "f32 or f16"});
    expect({.input = x, .alpha = INFINITY, .size = 3}, {"LRN", "alpha"});
}

} // namespace
} // namespace vkml::test
