// NonMaxSuppression against a plain sequential CPU NMS (tests/ops/ref/detect_ref.cpp): random
// boxes crowded into a small area so that suppression happens often, both box formats, corners
// given in either order, several thresholds, N not a power of two (and above the sort's
// shared-memory block, so the global sort passes run), the per-class limit hit and not hit,
// several batches and classes, equal scores, f32 and f16, i64 and i32 indices, the whole-array
// and the compact sort (its candidates in shared memory, or spilled to global memory).
#include <bit>
#include <cmath>
#include <random>

#include "op_test.hpp"
#include "ref/detect_ref.hpp"
#include "vkml/ops/detect.hpp"

namespace vkml::test {
namespace {

using ops::NonMaxSuppression;
using ops::NonMaxSuppressionDesc;

class DetectNms : public GpuTest {};

struct Case {
    int64_t batches = 1, classes = 1, boxes = 7;
    int64_t max_out = 3;
    float iou = 0.5f;
    std::optional<float> score_threshold;
    int64_t center = 0;
    // Scores as multiples of 1/8 (many ties) instead of uniform.
    bool tied_scores = false;
    gpu::DType index_dtype = gpu::DType::i64;
    uint32_t seed = 1;
    ops::NmsSort sort = ops::NmsSort::Auto;
    uint32_t compact_capacity = 0;
};

// Random boxes in a 1 x 1 field with sides of 0.05..0.45, so neighbours overlap often. Corner
// boxes get their corners swapped at random (ONNX allows either diagonal pair).
HostTensor random_boxes(const Case& c, gpu::DType dtype) {
    HostTensor t({c.batches, c.boxes, 4}, dtype);
    std::mt19937 rng(c.seed * 7919u + 1);
    std::uniform_real_distribution<double> pos(0.0, 1.0), size(0.05, 0.45);
    std::bernoulli_distribution flip(0.5);
    for (int64_t i = 0; i < c.batches * c.boxes; ++i) {
        const double cx = pos(rng), cy = pos(rng), w = size(rng), h = size(rng);
        double* v = &t.data[size_t(i * 4)];
        if (c.center == 1) {
            v[0] = cx, v[1] = cy, v[2] = w, v[3] = h;
        } else {
            double y1 = cy - h / 2, x1 = cx - w / 2, y2 = cy + h / 2, x2 = cx + w / 2;
            if (flip(rng)) std::swap(y1, y2);
            if (flip(rng)) std::swap(x1, x2);
            v[0] = y1, v[1] = x1, v[2] = y2, v[3] = x2;
        }
        for (int k = 0; k < 4; ++k) v[k] = round_to(v[k], dtype);
    }
    return t;
}

HostTensor random_scores(const Case& c, gpu::DType dtype) {
    if (!c.tied_scores) return random_tensor({c.batches, c.classes, c.boxes}, dtype, c.seed, 0.0, 1.0, 0.001);
    HostTensor t = random_ints({c.batches, c.classes, c.boxes}, dtype, c.seed, 1, 8);
    for (double& v : t.data) v /= 8;
    return t;
}

// The expected outputs: selected rows padded with -1 to the op's capacity, and the count.
std::pair<HostTensor, HostTensor> expected(const ref_detect::NmsResult& r, const NonMaxSuppression& op) {
    HostTensor rows(op.outputs()[0].shape, op.outputs()[0].dtype),
        count(op.outputs()[1].shape, op.outputs()[1].dtype);
    std::fill(rows.data.begin(), rows.data.end(), -1.0);
    for (size_t i = 0; i < r.selected.size(); ++i)
        for (size_t k = 0; k < 3; ++k) rows[i * 3 + k] = double(r.selected[i][k]);
    count[0] = double(r.selected.size());
    return {rows, count};
}

std::string describe(const Case& c, gpu::DType dtype) {
    return "NonMaxSuppression " + std::string(gpu::dtype_name(dtype)) + " B=" + std::to_string(c.batches) +
           " C=" + std::to_string(c.classes) + " N=" + std::to_string(c.boxes) +
           " max=" + std::to_string(c.max_out) + " iou=" + std::to_string(c.iou) +
           " score_threshold=" + (c.score_threshold ? std::to_string(*c.score_threshold) : "none") +
           " center=" + std::to_string(c.center) + (c.tied_scores ? " tied" : "") +
           " seed=" + std::to_string(c.seed) + " sort=" + std::to_string(int(c.sort)) +
           " compact_capacity=" + std::to_string(c.compact_capacity);
}

// Runs one case and returns the number of selected boxes, so callers can check that the case
// exercises what it claims (limit hit, suppression happened).
size_t check(gpu::Device& dev, const Case& c, gpu::DType dtype, int repeat = 1) {
    const std::string what = describe(c, dtype);
    const HostTensor boxes = random_boxes(c, dtype), scores = random_scores(c, dtype);
    auto op = NonMaxSuppression::create(dev, {.boxes = {boxes.shape(), dtype},
                                              .scores = {scores.shape(), dtype},
                                              .max_output_boxes_per_class = c.max_out,
                                              .iou_threshold = c.iou,
                                              .score_threshold = c.score_threshold,
                                              .center_point_box = c.center,
                                              .index_dtype = c.index_dtype,
                                              .sort = c.sort,
                                              .compact_capacity = c.compact_capacity});
    // Auto: the compact sort only where there is a score threshold, and always there for a few
    // hundred boxes (any device's shared memory holds twice as many candidates).
    if (c.sort != ops::NmsSort::Auto) {
        EXPECT_EQ(op->compact(), c.sort == ops::NmsSort::Compact) << what;
    } else if (!c.score_threshold) {
        EXPECT_FALSE(op->compact()) << what;
    } else if (c.boxes <= 256) {
        EXPECT_TRUE(op->compact()) << what;
    }
    if (c.compact_capacity) {
        EXPECT_EQ(op->compact_capacity(), c.compact_capacity) << what;
    }
    EXPECT_EQ(op->capacity(), uint32_t(c.batches * c.classes * std::min(c.max_out, c.boxes))) << what;
    const auto want = ref_detect::nms(
        boxes, scores, c.max_out, c.iou,
        c.score_threshold ? std::optional<double>(*c.score_threshold) : std::nullopt, c.center);
    // An IoU within 1e-5 of the threshold could be decided differently in f32; the seeds are
    // chosen so that none is.
    EXPECT_GT(want.min_margin, 1e-5) << what << ": the case has a borderline IoU, pick another seed";
    const auto got = run_op(dev, *op, {boxes, scores}, repeat);
    const auto [rows, count] = expected(want, *op);
    expect_equal(got[1], count, what + " count");
    expect_equal(got[0], rows, what + " selected_indices");
    return want.selected.size();
}

TEST_F(DetectNms, CornerBoxesAcrossBatchesAndClasses) {
    for (gpu::DType dtype : float_dtypes(dev())) {
        // Limit hit in most classes (5 of up to 37 candidates).
        Case c{.batches = 2, .classes = 3, .boxes = 37, .max_out = 5, .iou = 0.5f, .score_threshold = 0.3f};
        EXPECT_EQ(check(dev(), c, dtype), size_t(2 * 3 * 5));
        // Limit not hit: every survivor is selected, rows of -1 follow; i32 indices.
        c.max_out = 30;
        c.iou = 0.25f;
        c.index_dtype = gpu::DType::i32;
        c.seed = 2;
        const size_t n = check(dev(), c, dtype);
        EXPECT_LT(n, size_t(2 * 3 * 30));
        EXPECT_GT(n, size_t(2 * 3 * 5));
    }
}

TEST_F(DetectNms, CenterBoxesWithoutScoreThreshold) {
    for (gpu::DType dtype : float_dtypes(dev())) {
        // max_output_boxes_per_class above N is clamped to N: capacity B * C * N.
        Case c{.batches = 3, .classes = 2, .boxes = 53, .max_out = 1000, .iou = 0.4f, .center = 1, .seed = 3};
        const size_t n = check(dev(), c, dtype);
        EXPECT_LT(n, size_t(3 * 2 * 53)); // something was suppressed
        c.iou = 0.7f;
        c.score_threshold = 0.5f;
        c.max_out = 8;
        c.seed = 4;
        check(dev(), c, dtype);
    }
}

// N above the sort kernel's shared-memory block (512 keys): global bitonic passes and merges
// run (P = 2048: two stages beyond the block; P = 8192 for 4100 boxes: four).
TEST_F(DetectNms, ManyBoxesUseTheGlobalSort) {
    const NonMaxSuppressionDesc big{.boxes = {{1, 4100, 4}, gpu::DType::f32},
                                    .scores = {{1, 2, 4100}, gpu::DType::f32},
                                    .max_output_boxes_per_class = 300};
    EXPECT_LT(NonMaxSuppression::create(dev(), big)->sort_block(), 8192u);
    for (gpu::DType dtype : float_dtypes(dev())) {
        Case c{
            .batches = 1, .classes = 2, .boxes = 1500, .max_out = 1500, .iou = 0.6f, .center = 1, .seed = 5};
        check(dev(), c, dtype);
        c.boxes = 4100;
        c.max_out = 300;
        c.seed = 7;
        check(dev(), c, dtype);
        c.boxes = 1500;
        c.score_threshold = 0.9f; // about 150 candidates, sentinels everywhere else
        c.sort = ops::NmsSort::Global;
        c.max_out = 40;
        c.center = 0;
        c.seed = 6;
        check(dev(), c, dtype);
    }
}

// The same cases through both sorts: the compact sort without a score threshold (every box a
// candidate), the global sort with one, and the compact sort with a shared-memory capacity below
// the candidates' count, so that they spill to the scratch keys and one workgroup sorts them
// there (P = 2048 for 1500 boxes; about 1000 candidates above 0.3 into capacities 64 and 512).
TEST_F(DetectNms, CompactAndGlobalSortsAgree) {
    for (gpu::DType dtype : float_dtypes(dev())) {
        Case c{.batches = 2, .classes = 3, .boxes = 45, .max_out = 9, .iou = 0.4f, .seed = 15};
        c.sort = ops::NmsSort::Compact;
        check(dev(), c, dtype);
        c.score_threshold = 0.25f;
        c.sort = ops::NmsSort::Global;
        check(dev(), c, dtype);
        c.sort = ops::NmsSort::Compact;
        c.compact_capacity = 4; // spills in every group
        check(dev(), c, dtype);
        Case big{.batches = 1,
                 .classes = 2,
                 .boxes = 1500,
                 .max_out = 200,
                 .iou = 0.55f,
                 .score_threshold = 0.3f,
                 .center = 1,
                 .seed = 16,
                 .sort = ops::NmsSort::Compact,
                 .compact_capacity = 64};
        EXPECT_GT(check(dev(), big, dtype), size_t(40));
        big.compact_capacity = 512;
        big.tied_scores = true; // many equal keys across the shared and the spilled part
        big.seed = 17;
        check(dev(), big, dtype);
        // One group: the compact kernel writes the outputs itself. The limit not hit (rows of -1
        // follow) and hit, i64 and i32 indices, in shared memory and spilled.
        Case one{.batches = 1,
                 .classes = 1,
                 .boxes = 301,
                 .max_out = 120,
                 .iou = 0.45f,
                 .score_threshold = 0.2f,
                 .seed = 18,
                 .sort = ops::NmsSort::Compact};
        const size_t n = check(dev(), one, dtype);
        EXPECT_LT(n, size_t(240)); // of about 240 candidates
        EXPECT_GT(n, size_t(10));
        one.max_out = 7;
        one.index_dtype = gpu::DType::i32;
        EXPECT_EQ(check(dev(), one, dtype, 2), size_t(7)); // recorded twice
        one.compact_capacity = 16;
        one.max_out = 300;
        one.seed = 19;
        check(dev(), one, dtype);
    }
}

TEST_F(DetectNms, CompactCapacityFromTheDevice) {
    const NonMaxSuppressionDesc d{.boxes = {{1, 3549, 4}, gpu::DType::f32},
                                  .scores = {{1, 1, 3549}, gpu::DType::f32},
                                  .max_output_boxes_per_class = 100,
                                  .iou_threshold = 0.6f,
                                  .score_threshold = 0.35f};
    NonMaxSuppressionDesc asked = d;
    asked.sort = ops::NmsSort::Compact;
    auto op = NonMaxSuppression::create(dev(), asked);
    ASSERT_TRUE(op->compact());
    const uint32_t keys = op->compact_capacity();
    EXPECT_TRUE(std::has_single_bit(keys)) << keys;
    EXPECT_LE(keys, 2048u);
    EXPECT_LE(uint64_t(keys) * 20 + (4096 / 32) * 4, dev().caps().max_shared_memory);
    // Auto: NanoDet's 3549 boxes take it where shared memory holds 2048 candidates (48 KiB:
    // NVIDIA, AMD), not where it holds 1024 (llvmpipe's 32 KiB).
    EXPECT_EQ(NonMaxSuppression::create(dev(), d)->compact(), keys == 2048) << keys;
    // YOLOv8's 8400 boxes are more than twice that: the global sort.
    NonMaxSuppressionDesc yolo = d;
    yolo.boxes.shape = {1, 8400, 4};
    yolo.scores.shape = {1, 1, 8400};
    EXPECT_FALSE(NonMaxSuppression::create(dev(), yolo)->compact());
    // Small N: no more keys than the padded box count.
    NonMaxSuppressionDesc small = d;
    small.boxes.shape = {1, 5, 4};
    small.scores.shape = {1, 1, 5};
    EXPECT_EQ(NonMaxSuppression::create(dev(), small)->compact_capacity(), 8u);
    NonMaxSuppressionDesc bad = d;
    bad.compact_capacity = 48;
    EXPECT_THROW(NonMaxSuppression::create(dev(), bad), Error);
    bad.compact_capacity = 1;
    EXPECT_THROW(NonMaxSuppression::create(dev(), bad), Error);
}

// More (batch, class) groups than the offsets kernel's workgroup (256) scans at once.
TEST_F(DetectNms, ManyClassesSpanSeveralScanChunks) {
    Case c{.batches = 2,
           .classes = 151,
           .boxes = 19,
           .max_out = 3,
           .iou = 0.45f,
           .score_threshold = 0.6f,
           .seed = 13};
    const size_t n = check(dev(), c, gpu::DType::f32);
    EXPECT_GT(n, size_t(302));
    EXPECT_LT(n, size_t(2 * 151 * 3));
}

// Many equal scores: ties go to the lower box index, on the GPU as in the reference.
TEST_F(DetectNms, EqualScoresKeepTheLowerIndexFirst) {
    for (gpu::DType dtype : float_dtypes(dev())) {
        Case c{.batches = 2,
               .classes = 2,
               .boxes = 61,
               .max_out = 12,
               .iou = 0.3f,
               .tied_scores = true,
               .seed = 7};
        check(dev(), c, dtype);
        // A score equal to score_threshold is not a candidate (strictly greater).
        // No limit, so that boxes scoring exactly 0.5 would be selected if they were candidates.
        c.score_threshold = 0.5f;
        c.max_out = 61;
        c.seed = 12;
        check(dev(), c, dtype);
        c.score_threshold.reset();
        c.iou = 1.f; // nothing is suppressed: selection is the sort order alone
        c.max_out = 61;
        EXPECT_EQ(check(dev(), c, dtype), size_t(2 * 2 * 61));
    }
}

TEST_F(DetectNms, ThresholdExtremes) {
    // iou_threshold 0: any overlap suppresses.
    Case c{.batches = 1, .classes = 4, .boxes = 29, .max_out = 29, .iou = 0.f, .seed = 8};
    const size_t n = check(dev(), c, gpu::DType::f32);
    EXPECT_LT(n, size_t(4 * 29));
    // No score above the threshold: count 0, every row -1.
    c.score_threshold = 1.5f;
    EXPECT_EQ(check(dev(), c, gpu::DType::f32), size_t(0));
    // Negative scores and threshold.
    c.score_threshold = -0.5f;
    c.seed = 9;
    const HostTensor boxes = random_boxes(c, gpu::DType::f32);
    HostTensor scores = random_tensor({1, 4, 29}, gpu::DType::f32, 9, -1.0, 1.0);
    auto op = NonMaxSuppression::create(dev(), {.boxes = {boxes.shape(), gpu::DType::f32},
                                                .scores = {scores.shape(), gpu::DType::f32},
                                                .max_output_boxes_per_class = 6,
                                                .iou_threshold = 0.45f,
                                                .score_threshold = -0.5f});
    const auto want = ref_detect::nms(boxes, scores, 6, 0.45, -0.5, 0);
    EXPECT_GT(want.min_margin, 1e-5);
    const auto got = run_op(dev(), *op, {boxes, scores});
    const auto [rows, count] = expected(want, *op);
    expect_equal(got[0], rows, "negative scores");
    expect_equal(got[1], count, "negative scores count");
}

// Boxes without area never suppress or get suppressed (ONNX Runtime); a single box; identical
// boxes suppress each other at any threshold below 1.
TEST_F(DetectNms, DegenerateAndIdenticalBoxes) {
    // Box 0: zero width; 1 and 2 identical; 3 overlaps 1 slightly; 4 = 0 with swapped corners.
    HostTensor boxes({1, 5, 4}, gpu::DType::f32);
    boxes.data = {0.1, 0.2, 0.5,  0.2,  0.1, 0.1, 0.5, 0.5, 0.1, 0.1,
                  0.5, 0.5, 0.45, 0.45, 0.9, 0.9, 0.5, 0.2, 0.1, 0.2};
    HostTensor scores({1, 1, 5}, gpu::DType::f32);
    scores.data = {0.9, 0.8, 0.85, 0.7, 0.95};
    auto op = NonMaxSuppression::create(dev(), {.boxes = {boxes.shape(), gpu::DType::f32},
                                                .scores = {scores.shape(), gpu::DType::f32},
                                                .max_output_boxes_per_class = 5,
                                                .iou_threshold = 0.5f});
    const auto want = ref_detect::nms(boxes, scores, 5, 0.5, std::nullopt, 0);
    // 4, 0 (no area), 2 (suppresses 1), 3.
    ASSERT_EQ(want.selected.size(), size_t(4));
    EXPECT_EQ(want.selected[2][2], 2);
    const auto got = run_op(dev(), *op, {boxes, scores}, 2);
    const auto [rows, count] = expected(want, *op);
    expect_equal(got[0], rows, "degenerate boxes");
    expect_equal(got[1], count, "degenerate boxes count");

    // IoU 1 (identical boxes) is not above iou_threshold 1: both stay.
    auto keep_all = NonMaxSuppression::create(dev(), {.boxes = {boxes.shape(), gpu::DType::f32},
                                                      .scores = {scores.shape(), gpu::DType::f32},
                                                      .max_output_boxes_per_class = 5,
                                                      .iou_threshold = 1.f});
    const auto all = ref_detect::nms(boxes, scores, 5, 1.0, std::nullopt, 0);
    ASSERT_EQ(all.selected.size(), size_t(5));
    const auto got_all = run_op(dev(), *keep_all, {boxes, scores});
    const auto [rows_all, count_all] = expected(all, *keep_all);
    expect_equal(got_all[0], rows_all, "identical boxes at iou_threshold 1");

    Case one{.batches = 2, .classes = 3, .boxes = 1, .max_out = 4, .seed = 10};
    EXPECT_EQ(check(dev(), one, gpu::DType::f32), size_t(6));
}

// NaN scores are never candidates, with or without a score threshold.
TEST_F(DetectNms, NanScoresAreNeverSelected) {
    for (gpu::DType dtype : float_dtypes(dev())) {
        const Case c{.batches = 1, .classes = 2, .boxes = 41, .max_out = 41, .iou = 0.5f, .seed = 14};
        const HostTensor boxes = random_boxes(c, dtype);
        HostTensor scores = random_scores(c, dtype);
        for (size_t i = 0; i < scores.size(); i += 3) scores[i] = std::nan("");
        auto op = NonMaxSuppression::create(dev(), {.boxes = {boxes.shape(), dtype},
                                                    .scores = {scores.shape(), dtype},
                                                    .max_output_boxes_per_class = c.max_out,
                                                    .iou_threshold = c.iou});
        const auto want = ref_detect::nms(boxes, scores, c.max_out, c.iou, std::nullopt, 0);
        EXPECT_GT(want.min_margin, 1e-5);
        const auto got = run_op(dev(), *op, {boxes, scores});
        const auto [rows, count] = expected(want, *op);
        expect_equal(got[1], count, "NaN scores count");
        expect_equal(got[0], rows, "NaN scores");
    }
}

// record() twice into one command buffer gives the same result (scratch is rebuilt each time).
TEST_F(DetectNms, RecordTwice) {
    Case c{.batches = 2,
           .classes = 5,
           .boxes = 97,
           .max_out = 7,
           .iou = 0.35f,
           .score_threshold = 0.2f,
           .seed = 11};
    check(dev(), c, gpu::DType::f32, 2);
}

TEST_F(DetectNms, RejectsBadDescriptors) {
    const NonMaxSuppressionDesc good{.boxes = {{2, 10, 4}, gpu::DType::f32},
                                     .scores = {{2, 3, 10}, gpu::DType::f32},
                                     .max_output_boxes_per_class = 4,
                                     .iou_threshold = 0.5f};
    EXPECT_NO_THROW(NonMaxSuppression::create(dev(), good));
    auto bad = [&](auto change, std::initializer_list<const char*> needles) {
        NonMaxSuppressionDesc d = good;
        change(d);
        expect_error([&] { NonMaxSuppression::create(dev(), d); }, needles);
    };
    bad([](auto& d) { d.boxes.shape = {2, 10, 5}; }, {"NonMaxSuppression", "boxes", "[2, 10, 5]"});
    bad([](auto& d) { d.boxes.shape = {10, 4}; }, {"NonMaxSuppression", "boxes"});
    bad([](auto& d) { d.scores.shape = {2, 10}; }, {"NonMaxSuppression", "scores"});
    bad([](auto& d) { d.scores.shape = {1, 3, 10}; }, {"NonMaxSuppression", "scores", "batch"});
    bad([](auto& d) { d.scores.shape = {2, 3, 11}; }, {"NonMaxSuppression", "scores", "box dimension"});
    bad([](auto& d) { d.scores.dtype = gpu::DType::f16; }, {"NonMaxSuppression", "scores", "dtype"});
    bad([](auto& d) { d.boxes.dtype = d.scores.dtype = gpu::DType::i32; },
        {"NonMaxSuppression", "boxes", "f32"});
    bad([](auto& d) { d.max_output_boxes_per_class = 0; },
        {"NonMaxSuppression", "max_output_boxes_per_class"});
    bad([](auto& d) { d.iou_threshold = 1.5f; }, {"NonMaxSuppression", "iou_threshold", "[0, 1]"});
    bad([](auto& d) { d.iou_threshold = -0.1f; }, {"NonMaxSuppression", "iou_threshold"});
    bad([](auto& d) { d.score_threshold = std::nanf(""); }, {"NonMaxSuppression", "score_threshold", "NaN"});
    bad([](auto& d) { d.center_point_box = 2; }, {"NonMaxSuppression", "center_point_box"});
    bad([](auto& d) { d.index_dtype = gpu::DType::f32; }, {"NonMaxSuppression", "index_dtype"});
    bad(
        [&](auto& d) {
            const int64_t n = NonMaxSuppression::max_boxes(dev()) + 1;
            d.boxes.shape = {1, n, 4};
            d.scores.shape = {1, 1, n};
        },
        {"NonMaxSuppression", "boxes per batch"});

    // record() checks what it is given against the descriptor.
    auto op = NonMaxSuppression::create(dev(), good);
    gpu::Tensor boxes(dev(), {2, 10, 4}, gpu::DType::f32), scores(dev(), {2, 3, 10}, gpu::DType::f32);
    gpu::Tensor rows(dev(), {24, 3}, gpu::DType::i64), count(dev(), {1}, gpu::DType::i64);
    gpu::Buffer scratch(dev(), {.size = op->scratch_bytes()});
    gpu::CommandBuffer cmd(dev(), gpu::QueueRole::Compute);
    cmd.begin();
    const gpu::Tensor in[] = {boxes, scores}, out[] = {rows, count}, wrong[] = {rows, rows};
    expect_error([&] { op->record(cmd, in, wrong, scratch.range()); }, {"NonMaxSuppression", "outputs[1]"});
    expect_error([&] { op->record(cmd, in, out); }, {"NonMaxSuppression", "scratch"});
    cmd.end();
}

} // namespace
} // namespace vkml::test
