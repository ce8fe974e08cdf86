// NonMaxSuppression on the GPU. With the whole-array sort (NmsSort::Global), five kernels per
// record():
//   1. nms_sort_local (+ nms_sort_global / merge passes when N > one workgroup's block): every
//      (batch, class) group's candidates sorted best first by a bitonic network, as 64-bit keys
//      (score, ~index) in scratch; non-candidates become sentinels that sort last;
//   2. nms_select: one workgroup per group runs the greedy selection with a shared-memory
//      suppression bitmask (memory O(N) per group, where an N x N IoU mask would be O(N^2));
//   3. nms_offsets: one workgroup scans the per-group counts;
//   4. nms_scatter: selected boxes move to their rows, the rest of the capacity becomes -1.
// Everything but the sort is a fixed four dispatches; the sort adds about log2(P / block)^2 / 2
// passes for P above the block (512 keys).
// With the compact sort (a score threshold, NmsSort::Auto), nms_compact replaces 1 and 2: one
// workgroup per group gathers the candidates above the threshold, sorts them in shared memory
// and sweeps them, and for a single group (a detector's class-offset NMS) 3 and 4 as well (with the
// whole-array sort, the NMS of NanoDet's 3549 boxes took 51 us of the detector pass in the 1080p frame on an
// H200: ten sort dispatches and their barriers).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/detect.hpp"

namespace vkml::ops {

namespace {

constexpr const char* op_name = "NonMaxSuppression";

uint32_t float_bits(float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

// The workgroup size of the sort and selection kernels: 256, or the device's largest power of two
// below it (Vulkan guarantees 128).
uint32_t sort_workgroup(const gpu::Device& device) {
    const auto& caps = device.caps();
    const uint32_t limit = std::min({256u, caps.max_workgroup_invocations, caps.max_workgroup_size[0]});
    return std::bit_floor(std::max(limit, 1u));
}

} // namespace

int64_t NonMaxSuppression::max_boxes(const gpu::Device& device) {
    // The selection kernel keeps one bit per sorted candidate (P bits) and a word of its own in
    // shared memory; P is N rounded up to a power of two.
    const uint64_t shared = device.caps().max_shared_memory;
    const uint64_t words = shared > 16 ? (shared - 16) / 4 : 0;
    return int64_t(std::bit_floor(std::max<uint64_t>(words * 32, 1)));
}

std::unique_ptr<NonMaxSuppression> NonMaxSuppression::create(gpu::Device& device,
                                                             const NonMaxSuppressionDesc& desc) {
    return std::make_unique<NonMaxSuppression>(device, desc);
}

NonMaxSuppression::NonMaxSuppression(gpu::Device& device, const NonMaxSuppressionDesc& desc) : Op(device) {
    const auto& boxes = desc.boxes;
    const auto& scores = desc.scores;
    if (boxes.shape.rank() != 3 || boxes.shape[2] != 4)
        fail(op_name, "boxes", "must be [batches, boxes, 4], is " + boxes.shape.str());
    if (scores.shape.rank() != 3)
        fail(op_name, "scores", "must be [batches, classes, boxes], is " + scores.shape.str());
    detail::require_float(op_name, "boxes", boxes);
    detail::require_float(op_name, "scores", scores);
    if (boxes.dtype != scores.dtype)
        fail(op_name, "scores",
             std::string("dtype ") + gpu::dtype_name(scores.dtype) + " differs from boxes' " +
                 gpu::dtype_name(boxes.dtype));
    const int64_t batches = boxes.shape[0], n = boxes.shape[1], classes = scores.shape[1];
    if (batches < 1 || n < 1) fail(op_name, "boxes", "has an empty dimension: " + boxes.shape.str());
    if (classes < 1) fail(op_name, "scores", "has no classes: " + scores.shape.str());
    if (scores.shape[0] != batches)
        fail(op_name, "scores",
             "batch dimension " + std::to_string(scores.shape[0]) + " differs from boxes' " +
                 std::to_string(batches));
    if (scores.shape[2] != n)
        fail(op_name, "scores",
             "box dimension " + std::to_string(scores.shape[2]) + " differs from boxes' " +
                 std::to_string(n));
    if (desc.max_output_boxes_per_class < 1)
        fail(op_name, "max_output_boxes_per_class",
             std::to_string(desc.max_output_boxes_per_class) +
                 " selects no box (ONNX's default 0 means an empty output); vkml needs at least 1");
    if (!(desc.iou_threshold >= 0.f && desc.iou_threshold <= 1.f))
        fail(op_name, "iou_threshold", std::to_string(desc.iou_threshold) + " is outside [0, 1]");
    if (desc.score_threshold && std::isnan(*desc.score_threshold)) fail(op_name, "score_threshold", "is NaN");
    if (desc.center_point_box != 0 && desc.center_point_box != 1)
        fail(op_name, "center_point_box", std::to_string(desc.center_point_box) + " is neither 0 nor 1");
    if (desc.index_dtype != DType::i64 && desc.index_dtype != DType::i32)
        fail(op_name, "index_dtype",
             std::string("must be i64 or i32, is ") + gpu::dtype_name(desc.index_dtype));
    const int64_t limit = max_boxes(device);
    if (n > limit)
        unsupported(op_name, std::to_string(n) + " boxes per batch exceed the " + std::to_string(limit) +
                                 " the selection kernel's shared memory holds on " +
                                 device.caps().device_name);

    const auto& caps = device.caps();
    groups_ = detail::to_u32(op_name, "scores", batches * classes);
    slots_ = uint32_t(std::min<int64_t>(desc.max_output_boxes_per_class, n));
    padded_ = std::max(2u, std::bit_ceil(uint32_t(n)));
    const uint32_t wg = sort_workgroup(device);
    // Blocks of twice the workgroup (512 keys). One workgroup sorting NanoDet's 4096 keys in
    // shared memory (78 rounds of eight pairs per invocation) took 90 us on an H200, where these
    // blocks and the global passes between them take 50 us.
    block_ = std::min(padded_, 2 * wg);
    const bool index64 = desc.index_dtype == DType::i64;
    // Every index the kernels compute (keys, slots, output words) must fit 32 bits.
    detail::to_u32(op_name, "scores", int64_t(groups_) * padded_);
    detail::to_u32(op_name, "max_output_boxes_per_class", int64_t(groups_) * slots_ * 3 * (index64 ? 2 : 1));
    if (groups_ > caps.max_workgroup_count[0] || groups_ > caps.max_workgroup_count[1] ||
        padded_ / block_ > caps.max_workgroup_count[0])
        unsupported(op_name, std::to_string(groups_) + " (batch, class) groups of " + std::to_string(n) +
                                 " boxes exceed the device's workgroup grid");

    const uint64_t align = std::max<uint64_t>(16, caps.min_storage_buffer_offset_alignment);
    keys_bytes_ = uint64_t(groups_) * padded_ * 8;
    slots_bytes_ = uint64_t(groups_) * slots_ * 4;
    counts_bytes_ = uint64_t(groups_) * 4;
    if (keys_bytes_ > caps.max_storage_buffer_range)
        unsupported(op_name, "the sort keys (" + std::to_string(keys_bytes_) +
                                 " bytes) exceed the device's storage-buffer range");
    keys_offset_ = 0;
    slots_offset_ = align_up(keys_offset_ + keys_bytes_, align);
    counts_offset_ = align_up(slots_offset_ + slots_bytes_, align);
    offsets_offset_ = align_up(counts_offset_ + counts_bytes_, align);
    scratch_bytes_ = offsets_offset_ + counts_bytes_;

    const uint32_t has_threshold = desc.score_threshold ? 1 : 0;
    const uint32_t threshold = float_bits(desc.score_threshold.value_or(0.f));
    const uint32_t n32 = uint32_t(n);
    const uint32_t words = (padded_ + 31) / 32;
    if (desc.sort != NmsSort::Auto && desc.sort != NmsSort::Global && desc.sort != NmsSort::Compact)
        fail(op_name, "sort", "unknown value " + std::to_string(int(desc.sort)));
    if (desc.compact_capacity != 0 &&
        (desc.compact_capacity < 2 || !std::has_single_bit(desc.compact_capacity)))
        fail(op_name, "compact_capacity",
             std::to_string(desc.compact_capacity) + " is not a power of two of at least 2");
    // The compact kernel's shared memory: its candidates' keys, then boxes and indices (20 bytes a
    // candidate), the selection's bitmask and two words.
    const uint64_t fixed_shared = uint64_t(words) * 4 + 16;
    const uint64_t free_keys =
        caps.max_shared_memory > fixed_shared ? (caps.max_shared_memory - fixed_shared) / 20 : 0;
    uint32_t keys_held = desc.compact_capacity;
    if (!keys_held && free_keys >= 2)
        keys_held = uint32_t(std::bit_floor(std::min<uint64_t>(free_keys, 2048)));
    keys_held = std::min(keys_held, padded_);
    // Auto: where there is a score threshold and the boxes are at most twice the candidates held
    // in shared memory, so that only a threshold passing more than half of them spills. (The
    // spilled sort and sweep run in one workgroup on global memory: YOLOv8's 8400 boxes with
    // thousands of candidates took 1.4 ms there on an H200, against 0.5 ms by the global sort.)
    const bool compact =
        desc.sort == NmsSort::Compact || (desc.sort == NmsSort::Auto && desc.score_threshold &&
                                          keys_held >= 2 && uint64_t(n) <= 2 * uint64_t(keys_held));
    if (compact && (keys_held < 2 || keys_held > free_keys))
        unsupported(op_name, "the compact sort's " + std::to_string(std::max(keys_held, 2u)) +
                                 " keys, their boxes and the selection's bitmask exceed the " +
                                 std::to_string(caps.max_shared_memory) + " bytes of shared memory on " +
                                 caps.device_name);
    if (compact) {
        compact_keys_ = keys_held;
        // One group: the kernel writes the outputs itself (no scan, no scatter).
        direct_ = groups_ == 1;
        compact_ = &device.pipeline(
            {.shader = detail::shader_for(device, op_name, "nms_compact", boxes.dtype),
             .bindings = 7,
             .workgroup = {wg, 1, 1},
             .specialization = {n32, padded_, uint32_t(classes), slots_, uint32_t(desc.center_point_box),
                                float_bits(desc.iou_threshold), words, keys_held, has_threshold, threshold,
                                direct_ ? 1u : 0u, index64 ? 1u : 0u}});
    } else {
        // The block sort (merge 0) and the merge of sorted blocks (merge 1): one shader.
        auto local = [&](uint32_t merge) {
            return &device.pipeline(
                {.shader = detail::shader_for(device, op_name, "nms_sort_local", boxes.dtype),
                 .bindings = 2,
                 .push_constant_bytes = 4,
                 .workgroup = {wg, 1, 1},
                 .specialization = {n32, padded_, block_, merge, has_threshold, threshold}});
        };
        sort_local_ = local(0);
        sort_merge_ = local(1);
        sort_global_ =
            &device.pipeline({.shader = detail::shader_for(device, op_name, "nms_sort_global", "i32"),
                              .bindings = 1,
                              .push_constant_bytes = 8,
                              .workgroup = {wg, 1, 1},
                              .specialization = {padded_, groups_}});
        select_ = &device.pipeline(
            {.shader = detail::shader_for(device, op_name, "nms_select", boxes.dtype),
             .bindings = 4,
             .workgroup = {wg, 1, 1},
             .specialization = {n32, padded_, uint32_t(classes), slots_, uint32_t(desc.center_point_box),
                                float_bits(desc.iou_threshold), words}});
    }
    if (!direct_) { // the compact kernel of a single group writes the outputs itself
        offsets_ = &device.pipeline({.shader = detail::shader_for(device, op_name, "nms_offsets", "i32"),
                                     .bindings = 3,
                                     .workgroup = {wg, 1, 1},
                                     .specialization = {groups_, index64 ? 1u : 0u}});
        scatter_ =
            &device.pipeline({.shader = detail::shader_for(device, op_name, "nms_scatter", "i32"),
                              .bindings = 4,
                              .workgroup = {64, 1, 1},
                              .specialization = {groups_, slots_, uint32_t(classes), index64 ? 1u : 0u}});
    }

    inputs_ = {boxes, scores};
    outputs_ = {{{int64_t(capacity()), 3}, desc.index_dtype}, {{1}, desc.index_dtype}};
}

void NonMaxSuppression::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                    std::span<const Tensor> outputs, const gpu::BufferRange& scratch) const {
    // The scratch parts are bound as separate ranges at aligned offsets from the scratch start.
    const uint64_t align = device_.caps().min_storage_buffer_offset_alignment;
    if (align > 1 && scratch.offset % align != 0)
        fail(type(), "scratch",
             "starts at byte " + std::to_string(scratch.offset) +
                 ", not a multiple of the device's storage-buffer alignment " + std::to_string(align));
    auto part = [&](uint64_t offset, uint64_t bytes) {
        return gpu::BufferRange{scratch.buffer, scratch.offset + offset, bytes};
    };
    const gpu::BufferRange keys = part(keys_offset_, keys_bytes_);
    const gpu::BufferRange slots = part(slots_offset_, slots_bytes_);
    const gpu::BufferRange counts = part(counts_offset_, counts_bytes_);
    const gpu::BufferRange offsets = part(offsets_offset_, counts_bytes_);
    const gpu::BufferRange boxes = inputs[0].range(), scores = inputs[1].range();

    if (compact_) {
        // 1-2. Gather, sort and sweep each group's candidates in one dispatch.
        const gpu::BufferRange bufs[] = {
            boxes, scores, keys, slots, counts, outputs[0].range(), outputs[1].range()};
        cmd.dispatch(*compact_, bufs, nullptr, 0, {groups_, 1, 1});
        if (direct_) return;
        gpu::barrier::compute_to_compute(cmd);
    } else {
        // 1. Sort: blocks in shared memory, then for each longer stage k the global rounds down
        //    to the block size and the rest of the stage in shared memory again.
        const gpu::BufferRange sort_bufs[] = {scores, keys};
        const uint32_t blocks = padded_ / block_;
        cmd.dispatch(*sort_local_, sort_bufs, uint32_t(0), {blocks, groups_, 1});
        for (uint32_t k = 2 * block_; k <= padded_; k <<= 1) {
            for (uint32_t j = k / 2; j >= block_; j >>= 1) {
                gpu::barrier::compute_to_compute(cmd);
                const struct { uint32_t k, j; } push{k, j};
                detail::dispatch_1d(cmd, *sort_global_, std::span(&keys, 1), push,
                                    uint64_t(groups_) * padded_ / 2);
            }
            gpu::barrier::compute_to_compute(cmd);
            cmd.dispatch(*sort_merge_, sort_bufs, k, {blocks, groups_, 1});
        }
        gpu::barrier::compute_to_compute(cmd);

        // 2. Greedy selection per (batch, class).
        const gpu::BufferRange select_bufs[] = {boxes, keys, slots, counts};
        cmd.dispatch(*select_, select_bufs, nullptr, 0, {groups_, 1, 1});
        gpu::barrier::compute_to_compute(cmd);
    }

    // 3. Row offsets of the groups and the total count.
    const gpu::BufferRange offset_bufs[] = {counts, offsets, outputs[1].range()};
    cmd.dispatch(*offsets_, offset_bufs, nullptr, 0, {1, 1, 1});
    gpu::barrier::compute_to_compute(cmd);

    // 4. Rows of the output.
    const gpu::BufferRange scatter_bufs[] = {slots, counts, offsets, outputs[0].range()};
    cmd.dispatch(*scatter_, scatter_bufs, nullptr, 0, cmd.groups_for(*scatter_, capacity()));
}

} // namespace vkml::ops
