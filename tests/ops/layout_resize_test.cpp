// Resize against the ONNX-formula reference in ref/layout.cpp: every mode, coordinate
// transformation mode and nearest mode, upscaling and downscaling by non-integer scales and to
// given sizes, in f32 and f16 storage.
//
// Tolerances (relative L2 error of the whole output): nearest copies input values, so it must be
// exact. linear / cubic: f32 1e-5 (fp32 weights against double); f16 1e-3 (the output's rounding
// to half, about 2^-11 relative).
#include <gtest/gtest.h>

#include <algorithm>

#include "op_test.hpp"
#include "ref/layout.hpp"
#include "vkml/ops/layout.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
namespace ref = ref_layout;

const char* const ctms[] = {"half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
                            "align_corners", "asymmetric",           "tf_crop_and_resize",
                            "tf_half_pixel_for_nn"};

// A scale or size choice for the two spatial axes of an NCHW input.
struct Target {
    const char* name;
    std::vector<float> scales;  // all four axes
    std::vector<int64_t> sizes; // all four axes
};

class LayoutResizeTest : public GpuTest {
protected:
    // Runs one Resize on `shape` (recorded twice) and checks it against the reference.
    void check(DType dt, const Shape& shape, ops::ResizeDesc desc, uint32_t seed) {
        desc.input = {shape, dt};
        std::string what = "Resize " + desc.mode + " " + desc.coordinate_transformation_mode + " " +
                           (desc.mode == "nearest" ? desc.nearest_mode + " " : "") + gpu::dtype_name(dt) +
                           shape.str() + (desc.scales.empty() ? " sizes" : " scales") +
                           (desc.exclude_outside ? " exclude_outside" : "");
        ref::ResizeParams p;
        p.scales.assign(desc.scales.begin(), desc.scales.end());
        p.sizes = desc.sizes;
        p.roi.assign(desc.roi.begin(), desc.roi.end());
        p.axes = desc.axes;
        p.mode = desc.mode;
        p.ctm = desc.coordinate_transformation_mode;
        p.nearest_mode = desc.nearest_mode;
        p.policy = desc.keep_aspect_ratio_policy;
        p.cubic_a = desc.cubic_coeff_a;
        p.exclude_outside = desc.exclude_outside != 0;
        p.extrapolation = round_to(desc.extrapolation_value, dt);
        const HostTensor x = random_tensor(shape, dt, seed);
        const HostTensor want = ref::resize(x, p);
        auto op = ops::Resize::create(dev(), desc);
        ASSERT_EQ(op->outputs()[0].shape, want.shape()) << what;
        const HostTensor got = run_op(dev(), *op, {x}, 2)[0];
        if (desc.mode == "nearest")
            expect_equal(got, want, what);
        else
            expect_close(got, want, tolerance(dt, 1e-5, 1e-3), what);
    }
    // tf_crop_and_resize's roi for a 4-D input: the whole N and C, part of H, W reaching past
    // both edges (so some samples extrapolate). Dyadic values keep the boundaries exact.
    static void add_roi(ops::ResizeDesc& d) {
        if (d.coordinate_transformation_mode != "tf_crop_and_resize") return;
        d.roi = {0.f, 0.f, 0.25f, -0.25f, 1.f, 1.f, 0.875f, 1.125f};
        d.extrapolation_value = 0.625f;
    }
};

// Nearest: scales are dyadic (1.75, 2.5, 0.625, 0.75) so that the source coordinates' exact ties
// are exact in fp32 and double alike; sizes give ratios such as 9/5 and 3/7.
TEST_F(LayoutResizeTest, NearestEveryModeAndTransform) {
    const Shape shape{1, 2, 5, 7};
    const std::vector<Target> targets = {
        {"up scales", {1.f, 1.f, 1.75f, 2.5f}, {}},
        {"down scales", {1.f, 1.f, 0.625f, 0.75f}, {}},
        {"up sizes", {}, {1, 2, 9, 12}},
        {"down sizes", {}, {1, 2, 3, 4}},
        {"sizes to 1", {}, {1, 2, 1, 3}}, // length_resized 1 (pytorch_half_pixel, align_corners)
        // whole factors: the upsample kernel where the mode maps o to o / k
        {"x2 x3 scales", {1.f, 1.f, 2.f, 3.f}, {}},
        {"x4 x2 sizes", {}, {1, 2, 20, 14}},
        {"x1 x8 scales", {1.f, 1.f, 1.f, 8.f}, {}},
    };
    uint32_t seed = 1;
    for (DType dt : float_dtypes(dev()))
        for (const char* ctm : ctms)
            for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
                // f16 storage runs the same kernel: one nearest mode suffices there.
                if (dt == DType::f16 && std::string(nearest) != "round_prefer_ceil") continue;
                for (const Target& t : targets) {
                    ops::ResizeDesc d{.scales = t.scales,
                                      .sizes = t.sizes,
                                      .mode = "nearest",
                                      .coordinate_transformation_mode = ctm,
                                      .nearest_mode = nearest};
                    add_roi(d);
                    check(dt, shape, d, seed++);
                }
            }
}

TEST_F(LayoutResizeTest, WholeFactorsTakeTheUpsampleKernel) {
    // Which modes map output o to input o / k at a whole factor k (checked against the reference
    // by NearestEveryModeAndTransform above), and that those run on layout/upsample.comp: f16 rows
    // of whole 16-byte units (W 4 x2 -> 8) and not (W 5 x2 -> 10), batches and channels.
    auto upsample = [&](const char* ctm, const char* nearest, std::vector<float> scales) {
        return ops::Resize::create(dev(), {.input = {{2, 3, 5, 4}, DType::f32},
                                           .scales = scales,
                                           .mode = "nearest",
                                           .coordinate_transformation_mode = ctm,
                                           .nearest_mode = nearest})
            ->integer_upsample();
    };
    EXPECT_TRUE(upsample("asymmetric", "floor", {1, 1, 3, 2}));
    EXPECT_TRUE(upsample("asymmetric", "round_prefer_floor", {1, 1, 2, 2}));
    EXPECT_FALSE(upsample("asymmetric", "round_prefer_floor", {1, 1, 3, 3}));
    EXPECT_FALSE(upsample("asymmetric", "round_prefer_ceil", {1, 1, 2, 2}));
    EXPECT_TRUE(upsample("half_pixel", "round_prefer_ceil", {1, 1, 4, 2}));
    EXPECT_TRUE(upsample("pytorch_half_pixel", "round_prefer_floor", {1, 1, 2, 2}));
    EXPECT_FALSE(upsample("half_pixel", "floor", {1, 1, 2, 2}));
    EXPECT_FALSE(upsample("align_corners", "floor", {1, 1, 2, 2}));
    EXPECT_FALSE(upsample("asymmetric", "floor", {1, 2, 2, 2})); // channels resized too
    EXPECT_FALSE(upsample("asymmetric", "floor", {1, 1, 2.5f, 2}));
    uint32_t seed = 3000;
    for (DType dt : float_dtypes(dev()))
        for (const Shape& shape : {Shape{2, 3, 5, 4}, Shape{1, 3, 3, 5}}) {
            ops::ResizeDesc d{.scales = {1.f, 1.f, 2.f, 2.f}, .mode = "nearest", .coordinate_transformation_mode = "half_pixel"};
            check(dt, shape, d, seed++);
        }
}

TEST_F(LayoutResizeTest, LinearEveryTransform) {
    const Shape shape{2, 3, 5, 7};
    const std::vector<Target> targets = {
        {"up scales", {1.f, 1.f, 1.7f, 2.3f}, {}}, {"down scales", {1.f, 1.f, 0.6f, 0.45f}, {}},
        {"up sizes", {}, {2, 3, 11, 8}},           {"down sizes", {}, {2, 3, 3, 4}},
        {"sizes to 1", {}, {2, 3, 1, 9}},
    };
    uint32_t seed = 1000;
    for (DType dt : float_dtypes(dev()))
        for (const char* ctm : ctms)
            for (const Target& t : targets) {
                if (std::string(ctm) == "tf_half_pixel_for_nn") continue; // nearest only (it moves N and C)
                ops::ResizeDesc d{.scales = t.scales,
                                  .sizes = t.sizes,
                                  .mode = "linear",
                                  .coordinate_transformation_mode = ctm};
                add_roi(d);
                check(dt, shape, d, seed++);
            }
}

TEST_F(LayoutResizeTest, LinearWholeFactorsTakeTheRunKernel) {
    // Linear by whole factors 1, 2, 4 in the modes layout/resize_up.comp serves: runs of 16 bytes
    // (f32: 4 outputs; f16: 8 where OW % 8 == 0, else 4), 8 output rows per invocation where the
    // height factor is 2 or 4, else 4 (a last partial strip where OH is not a multiple), and the
    // general kernel (OW % 4 != 0). Input columns as vectors of 4 or 2 where IW divides by them and
    // a run covers whole vectors; align_corners as the periodic modes, its taps told apart by
    // integer arithmetic.
    struct Case {
        Shape shape;
        std::vector<float> scales;
        std::vector<int64_t> sizes;
        uint32_t run; // expected linear_upsample_run() in f16 (f32: at most 4)
    };
    const std::vector<Case> cases = {
        {{1, 2, 5, 4}, {1, 1, 2, 2}, {}, 8},     // OW 8, vector input columns; OH 10: a partial strip
        {{2, 3, 3, 6}, {1, 1, 2, 2}, {}, 4},     // OW 12: runs of 4
        {{1, 3, 17, 40}, {1, 1, 2, 2}, {}, 8},   // several runs a row, vector input columns
        {{1, 2, 3, 5}, {1, 1, 4, 4}, {}, 4},     // x4, OW 20
        {{1, 1, 4, 9}, {1, 1, 4, 4}, {}, 4},     // x4, OW 36
        {{1, 2, 6, 8}, {1, 1, 1, 2}, {}, 8},     // width only
        {{1, 2, 5, 12}, {1, 1, 2, 1}, {}, 4},    // height only, OW 12
        {{1, 2, 3, 16}, {1, 1, 4, 2}, {}, 8},    // x4 x2
        {{1, 2, 3, 8}, {1, 1, 1, 1}, {}, 8},     // identity: a run covers two input vectors; OH 3
        {{1, 2, 5, 4}, {}, {1, 2, 10, 16}, 8},   // sizes: x2 x4
        {{2, 3, 4, 8}, {}, {2, 3, 8, 16}, 8},    // sizes x2, batches
        {{1, 1, 1, 20}, {1, 1, 2, 2}, {}, 8},    // one input row, one channel: OH 2, a half strip
        {{1, 1, 7, 2}, {1, 1, 1, 2}, {}, 4},     // OW 4: one run a row, IW 2 (vectors of 2 in f32)
        {{1, 1, 2, 3}, {1, 1, 2, 4}, {}, 4},     // OW 12, IW 3: element loads
        {{1, 2, 3, 5}, {1, 1, 2, 2}, {}, 0},     // OW 10: the general kernel
        {{1, 2, 3, 4}, {1, 1, 3, 2}, {}, 0},     // factor 3: the general kernel
        {{1, 2, 3, 4}, {1, 1, 2, 2.5f}, {}, 0},  // not a whole factor
    };
    uint32_t seed = 1500;
    for (DType dt : float_dtypes(dev()))
        for (const char* ctm : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "asymmetric",
                                "align_corners"})
            for (const Case& c : cases) {
                ops::ResizeDesc d{
                    .scales = c.scales, .sizes = c.sizes, .mode = "linear", .coordinate_transformation_mode = ctm};
                d.input = {c.shape, dt};
                EXPECT_EQ(ops::Resize::create(dev(), d)->linear_upsample_run(),
                          dt == DType::f32 ? std::min(c.run, 4u) : c.run)
                    << ctm << " " << c.shape.str() << " " << gpu::dtype_name(dt);
                check(dt, c.shape, d, seed++);
            }
    // Modes and options the run kernel leaves to the general one.
    auto run = [&](ops::ResizeDesc d) {
        d.input = {{1, 2, 4, 4}, DType::f32};
        return ops::Resize::create(dev(), d)->linear_upsample_run();
    };
    EXPECT_EQ(run({.scales = {1, 1, 2, 2}, .mode = "cubic"}), 0u);
    EXPECT_EQ(run({.scales = {1, 1, 2, 2}, .mode = "linear", .exclude_outside = 1}), 0u);
    EXPECT_EQ(run({.scales = {1, 1, 2, 2}, .mode = "linear", .coordinate_transformation_mode = "tf_crop_and_resize"}),
              0u);
    EXPECT_EQ(run({.scales = {1, 1, 2, 2}, .mode = "nearest"}), 0u);
    // align_corners whose column ratio (46343 / 92687) times the 92688 columns leaves 32 bits: the
    // run kernel's integer taps cannot hold it.
    for (const char* ctm : {"align_corners", "half_pixel"}) {
        ops::ResizeDesc d{.scales = {1, 1, 2, 2}, .mode = "linear", .coordinate_transformation_mode = ctm};
        d.input = {{1, 1, 1, 46344}, DType::f32};
        EXPECT_EQ(ops::Resize::create(dev(), d)->linear_upsample_run(), ctm == std::string("half_pixel") ? 4u : 0u) << ctm;
    }
    // Rank 1 and 3 inputs: the leading dimensions are planes.
    for (DType dt : float_dtypes(dev())) {
        check(dt, {8}, {.scales = {2.f}, .mode = "linear"}, seed++);
        check(dt, {3, 5, 4}, {.scales = {1.f, 2.f, 2.f}, .mode = "linear", .coordinate_transformation_mode = "asymmetric"},
              seed++);
    }
}

TEST_F(LayoutResizeTest, CubicEveryTransformAndExcludeOutside) {
    const Shape shape{1, 2, 6, 5};
    const std::vector<Target> targets = {
        {"up scales", {1.f, 1.f, 2.3f, 1.7f}, {}}, {"down scales", {1.f, 1.f, 0.55f, 0.8f}, {}},
        {"up sizes", {}, {1, 2, 13, 7}},           {"down sizes", {}, {1, 2, 4, 3}},
        {"sizes to 1", {}, {1, 2, 1, 8}},
    };
    uint32_t seed = 2000;
    for (DType dt : float_dtypes(dev()))
        for (const char* ctm : ctms)
            for (int64_t exclude : {0, 1}) {
                if (std::string(ctm) == "tf_half_pixel_for_nn") continue; // nearest only (it moves N and C)
                if (dt == DType::f16 && exclude) continue;
                for (const Target& t : targets) {
                    // TensorFlow's A = -0.5 on half the cases, PyTorch's -0.75 on the others.
                    ops::ResizeDesc d{.scales = t.scales,
                                      .sizes = t.sizes,
                                      .mode = "cubic",
                                      .coordinate_transformation_mode = ctm,
                                      .cubic_coeff_a = seed % 2 ? -0.5f : -0.75f,
                                      .exclude_outside = exclude};
                    add_roi(d);
                    check(dt, shape, d, seed++);
                }
            }
}

// Nearest over batch, channel and depth dimensions too, with axes (negative), rank 1 to 6.
TEST_F(LayoutResizeTest, NearestAnyDimensionsAndAxes) {
    uint32_t seed = 3000;
    for (DType dt : float_dtypes(dev())) {
        check(dt, {7}, {.scales = {2.5f}}, seed++);
        check(dt, {3, 5}, {.sizes = {7, 2}, .nearest_mode = "floor"}, seed++);
        check(dt, {2, 3, 5},
              {.scales = {2.f, 0.75f}, .axes = {0, -1}, .coordinate_transformation_mode = "asymmetric"},
              seed++);
        check(dt, {2, 3, 2, 3, 5}, {.sizes = {5, 3, 2}, .axes = {1, 3, 4}, .nearest_mode = "ceil"}, seed++);
        check(
            dt, {2, 1, 3, 2, 3, 2},
            {.scales = {1.5f, 3.f, 0.5f, 1.f, 2.f, 1.75f}, .coordinate_transformation_mode = "align_corners"},
            seed++);
        check(dt, {2, 3, 4, 5},
              {.sizes = {3, 6},
               .roi = {0.5f, -0.5f, 1.f, 1.5f},
               .axes = {-3, -1},
               .coordinate_transformation_mode = "tf_crop_and_resize",
               .extrapolation_value = -2.f},
              seed++);
    }
}

// linear / cubic on inputs of rank 1 to 3 (the last two dimensions interpolate), with axes.
TEST_F(LayoutResizeTest, InterpolationLowRankAndAxes) {
    uint32_t seed = 4000;
    for (DType dt : float_dtypes(dev()))
        for (const char* mode : {"linear", "cubic"}) {
            check(dt, {9}, {.scales = {1.6f}, .mode = mode}, seed++);
            check(dt, {5, 7},
                  {.sizes = {8, 3}, .mode = mode, .coordinate_transformation_mode = "align_corners"}, seed++);
            check(dt, {3, 5, 7}, {.scales = {0.7f}, .axes = {-1}, .mode = mode}, seed++);
            check(dt, {2, 3, 4, 5},
                  {.sizes = {9, 7},
                   .axes = {2, 3},
                   .mode = mode,
                   .coordinate_transformation_mode = "pytorch_half_pixel"},
                  seed++);
            // Identity over N and C even with scales given for them.
            check(dt, {1, 3, 16, 16}, {.scales = {1.f, 1.f, 2.f, 2.f}, .mode = mode}, seed++);
        }
}

TEST_F(LayoutResizeTest, KeepAspectRatioPolicy) {
    uint32_t seed = 5000;
    for (DType dt : float_dtypes(dev()))
        for (const char* policy : {"not_larger", "not_smaller"})
            for (const char* mode : {"nearest", "linear"}) {
                check(dt, {1, 2, 6, 8},
                      {.sizes = {9, 10}, .axes = {2, 3}, .mode = mode, .keep_aspect_ratio_policy = policy},
                      seed++);
                check(dt, {1, 2, 5, 4},
                      {.sizes = {3, 9},
                       .axes = {-2, -1},
                       .mode = mode,
                       .coordinate_transformation_mode = "half_pixel_symmetric",
                       .keep_aspect_ratio_policy = policy},
                      seed++);
                if (std::string(mode) == "nearest") // all axes: N and C scale too
                    check(dt, {1, 2, 5, 4},
                          {.sizes = {2, 3, 3, 9}, .mode = mode, .keep_aspect_ratio_policy = policy}, seed++);
            }
    // Ratios 9/6 = 1.5 and 10/8 = 1.25: not_larger takes 1.25 (6 * 1.25 = 7.5 rounds up to 8),
    // not_smaller 1.5.
    auto op = ops::Resize::create(dev(), {.input = {{1, 2, 6, 8}, DType::f32},
                                          .sizes = {9, 10},
                                          .axes = {2, 3},
                                          .keep_aspect_ratio_policy = "not_larger"});
    EXPECT_EQ(op->outputs()[0].shape, (Shape{1, 2, 8, 10}));
    op = ops::Resize::create(dev(), {.input = {{1, 2, 6, 8}, DType::f32},
                                     .sizes = {9, 10},
                                     .axes = {2, 3},
                                     .keep_aspect_ratio_policy = "not_smaller"});
    EXPECT_EQ(op->outputs()[0].shape, (Shape{1, 2, 9, 12}));
}

// More output elements than maxComputeWorkGroupCount[0] workgroups cover: the dispatch folds into
// y, and every element must still be written (the input has no zeros). An index that forgot the
// workgroup size (x + y * groups_x) would still cover up to 65 * groups_x elements, so go past it.
TEST_F(LayoutResizeTest, LargeOutputFoldsIntoY) {
    const uint64_t groups_x = dev().caps().max_workgroup_count[0];
    // Exceeding the grid row takes groups_x * 64 outputs: 4M on lavapipe (65535), but 2^37 on
    // devices with a 2^31 - 1 row, past Resize's 32-bit indices. Decide before allocating.
    if (groups_x > (1u << 20)) GTEST_SKIP() << "grid limit " << groups_x << " too large to exceed cheaply";
    const int64_t w = 2049, h = int64_t(groups_x * 66 / uint64_t(w)) + 1; // Resize runs 64-wide groups
    const DType dt = float_dtypes(dev()).back();
    const HostTensor x = random_tensor({1, 1, 2, 2}, dt, 9);
    auto op = ops::Resize::create(dev(), {.input = {x.shape(), dt},
                                          .sizes = {1, 1, h, w},
                                          .coordinate_transformation_mode = "asymmetric",
                                          .nearest_mode = "floor"});
    ASSERT_GT(uint64_t(h * w), groups_x * 66);
    const HostTensor got = run_op(dev(), *op, {x})[0];
    // asymmetric + floor: source = floor(o * 2 / length).
    size_t bad = 0;
    for (int64_t y = 0; y < h; ++y)
        for (int64_t c = 0; c < w; ++c) {
            const double want = x[size_t((2 * y / h) * 2 + 2 * c / w)];
            bad += got[size_t(y * w + c)] != want;
        }
    EXPECT_EQ(bad, 0u);
}

TEST_F(LayoutResizeTest, DescriptorErrors) {
    const TensorDesc x{{1, 3, 4, 5}, DType::f32};
    const std::vector<float> s2{1.f, 1.f, 2.f, 2.f};
    expect_error([&] { ops::Resize::create(dev(), {.input = x, .scales = s2, .mode = "bilinear"}); },
                 {"Resize", "mode", "bilinear", "nearest, linear or cubic"});
    expect_error(
        [&] {
            ops::Resize::create(
                dev(), {.input = x, .scales = s2, .coordinate_transformation_mode = "tf_half_pixel"});
        },
        {"Resize", "coordinate_transformation_mode", "tf_half_pixel"});
    expect_error([&] { ops::Resize::create(dev(), {.input = x, .scales = s2, .nearest_mode = "round"}); },
                 {"Resize", "nearest_mode", "round"});
    expect_error(
        [&] {
            ops::Resize::create(dev(),
                                {.input = x, .sizes = {1, 3, 8, 8}, .keep_aspect_ratio_policy = "fit"});
        },
        {"Resize", "keep_aspect_ratio_policy", "fit"});
    expect_error([&] { ops::Resize::create(dev(), {.input = x}); },
                 {"Resize", "exactly one of scales and sizes"});
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = x, .scales = s2, .sizes = {1, 3, 8, 8}});
        },
        {"Resize", "exactly one of scales and sizes"});
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = x, .scales = {2.f, 2.f}});
        },
        {"Resize", "scales", "2 values"});
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = x, .scales = {1.f, 1.f, -2.f, 2.f}});
        },
        {"Resize", "scales", "positive"});
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = x, .scales = {1.f, 1.f, 0.1f, 2.f}});
        },
        {"Resize", "scales", "empty"});
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = x, .sizes = {8, 8}, .axes = {2, -2}});
        },
        {"Resize", "axes", "repeats"});
    expect_error([&] { ops::Resize::create(dev(), {.input = x, .sizes = {8}, .axes = {4}}); },
                 {"Resize", "axes"});
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = x, .scales = s2, .keep_aspect_ratio_policy = "not_larger"});
        },
        {"Resize", "keep_aspect_ratio_policy", "sizes only"});
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = x,
                                        .scales = s2,
                                        .roi = {0.f, 1.f},
                                        .coordinate_transformation_mode = "tf_crop_and_resize"});
        },
        {"Resize", "roi", "expected 8"});
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = {{1, 3, 4, 5}, DType::i32}, .scales = s2});
        },
        {"Resize", "input", "f32 or f16"});
    expect_error([&] { ops::Resize::create(dev(), {.input = x, .scales = s2, .exclude_outside = 2}); },
                 {"Resize", "exclude_outside"});
    expect_error([&] { ops::Resize::create(dev(), {.input = x, .scales = s2, .antialias = 1}); },
                 {"Resize", "antialias"});
    // linear / cubic interpolate only the last two dimensions.
    expect_error(
        [&] {
            ops::Resize::create(dev(), {.input = x, .scales = {1.f, 2.f, 2.f, 2.f}, .mode = "linear"});
        },
        {"Resize", "last two dimensions"});
}

} // namespace
} // namespace vkml::test
