// InstanceNormalization, LayerNormalization and GroupNormalization: each op's create() reduces its
// descriptor to a GroupLayout (how many contiguous groups, how large, how scale and bias are
// indexed), and one builder turns that into the single-pass or the split kernel (see norm.hpp and
// shaders/norm/normalize.comp).
#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "norm_util.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/gpu/transfer.hpp"

namespace vkml::ops {

namespace {

// Layout of normalize.comp's push constants (see norm_common.glsl).
constexpr size_t push_words = 22;
constexpr uint32_t push_bytes = push_words * 4;

// Above this many groups the device is full with one workgroup per group, so splitting one group
// over several workgroups buys nothing (about four workgroups per multiprocessor on a large GPU).
constexpr uint64_t target_workgroups = 512;
// A split workgroup should still stream a good run of elements: fewer makes stage 2's merge and
// the extra dispatch cost more than the parallelism brings.
constexpr uint64_t min_split_chunk = 4096;
// The widest workgroup used; stage 2 merges at most one partial per invocation, so this also caps
// the number of partials.
constexpr uint32_t max_workgroup = 256;
// Elements each invocation holds in registers, one unit per uvec4 slot (normalize.comp's
// NORM_MAX_CACHED): 8 units of 4 elements or 4 of 8 packed halves, 8192 elements per
// 256-invocation workgroup.
constexpr uint32_t max_cached_elements = 32;
// The one-dispatch split by default only while a group needs at most this many workgroups beside
// each other (any discrete GPU holds 64 workgroups of 256 at once; more may wait past the bound).
constexpr uint64_t max_auto_one_dispatch = 64;
// Workgroups of 256 invocations a multiprocessor is assumed to run at once (the one-dispatch
// split by default only where all of them fit).
constexpr uint64_t resident_per_multiprocessor = 4;
// Polls of a group's arrival counter before a one-dispatch workgroup computes the group's moments
// itself (VKML_NORM_SPINS overrides: 0 always computes them, for tests). About 2-6 ms on an
// H200, thousands of times the usual wait.
constexpr uint32_t default_spins = 16384;

struct GroupLayout {
    const char* op = "";
    TensorDesc input;
    uint64_t groups = 0;       // groups normalized independently
    uint64_t m = 0;            // elements per group (contiguous)
    uint32_t param_groups = 1; // scale/bias index: ((g % param_groups) * m + i) / param_div
    uint32_t param_div = 1;
    bool broadcast = false; // index scale and bias by X's coordinates and the strides below instead
    std::array<uint32_t, 6> dims{1, 1, 1, 1, 1, 1};
    std::array<uint32_t, 6> scale_strides{}, bias_strides{};
    bool has_bias = true;
    bool stats_outputs = false;
    float epsilon = 1e-5f;
    Activation activation;
    uint32_t partials = 0; // as requested: 0 = by size
    NormSplit split = NormSplit::Auto;
};

uint32_t floor_pow2(uint32_t v) {
    return v ? uint32_t(1) << (31 - std::countl_zero(v)) : 0;
}

// Workgroups for `count` one-dimensional workgroup indices, folded into y (as the kernels expect).
std::array<uint32_t, 3> grid_for(const gpu::Device& device, const char* op, uint64_t count) {
    const uint64_t max_x = device.caps().max_workgroup_count[0];
    if (count <= max_x) return {uint32_t(count), 1, 1};
    const uint64_t y = (count + max_x - 1) / max_x;
    if (y > device.caps().max_workgroup_count[1])
        fail(op, "input", std::to_string(count) + " workgroups exceed the device's dispatch grid");
    return {uint32_t(max_x), uint32_t(y), 1};
}

} // namespace

struct GroupedNormalizationBuilder {
    static void build(GroupedNormalization& op, gpu::Device& device, const GroupLayout& l) {
        const char* name = l.op;
        detail::norm::check_epsilon(name, l.epsilon);
        detail::to_u32(name, "input", l.input.shape.elements());
        // Kernels index a group's first element unconditionally, and specialization constants
        // divide by group sizes: empty tensors get no kernel.
        if (l.input.shape.elements() == 0) unsupported(name, "empty input " + to_string(l.input));
        const uint32_t m = uint32_t(l.m);
        // Device limit on invocations, as a power of two (the tree reduction needs one).
        const uint32_t widest = std::min(max_workgroup, floor_pow2(device.caps().max_workgroup_invocations));

        if (l.split != NormSplit::Auto && l.split != NormSplit::TwoDispatches &&
            l.split != NormSplit::OneDispatch)
            fail(name, "split", "unknown value " + std::to_string(int(l.split)));
        uint64_t partials = 1;
        if (l.partials != 0) {
            if (l.partials > widest)
                fail(name, "partials",
                     "at most " + std::to_string(widest) + ", got " + std::to_string(l.partials));
            partials = l.partials;
        } else if (l.groups < target_workgroups && l.m >= 2 * min_split_chunk) {
            partials = std::min<uint64_t>(
                {(target_workgroups + l.groups - 1) / l.groups, l.m / min_split_chunk, uint64_t(widest)});
            // VKML_NORM_PARTS: another count where the size splits (tuning on a device).
            partials = uint64_t(detail::tuning_knob("VKML_NORM_PARTS", int64_t(partials), 2, widest));
        }
        // Units of 16 bytes per load and store (f16: 8 halves; f32: 4 floats; f16 groups of whole
        // 4-vectors: 8 bytes) where groups are whole units and the parameters are not broadcast
        // (InstanceNorm 64ch at 480x270 reached 39 % of the copy bandwidth on an H100 with 2-byte
        // loads, 42 % on the H200 with 8-byte f16 loads).
        const uint32_t unit = l.broadcast                                   ? 1
                              : l.input.dtype == DType::f16 && l.m % 8 == 0 ? 8
                              : l.m % 4 == 0                                ? 4
                                                                            : 1;
        const bool vec = unit > 1;
        // Equal chunks (whole units); a forced count larger than useful shrinks so that no
        // workgroup is idle.
        auto chunk_for = [&](uint64_t parts) {
            const uint64_t c = (l.m + parts - 1) / parts;
            return (c + unit - 1) / unit * unit;
        };

        // The split in one dispatch, where all its workgroups fit the device at once (the device
        // reports its multiprocessors; four workgroups of 256 invocations each): a group's
        // workgroups finish together, so workgroups waiting for a free slot hold their group up
        // (InstanceNorm 64ch @ 480x270 on the H200: 512 workgroups 15.4 us, 1024 workgroups 26 us,
        // against 18.6 us in two dispatches). Streamed by size: the two-dispatch split's chunks,
        // read again for the output while they are in the L2 cache. Held where partials is given
        // with OneDispatch (or VKML_NORM_HOLD=1) and the chunks fit: each workgroup keeps its
        // chunk in registers (at most `capacity` elements), the input read once, which measured
        // slower there (f16 with 512 workgroups 18.0 us against 16.1 us streamed).
        // VKML_NORM_COOP_WG: the one-dispatch split's workgroup width (256 by default; 512 or 1024
        // for tuning on a device; fewer, wider workgroups a group).
        const uint32_t coop_wg =
            std::min(uint32_t(detail::tuning_knob("VKML_NORM_COOP_WG", max_workgroup, 32, 1024)),
                     floor_pow2(std::min(device.caps().max_workgroup_invocations,
                                         device.caps().max_workgroup_size[0])));
        const uint64_t capacity = uint64_t(coop_wg) * max_cached_elements;
        const bool coop_applies = vec && !l.stats_outputs;
        if (l.split == NormSplit::OneDispatch && !coop_applies)
            fail(name, "split",
                 "OneDispatch needs groups of whole 16- or 8-byte units (" + std::to_string(l.m) +
                     " elements), scale and bias not broadcast, and no Mean/InvStdDev outputs");
        uint64_t coop_partials = 0;
        bool held = false;
        if (coop_applies && l.split != NormSplit::TwoDispatches) {
            const uint64_t need = (l.m + capacity - 1) / capacity;
            auto parts_for = [&](uint64_t parts) { return (l.m + chunk_for(parts) - 1) / chunk_for(parts); };
            const uint64_t held_parts = parts_for(l.partials != 0 ? l.partials : std::max(partials, need));
            // VKML_NORM_HOLD=0 / 1: streamed / held where it fits, whatever the descriptor asks.
            const int64_t hold_env = detail::tuning_knob("VKML_NORM_HOLD", -1, 0, 1);
            const bool hold_asked =
                hold_env >= 0 ? hold_env == 1 : l.split == NormSplit::OneDispatch && l.partials != 0;
            // VKML_NORM_ONE_DISPATCH=0 keeps Auto on two dispatches (side-by-side timing).
            const bool auto_allowed = detail::tuning_knob("VKML_NORM_ONE_DISPATCH", 1, 0, 1) == 1 &&
                                      device.caps().device_type != VK_PHYSICAL_DEVICE_TYPE_CPU;
            const uint64_t slots =
                uint64_t(device.caps().multiprocessors) * resident_per_multiprocessor * widest / coop_wg;
            auto fits = [&](uint64_t parts) {
                return auto_allowed && l.groups * parts <= slots && parts <= max_auto_one_dispatch;
            };
            held = hold_asked && chunk_for(held_parts) <= capacity;
            const uint64_t parts = held ? held_parts : parts_for(partials);
            if (parts > 1 && (l.split == NormSplit::OneDispatch || fits(parts))) coop_partials = parts;
        }
        if (coop_partials > 0) partials = coop_partials;
        uint64_t chunk = chunk_for(partials);
        partials = (l.m + chunk - 1) / chunk;
        op.partials_ = uint32_t(partials);
        op.has_bias_ = l.has_bias;
        op.stats_outputs_ = l.stats_outputs;

        const DType dt = l.input.dtype;
        const uint32_t act = uint32_t(l.activation.kind);
        // Bindings: X, scale, bias, Y (+ partials) (+ Mean, InvStdDev).
        const uint32_t stats = l.stats_outputs ? 2 : 0;
        if (partials == 1) {
            // About four elements per invocation, from 32 (tiny planes) up to the widest.
            uint32_t wg = 32;
            while (wg < widest && uint64_t(wg) * 4 < l.m) wg *= 2;
            wg = std::min(wg, widest);
            // Where the group is whole units and the workgroup's registers hold it (up to 8 vec4
            // slices per invocation: 8192 elements at 256 invocations), each invocation keeps
            // its units between the moments and the output, so the group is read once.
            const uint64_t units = l.m / unit, upt = (units + wg - 1) / wg;
            const uint32_t cached = vec && upt * unit <= max_cached_elements ? uint32_t(upt) : 0;
            op.cached_units_ = cached;
            auto single = [&](bool v) {
                return &device.pipeline(
                    {.shader = detail::shader_for(device, name,
                                                  l.stats_outputs ? "norm_single_stats" : "norm_single", dt),
                     .bindings = 4 + stats,
                     .push_constant_bytes = push_bytes,
                     .workgroup = {wg, 1, 1},
                     .specialization = {m, l.param_groups, l.param_div, l.has_bias, act, 1, m, l.broadcast,
                                        v ? unit : 1u, v ? cached : 0u}});
            };
            op.single_ = single(false);
            if (vec) op.single_vec_ = single(true);
        } else {
            const uint32_t p = uint32_t(partials), c = uint32_t(chunk);
            auto moments = [&](bool v) {
                return &device.pipeline({.shader = detail::shader_for(device, name, "norm_moments", dt),
                                         .bindings = 2,
                                         .push_constant_bytes = push_bytes,
                                         .workgroup = {widest, 1, 1},
                                         .specialization = {m, p, c, v ? unit : 1u}});
            };
            auto apply = [&](bool v) {
                return &device.pipeline(
                    {.shader = detail::shader_for(device, name,
                                                  l.stats_outputs ? "norm_apply_stats" : "norm_apply", dt),
                     .bindings = 5 + stats,
                     .push_constant_bytes = push_bytes,
                     .workgroup = {widest, 1, 1},
                     .specialization = {m, l.param_groups, l.param_div, l.has_bias, act, p, c, l.broadcast,
                                        v ? unit : 1u}});
            };
            op.moments_ = moments(false);
            op.apply_ = apply(false);
            if (coop_partials > 0) {
                // X and Y not on 16 bytes at record time take the element-wise two-dispatch pair above.
                const uint64_t units = chunk / unit;
                const uint32_t cached = held ? uint32_t((units + coop_wg - 1) / coop_wg) : 0u;
                const auto spins =
                    uint32_t(detail::tuning_knob("VKML_NORM_SPINS", default_spins, 0, UINT32_MAX));
                // VKML_NORM_TICKET=0: chunks by workgroup index instead of by ticket (tuning).
                const auto ticket = uint32_t(detail::tuning_knob("VKML_NORM_TICKET", 1, 0, 1));
                // The workgroup's moments by subgroup arithmetic where the device has it
                // (VKML_NORM_SUBGROUP=0: the shared-memory tree).
                static const bool subgroup_knob = detail::tuning_knob("VKML_NORM_SUBGROUP", 1, 0, 1) != 0;
                const bool subgroup = subgroup_knob && device.caps().subgroup_arithmetic;
                op.coop_ = &device.pipeline(
                    {.shader = detail::shader_for(device, name, subgroup ? "norm_coop_sg" : "norm_coop", dt),
                     .bindings = 5,
                     .push_constant_bytes = push_bytes,
                     .workgroup = {coop_wg, 1, 1},
                     .specialization = {m, l.param_groups, l.param_div, l.has_bias, act, p, c, false, unit,
                                        cached, spins, ticket}});
                op.cached_units_ = cached;
                // Two counters for the dispatch and two per group, then (n, mean, m2) per workgroup;
                // zero to begin with (the kernel leaves them so).
                const uint64_t words = 2 + l.groups * 2 + l.groups * partials * 3;
                op.sync_ =
                    gpu::Buffer(device, {.size = words * 4, .name = std::string(name) + " moments exchange"});
                const std::vector<uint32_t> zero(words, 0);
                gpu::upload(device, op.sync_.range(), std::as_bytes(std::span<const uint32_t>(zero)));
            } else if (vec) {
                op.moments_vec_ = moments(true);
                op.apply_vec_ = apply(true);
            }
            // (n, mean, m2) per workgroup, in fp32.
            op.scratch_bytes_ = l.groups * partials * 3 * sizeof(float);
        }
        op.grid_ = grid_for(device, name, l.groups * partials);

        op.push_.assign(push_words, 0);
        op.push_[0] = detail::norm::float_bits(l.epsilon);
        op.push_[1] = detail::norm::float_bits(l.activation.alpha);
        op.push_[2] = detail::norm::float_bits(l.activation.beta);
        op.push_[3] = uint32_t(l.groups);
        std::copy(l.dims.begin(), l.dims.end(), op.push_.begin() + 4);
        std::copy(l.scale_strides.begin(), l.scale_strides.end(), op.push_.begin() + 10);
        std::copy(l.bias_strides.begin(), l.bias_strides.end(), op.push_.begin() + 16);
    }
};

void GroupedNormalization::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                       std::span<const Tensor> outputs,
                                       const gpu::BufferRange& scratch) const {
    const gpu::BufferRange x = inputs[0].range(), scale = inputs[1].range();
    // Without B the kernel never reads its bias binding; scale stands in so the binding is valid.
    const gpu::BufferRange bias = has_bias_ ? inputs[2].range() : scale;
    const gpu::BufferRange y = outputs[0].range();
    std::array<gpu::BufferRange, 7> b{x, scale, bias, y};
    size_t n = 4;
    const bool vec = x.offset % 16 == 0 && y.offset % 16 == 0; // the vec4 views start on a vector
    if (partials_ == 1) {
        if (stats_outputs_) b[n++] = outputs[1].range(), b[n++] = outputs[2].range();
        cmd.dispatch(vec && single_vec_ ? *single_vec_ : *single_, std::span(b.data(), n), push_.data(),
                     uint32_t(push_.size() * 4), grid_);
        return;
    }
    if (coop_ && vec) {
        b[n++] = sync_.range();
        cmd.dispatch(*coop_, std::span(b.data(), n), push_.data(), uint32_t(push_.size() * 4), grid_);
        return;
    }
    const gpu::BufferRange part{scratch.buffer, scratch.offset, scratch_bytes_};
    const std::array<gpu::BufferRange, 2> mb{x, part};
    cmd.dispatch(vec && moments_vec_ ? *moments_vec_ : *moments_, mb, push_.data(),
                 uint32_t(push_.size() * 4), grid_);
    gpu::barrier::compute_to_compute(cmd); // stage 2 reads every partial of its group
    b[n++] = part;
    if (stats_outputs_) b[n++] = outputs[1].range(), b[n++] = outputs[2].range();
    cmd.dispatch(vec && apply_vec_ ? *apply_vec_ : *apply_, std::span(b.data(), n), push_.data(),
                 uint32_t(push_.size() * 4), grid_);
}

std::unique_ptr<InstanceNormalization> InstanceNormalization::create(gpu::Device& device,
                                                                     const InstanceNormalizationDesc& desc) {
    const char* name = "InstanceNormalization";
    const TensorDesc& in = desc.input;
    detail::require_float(name, "input", in);
    if (in.shape.rank() < 3)
        fail(name, "input", "expected (N, C, D1, ...) of rank >= 3, got " + in.shape.str());
    const int64_t channels = in.shape[1];
    detail::norm::check_vector(name, "scale", desc.scale, channels, in);
    detail::norm::check_vector(name, "bias", desc.bias, channels, in);

    GroupLayout l;
    l.op = name;
    l.input = in;
    l.groups = uint64_t(in.shape[0] * channels);
    l.m = uint64_t(detail::norm::dims_product(in.shape, 2, in.shape.rank()));
    // One scale per plane: ((g % C) * m + i) / m = g % C.
    l.param_groups = detail::to_u32(name, "scale", channels);
    l.param_div = detail::to_u32(name, "input", int64_t(l.m));
    l.epsilon = desc.epsilon;
    l.activation = desc.activation;
    l.partials = desc.partials;
    l.split = desc.split;

    auto op = std::unique_ptr<InstanceNormalization>(new InstanceNormalization(device));
    GroupedNormalizationBuilder::build(*op, device, l);
    op->inputs_ = {in, desc.scale, desc.bias};
    op->outputs_ = {in};
    return op;
}

namespace {

// Fills `strides` (padded in front to 6 dims) with the strides of `param` read as `x`'s shape, and
// returns whether they are those of a tensor shaped x[axis:] (the fast per-element path). Fails
// when `param` does not broadcast unidirectionally to `x`.
bool param_strides(const char* op, const std::string& field, const TensorDesc& param, const TensorDesc& x,
                   size_t axis, std::array<uint32_t, 6>& strides) {
    const Shape& ps = param.shape;
    const Shape& xs = x.shape;
    if (param.dtype != x.dtype)
        fail(op, field,
             std::string("must have the input's dtype ") + gpu::dtype_name(x.dtype) + ", is " +
                 gpu::dtype_name(param.dtype));
    bool ok = ps.rank() <= xs.rank();
    for (size_t i = 0; ok && i < ps.rank(); ++i) {
        const int64_t pd = ps[ps.rank() - 1 - i], xd = xs[xs.rank() - 1 - i];
        ok = pd == xd || pd == 1;
    }
    if (!ok) fail(op, field, "shape " + ps.str() + " does not broadcast to the input's " + xs.str());
    const auto bs = detail::broadcast_strides(ps, xs);
    const auto own = detail::contiguous_strides(xs);
    const size_t pad = 6 - xs.rank();
    bool per_element = true;
    for (size_t d = 0; d < xs.rank(); ++d) {
        strides[pad + d] = uint32_t(bs[d]);
        if (xs[d] == 1) continue; // any stride reads the same element
        per_element = per_element && (d < axis ? bs[d] == 0 : bs[d] == own[d]);
    }
    return per_element;
}

} // namespace

std::unique_ptr<LayerNormalization> LayerNormalization::create(gpu::Device& device,
                                                               const LayerNormalizationDesc& desc) {
    const char* name = "LayerNormalization";
    const TensorDesc& in = desc.input;
    detail::require_float(name, "input", in);
    if (in.shape.rank() < 1) fail(name, "input", "must have rank >= 1");
    const size_t axis = detail::normalize_axis(name, "axis", desc.axis, in.shape.rank());
    detail::norm::check_stash_type(name, desc.stash_type);

    GroupLayout l;
    l.op = name;
    l.input = in;
    l.groups = uint64_t(detail::norm::dims_product(in.shape, 0, axis));
    l.m = uint64_t(detail::norm::dims_product(in.shape, axis, in.shape.rank()));
    const bool scale_fast = param_strides(name, "scale", desc.scale, in, axis, l.scale_strides);
    bool bias_fast = true;
    if (desc.bias) bias_fast = param_strides(name, "bias", *desc.bias, in, axis, l.bias_strides);
    l.broadcast = !scale_fast || !bias_fast;
    for (size_t d = 0; d < in.shape.rank(); ++d) l.dims[6 - in.shape.rank() + d] = uint32_t(in.shape[d]);
    l.param_groups = 1; // per element of the row: index i
    l.param_div = 1;
    l.has_bias = desc.bias.has_value();
    l.stats_outputs = desc.stats_outputs;
    l.epsilon = desc.epsilon;
    l.activation = desc.activation;
    l.partials = desc.partials;
    l.split = desc.split;

    auto op = std::unique_ptr<LayerNormalization>(new LayerNormalization(device));
    GroupedNormalizationBuilder::build(*op, device, l);
    op->inputs_ = {in, desc.scale};
    if (desc.bias) op->inputs_.push_back(*desc.bias);
    op->outputs_ = {in};
    if (desc.stats_outputs) {
        Shape stats = in.shape;
        for (size_t d = axis; d < stats.rank(); ++d) stats[d] = 1;
        op->outputs_.push_back({stats, DType::f32});
        op->outputs_.push_back({stats, DType::f32});
    }
    return op;
}

std::unique_ptr<GroupNormalization> GroupNormalization::create(gpu::Device& device,
                                                               const GroupNormalizationDesc& desc) {
    const char* name = "GroupNormalization";
    const TensorDesc& in = desc.input;
    detail::require_float(name, "input", in);
    if (in.shape.rank() < 2)
        fail(name, "input", "expected (N, C, D1, ...) of rank >= 2, got " + in.shape.str());
    const int64_t channels = in.shape[1];
    if (desc.num_groups <= 0 || channels % desc.num_groups != 0)
        fail(name, "num_groups",
             std::to_string(desc.num_groups) + " does not divide the " + std::to_string(channels) +
                 " channels");
    detail::norm::check_stash_type(name, desc.stash_type);
    // Per channel (opset 21) or, when the lengths say so unambiguously, per group (opset 18).
    const bool per_group =
        desc.scale.shape.rank() == 1 && desc.scale.shape[0] == desc.num_groups && desc.num_groups != channels;
    const int64_t length = per_group ? desc.num_groups : channels;
    if (desc.scale.shape.rank() != 1 || (desc.scale.shape[0] != channels && !per_group))
        fail(name, "scale",
             "expected shape [" + std::to_string(channels) + "] (one per channel; opset 18's [num_groups] " +
                 "form is accepted too), got " + desc.scale.shape.str());
    detail::norm::check_vector(name, "scale", desc.scale, length, in);
    detail::norm::check_vector(name, "bias", desc.bias, length, in);

    const int64_t spatial = detail::norm::dims_product(in.shape, 2, in.shape.rank());
    GroupLayout l;
    l.op = name;
    l.input = in;
    l.groups = uint64_t(in.shape[0] * desc.num_groups);
    l.m = uint64_t(channels / desc.num_groups * spatial);
    // Per channel: ((g % G) * m + i) / spatial = g % G * C/G + i / spatial; per group: / m.
    l.param_groups = uint32_t(desc.num_groups);
    l.param_div = detail::to_u32(name, "input", per_group ? int64_t(l.m) : spatial);
    l.epsilon = desc.epsilon;
    l.activation = desc.activation;
    l.partials = desc.partials;
    l.split = desc.split;

    auto op = std::unique_ptr<GroupNormalization>(new GroupNormalization(device));
    GroupedNormalizationBuilder::build(*op, device, l);
    op->inputs_ = {in, desc.scale, desc.bias};
    op->outputs_ = {in};
    return op;
}

} // namespace vkml::ops
