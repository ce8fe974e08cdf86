// InstanceNormalization, LayerNormalization and GroupNormalization against the double-precision
// references in ref/norm_ref.cpp. Each runs both kernels: single-pass (one workgroup per group) and
// split (partial moments over several workgroups, merged in a second dispatch), forced with
// `partials` on small shapes and chosen by size on a larger one.
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

// VKML_NORM_PRINT=1 prints every case's error, to re-derive the tolerances on another device.
void check(const HostTensor& got, const HostTensor& want, double tol, const std::string& what) {
    if (std::getenv("VKML_NORM_PRINT"))
        std::printf("  %-70s %.3g\n", what.c_str(), relative_error(got, want));
    expect_close(got, want, tol, what);
}

std::string label(const gpu::Shape& shape, DType dt, uint32_t partials) {
    return std::string(gpu::dtype_name(dt)) + shape.str() + " partials " + std::to_string(partials);
}

// Grouped normalization error: the statistics (fp32 Welford, relative to a shift) and the output's
// few roundings, about 1e-7 measured; f16: the output's own rounding (at most 2^-11 relative per
// element, about 2e-4 measured) dominates.
constexpr double grouped_f32 = 5e-7, grouped_f16 = 5e-4;
// Inputs of 100 +- 2 and 1000 +- 2 keep the same bounds: centring on the group's first element
// makes them as accurate as inputs near 0. Without the shift, Welford alone measured 1.5e-6 (100)
// and 2e-5 (1000) in f32; a naive fp32 E[x^2] - E[x]^2 would be off by percents or more.
constexpr double offset_f32 = grouped_f32, offset_f16 = grouped_f16;

// ---------------------------------------------------------------------------------------------
// InstanceNormalization

class NormInstanceNormalization : public GpuTest {
protected:
    // Runs x (N, C, ...) with random per-channel scale and bias; returns the kernel's partials.
    uint32_t run(const gpu::Shape& shape, DType dt, uint32_t seed, uint32_t partials, double offset = 0,
                 Activation act = {}, float epsilon = 1e-5f, double tol32 = grouped_f32,
                 double tol16 = grouped_f16) {
        const HostTensor x = random_tensor(shape, dt, seed, offset - 2, offset + 2);
        const HostTensor scale = random_tensor({shape[1]}, dt, seed + 1);
        const HostTensor bias = random_tensor({shape[1]}, dt, seed + 2);
        auto op = ops::InstanceNormalization::create(dev(), {.input = x.desc,
                                                             .scale = scale.desc,
                                                             .bias = bias.desc,
                                                             .epsilon = epsilon,
                                                             .activation = act,
                                                             .partials = partials});
        const auto out = run_op(dev(), *op, {x, scale, bias}, 2);
        check(out[0], ref_norm::instance_norm(x, scale, bias, epsilon, act), tolerance(dt, tol32, tol16),
              "InstanceNormalization " + label(shape, dt, op->partials()) + " offset " +
                  std::to_string(offset) + " " + ops::activation_name(act.kind));
        return op->partials();
    }
};

TEST_F(NormInstanceNormalization, SinglePassShapes) {
    // Odd and prime sizes; 37x41 runs each invocation over the plane several times; rank 3 and 5.
    const std::vector<gpu::Shape> shapes = {
        {2, 3, 7, 11}, {2, 5, 37, 41}, {1, 7, 13}, {2, 3, 2, 3, 5}, {3, 2, 1, 1}};
    for (DType dt : float_dtypes(dev()))
        for (size_t i = 0; i < shapes.size(); ++i)
            EXPECT_EQ(run(shapes[i], dt, uint32_t(100 + i), 0, 0, {}, i == 4 ? 1e-3f : 1e-5f), 1u);
}

TEST_F(NormInstanceNormalization, SplitKernel) {
    // Forced partial counts, including ones that do not divide the plane and the most allowed.
    for (DType dt : float_dtypes(dev())) {
        EXPECT_EQ(run({2, 3, 37, 41}, dt, 110, 2), 2u);
        EXPECT_EQ(run({2, 3, 37, 41}, dt, 111, 7), 7u);
        EXPECT_EQ(run({1, 5, 7, 11}, dt, 112, 3), 3u);
        // The most allowed: chunks of ceil(1517 / 256) = 6 elements, so 253 workgroups.
        EXPECT_EQ(run({1, 2, 37, 41}, dt, 113, 256), 253u);
        // More partials than elements: one element per workgroup.
        EXPECT_EQ(run({2, 3, 2, 3}, dt, 114, 10), 6u);
    }
}

TEST_F(NormInstanceNormalization, FourElementsPerLoad) {
    // Planes of a multiple of 4 elements take the kernels that load and store 4 at once: single
    // pass, split with chunks rounded up to whole vectors (240 / 7 -> 36 elements, 7 workgroups),
    // split chosen by size, a large offset and a fused activation.
    for (DType dt : float_dtypes(dev())) {
        EXPECT_EQ(run({2, 3, 12, 20}, dt, 150, 0), 1u);
        // f16 planes of whole 8-element units: chunks of 40 (6 workgroups).
        EXPECT_EQ(run({2, 3, 12, 20}, dt, 151, 7), dt == DType::f16 ? 6u : 7u);
        EXPECT_EQ(run({1, 3, 4, 3}, dt, 152, 5), 3u); // 12 elements: chunks of 4
        EXPECT_GT(run({1, 3, 64, 130}, dt, 153, 0), 1u);
        run({2, 3, 12, 20}, dt, 154, 3, 100.0, {}, 1e-5f, offset_f32, offset_f16);
        run({1, 5, 8, 12}, dt, 155, 2, 0, {ops::ActivationKind::Relu});
    }
}

TEST_F(NormInstanceNormalization, FourVectorsPerStep) {
    // Runs of at least four vectors per invocation (four workgroup-strided loads per step, then
    // the remainder one at a time): planes and chunks of more than 4 x 256 vectors, single pass
    // forced (5760 elements: one step and 416 vectors more) and split (2 partials of 8200: two
    // steps and 2 vectors), with a large offset and an activation.
    for (DType dt : float_dtypes(dev())) {
        EXPECT_EQ(run({2, 3, 72, 80}, dt, 160, 1), 1u);
        EXPECT_EQ(run({1, 2, 100, 164}, dt, 161, 2), 2u);
        run({1, 2, 100, 164}, dt, 162, 1, 100.0, {ActivationKind::Relu}, 1e-5f, offset_f32, offset_f16);
        EXPECT_GT(run({1, 2, 128, 130}, dt, 163, 0), 1u); // split chosen by size
    }
}

TEST_F(NormInstanceNormalization, SixteenBytesPerLoad) {
    // 16-byte units (f16: 8 halves, f32: 4 floats) where planes are whole units, 8-byte f16 units
    // where they are whole 4-vectors only, element loads otherwise: one row, one channel, single
    // pass and split, the split's partials merged by every invocation (up to 16) or by the tree
    // (more), with an activation and a large offset.
    for (DType dt : float_dtypes(dev())) {
        EXPECT_EQ(run({1, 1, 1, 40}, dt, 170, 0), 1u);    // one row, one channel
        EXPECT_EQ(run({1, 1, 1, 36}, dt, 171, 0), 1u);    // f16: 8-byte units
        EXPECT_EQ(run({2, 3, 1, 8}, dt, 172, 0), 1u);     // one unit a plane
        EXPECT_EQ(run({1, 1, 3, 11}, dt, 173, 2), 2u);    // odd: element loads, split
        EXPECT_EQ(run({1, 2, 40, 48}, dt, 174, 3), 3u);   // chunks of 640: merged in order
        EXPECT_EQ(run({1, 2, 40, 48}, dt, 175, 20), 20u); // chunks of 96: the tree merge
        EXPECT_EQ(run({1, 1, 5, 24}, dt, 176, 16), 15u);  // chunks of 8 (one unit): 15 partials
        run({2, 3, 17, 24}, dt, 177, 4, 100.0, {ActivationKind::Relu}, 1e-5f, offset_f32, offset_f16);
        run({2, 3, 17, 24}, dt, 178, 0, 1000.0, {ActivationKind::Relu}, 1e-5f, offset_f32, offset_f16);
    }
}

TEST_F(NormInstanceNormalization, SinglePassHeldInRegisters) {
    // The single-pass kernel over whole units keeps each invocation's units in registers between
    // the moments and the output (the plane read once), up to 32 elements per invocation (8 units
    // of 4, 4 of 8 packed halves): 8192 elements at 256 invocations; larger planes, and planes of
    // no whole unit, are read twice.
    // Expected cached_units() in f32 and f16.
    struct Case {
        gpu::Shape shape;
        uint32_t c32, c16;
    };
    const std::vector<Case> cases = {
        {{1, 1, 1, 40}, 1, 1},   // one row, one channel, 32 invocations
        {{2, 3, 1, 8}, 1, 1},    // one or two units a plane
        {{1, 1, 1, 36}, 1, 1},   // f16: 8-byte units
        {{1, 1, 3, 11}, 0, 0},   // element loads
        {{2, 3, 72, 80}, 6, 3},  // 256 invocations x 6 vectors (f16: x 3 units of 8)
        {{1, 2, 64, 128}, 8, 4}, // 8192 elements: the most held
        {{1, 1, 65, 128}, 0, 0}, // 8320: read twice
    };
    uint32_t seed = 180;
    for (DType dt : float_dtypes(dev()))
        for (const Case& c : cases) {
            auto op = ops::InstanceNormalization::create(dev(), {.input = {c.shape, dt},
                                                                 .scale = {{c.shape[1]}, dt},
                                                                 .bias = {{c.shape[1]}, dt},
                                                                 .partials = 1});
            EXPECT_EQ(op->cached_units(), dt == DType::f16 ? c.c16 : c.c32) << c.shape.str();
            EXPECT_EQ(run(c.shape, dt, seed++, 1), 1u);
            run(c.shape, dt, seed++, 1, 100.0, {ActivationKind::Relu}, 1e-5f, offset_f32, offset_f16);
        }
}

TEST_F(NormInstanceNormalization, SplitChosenBySize) {
    // Few large planes (a style-transfer layer, scaled down): the split kernel without asking.
    for (DType dt : float_dtypes(dev())) EXPECT_GT(run({1, 3, 97, 101}, dt, 120, 0), 1u);
}

TEST_F(NormInstanceNormalization, LargeOffsetIsStable) {
    for (DType dt : float_dtypes(dev()))
        for (uint32_t partials : {0u, 5u}) {
            run({2, 3, 37, 41}, dt, 130, partials, 100.0, {}, 1e-5f, offset_f32, offset_f16);
            run({2, 3, 37, 41}, dt, 131, partials, 1000.0, {}, 1e-5f, offset_f32, offset_f16);
        }
}

TEST_F(NormInstanceNormalization, FusedActivation) {
    const std::vector<Activation> acts = {{ActivationKind::Relu},
                                          {ActivationKind::LeakyRelu, 0.2f},
                                          {ActivationKind::Sigmoid},
                                          {ActivationKind::Clip, -0.3f, 0.9f}};
    for (DType dt : float_dtypes(dev()))
        for (const Activation& act : acts)
            for (uint32_t partials : {0u, 3u})
                run({2, 5, 7, 11}, dt, 140 + uint32_t(act.kind), partials, 0, act);
}

TEST_F(NormInstanceNormalization, DescriptorErrors) {
    const TensorDesc x{{2, 3, 4, 5}, DType::f32}, c3{{3}, DType::f32};
    auto expect = [&](const ops::InstanceNormalizationDesc& d, std::initializer_list<const char*> needles) {
        expect_error([&] { ops::InstanceNormalization::create(dev(), d); }, needles);
    };
    expect({.input = x, .scale = {{4}, DType::f32}, .bias = c3}, {"InstanceNormalization", "scale", "[3]"});
    expect({.input = x, .scale = c3, .bias = {{3, 1}, DType::f32}}, {"InstanceNormalization", "bias", "[3]"});
    expect({.input = x, .scale = {{3}, DType::f16}, .bias = c3}, {"InstanceNormalization", "scale", "dtype"});
    expect({.input = {{2, 3}, DType::f32}, .scale = c3, .bias = c3},
           {"InstanceNormalization", "input", "rank"});
    expect({.input = {{2, 3, 4}, DType::i32}, .scale = c3, .bias = c3},
           {"InstanceNormalization", "f32 or f16"});
    expect({.input = x, .scale = c3, .bias = c3, .epsilon = NAN}, {"InstanceNormalization", "epsilon"});
    expect({.input = x, .scale = c3, .bias = c3, .partials = 257}, {"InstanceNormalization", "partials"});
}

// ---------------------------------------------------------------------------------------------
// LayerNormalization

class NormLayerNormalization : public GpuTest {
protected:
    struct Case {
        gpu::Shape shape;
        int64_t axis = -1;
        gpu::Shape scale, bias; // bias rank 0: no B
        uint32_t partials = 0;
        double offset = 0;
        bool stats = false;
        Activation act;
    };
    uint32_t run(const Case& c, DType dt, uint32_t seed, double tol32 = grouped_f32,
                 double tol16 = grouped_f16) {
        const HostTensor x = random_tensor(c.shape, dt, seed, c.offset - 2, c.offset + 2);
        const HostTensor scale = random_tensor(c.scale, dt, seed + 1);
        const HostTensor bias = random_tensor(c.bias.rank() ? c.bias : gpu::Shape{1}, dt, seed + 2);
        const bool has_bias = c.bias.rank() > 0;
        auto op = ops::LayerNormalization::create(dev(),
                                                  {.input = x.desc,
                                                   .scale = scale.desc,
                                                   .bias = has_bias ? std::optional(bias.desc) : std::nullopt,
                                                   .axis = c.axis,
                                                   .stats_outputs = c.stats,
                                                   .activation = c.act,
                                                   .partials = c.partials});
        std::vector<HostTensor> in{x, scale};
        if (has_bias) in.push_back(bias);
        const auto out = run_op(dev(), *op, in, 2);
        const auto want = ref_norm::layer_norm(x, scale, has_bias ? &bias : nullptr, c.axis, 1e-5f, c.act);
        const std::string what = "LayerNormalization " + label(c.shape, dt, op->partials()) + " axis " +
                                 std::to_string(c.axis) + " scale " + c.scale.str() + " bias " +
                                 (has_bias ? c.bias.str() : "none") + " offset " + std::to_string(c.offset);
        check(out[0], want.y, tolerance(dt, tol32, tol16), what);
        EXPECT_EQ(out.size(), c.stats ? 3u : 1u);
        if (c.stats && out.size() == 3) {
            // Mean and InvStdDev are fp32 whatever X is; only the statistics' own error remains.
            check(out[1], want.mean, 1e-6, what + " Mean"); // means near 0: relative error ~4e-7
            check(out[2], want.inv_std_dev, 3e-7, what + " InvStdDev");
        }
        return op->partials();
    }
};

TEST_F(NormLayerNormalization, AxesAndShapes) {
    for (DType dt : float_dtypes(dev())) {
        run({{2, 3, 7, 11}, -1, {11}, {11}}, dt, 200);
        run({{2, 3, 7, 11}, 2, {7, 11}, {7, 11}}, dt, 201);
        run({{2, 3, 7, 11}, 1, {3, 7, 11}, {3, 7, 11}}, dt, 202);
        run({{2, 3, 7, 11}, 0, {2, 3, 7, 11}, {2, 3, 7, 11}}, dt, 203); // one group of everything
        run({{3, 37, 41}, -2, {37, 41}, {37, 41}}, dt, 204);
        run({{6, 64}, -1, {64}, {}}, dt, 205); // no B
        run({{13}, 0, {13}, {13}}, dt, 206);   // rank 1
    }
}

TEST_F(NormLayerNormalization, FourVectorsPerStep) {
    // Long rows (per-element scale and bias, so no per-group parameter): the four-vector steps.
    for (DType dt : float_dtypes(dev())) {
        run({{2, 5000}, -1, {5000}, {5000}}, dt, 260);
        run({{2, 8200}, -1, {8200}, {}, 2}, dt, 261);
    }
}

TEST_F(NormLayerNormalization, SplitKernel) {
    for (DType dt : float_dtypes(dev())) {
        EXPECT_EQ(run({{3, 37, 41}, -2, {37, 41}, {37, 41}, 3}, dt, 210), 3u);
        EXPECT_EQ(run({{5, 7, 11}, -1, {11}, {}, 8}, dt, 211), 6u); // 11 elements: chunks of 2
        EXPECT_EQ(run({{2, 3, 7, 11}, 1, {1, 11}, {7, 1}, 5}, dt, 212), 5u);
        EXPECT_GT(run({{2, 9001}, -1, {9001}, {9001}}, dt, 213), 1u); // chosen by size
        // Whole units per load, per-element parameters: chunks of 20 (f32) or 24 (f16, 8 halves).
        EXPECT_EQ(run({{4, 96}, -1, {96}, {96}, 5}, dt, 214), dt == DType::f16 ? 4u : 5u);
    }
}

TEST_F(NormLayerNormalization, BroadcastScaleAndBias) {
    // Scale and B broadcast unidirectionally to X: over normalized dimensions, over leading
    // dimensions (per-row parameters), as scalars, and with leading ones (the fast path).
    for (DType dt : float_dtypes(dev()))
        for (uint32_t partials : {0u, 2u}) {
            run({{2, 5, 7}, 1, {7}, {5, 1}, partials}, dt, 220);
            run({{2, 5, 7}, 1, {1, 7}, {1}, partials}, dt, 221);
            run({{2, 5, 7}, -1, {2, 5, 7}, {5, 7}, partials}, dt, 222);
            run({{2, 5, 7}, -1, {1, 1, 7}, {2, 1, 1}, partials}, dt, 223);
            run({{2, 5, 7}, 1, {1}, {}, partials}, dt, 224);
        }
}

TEST_F(NormLayerNormalization, MeanAndInvStdDevOutputs) {
    for (DType dt : float_dtypes(dev()))
        for (uint32_t partials : {0u, 3u}) {
            run({{2, 3, 7, 11}, 2, {7, 11}, {7, 11}, partials, 0, true}, dt, 230);
            run({{2, 3, 7, 11}, -1, {11}, {}, partials, 100, true}, dt, 231, offset_f32, offset_f16);
        }
}

TEST_F(NormLayerNormalization, LargeOffsetAndActivation) {
    for (DType dt : float_dtypes(dev()))
        for (uint32_t partials : {0u, 3u}) {
            run({{4, 37, 41}, -2, {37, 41}, {37, 41}, partials, 100}, dt, 240, offset_f32, offset_f16);
            run({{6, 33}, -1, {33}, {33}, partials, 0, false, {ActivationKind::Gelu}}, dt, 241);
        }
}

TEST_F(NormLayerNormalization, DescriptorErrors) {
    const TensorDesc x{{2, 3, 7}, DType::f32}, s{{7}, DType::f32};
    auto expect = [&](const ops::LayerNormalizationDesc& d, std::initializer_list<const char*> needles) {
        expect_error([&] { ops::LayerNormalization::create(dev(), d); }, needles);
    };
    expect({.input = x, .scale = s, .axis = 3}, {"LayerNormalization", "axis", "out of range"});
    expect({.input = x, .scale = s, .axis = -4}, {"LayerNormalization", "axis", "out of range"});
    expect({.input = x, .scale = {{6}, DType::f32}}, {"LayerNormalization", "scale", "broadcast"});
    expect({.input = x, .scale = {{1, 2, 3, 7}, DType::f32}}, {"LayerNormalization", "scale", "broadcast"});
    expect({.input = x, .scale = s, .bias = TensorDesc{{3, 6}, DType::f32}}, {"LayerNormalization", "bias"});
    expect({.input = x, .scale = {{7}, DType::f16}}, {"LayerNormalization", "scale", "dtype"});
    expect({.input = x, .scale = s, .stash_type = 10}, {"LayerNormalization", "stash_type"});
    expect({.input = {{2, 3}, DType::u8}, .scale = s}, {"LayerNormalization", "f32 or f16"});
    expect({.input = x, .scale = s, .epsilon = -1.f}, {"LayerNormalization", "epsilon"});
}

// ---------------------------------------------------------------------------------------------
// GroupNormalization

class NormGroupNormalization : public GpuTest {
protected:
    uint32_t run(const gpu::Shape& shape, int64_t groups, DType dt, uint32_t seed, uint32_t partials = 0,
                 bool per_group = false, double offset = 0, Activation act = {}, double tol32 = grouped_f32,
                 double tol16 = grouped_f16) {
        const HostTensor x = random_tensor(shape, dt, seed, offset - 2, offset + 2);
        const gpu::Shape ps{per_group ? groups : shape[1]};
        const HostTensor scale = random_tensor(ps, dt, seed + 1), bias = random_tensor(ps, dt, seed + 2);
        auto op = ops::GroupNormalization::create(dev(), {.input = x.desc,
                                                          .scale = scale.desc,
                                                          .bias = bias.desc,
                                                          .num_groups = groups,
                                                          .activation = act,
                                                          .partials = partials});
        const auto out = run_op(dev(), *op, {x, scale, bias}, 2);
        check(out[0], ref_norm::group_norm(x, scale, bias, groups, 1e-5f, act), tolerance(dt, tol32, tol16),
              "GroupNormalization " + label(shape, dt, op->partials()) + " groups " + std::to_string(groups) +
                  (per_group ? " per-group" : " per-channel") + " offset " + std::to_string(offset));
        return op->partials();
    }
};

TEST_F(NormGroupNormalization, GroupCounts) {
    for (DType dt : float_dtypes(dev())) {
        for (int64_t g : {1, 2, 3, 6}) run({2, 6, 7, 11}, g, dt, 300 + uint32_t(g));
        run({2, 10, 13}, 5, dt, 310);
        run({3, 10}, 5, dt, 311); // rank 2: groups of channels only
        run({1, 4, 3, 5, 2}, 2, dt, 312);
    }
}

TEST_F(NormGroupNormalization, FourVectorsPerStep) {
    // Large groups in four-vector steps: per-channel parameters (several channels a group) and
    // per-group ones (opset 18), single pass and split.
    for (DType dt : float_dtypes(dev())) {
        run({1, 4, 48, 64}, 2, dt, 340, 1);
        run({1, 4, 48, 64}, 2, dt, 341, 2, true);
        run({2, 4, 48, 64}, 2, dt, 342, 1, true);
    }
}

TEST_F(NormGroupNormalization, PerGroupScaleOpset18) {
    for (DType dt : float_dtypes(dev())) {
        run({2, 6, 5, 7}, 3, dt, 320, 0, true);
        run({2, 6, 5, 7}, 2, dt, 321, 4, true);
    }
}

TEST_F(NormGroupNormalization, SplitKernelOffsetAndActivation) {
    for (DType dt : float_dtypes(dev())) {
        EXPECT_EQ(run({2, 4, 37, 41}, 2, dt, 330, 5), 5u);
        run({2, 4, 37, 41}, 2, dt, 331, 0, false, 100, {}, offset_f32, offset_f16);
        run({2, 4, 37, 41}, 2, dt, 332, 6, false, 100, {}, offset_f32, offset_f16);
        run({2, 6, 7, 11}, 3, dt, 333, 0, false, 0, {ActivationKind::Silu});
        run({2, 6, 7, 11}, 3, dt, 334, 3, false, 0, {ActivationKind::Silu});
    }
}

TEST_F(NormGroupNormalization, DescriptorErrors) {
    const TensorDesc x{{2, 6, 4, 5}, DType::f32}, c6{{6}, DType::f32}, g3{{3}, DType::f32};
    auto expect = [&](const ops::GroupNormalizationDesc& d, std::initializer_list<const char*> needles) {
        expect_error([&] { ops::GroupNormalization::create(dev(), d); }, needles);
    };
    expect({.input = x, .scale = c6, .bias = c6, .num_groups = 4},
           {"GroupNormalization", "num_groups", "divide"});
    expect({.input = x, .scale = c6, .bias = c6}, {"GroupNormalization", "num_groups"}); // required
    expect({.input = x, .scale = c6, .bias = c6, .num_groups = -3}, {"GroupNormalization", "num_groups"});
    expect({.input = x, .scale = {{5}, DType::f32}, .bias = c6, .num_groups = 3},
           {"GroupNormalization", "scale", "[6]"});
    expect({.input = x, .scale = c6, .bias = g3, .num_groups = 3}, {"GroupNormalization", "bias", "[6]"});
    expect({.input = x, .scale = g3, .bias = c6, .num_groups = 3}, {"GroupNormalization", "bias", "[3]"});
    expect({.input = x, .scale = c6, .bias = c6, .num_groups = 3, .stash_type = 11},
           {"GroupNormalization", "stash_type"});
    expect({.input = {{6}, DType::f32}, .scale = c6, .bias = c6, .num_groups = 3},
           {"GroupNormalization", "rank"});
}

// ---------------------------------------------------------------------------------------------
// The split in one dispatch (NormSplit::OneDispatch): each workgroup keeps its chunk in registers
// and waits (bounded) for its group's other workgroups' moments. run_op records every op twice,
// so the second run also checks that the first left the op's counters at zero.

class NormOneDispatch : public GpuTest {
protected:
    std::unique_ptr<ops::InstanceNormalization> instance(const HostTensor& x, const HostTensor& scale,
                                                         const HostTensor& bias, uint32_t partials,
                                                         Activation act) {
        return ops::InstanceNormalization::create(dev(), {.input = x.desc,
                                                          .scale = scale.desc,
                                                          .bias = bias.desc,
                                                          .activation = act,
                                                          .partials = partials,
                                                          .split = ops::NormSplit::OneDispatch});
    }
    // Runs InstanceNormalization of x (N, C, ...) in one dispatch; returns its partials.
    uint32_t run(const gpu::Shape& shape, DType dt, uint32_t seed, uint32_t partials, double offset = 0,
                 Activation act = {}) {
        const HostTensor x = random_tensor(shape, dt, seed, offset - 2, offset + 2);
        const HostTensor scale = random_tensor({shape[1]}, dt, seed + 1);
        const HostTensor bias = random_tensor({shape[1]}, dt, seed + 2);
        auto op = instance(x, scale, bias, partials, act);
        EXPECT_TRUE(op->one_dispatch()) << label(shape, dt, op->partials());
        const auto out = run_op(dev(), *op, {x, scale, bias}, 2);
        check(out[0], ref_norm::instance_norm(x, scale, bias, 1e-5f, act),
              tolerance(dt, grouped_f32, grouped_f16),
              "InstanceNormalization one dispatch " + label(shape, dt, op->partials()) + " offset " +
                  std::to_string(offset));
        return op->partials();
    }
};

TEST_F(NormOneDispatch, InstanceChunksHeldInRegisters) {
    for (DType dt : float_dtypes(dev())) {
        EXPECT_EQ(run({1, 3, 40, 48}, dt, 400, 3), 3u);   // chunks of 640
        EXPECT_EQ(run({1, 2, 40, 48}, dt, 401, 20), 20u); // chunks of 96
        EXPECT_EQ(run({2, 3, 1, 16}, dt, 402, 2), 2u);    // f16: chunks of one unit
        // 408 elements in 4 chunks of 104 (f16: 13 units), a large offset and an activation.
        EXPECT_EQ(run({2, 3, 17, 24}, dt, 403, 4, 100.0, {ActivationKind::Relu}), 4u);
        // f16 groups of whole 4-vectors: 8-byte units.
        EXPECT_EQ(run({1, 2, 3, 36}, dt, 404, 3), 3u);
        // By size (streamed chunks): the two-dispatch split's 4 chunks of 4100.
        EXPECT_GE(run({1, 2, 100, 164}, dt, 405, 0), 3u);
        EXPECT_GE(run({1, 2, 100, 164}, dt, 406, 0, 1000.0, {ActivationKind::LeakyRelu, 0.2f}), 3u);
    }
}

TEST_F(NormOneDispatch, InstanceChunksStreamed) {
    // Chunks larger than a workgroup holds (33800 elements in 2: over 8192),
    // or VKML_NORM_HOLD=0: each workgroup streams its chunk for the moments and reads it again
    // for the output.
    for (DType dt : float_dtypes(dev())) {
        const HostTensor x = random_tensor({1, 2, 130, 260}, dt, 407, 98, 102);
        const HostTensor scale = random_tensor({2}, dt, 408), bias = random_tensor({2}, dt, 409);
        auto op = instance(x, scale, bias, 2, {});
        EXPECT_TRUE(op->one_dispatch());
        EXPECT_EQ(op->partials(), 2u);
        EXPECT_EQ(op->cached_units(), 0u);
        check(run_op(dev(), *op, {x, scale, bias}, 2)[0], ref_norm::instance_norm(x, scale, bias, 1e-5f, {}),
              tolerance(dt, offset_f32, offset_f16), "InstanceNormalization one dispatch streamed");
        ::setenv("VKML_NORM_HOLD", "0", 1);
        auto streamed = instance(x, scale, bias, 5, {ActivationKind::Relu});
        ::unsetenv("VKML_NORM_HOLD");
        EXPECT_TRUE(streamed->one_dispatch());
        EXPECT_EQ(streamed->cached_units(), 0u);
        check(run_op(dev(), *streamed, {x, scale, bias}, 2)[0],
              ref_norm::instance_norm(x, scale, bias, 1e-5f, {ActivationKind::Relu}),
              tolerance(dt, offset_f32, offset_f16), "InstanceNormalization one dispatch streamed, 5 chunks");
    }
}

TEST_F(NormOneDispatch, SameResultWhenTheWaitRunsOut) {
    // VKML_NORM_SPINS=0: no workgroup waits; each computes every chunk's moments from X, in the
    // owners' order and by their code, so the output is the waiting kernel's bit for bit.
    // Held and streamed chunks.
    for (DType dt : float_dtypes(dev()))
        for (const char* hold : {"1", "0"}) {
            const gpu::Shape shape{2, 3, 40, 56};
            const HostTensor x = random_tensor(shape, dt, 410, -1, 3);
            const HostTensor scale = random_tensor({3}, dt, 411), bias = random_tensor({3}, dt, 412);
            ::setenv("VKML_NORM_HOLD", hold, 1);
            auto waits = instance(x, scale, bias, 5, {});
            ::setenv("VKML_NORM_SPINS", "0", 1);
            auto alone = instance(x, scale, bias, 5, {});
            ::unsetenv("VKML_NORM_SPINS");
            ::unsetenv("VKML_NORM_HOLD");
            ASSERT_TRUE(waits->one_dispatch() && alone->one_dispatch());
            EXPECT_EQ(waits->cached_units() > 0, hold[0] == '1');
            const auto a = run_op(dev(), *waits, {x, scale, bias}, 2);
            const auto b = run_op(dev(), *alone, {x, scale, bias}, 2);
            check(b[0], ref_norm::instance_norm(x, scale, bias, 1e-5f, {}),
                  tolerance(dt, grouped_f32, grouped_f16),
                  "InstanceNormalization one dispatch, no waiting " + label(shape, dt, alone->partials()));
            expect_equal(b[0], a[0], "no waiting vs waiting " + std::string(gpu::dtype_name(dt)));
        }
}

TEST_F(NormOneDispatch, LayerAndGroupNormalization) {
    for (DType dt : float_dtypes(dev())) {
        // LayerNormalization: per-element scale and bias over 3 x 640 rows, 3 chunks a row.
        const HostTensor x = random_tensor({2, 3, 40, 16}, dt, 420, -2, 2);
        const HostTensor scale = random_tensor({3, 40, 16}, dt, 421),
                         bias = random_tensor({3, 40, 16}, dt, 422);
        auto layer = ops::LayerNormalization::create(dev(), {.input = x.desc,
                                                             .scale = scale.desc,
                                                             .bias = bias.desc,
                                                             .axis = 1,
                                                             .partials = 3,
                                                             .split = ops::NormSplit::OneDispatch});
        EXPECT_TRUE(layer->one_dispatch());
        EXPECT_EQ(layer->partials(), 3u);
        check(run_op(dev(), *layer, {x, scale, bias}, 2)[0],
              ref_norm::layer_norm(x, scale, &bias, 1, 1e-5f, {}).y, tolerance(dt, grouped_f32, grouped_f16),
              "LayerNormalization one dispatch " + std::string(gpu::dtype_name(dt)));
        // GroupNormalization: per-channel (several channels a chunk) and per-group parameters.
        for (bool per_group : {false, true}) {
            const HostTensor gx = random_tensor({2, 4, 37, 40}, dt, 423, 98, 102);
            const gpu::Shape ps{per_group ? 2 : 4};
            const HostTensor gs = random_tensor(ps, dt, 424), gb = random_tensor(ps, dt, 425);
            auto group = ops::GroupNormalization::create(dev(), {.input = gx.desc,
                                                                 .scale = gs.desc,
                                                                 .bias = gb.desc,
                                                                 .num_groups = 2,
                                                                 .activation = {ActivationKind::Silu},
                                                                 .partials = 5,
                                                                 .split = ops::NormSplit::OneDispatch});
            EXPECT_TRUE(group->one_dispatch());
            EXPECT_EQ(group->partials(), 5u);
            check(run_op(dev(), *group, {gx, gs, gb}, 2)[0],
                  ref_norm::group_norm(gx, gs, gb, 2, 1e-5f, {ActivationKind::Silu}),
                  tolerance(dt, offset_f32, offset_f16),
                  "GroupNormalization one dispatch " + std::string(gpu::dtype_name(dt)) +
                      (per_group ? " per-group" : " per-channel"));
        }
    }
}

TEST_F(NormOneDispatch, TwoDispatchesAndAutoChoice) {
    const TensorDesc x{{1, 2, 100, 164}, DType::f32}, c2{{2}, DType::f32};
    // TwoDispatches never takes it; Auto takes it where the device reports its multiprocessors
    // (2 x 4 workgroups fit any), not on a CPU implementation.
    auto two = ops::InstanceNormalization::create(
        dev(), {.input = x, .scale = c2, .bias = c2, .split = ops::NormSplit::TwoDispatches});
    EXPECT_FALSE(two->one_dispatch());
    EXPECT_GT(two->partials(), 1u);
    auto by_size = ops::InstanceNormalization::create(dev(), {.input = x, .scale = c2, .bias = c2});
    EXPECT_EQ(by_size->one_dispatch(),
              dev().caps().multiprocessors > 0 && dev().caps().device_type != VK_PHYSICAL_DEVICE_TYPE_CPU);
}

TEST_F(NormOneDispatch, DescriptorErrors) {
    const TensorDesc c3{{3}, DType::f32};
    auto expect = [&](const ops::InstanceNormalizationDesc& d, std::initializer_list<const char*> needles) {
        expect_error([&] { ops::InstanceNormalization::create(dev(), d); }, needles);
    };
    // Planes of no whole 4-vector.
    expect(
        {.input = {{1, 3, 3, 11}, DType::f32}, .scale = c3, .bias = c3, .split = ops::NormSplit::OneDispatch},
        {"InstanceNormalization", "split", "OneDispatch", "33 elements"});
    expect({.input = {{1, 3, 8, 8}, DType::f32}, .scale = c3, .bias = c3, .split = ops::NormSplit(7)},
           {"InstanceNormalization", "split", "unknown"});
    // Mean and InvStdDev outputs, broadcast scale.
    const TensorDesc lx{{4, 64}, DType::f32};
    expect_error(
        [&] {
            ops::LayerNormalization::create(dev(), {.input = lx,
                                                    .scale = {{64}, DType::f32},
                                                    .stats_outputs = true,
                                                    .split = ops::NormSplit::OneDispatch});
        },
        {"LayerNormalization", "split", "Mean/InvStdDev"});
    expect_error(
        [&] {
            ops::LayerNormalization::create(
                dev(), {.input = lx, .scale = {{1}, DType::f32}, .split = ops::NormSplit::OneDispatch});
        },
        {"LayerNormalization", "split", "broadcast"});
}

} // namespace
} // namespace vkml::test
