// TopK (shaders/reduce/topk_sort.comp and topk_rank.comp).
#include <algorithm>
#include <bit>
#include <string>

#include "reduce_common.hpp"
#include "vkml/gpu/command.hpp"

namespace vkml::ops {

namespace {
struct TopKParams {
    uint32_t rows, n, inner, k;
};
// Bytes of shared memory per row entry of the sort kernel: a float key and a uint index.
constexpr uint32_t sort_entry_bytes = 8;
} // namespace

std::unique_ptr<TopK> TopK::create(gpu::Device& device, const TopKDesc& desc) {
    const char* op = "TopK";
    detail::require_float(op, "input", desc.input);
    if (desc.input.shape.rank() == 0) fail(op, "input", "must have at least one dimension");
    detail::require_nonempty(op, desc.input);
    const size_t axis = detail::normalize_axis(op, "axis", desc.axis, desc.input.shape.rank());
    const int64_t n = desc.input.shape[axis];
    if (desc.k < 1) fail(op, "k", "must be at least 1, is " + std::to_string(desc.k));
    if (desc.k > n)
        fail(op, "k",
             "K = " + std::to_string(desc.k) + " is larger than axis " + std::to_string(desc.axis) +
                 " of size " + std::to_string(n));
    if (desc.largest != 0 && desc.largest != 1)
        fail(op, "largest", "must be 0 or 1, is " + std::to_string(desc.largest));
    if (desc.sorted != 0 && desc.sorted != 1)
        fail(op, "sorted", "must be 0 or 1, is " + std::to_string(desc.sorted));
    if (desc.indices_dtype != DType::i64 && desc.indices_dtype != DType::i32)
        fail(op, "indices_dtype",
             std::string("must be i64 or i32, is ") + gpu::dtype_name(desc.indices_dtype));

    auto t = std::make_unique<TopK>(device, detail::ReduceKey{});
    const detail::AxisSplit s = detail::split_at_axis(op, desc.input.shape, axis);
    t->rows_ = s.outer * s.inner;
    t->n_ = s.n;
    t->inner_ = s.inner;
    t->k_ = uint32_t(desc.k);
    Shape out_shape = desc.input.shape;
    out_shape[axis] = desc.k;
    t->inputs_ = {desc.input};
    t->outputs_ = {{out_shape, desc.input.dtype}, {out_shape, desc.indices_dtype}};

    // The sort kernel holds a whole row, padded to a power of two, in shared memory.
    const uint32_t padded = std::max(2u, std::bit_ceil(s.n));
    const bool fits = uint64_t(padded) * sort_entry_bytes <= device.caps().max_shared_memory;
    t->path_ = desc.path;
    if (t->path_ == TopKPath::Auto) t->path_ = fits && s.n > 64 ? TopKPath::SharedSort : TopKPath::Rank;
    if (t->path_ == TopKPath::SharedSort && !fits)
        fail(op, "path",
             "SharedSort needs " + std::to_string(uint64_t(padded) * sort_entry_bytes) +
                 " bytes of shared memory for rows of " + std::to_string(s.n) + ", the device has " +
                 std::to_string(device.caps().max_shared_memory));
    const uint32_t words = desc.indices_dtype == DType::i64 ? 2u : 1u;
    const uint32_t largest = uint32_t(desc.largest);
    if (t->path_ == TopKPath::SharedSort) {
        t->pipeline_ =
            &device.pipeline({.shader = detail::shader_for(device, op, "reduce_topk_sort", desc.input.dtype),
                              .bindings = 3,
                              .push_constant_bytes = sizeof(TopKParams),
                              .workgroup = {std::min(padded / 2, 256u), 1, 1},
                              .specialization = {padded, largest, words}});
    } else {
        detail::to_u32(op, "input", int64_t(t->rows_) * s.n);
        t->pipeline_ =
            &device.pipeline({.shader = detail::shader_for(device, op, "reduce_topk_rank", desc.input.dtype),
                              .bindings = 3,
                              .push_constant_bytes = sizeof(TopKParams),
                              .workgroup = {detail::reduce_loop_size, 1, 1},
                              .specialization = {largest, words}});
    }
    return t;
}

void TopK::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                       std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range(), outputs[1].range()};
    const TopKParams params{rows_, n_, inner_, k_};
    if (path_ == TopKPath::SharedSort)
        cmd.dispatch(*pipeline_, buffers, params, detail::groups_per_item(device_, rows_));
    else
        detail::dispatch_1d(cmd, *pipeline_, buffers, params, uint64_t(rows_) * n_);
}

} // namespace vkml::ops
