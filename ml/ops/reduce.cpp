// Reduce* and the global pools, both on the kernel of shaders/reduce/reduce.comp, plus the
// helpers the other files of the reduction family share (reduce_common.hpp).
#include <algorithm>
#include <string>

#include "reduce_common.hpp"
#include "vkml/gpu/command.hpp"

namespace vkml::ops {

const char* reduce_path_name(ReducePath path) {
    switch (path) {
    case ReducePath::Auto:
        return "auto";
    case ReducePath::PerOutput:
        return "per-output";
    case ReducePath::Workgroup:
        return "workgroup";
    case ReducePath::Rows:
        return "rows";
    }
    return "?";
}

const char* reduce_op_name(ReduceKind kind) {
    switch (kind) {
    case ReduceKind::Sum:
        return "ReduceSum";
    case ReduceKind::Mean:
        return "ReduceMean";
    case ReduceKind::Max:
        return "ReduceMax";
    case ReduceKind::Min:
        return "ReduceMin";
    case ReduceKind::Prod:
        return "ReduceProd";
    case ReduceKind::L1:
        return "ReduceL1";
    case ReduceKind::L2:
        return "ReduceL2";
    case ReduceKind::LogSumExp:
        return "ReduceLogSumExp";
    case ReduceKind::SumSquare:
        return "ReduceSumSquare";
    case ReduceKind::LogSum:
        return "ReduceLogSum";
    }
    return "Reduce?";
}

namespace detail {

AxisSplit split_at_axis(const char* op, const Shape& shape, size_t axis) {
    uint64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= uint64_t(shape[i]);
    for (size_t i = axis + 1; i < shape.rank(); ++i) inner *= uint64_t(shape[i]);
    return {to_u32(op, "input", int64_t(outer)), to_u32(op, "input", shape[axis]),
            to_u32(op, "input", int64_t(inner))};
}

void require_nonempty(const char* op, const TensorDesc& input) {
    for (int64_t d : input.shape.dims())
        if (d <= 0)
            fail(op, "input", "shape " + input.shape.str() + " has an empty dimension (not supported)");
    to_u32(op, "input", input.shape.elements());
}

std::array<uint32_t, 3> groups_per_item(const gpu::Device& device, uint32_t items) {
    const uint32_t max_x = device.caps().max_workgroup_count[0];
    if (items <= max_x) return {std::max(items, 1u), 1, 1};
    return {max_x, (items + max_x - 1) / max_x, 1};
}

ReducePath choose_reduce_path(ReducePath requested, uint64_t reduced, uint64_t outputs, bool contiguous) {
    if (requested != ReducePath::Auto) return requested;
    if (reduced < 128) return ReducePath::PerOutput;
    if (contiguous || outputs < 4096) return ReducePath::Workgroup;
    return ReducePath::PerOutput;
}

ReduceKernel::ReduceKernel(gpu::Device& device, const char* op, const TensorDesc& input,
                           const std::vector<bool>& reduced, ReduceMode mode, float p, ReducePath path) {
    // Drop size-1 dimensions and merge neighbours of the same kind: the kept and the reduced
    // groups then alternate, so six dimensions leave at most three of each.
    struct Group {
        int64_t size, stride;
        bool reduced;
    };
    const auto strides = contiguous_strides(input.shape);
    std::vector<Group> groups;
    for (size_t i = 0; i < input.shape.rank(); ++i) {
        if (input.shape[i] == 1) continue;
        if (!groups.empty() && groups.back().reduced == reduced[i]) {
            groups.back().size *= input.shape[i];
            groups.back().stride = strides[i];
        } else {
            groups.push_back({input.shape[i], strides[i], reduced[i]});
        }
    }
    std::vector<Group> kept, red;
    for (const Group& g : groups) (g.reduced ? red : kept).push_back(g);
    // Right-aligned: the innermost group goes in slot 2, size-1 groups pad the outer slots.
    for (size_t i = 0; i < kept.size(); ++i) {
        params_.kept_size[3 - kept.size() + i] = uint32_t(kept[i].size);
        params_.kept_stride[3 - kept.size() + i] = uint32_t(kept[i].stride);
    }
    for (size_t i = 0; i < red.size(); ++i) {
        params_.red_size[3 - red.size() + i] = uint32_t(red[i].size);
        params_.red_stride[3 - red.size() + i] = uint32_t(red[i].stride);
    }
    int64_t outputs = 1, count = 1;
    for (const Group& g : kept) outputs *= g.size;
    for (const Group& g : red) count *= g.size;
    params_.outputs = to_u32(op, "input", outputs);
    params_.count = to_u32(op, "input", count);
    params_.p = p;

    const bool contiguous = red.empty() || red.back().stride == 1;
    if (path == ReducePath::Rows) fail(op, "path", "the rows kernel is Softmax's and LogSoftmax's only");
    path_ = choose_reduce_path(path, uint64_t(count), uint64_t(outputs), contiguous);
    const bool wg = path_ == ReducePath::Workgroup;
    pipeline_ =
        &device.pipeline({.shader = shader_for(device, op, wg ? "reduce_wg" : "reduce_loop", input.dtype),
                          .bindings = 2,
                          .push_constant_bytes = sizeof(Params),
                          .workgroup = {wg ? reduce_wg_size : reduce_loop_size, 1, 1},
                          .specialization = {uint32_t(mode)}});
    if (wg) groups_ = groups_per_item(device, params_.outputs);
}

void ReduceKernel::record(gpu::CommandBuffer& cmd, const Tensor& input, const Tensor& output) const {
    const gpu::BufferRange buffers[] = {input.range(), output.range()};
    if (path_ == ReducePath::Workgroup)
        cmd.dispatch(*pipeline_, buffers, params_, groups_);
    else
        dispatch_1d(cmd, *pipeline_, buffers, params_, params_.outputs);
}

} // namespace detail

// ---- Reduce* ----------------------------------------------------------------------------------

Reduce::Reduce(gpu::Device& device, detail::ReduceKey) : Op(device) {}
Reduce::~Reduce() = default;
const char* Reduce::type() const {
    return reduce_op_name(kind_);
}
ReducePath Reduce::path() const {
    return kernel_->path();
}

std::unique_ptr<Reduce> Reduce::create(gpu::Device& device, const ReduceDesc& desc) {
    if (uint8_t(desc.kind) > uint8_t(ReduceKind::LogSum))
        fail("Reduce", "kind", "unknown reduction kind " + std::to_string(int(desc.kind)));
    const char* op = reduce_op_name(desc.kind);
    detail::require_float(op, "input", desc.input);
    detail::require_nonempty(op, desc.input);
    if (desc.keepdims != 0 && desc.keepdims != 1)
        fail(op, "keepdims", "must be 0 or 1, is " + std::to_string(desc.keepdims));
    if (desc.noop_with_empty_axes != 0 && desc.noop_with_empty_axes != 1)
        fail(op, "noop_with_empty_axes", "must be 0 or 1, is " + std::to_string(desc.noop_with_empty_axes));
    const size_t rank = desc.input.shape.rank();
    std::vector<bool> reduced(rank, false);
    if (desc.axes.empty()) {
        if (!desc.noop_with_empty_axes) reduced.assign(rank, true);
    } else {
        for (int64_t a : desc.axes) {
            const size_t axis = detail::normalize_axis(op, "axes", a, rank);
            if (reduced[axis]) fail(op, "axes", "axis " + std::to_string(a) + " is given twice");
            reduced[axis] = true;
        }
    }

    auto r = std::make_unique<Reduce>(device, detail::ReduceKey{});
    r->kind_ = desc.kind;
    std::vector<int64_t> out_dims;
    for (size_t i = 0; i < rank; ++i) {
        if (!reduced[i])
            out_dims.push_back(desc.input.shape[i]);
        else if (desc.keepdims)
            out_dims.push_back(1);
    }
    r->inputs_ = {desc.input};
    r->outputs_ = {{Shape(std::span<const int64_t>(out_dims)), desc.input.dtype}};
    static constexpr detail::ReduceMode modes[] = {
        detail::ReduceMode::Sum, detail::ReduceMode::Mean,      detail::ReduceMode::Max,
        detail::ReduceMode::Min, detail::ReduceMode::Prod,      detail::ReduceMode::L1,
        detail::ReduceMode::L2,  detail::ReduceMode::LogSumExp, detail::ReduceMode::SumSquare,
        detail::ReduceMode::LogSum};
    r->kernel_ = std::make_unique<detail::ReduceKernel>(device, op, desc.input, reduced,
                                                        modes[size_t(desc.kind)], 1.f, desc.path);
    return r;
}

void Reduce::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    kernel_->record(cmd, inputs[0], outputs[0]);
}

// ---- Global pools -----------------------------------------------------------------------------

GlobalPool::GlobalPool(gpu::Device& device, detail::ReduceKey) : Op(device) {}
GlobalPool::~GlobalPool() = default;
ReducePath GlobalPool::path() const {
    return kernel_->path();
}

const char* GlobalPool::type() const {
    switch (kind_) {
    case GlobalPoolKind::Average:
        return "GlobalAveragePool";
    case GlobalPoolKind::Max:
        return "GlobalMaxPool";
    case GlobalPoolKind::Lp:
        return "GlobalLpPool";
    }
    return "GlobalPool?";
}

std::unique_ptr<GlobalPool> GlobalPool::create(gpu::Device& device, const GlobalPoolDesc& desc) {
    auto g = std::make_unique<GlobalPool>(device, detail::ReduceKey{});
    g->kind_ = desc.kind;
    const char* op = g->type();
    detail::require_float(op, "input", desc.input);
    const size_t rank = desc.input.shape.rank();
    if (rank < 3) fail(op, "input", "must be [N, C, spatial...] (rank 3 to 6), is " + to_string(desc.input));
    detail::require_nonempty(op, desc.input);
    if (desc.kind == GlobalPoolKind::Lp && desc.p < 1)
        fail(op, "p", "must be at least 1, is " + std::to_string(desc.p));

    std::vector<bool> reduced(rank, true);
    reduced[0] = reduced[1] = false;
    std::vector<int64_t> out_dims(rank, 1);
    out_dims[0] = desc.input.shape[0];
    out_dims[1] = desc.input.shape[1];
    g->inputs_ = {desc.input};
    g->outputs_ = {{Shape(std::span<const int64_t>(out_dims)), desc.input.dtype}};
    // Lp with p = 1 or 2 is ReduceL1 / ReduceL2: no pow() per element.
    detail::ReduceMode mode = detail::ReduceMode::Mean;
    if (desc.kind == GlobalPoolKind::Max) mode = detail::ReduceMode::Max;
    if (desc.kind == GlobalPoolKind::Lp)
        mode = desc.p == 1   ? detail::ReduceMode::L1
               : desc.p == 2 ? detail::ReduceMode::L2
                             : detail::ReduceMode::Lp;
    g->kernel_ = std::make_unique<detail::ReduceKernel>(device, op, desc.input, reduced, mode, float(desc.p),
                                                        desc.path);
    return g;
}

void GlobalPool::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    kernel_->record(cmd, inputs[0], outputs[0]);
}

} // namespace vkml::ops
