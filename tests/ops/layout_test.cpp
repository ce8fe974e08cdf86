// Layout ops against the naive references in ref/layout.cpp. Layout ops move bits, so every
// result must be exact (expect_equal), in every dtype the device stores.
#include <gtest/gtest.h>

#include <cmath>

#include "op_test.hpp"
#include "ref/layout.hpp"
#include "vkml/ops/layout.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
namespace ref = ref_layout;

class LayoutTest : public GpuTest {
protected:
    // Every dtype layout ops move that this device stores.
    std::vector<DType> dtypes() {
        std::vector<DType> v{DType::f32, DType::i32, DType::i64};
        if (dev().caps().storage16) v.push_back(DType::f16);
        if (dev().caps().storage8) v.push_back(DType::u8);
        return v;
    }
    // Random values that distinguish every element: nonzero floats, large signed integers
    // (negative i64 values exercise the high word), u8 in 1..255.
    static HostTensor data(const Shape& shape, DType dtype, uint32_t seed) {
        switch (dtype) {
        case DType::f32:
        case DType::f16:
            return random_tensor(shape, dtype, seed);
        case DType::u8:
            return random_ints(shape, dtype, seed, 1, 255);
        default:
            return random_ints(shape, dtype, seed, -5'000'000, 5'000'000);
        }
    }
    static std::string what(const char* op, DType dtype, const Shape& shape) {
        return std::string(op) + " " + gpu::dtype_name(dtype) + shape.str();
    }
};

TEST_F(LayoutTest, TransposeEveryDtypeAndRank) {
    struct Case {
        Shape shape;
        std::vector<int64_t> perm;
    };
    const std::vector<Case> cases = {
        {{7}, {}},
        {{5, 3}, {}},
        {{2, 3, 5}, {1, 0, 2}},
        {{2, 3, 5, 7}, {0, 2, 3, 1}}, // NCHW -> NHWC
        {{3, 1, 5, 2}, {0, 3, 1, 2}},
        {{2, 3, 1, 5, 2}, {4, 2, 0, 3, 1}},
        {{2, 1, 3, 2, 3, 2}, {5, 3, 1, 0, 4, 2}}, // rank 6 (rank 7 words for i64)
    };
    uint32_t seed = 1;
    for (DType dt : dtypes())
        for (const Case& c : cases) {
            const HostTensor x = data(c.shape, dt, seed++);
            auto op = ops::Transpose::create(dev(), {.input = {c.shape, dt}, .perm = c.perm});
            std::vector<int64_t> perm = c.perm;
            if (perm.empty())
                for (size_t i = 0; i < c.shape.rank(); ++i) perm.push_back(int64_t(c.shape.rank() - 1 - i));
            expect_equal(run_op(dev(), *op, {x}, 2)[0], ref::transpose(x, perm),
                         what("Transpose", dt, c.shape));
        }
}

// A Transpose with a fused activation: the permutation of the activated values (computed here in
// double), f32 and f16, Sigmoid (NanoDet's heads) and a LeakyRelu for its parameter; integer
// inputs cannot take one.
TEST_F(LayoutTest, TransposeAppliesItsActivation) {
    uint32_t seed = 70;
    for (DType dt : float_dtypes(dev()))
        for (const ops::Activation& act : {ops::Activation{ops::ActivationKind::Sigmoid},
                                           ops::Activation{ops::ActivationKind::LeakyRelu, 0.3f}}) {
            const Shape shape{1, 5, 7, 3};
            const HostTensor x = random_tensor(shape, dt, seed++, -4.0, 4.0);
            auto op = ops::Transpose::create(dev(),
                                             {.input = {shape, dt}, .perm = {0, 2, 3, 1}, .activation = act});
            HostTensor want = ref::transpose(x, {0, 2, 3, 1});
            for (double& v : want.data)
                v = round_to(act.kind == ops::ActivationKind::Sigmoid ? 1.0 / (1.0 + std::exp(-v))
                             : v >= 0                                 ? v
                                                                      : 0.3 * v,
                             dt);
            expect_close(run_op(dev(), *op, {x})[0], want, tolerance(dt, 1e-6, 1e-3),
                         what("Transpose+activation", dt, shape));
        }
    expect_error(
        [&] {
            ops::Transpose::create(
                dev(),
                {.input = {{2, 3}, DType::i32}, .perm = {1, 0}, .activation = {ops::ActivationKind::Relu}});
        },
        {"Transpose", "activation", "f32 or f16"});
}

TEST_F(LayoutTest, SliceStepsAxesAndClamping) {
    struct Case {
        Shape shape;
        std::vector<int64_t> starts, ends, axes, steps;
    };
    const int64_t big = INT64_MAX, small = INT64_MIN;
    const std::vector<Case> cases = {
        {{11}, {2}, {9}, {}, {}},
        {{11}, {-3}, {big}, {}, {}},                          // negative start, end past the end
        {{11}, {big}, {small}, {0}, {-1}},                    // full reverse
        {{11}, {-2}, {-12}, {-1}, {-3}},                      // negative step 3, clamped end
        {{5, 7, 3}, {1, -1}, {4, 0}, {0, 1}, {2, -2}},        // mixed steps
        {{5, 7, 3}, {0, 10}, {big, -100}, {-1, -2}, {1, -1}}, // negative axes, clamped start
        {{3, 4, 5, 7}, {1, 6, 0}, {3, 0, 2}, {1, 3, 2}, {1, -2, 1}},
        {{3, 4, 5}, {2}, {2}, {1}, {}}, // empty
        {{2, 3, 2, 3, 2, 3}, {1, 2, -1}, {2, 0, small}, {1, 3, 5}, {1, -1, -2}},
    };
    uint32_t seed = 100;
    for (DType dt : dtypes())
        for (const Case& c : cases) {
            const HostTensor x = data(c.shape, dt, seed++);
            auto op = ops::Slice::create(dev(), {.input = {c.shape, dt},
                                                 .starts = c.starts,
                                                 .ends = c.ends,
                                                 .axes = c.axes,
                                                 .steps = c.steps});
            const HostTensor want = ref::slice(x, c.starts, c.ends, c.axes, c.steps);
            ASSERT_EQ(op->outputs()[0].shape, want.shape()) << what("Slice", dt, c.shape);
            expect_equal(run_op(dev(), *op, {x}, 2)[0], want, what("Slice", dt, c.shape));
        }
}

TEST_F(LayoutTest, ConcatManyInputsAndAxes) {
    struct Case {
        std::vector<Shape> shapes;
        int64_t axis;
    };
    std::vector<Shape> eleven; // more than one pass of 8 inputs, with an empty one
    for (int64_t i = 0; i < 11; ++i) eleven.push_back({2, i % 4, 3});
    const std::vector<Case> cases = {
        {{{5}, {3}, {7}}, 0},
        {{{2, 3, 5}, {2, 1, 5}, {2, 4, 5}}, 1},
        {{{2, 3, 5}, {2, 3, 2}}, -1},
        {{{1, 3, 5, 7}, {2, 3, 5, 7}}, 0},
        {{{2, 3, 2, 3}, {2, 3, 5, 3}, {2, 3, 1, 3}, {2, 3, 2, 3}}, -2},
        {eleven, 1},
        // rows of whole 16-byte units in every dtype (inner 32 elements): the unit-per-invocation
        // pipeline, over two passes with an empty input
        {{{2, 3, 4, 8}, {2, 1, 4, 8}, {2, 0, 4, 8}, {2, 2, 4, 8}, {2, 1, 4, 8}, {2, 1, 4, 8}, {2, 1, 4, 8},
          {2, 1, 4, 8}, {2, 5, 4, 8}},
         1},
        {{{2, 16}, {3, 16}}, 0},
    };
    uint32_t seed = 200;
    for (DType dt : dtypes())
        for (const Case& c : cases) {
            std::vector<HostTensor> xs;
            ops::ConcatDesc desc{.axis = c.axis};
            for (const Shape& s : c.shapes) {
                xs.push_back(data(s, dt, seed++));
                desc.inputs.push_back({s, dt});
            }
            auto op = ops::Concat::create(dev(), desc);
            expect_equal(run_op(dev(), *op, xs, 2)[0], ref::concat(xs, c.axis),
                         what("Concat", dt, c.shapes[0]));
        }
}

TEST_F(LayoutTest, SplitSizesAndNumOutputs) {
    struct Case {
        Shape shape;
        int64_t axis;
        std::vector<int64_t> split;
        int64_t num_outputs;
        std::vector<int64_t> sizes; // expected output lengths
    };
    const std::vector<Case> cases = {
        {{13}, 0, {4, 2, 7}, 0, {4, 2, 7}},
        {{3, 7, 5}, 1, {}, 3, {3, 3, 1}}, // uneven: the last chunk is smaller
        {{3, 7, 5}, -1, {}, 5, {1, 1, 1, 1, 1}},
        {{2, 6, 3, 5}, -3, {0, 5, 1}, 0, {0, 5, 1}},
        {{4, 3, 2}, 0, {}, 2, {2, 2}},
    };
    uint32_t seed = 300;
    for (DType dt : dtypes())
        for (const Case& c : cases) {
            const HostTensor x = data(c.shape, dt, seed++);
            auto op = ops::Split::create(
                dev(),
                {.input = {c.shape, dt}, .axis = c.axis, .split = c.split, .num_outputs = c.num_outputs});
            const auto want = ref::split(x, c.axis, c.sizes);
            ASSERT_EQ(op->outputs().size(), want.size());
            for (size_t i = 0; i < want.size(); ++i)
                ASSERT_EQ(op->outputs()[i].shape, want[i].shape()) << what("Split", dt, c.shape);
            const auto got = run_op(dev(), *op, {x}, 2);
            for (size_t i = 0; i < want.size(); ++i)
                expect_equal(got[i], want[i], what("Split", dt, c.shape) + " output " + std::to_string(i));
        }
}

TEST_F(LayoutTest, PadModesNegativePadsAndAxes) {
    struct Case {
        Shape shape;
        std::vector<int64_t> pads; // for `axes` (all when empty)
        std::vector<int64_t> axes;
    };
    const std::vector<Case> cases = {
        {{7}, {2, 3}, {}},
        {{3, 5}, {1, 2, 2, 1}, {}},
        {{2, 3, 5, 7}, {0, 0, 1, 2, 0, 0, 3, 1}, {}},
        {{2, 3, 5, 7}, {2, -1, -2, 4}, {2, 3}},       // crop and pad at once, on two axes
        {{2, 3, 4, 5}, {6, 9}, {-1}},                 // pads longer than the input: repeat
        {{1, 2, 1, 3}, {0, 1, 2, 0, 0, 1, 2, 3}, {}}, // size-1 dimensions padded
        {{2, 2, 2, 2, 2, 3}, {1, 0, 0, 0, 0, 2, 0, 0, 1, 0, 0, 1}, {}},
        // rows of a multiple of 8 outputs: eight per invocation, crossing both edges
        {{2, 3, 5, 6}, {1, 1, 1, 1}, {2, 3}},
        {{3, 4, 13}, {0, 0, 2, 0, 0, 1}, {}},
        {{2, 3, 4}, {0, 1, 4, 0, 1, 8}, {}}, // pads longer than the input along the rows
    };
    uint32_t seed = 400;
    for (const char* mode : {"constant", "reflect", "edge", "wrap"})
        for (DType dt : dtypes())
            for (const Case& c : cases) {
                const HostTensor x = data(c.shape, dt, seed++);
                const double value = dt == DType::u8 ? 7.0 : dt == DType::i64 ? -3e6 : -1.5;
                auto op = ops::Pad::create(dev(), {.input = {c.shape, dt},
                                                   .pads = c.pads,
                                                   .constant_value = value,
                                                   .axes = c.axes,
                                                   .mode = mode});
                // The reference takes begin/end for every axis.
                const size_t r = c.shape.rank();
                std::vector<int64_t> full(2 * r, 0);
                for (size_t i = 0, n = c.pads.size() / 2; i < n; ++i) {
                    const int64_t a = c.axes.empty() ? int64_t(i) : (c.axes[i] + int64_t(r)) % int64_t(r);
                    full[size_t(a)] = c.pads[i];
                    full[size_t(a) + r] = c.pads[i + n];
                }
                expect_equal(run_op(dev(), *op, {x}, 2)[0], ref::pad(x, full, mode, value),
                             what("Pad", dt, c.shape) + " " + mode);
            }
}

TEST_F(LayoutTest, GatherIndexDtypesAndNegativeIndices) {
    struct Case {
        Shape data, indices;
        int64_t axis;
    };
    const std::vector<Case> cases = {
        {{11}, {5}, 0},           {{5, 7}, {3, 2}, 0},   {{3, 7, 5}, {4}, 1},
        {{3, 7, 5}, {2, 3}, -1},  {{2, 3, 5, 2}, {}, 2}, // scalar index: the axis disappears
        {{13, 3}, {2, 1, 3}, -2},                        // embedding-style lookup
    };
    uint32_t seed = 500;
    for (DType index : {DType::i32, DType::i64})
        for (DType dt : dtypes())
            for (const Case& c : cases) {
                const HostTensor x = data(c.data, dt, seed++);
                const int64_t n = c.data[size_t((c.axis + int64_t(c.data.rank())) % int64_t(c.data.rank()))];
                const HostTensor idx = random_ints(c.indices, index, seed++, -n, n - 1);
                auto op = ops::Gather::create(
                    dev(), {.data = {c.data, dt}, .indices = {c.indices, index}, .axis = c.axis});
                expect_equal(run_op(dev(), *op, {x, idx}, 2)[0], ref::gather(x, idx, c.axis),
                             what("Gather", dt, c.data) + " indices " + gpu::dtype_name(index));
            }
}

TEST_F(LayoutTest, GatherOutOfRangeIndexGivesZero) {
    // f16 too: its zero once came out as infinity (glslang folds float16_t(0) wrongly).
    const Shape shape{4, 3};
    for (DType dt : float_dtypes(dev())) {
        const HostTensor x = data(shape, dt, 1);
        for (DType index : {DType::i32, DType::i64}) {
            HostTensor idx(Shape{4}, index);
            idx.data = {1, 4, -5, -4}; // 4 and -5 are outside [-4, 4)
            auto op = ops::Gather::create(dev(), {.data = {shape, dt}, .indices = {Shape{4}, index}});
            const HostTensor got = run_op(dev(), *op, {x, idx})[0];
            for (int64_t j = 0; j < 3; ++j) {
                EXPECT_EQ(got[size_t(j)], x[size_t(3 + j)]);
                EXPECT_EQ(got[size_t(3 + j)], 0.0) << gpu::dtype_name(dt);
                EXPECT_EQ(got[size_t(6 + j)], 0.0) << gpu::dtype_name(dt);
                EXPECT_EQ(got[size_t(9 + j)], x[size_t(j)]);
            }
            HostTensor eidx(shape, index);
            eidx.data = {0, 4, 1, -5, 3, 2, 0, 0, 0, 1, 1, 1}; // 4 and -5 are outside [-4, 4)
            auto ge = ops::GatherElements::create(dev(), {.data = {shape, dt}, .indices = {shape, index}});
            const HostTensor gg = run_op(dev(), *ge, {x, eidx})[0];
            EXPECT_EQ(gg[1], 0.0) << "GatherElements " << gpu::dtype_name(dt);
            EXPECT_EQ(gg[3], 0.0) << "GatherElements " << gpu::dtype_name(dt);
            EXPECT_EQ(gg[2], x[size_t(1 * 3 + 2)]);
        }
    }
}

TEST_F(LayoutTest, GatherElementsEveryAxis) {
    struct Case {
        Shape data, indices;
        int64_t axis;
    };
    const std::vector<Case> cases = {
        {{7}, {11}, 0},
        {{3, 5}, {3, 5}, 1},
        {{3, 5}, {7, 2}, 0}, // indices longer along the axis, shorter elsewhere
        {{2, 3, 5, 7}, {2, 2, 5, 3}, -1},
        {{2, 3, 5, 7}, {2, 4, 5, 7}, 1},
    };
    uint32_t seed = 600;
    for (DType index : {DType::i32, DType::i64})
        for (DType dt : dtypes())
            for (const Case& c : cases) {
                const HostTensor x = data(c.data, dt, seed++);
                const int64_t n = c.data[size_t((c.axis + int64_t(c.data.rank())) % int64_t(c.data.rank()))];
                const HostTensor idx = random_ints(c.indices, index, seed++, -n, n - 1);
                auto op = ops::GatherElements::create(
                    dev(), {.data = {c.data, dt}, .indices = {c.indices, index}, .axis = c.axis});
                expect_equal(run_op(dev(), *op, {x, idx}, 2)[0], ref::gather_elements(x, idx, c.axis),
                             what("GatherElements", dt, c.data) + " indices " + gpu::dtype_name(index));
            }
}

TEST_F(LayoutTest, ExpandBothDirections) {
    struct Case {
        Shape shape;
        std::vector<int64_t> to;
    };
    const std::vector<Case> cases = {
        {{1}, {7}},
        {{3, 1}, {2, 3, 5}},
        {{3, 5}, {1, 1}},          // shape smaller than the input: the input's shape wins
        {{2, 1, 5}, {3, 1, 4, 1}}, // both broadcast
        {{1, 3, 1, 1}, {2, 3, 5, 7}},
    };
    uint32_t seed = 700;
    for (DType dt : dtypes())
        for (const Case& c : cases) {
            const HostTensor x = data(c.shape, dt, seed++);
            auto op = ops::Expand::create(dev(), {.input = {c.shape, dt}, .shape = c.to});
            expect_equal(run_op(dev(), *op, {x}, 2)[0], ref::expand(x, c.to), what("Expand", dt, c.shape));
        }
}

TEST_F(LayoutTest, TileRepeats) {
    struct Case {
        Shape shape;
        std::vector<int64_t> repeats;
    };
    const std::vector<Case> cases = {
        {{5}, {3}},
        {{2, 3}, {3, 2}},
        {{2, 3, 5}, {1, 4, 1}},
        {{1, 3, 2, 5}, {2, 1, 3, 2}},
    };
    uint32_t seed = 800;
    for (DType dt : dtypes())
        for (const Case& c : cases) {
            const HostTensor x = data(c.shape, dt, seed++);
            auto op = ops::Tile::create(dev(), {.input = {c.shape, dt}, .repeats = c.repeats});
            expect_equal(run_op(dev(), *op, {x}, 2)[0], ref::tile(x, c.repeats), what("Tile", dt, c.shape));
        }
}

TEST_F(LayoutTest, DepthToSpaceAndBack) {
    struct Case {
        Shape shape;
        int64_t b;
    };
    const std::vector<Case> cases = {
        {{1, 4, 3, 5}, 2}, {{2, 18, 2, 3}, 3}, {{1, 8, 1, 1}, 2}, {{2, 3, 5, 7}, 1}};
    uint32_t seed = 900;
    for (DType dt : dtypes())
        for (const Case& c : cases) {
            const HostTensor x = data(c.shape, dt, seed++);
            for (const char* mode : {"DCR", "CRD"}) {
                auto op = ops::DepthToSpace::create(dev(),
                                                    {.input = {c.shape, dt}, .blocksize = c.b, .mode = mode});
                const HostTensor y = run_op(dev(), *op, {x}, 2)[0];
                expect_equal(y, ref::depth_to_space(x, c.b, mode),
                             what("DepthToSpace", dt, c.shape) + " " + mode);
                if (std::string(mode) == "DCR") {
                    // SpaceToDepth undoes DepthToSpace in DCR mode.
                    auto back =
                        ops::SpaceToDepth::create(dev(), {.input = {y.shape(), dt}, .blocksize = c.b});
                    const HostTensor z = run_op(dev(), *back, {y})[0];
                    expect_equal(z, ref::space_to_depth(y, c.b), what("SpaceToDepth", dt, y.shape()));
                    expect_equal(z, x, what("SpaceToDepth round trip", dt, c.shape));
                }
            }
        }
    // A SpaceToDepth of odd channels on its own.
    const HostTensor x = data({2, 3, 6, 9}, DType::f32, 5);
    auto op = ops::SpaceToDepth::create(dev(), {.input = {x.shape(), DType::f32}, .blocksize = 3});
    expect_equal(run_op(dev(), *op, {x})[0], ref::space_to_depth(x, 3), "SpaceToDepth b=3");
}

TEST_F(LayoutTest, DepthToSpaceRowKernel) {
    // The row kernel (layout/depth_to_space.comp) moves units of 16, 8 or 4 bytes: the widest
    // whose elements divide W. Expected unit bytes per dtype (f32/i32, f16, u8; i64 and
    // blocksizes 1 or above 4 always take the strided copy, 0).
    struct Case {
        Shape shape;
        int64_t b;
        uint32_t unit32, unit16, unit8;
    };
    const std::vector<Case> cases = {
        {{1, 8, 3, 16}, 2, 16, 16, 16},  // whole 16-byte units in every dtype
        {{2, 12, 7, 24}, 2, 16, 16, 8},  // batches, 3 output channels, 7 rows
        {{2, 18, 3, 12}, 3, 16, 8, 4},   // blocksize 3: f16 in 8-byte, u8 in 4-byte units
        {{1, 32, 2, 6}, 4, 8, 4, 0},     // blocksize 4; u8 rows of 6 bytes: the strided copy
        {{1, 4, 3, 5}, 2, 4, 0, 0},      // odd W: f32 word by word, f16 and u8 the strided copy
        {{1, 12, 5, 34}, 2, 8, 4, 0},    // W = 34: 8-byte units in f32 (rows end mid-16 bytes)
        {{1, 25, 2, 8}, 5, 0, 0, 0},     // blocksize 5: the strided copy
        {{1, 3, 2, 8}, 1, 0, 0, 0},      // blocksize 1: the strided copy
    };
    uint32_t seed = 950;
    for (DType dt : dtypes())
        for (const Case& c : cases) {
            const HostTensor x = data(c.shape, dt, seed++);
            const uint32_t unit = dt == DType::i64 ? 0
                                  : dt == DType::f16 ? c.unit16
                                  : dt == DType::u8  ? c.unit8
                                                     : c.unit32;
            for (const char* mode : {"DCR", "CRD"}) {
                auto op = ops::DepthToSpace::create(dev(),
                                                    {.input = {c.shape, dt}, .blocksize = c.b, .mode = mode});
                const std::string w = what("DepthToSpace", dt, c.shape) + " b=" + std::to_string(c.b) + " " + mode;
                EXPECT_EQ(op->row_unit_bytes(), unit) << w;
                expect_equal(run_op(dev(), *op, {x}, 2)[0], ref::depth_to_space(x, c.b, mode), w);
            }
        }
}

TEST_F(LayoutTest, DepthToSpaceWholeOutputUnits) {
    // Where the blocksize divides the unit's words, each invocation of the row kernel stores K
    // whole output units (neighbouring invocations neighbouring units), each made of a sub-unit of
    // every input row: K = 1, 2 or 4 by the output's size. Expected K for f32 and f16 (0: the
    // unit-per-input-row form); u8 and i32 run the same kernel and are checked as well.
    struct Case {
        Shape shape;
        int64_t b;
        uint32_t k32, k16;
    };
    const std::vector<Case> cases = {
        {{1, 8, 3, 16}, 2, 1, 1},      // 16-byte units, b = 2: two 8-byte sub-units per output unit
        {{1, 4, 1, 8}, 2, 1, 1},       // one input row per channel, one output channel
        {{2, 32, 3, 8}, 4, 1, 1},      // b = 4 on 16-byte units: four 4-byte sub-units
        {{1, 32, 2, 6}, 4, 0, 0},      // b = 4 on 8-byte (f32) / 4-byte (f16) units: one unit per row
        {{1, 12, 5, 34}, 2, 1, 0},     // 8-byte f32 units (one-word sub-units); 4-byte f16 ones: b > 1 word
        {{2, 8, 33, 128}, 2, 2, 2},    // 16896 f32 / 8448 f16 units: K = 2
        {{1, 4, 129, 1032}, 2, 4, 4},  // 133128 f32 / 66564 f16 units: K = 4
        {{1, 16, 65, 520}, 4, 4, 4},   // b = 4, K = 4 (u8: 8-byte units, b > 2 words: one unit per row)
    };
    uint32_t seed = 970;
    for (DType dt : dtypes()) {
        if (dt == DType::i64) continue; // the strided copy (DepthToSpaceRowKernel)
        for (const Case& c : cases) {
            const HostTensor x = data(c.shape, dt, seed++);
            for (const char* mode : {"DCR", "CRD"}) {
                auto op = ops::DepthToSpace::create(dev(),
                                                    {.input = {c.shape, dt}, .blocksize = c.b, .mode = mode});
                const std::string w = what("DepthToSpace", dt, c.shape) + " b=" + std::to_string(c.b) + " " + mode;
                if (dt == DType::f32 || dt == DType::f16) {
                    EXPECT_EQ(op->row_units_per_invocation(), dt == DType::f32 ? c.k32 : c.k16) << w;
                }
                expect_equal(run_op(dev(), *op, {x}, 2)[0], ref::depth_to_space(x, c.b, mode), w);
            }
        }
    }
}

// One op recorded after another through the caller's barrier, the way a graph chains them:
// Transpose then Slice then Concat must give what the references give composed.
TEST_F(LayoutTest, ChainedOps) {
    const HostTensor x = data({2, 3, 4, 5}, DType::f32, 42);
    auto t = ops::Transpose::create(dev(), {.input = {x.shape(), DType::f32}, .perm = {0, 2, 3, 1}});
    auto s = ops::Slice::create(
        dev(), {.input = t->outputs()[0], .starts = {-1}, .ends = {INT64_MIN}, .axes = {2}, .steps = {-2}});
    auto c = ops::Concat::create(dev(), {.inputs = {s->outputs()[0], t->outputs()[0]}, .axis = 2});
    gpu::Tensor in(dev(), x.shape(), DType::f32), a(dev(), t->outputs()[0].shape, DType::f32),
        b(dev(), s->outputs()[0].shape, DType::f32), out(dev(), c->outputs()[0].shape, DType::f32);
    gpu::upload(dev(), in, std::vector<float>(x.data.begin(), x.data.end()));
    dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        t->record(cmd, std::vector{in}, std::vector{a});
        gpu::barrier::compute_to_compute(cmd);
        s->record(cmd, std::vector{a}, std::vector{b});
        gpu::barrier::compute_to_compute(cmd);
        c->record(cmd, std::vector{b, a}, std::vector{out});
        gpu::barrier::compute_to_transfer(cmd);
    });
    const HostTensor tt = ref::transpose(x, {0, 2, 3, 1});
    const HostTensor want = ref::concat({ref::slice(tt, {-1}, {INT64_MIN}, {2}, {-2}), tt}, 2);
    HostTensor got(out.shape(), DType::f32);
    const auto f = gpu::download_floats(dev(), out);
    got.data.assign(f.begin(), f.end());
    expect_equal(got, want, "Transpose -> Slice -> Concat");
}

TEST_F(LayoutTest, DescriptorErrors) {
    const TensorDesc x{{2, 3, 4, 5}, DType::f32};
    expect_error(
        [&] {
            ops::Transpose::create(dev(), {.input = x, .perm = {0, 1, 1, 2}});
        },
        {"Transpose", "perm", "not a permutation"});
    expect_error(
        [&] {
            ops::Transpose::create(dev(), {.input = x, .perm = {0, 1, 2}});
        },
        {"Transpose", "perm"});
    expect_error(
        [&] {
            ops::Transpose::create(dev(), {.input = x, .perm = {0, 1, 2, 4}});
        },
        {"Transpose", "perm", "not a permutation"});
    expect_error(
        [&] {
            ops::Split::create(dev(), {.input = x, .axis = 1, .split = {1, 1}});
        },
        {"Split", "split", "sums to 2", "3"});
    expect_error([&] { ops::Split::create(dev(), {.input = x, .axis = 1}); }, {"Split", "num_outputs"});
    expect_error([&] { ops::Split::create(dev(), {.input = x, .axis = 4, .num_outputs = 2}); },
                 {"Split", "axis"});
    expect_error([&] { ops::Split::create(dev(), {.input = x, .axis = 1, .num_outputs = 4}); },
                 {"Split", "num_outputs"});
    expect_error(
        [&] {
            ops::Gather::create(dev(), {.data = x, .indices = {{3}, DType::f32}});
        },
        {"Gather", "indices", "i32 or i64", "f32"});
    expect_error(
        [&] {
            ops::Gather::create(dev(), {.data = x, .indices = {{3}, DType::i32}, .axis = -5});
        },
        {"Gather", "axis"});
    expect_error(
        [&] {
            ops::Gather::create(dev(), {.data = x, .indices = {{1, 2, 3, 4}, DType::i32}, .axis = 1});
        },
        {"Gather", "indices", "rank 7", "maximum of 6"});
    expect_error(
        [&] {
            ops::GatherElements::create(dev(), {.data = x, .indices = {{2, 3, 4, 5}, DType::f16}});
        },
        {"GatherElements", "indices", "i32 or i64"});
    expect_error(
        [&] {
            ops::GatherElements::create(dev(), {.data = x, .indices = {{2, 3, 4}, DType::i64}});
        },
        {"GatherElements", "indices", "rank"});
    expect_error(
        [&] {
            ops::GatherElements::create(dev(), {.data = x, .indices = {{2, 4, 4, 5}, DType::i64}, .axis = 0});
        },
        {"GatherElements", "indices", "larger"});
    expect_error(
        [&] {
            ops::Slice::create(dev(), {.input = x, .starts = {0}, .ends = {1}, .axes = {0}, .steps = {0}});
        },
        {"Slice", "steps"});
    expect_error(
        [&] {
            ops::Slice::create(dev(), {.input = x, .starts = {0, 0}, .ends = {1, 1}, .axes = {1, -3}});
        },
        {"Slice", "axes", "repeats"});
    expect_error(
        [&] {
            ops::Slice::create(dev(), {.input = x, .starts = {0}, .ends = {1, 2}});
        },
        {"Slice", "ends"});
    expect_error(
        [&] {
            ops::Concat::create(dev(), {.inputs = {x, {{2, 3, 4, 6}, DType::f32}}, .axis = 1});
        },
        {"Concat", "inputs[1]", "does not match"});
    expect_error(
        [&] {
            ops::Concat::create(dev(), {.inputs = {x, {{2, 3, 4, 5}, DType::i32}}});
        },
        {"Concat", "inputs[1]", "i32"});
    expect_error([&] { ops::Concat::create(dev(), {.inputs = {x}, .axis = 4}); }, {"Concat", "axis"});
    expect_error(
        [&] {
            ops::Pad::create(dev(), {.input = x, .pads = {1, 1}});
        },
        {"Pad", "pads", "expected 8"});
    expect_error(
        [&] {
            ops::Pad::create(dev(), {.input = x, .pads = {1, 1}, .axes = {0}, .mode = "mirror"});
        },
        {"Pad", "mode", "mirror"});
    expect_error(
        [&] {
            ops::Pad::create(dev(), {.input = x, .pads = {-3, 0}, .axes = {0}});
        },
        {"Pad", "pads", "crop"});
    expect_error(
        [&] {
            ops::Pad::create(dev(), {.input = x, .pads = {1, 1, 1, 1}, .axes = {1, -3}});
        },
        {"Pad", "axes", "repeats"});
    expect_error(
        [&] {
            ops::Expand::create(dev(), {.input = x, .shape = {3, 1, 1, 1}});
        },
        {"Expand", "do not broadcast"});
    expect_error([&] { ops::Expand::create(dev(), {.input = x, .shape = {-1}}); },
                 {"Expand", "shape", "negative"});
    expect_error([&] { ops::Tile::create(dev(), {.input = x, .repeats = {1, 2}}); }, {"Tile", "repeats"});
    expect_error(
        [&] {
            ops::Tile::create(dev(), {.input = x, .repeats = {1, 2, -1, 1}});
        },
        {"Tile", "repeats", "negative"});
    expect_error([&] { ops::DepthToSpace::create(dev(), {.input = x, .blocksize = 2}); },
                 {"DepthToSpace", "blocksize", "multiple"});
    expect_error(
        [&] {
            ops::DepthToSpace::create(dev(),
                                      {.input = {{1, 4, 2, 2}, DType::f32}, .blocksize = 2, .mode = "RDC"});
        },
        {"DepthToSpace", "mode", "RDC"});
    expect_error(
        [&] {
            ops::DepthToSpace::create(dev(), {.input = {{4, 2, 2}, DType::f32}, .blocksize = 2});
        },
        {"DepthToSpace", "input", "rank 4"});
    expect_error([&] { ops::SpaceToDepth::create(dev(), {.input = x, .blocksize = 2}); },
                 {"SpaceToDepth", "blocksize", "multiples"});
    expect_error([&] { ops::SpaceToDepth::create(dev(), {.input = x, .blocksize = 0}); },
                 {"SpaceToDepth", "blocksize", "positive"});
}

} // namespace
} // namespace vkml::test
