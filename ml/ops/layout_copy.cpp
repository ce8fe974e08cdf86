// The strided-copy kernel and the ops that are nothing but a view of their input: Transpose,
// Slice, Expand, Tile, Split, DepthToSpace and SpaceToDepth.
#include <algorithm>
#include <bit>
#include <climits>
#include <numeric>

#include "layout_common.hpp"

namespace vkml::ops {
namespace detail {

const char* layout_variant(DType dtype) {
    switch (dtype) {
    case DType::f16:
        return "f16";
    case DType::u8:
        return "u8";
    default:
        return "i32";
    }
}

uint32_t layout_words(DType dtype) {
    return dtype == DType::i64 ? 2 : 1;
}

void layout_require_index(const char* op, const std::string& field, const TensorDesc& index) {
    if (index.dtype != DType::i32 && index.dtype != DType::i64)
        fail(op, field, std::string("must be i32 or i64, is ") + gpu::dtype_name(index.dtype));
}

std::string layout_list(std::span<const int64_t> values) {
    std::string s = "[";
    for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
    return s + "]";
}

std::vector<int64_t> layout_strides(const Shape& shape) {
    const auto s = contiguous_strides(shape);
    return {s.begin(), s.begin() + ptrdiff_t(shape.rank())};
}

LayoutCopyPlan make_layout_copy(gpu::Device& device, const char* op, DType dtype,
                                const LayoutStridedView& view, const Activation& activation) {
    if (activation.kind != ActivationKind::None && dtype != DType::f32 && dtype != DType::f16)
        fail(op, "activation",
             std::string(activation_name(activation.kind)) + " needs f32 or f16 values, the input is " +
                 gpu::dtype_name(dtype));
    LayoutStridedView v = view;
    if (dtype == DType::i64) {
        // An i64 element is two words: scale every stride and add the word as the innermost dim.
        for (int64_t& s : v.strides) s = mul_dims(op, "input", s, 2);
        v.base = mul_dims(op, "input", v.base, 2);
        v.add(2, 1);
    }
    // Merge dims the view walks contiguously and drop size-1 dims, so the kernel's loop is short.
    LayoutStridedView m;
    m.base = v.base;
    for (size_t k = 0; k < v.dims.size(); ++k) {
        const int64_t d = v.dims[k], s = v.strides[k], mod = v.mods[k];
        if (d == 1) continue;
        if (!m.dims.empty() && m.mods.back() == m.dims.back() && mod == d && m.strides.back() == s * d) {
            m.dims.back() = mul_dims(op, "output", m.dims.back(), d);
            m.mods.back() = m.dims.back();
            m.strides.back() = s;
        } else {
            m.add(d, s, mod);
        }
    }
    LayoutCopyPlan plan;
    for (int64_t d : m.dims)
        if (d == 0) return plan; // an empty output: nothing to dispatch
    int64_t count = 1;
    for (int64_t d : m.dims)
        if (__builtin_mul_overflow(count, d, &count) || count > int64_t(UINT32_MAX))
            fail(op, "output", "has more elements than 32-bit indices reach");
    int64_t lo = m.base, hi = m.base;
    for (size_t k = 0; k < m.dims.size(); ++k) {
        int64_t reach = 0;
        if (__builtin_mul_overflow(std::min(m.dims[k], m.mods[k]) - 1, m.strides[k], &reach) ||
            __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi))
            fail(op, "input", "offsets do not fit the 32-bit indices vkml's kernels use");
    }
    if (lo < 0 || hi > int64_t(INT32_MAX))
        fail(op, "input", "offsets do not fit the 32-bit indices vkml's kernels use");
    if (m.dims.size() > 8) unsupported(op, "the view needs more than 8 dimensions after merging");
    plan.count = uint32_t(count);
    plan.push[0] = plan.count;
    plan.push[1] = uint32_t(int32_t(m.base));
    plan.push[2] = uint32_t(m.dims.size());
    // The kernel takes dimensions innermost first.
    const size_t r = m.dims.size();
    for (size_t k = 0; k < r; ++k) {
        plan.push[4 + k] = uint32_t(m.dims[r - 1 - k]);
        plan.push[12 + k] = uint32_t(int32_t(m.strides[r - 1 - k]));
        plan.push[20 + k] = uint32_t(m.mods[r - 1 - k]);
    }
    // The shape as specialization constants (1 + the push words): one pipeline per shape, with
    // constant divisors.
    std::vector<uint32_t> spec{1};
    spec.insert(spec.end(), plan.push.begin(), plan.push.end());
    for (size_t k = r; k < 8; ++k) spec[1 + 4 + k] = spec[1 + 20 + k] = 1; // unused dims: 1, not 0
    spec.push_back(uint32_t(activation.kind));                             // constants 29..31
    spec.push_back(std::bit_cast<uint32_t>(activation.alpha));
    spec.push_back(std::bit_cast<uint32_t>(activation.beta));
    plan.pipeline = &device.pipeline({.shader = shader_for(device, op, "layout_copy", layout_variant(dtype)),
                                      .bindings = 2,
                                      .push_constant_bytes = sizeof(plan.push),
                                      .workgroup = {256, 1, 1},
                                      .specialization = spec});
    return plan;
}

void record_layout_copy(gpu::CommandBuffer& cmd, const LayoutCopyPlan& plan, const Tensor& in,
                        const Tensor& out) {
    if (plan.count == 0) return;
    const gpu::BufferRange buffers[] = {in.range(), out.range()};
    dispatch_1d(cmd, *plan.pipeline, buffers, plan.push, plan.count);
}

namespace {

Shape make_shape(const std::vector<int64_t>& dims) {
    return Shape(std::span<const int64_t>(dims));
}

void require_rank(const char* op, const std::string& field, const TensorDesc& desc, size_t rank) {
    if (desc.shape.rank() != rank)
        fail(op, field, "must have rank " + std::to_string(rank) + ", is " + to_string(desc));
}

} // namespace
} // namespace detail

using detail::LayoutStridedView;

// --- Transpose ---------------------------------------------------------------------------------

std::unique_ptr<Transpose> Transpose::create(gpu::Device& device, const TransposeDesc& desc) {
    const Shape& in = desc.input.shape;
    const size_t r = in.rank();
    std::vector<int64_t> perm = desc.perm;
    if (perm.empty())
        for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(r - 1 - i));
    if (perm.size() != r)
        fail("Transpose", "perm",
             "has " + std::to_string(perm.size()) + " values for rank " + std::to_string(r));
    std::vector<bool> seen(r, false);
    for (int64_t p : perm) {
        if (p < 0 || p >= int64_t(r) || seen[size_t(p)])
            fail("Transpose", "perm",
                 detail::layout_list(perm) + " is not a permutation of 0.." + std::to_string(r - 1));
        seen[size_t(p)] = true;
    }
    const auto strides = detail::layout_strides(in);
    LayoutStridedView v;
    std::vector<int64_t> out;
    for (int64_t p : perm) {
        v.add(in[size_t(p)], strides[size_t(p)]);
        out.push_back(in[size_t(p)]);
    }
    auto op = std::unique_ptr<Transpose>(new Transpose(device));
    op->plan_ = detail::make_layout_copy(device, "Transpose", desc.input.dtype, v, desc.activation);
    op->inputs_ = {desc.input};
    op->outputs_ = {{detail::make_shape(out), desc.input.dtype}};
    return op;
}

void Transpose::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                            std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    detail::record_layout_copy(cmd, plan_, inputs[0], outputs[0]);
}

// --- Slice -------------------------------------------------------------------------------------

std::unique_ptr<Slice> Slice::create(gpu::Device& device, const SliceDesc& desc) {
    const Shape& in = desc.input.shape;
    const size_t r = in.rank();
    const size_t n = desc.starts.size();
    if (desc.ends.size() != n)
        fail("Slice", "ends",
             "has " + std::to_string(desc.ends.size()) + " values, starts has " + std::to_string(n));
    if (!desc.axes.empty() && desc.axes.size() != n)
        fail("Slice", "axes",
             "has " + std::to_string(desc.axes.size()) + " values, starts has " + std::to_string(n));
    if (!desc.steps.empty() && desc.steps.size() != n)
        fail("Slice", "steps",
             "has " + std::to_string(desc.steps.size()) + " values, starts has " + std::to_string(n));
    if (n > r) fail("Slice", "starts", "has " + std::to_string(n) + " values for rank " + std::to_string(r));

    std::vector<int64_t> start(r, 0), len(in.dims().begin(), in.dims().end()), step(r, 1);
    std::vector<bool> seen(r, false);
    for (size_t i = 0; i < n; ++i) {
        const size_t a = desc.axes.empty() ? i : detail::normalize_axis("Slice", "axes", desc.axes[i], r);
        if (seen[a])
            fail("Slice", "axes", detail::layout_list(desc.axes) + " repeats axis " + std::to_string(a));
        seen[a] = true;
        int64_t s = desc.steps.empty() ? 1 : desc.steps[i];
        if (s == 0) fail("Slice", "steps", "must not be 0");
        const int64_t dim = in[a];
        // A step as long as the axis takes one element, as any longer one does: clamped, so that
        // huge steps (INT64_MIN included) cannot overflow the count or the stride below.
        s = std::clamp<int64_t>(s, -std::max<int64_t>(dim, 1), std::max<int64_t>(dim, 1));
        step[a] = s;
        if (dim == 0) continue; // stays empty
        int64_t b = desc.starts[i], e = desc.ends[i];
        if (b < 0) b += dim;
        if (e < 0) e += dim;
        if (s > 0) {
            b = std::clamp<int64_t>(b, 0, dim);
            e = std::clamp<int64_t>(e, 0, dim);
            len[a] = e > b ? (e - b + s - 1) / s : 0;
        } else {
            b = std::clamp<int64_t>(b, 0, dim - 1);
            e = std::clamp<int64_t>(e, -1, dim - 1);
            len[a] = b > e ? (b - e + (-s) - 1) / (-s) : 0;
        }
        start[a] = len[a] ? b : 0;
    }
    const auto strides = detail::layout_strides(in);
    LayoutStridedView v;
    for (size_t a = 0; a < r; ++a) {
        v.base += start[a] * strides[a];
        v.add(len[a], step[a] * strides[a]);
    }
    auto op = std::unique_ptr<Slice>(new Slice(device));
    op->plan_ = detail::make_layout_copy(device, "Slice", desc.input.dtype, v);
    op->inputs_ = {desc.input};
    op->outputs_ = {{detail::make_shape(len), desc.input.dtype}};
    return op;
}

void Slice::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                        std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    detail::record_layout_copy(cmd, plan_, inputs[0], outputs[0]);
}

// --- Expand ------------------------------------------------------------------------------------

std::unique_ptr<Expand> Expand::create(gpu::Device& device, const ExpandDesc& desc) {
    if (desc.shape.size() > gpu::max_rank)
        fail("Expand", "shape", detail::layout_list(desc.shape) + " exceeds vkml's maximum rank of 6");
    for (int64_t d : desc.shape)
        if (d < 0) fail("Expand", "shape", detail::layout_list(desc.shape) + " has a negative dimension");
    const Shape out = detail::broadcast_shapes("Expand", desc.input.shape, detail::make_shape(desc.shape));
    const auto strides = detail::broadcast_strides(desc.input.shape, out);
    LayoutStridedView v;
    for (size_t i = 0; i < out.rank(); ++i) v.add(out[i], strides[i]);
    auto op = std::unique_ptr<Expand>(new Expand(device));
    op->plan_ = detail::make_layout_copy(device, "Expand", desc.input.dtype, v);
    op->inputs_ = {desc.input};
    op->outputs_ = {{out, desc.input.dtype}};
    return op;
}

void Expand::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    detail::record_layout_copy(cmd, plan_, inputs[0], outputs[0]);
}

// --- Tile --------------------------------------------------------------------------------------

std::unique_ptr<Tile> Tile::create(gpu::Device& device, const TileDesc& desc) {
    const Shape& in = desc.input.shape;
    if (desc.repeats.size() != in.rank())
        fail("Tile", "repeats",
             "has " + std::to_string(desc.repeats.size()) + " values for rank " + std::to_string(in.rank()));
    const auto strides = detail::layout_strides(in);
    LayoutStridedView v;
    std::vector<int64_t> out;
    for (size_t i = 0; i < in.rank(); ++i) {
        if (desc.repeats[i] < 0)
            fail("Tile", "repeats", detail::layout_list(desc.repeats) + " has a negative value");
        out.push_back(detail::mul_dims("Tile", "repeats", in[i], desc.repeats[i]));
        // Output coordinate o reads input coordinate o mod in[i].
        v.add(out.back(), strides[i], std::max<int64_t>(in[i], 1));
    }
    auto op = std::unique_ptr<Tile>(new Tile(device));
    op->plan_ = detail::make_layout_copy(device, "Tile", desc.input.dtype, v);
    op->inputs_ = {desc.input};
    op->outputs_ = {{detail::make_shape(out), desc.input.dtype}};
    return op;
}

void Tile::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                       std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    detail::record_layout_copy(cmd, plan_, inputs[0], outputs[0]);
}

// --- Split -------------------------------------------------------------------------------------

std::unique_ptr<Split> Split::create(gpu::Device& device, const SplitDesc& desc) {
    const Shape& in = desc.input.shape;
    if (in.rank() == 0) fail("Split", "input", "must have rank 1 or more");
    const size_t a = detail::normalize_axis("Split", "axis", desc.axis, in.rank());
    const int64_t dim = in[a];
    std::vector<int64_t> sizes = desc.split;
    if (!sizes.empty() && desc.num_outputs != 0)
        fail("Split", "num_outputs", "give either split or num_outputs, not both");
    if (sizes.empty()) {
        if (desc.num_outputs <= 0) fail("Split", "num_outputs", "must be positive when split is not given");
        if (desc.num_outputs > dim)
            fail("Split", "num_outputs",
                 std::to_string(desc.num_outputs) + " outputs exceed the axis length " + std::to_string(dim));
        // ONNX: chunks of ceil(dim / n); the last one takes what remains.
        const int64_t chunk = (dim + desc.num_outputs - 1) / desc.num_outputs;
        for (int64_t i = 0, left = dim; i < desc.num_outputs; ++i, left -= chunk)
            sizes.push_back(std::min(chunk, left));
        if (sizes.back() <= 0)
            fail("Split", "num_outputs",
                 std::to_string(desc.num_outputs) + " chunks of " + std::to_string(chunk) +
                     " overrun axis length " + std::to_string(dim));
    }
    int64_t sum = 0;
    for (int64_t s : sizes) {
        if (s < 0) fail("Split", "split", detail::layout_list(sizes) + " has a negative size");
        sum += s;
    }
    if (sum != dim)
        fail("Split", "split",
             detail::layout_list(sizes) + " sums to " + std::to_string(sum) + ", the axis length is " +
                 std::to_string(dim));

    auto op = std::unique_ptr<Split>(new Split(device));
    const auto strides = detail::layout_strides(in);
    int64_t offset = 0;
    for (int64_t s : sizes) {
        LayoutStridedView v;
        v.base = offset * strides[a];
        std::vector<int64_t> out(in.dims().begin(), in.dims().end());
        out[a] = s;
        for (size_t i = 0; i < in.rank(); ++i) v.add(out[i], strides[i]);
        op->plans_.push_back(detail::make_layout_copy(device, "Split", desc.input.dtype, v));
        op->outputs_.push_back({detail::make_shape(out), desc.input.dtype});
        offset += s;
    }
    op->inputs_ = {desc.input};
    return op;
}

void Split::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                        std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    // Each output is written by its own dispatch; they only share the (read-only) input.
    for (size_t i = 0; i < plans_.size(); ++i)
        detail::record_layout_copy(cmd, plans_[i], inputs[0], outputs[i]);
}

// --- DepthToSpace / SpaceToDepth ---------------------------------------------------------------

std::unique_ptr<DepthToSpace> DepthToSpace::create(gpu::Device& device, const DepthToSpaceDesc& desc) {
    detail::require_rank("DepthToSpace", "input", desc.input, 4);
    const int64_t b = desc.blocksize;
    if (b <= 0) fail("DepthToSpace", "blocksize", "must be positive, is " + std::to_string(b));
    const bool dcr = desc.mode == "DCR";
    if (!dcr && desc.mode != "CRD") fail("DepthToSpace", "mode", "'" + desc.mode + "' is not DCR or CRD");
    const Shape& in = desc.input.shape;
    const int64_t n = in[0], c = in[1], h = in[2], w = in[3];
    if (b > 65536) fail("DepthToSpace", "blocksize", std::to_string(b) + " is larger than 65536");
    if (c % (b * b) != 0)
        fail("DepthToSpace", "blocksize",
             "channels " + std::to_string(c) +
                 " are not a multiple of blocksize² = " + std::to_string(b * b));
    const int64_t oc = c / (b * b);
    // The output viewed as [N, C', H, b1, W, b2]; DCR reads channel (b1 * b + b2) * C' + c',
    // CRD reads channel c' * b² + b1 * b + b2.
    // Checked: a zero dimension lets the others be huge without the input's count overflowing.
    auto mul = [](int64_t x, int64_t y) { return detail::mul_dims("DepthToSpace", "input", x, y); };
    const int64_t hw = mul(h, w), bb = b * b;
    LayoutStridedView v;
    v.add(n, mul(c, hw));
    v.add(oc, dcr ? hw : mul(bb, hw));
    v.add(h, w);
    v.add(b, dcr ? mul(b, mul(oc, hw)) : mul(b, hw));
    v.add(w, 1);
    v.add(b, dcr ? mul(oc, hw) : hw);
    auto op = std::unique_ptr<DepthToSpace>(new DepthToSpace(device));
    op->plan_ = detail::make_layout_copy(device, "DepthToSpace", desc.input.dtype, v);
    op->inputs_ = {desc.input};
    op->outputs_ = {{Shape{n, oc, mul(h, b), mul(w, b)}, desc.input.dtype}};
    // The row kernel (layout/depth_to_space.comp), for rows of whole units (16, 8 or 4 bytes),
    // 8-, 16- and 32-bit elements, blocksizes up to 4. Where b divides the unit's words (b = 2 on
    // 8- or 16-byte units, b = 4 on 16-byte ones) each invocation stores K whole output units,
    // neighbouring invocations neighbouring units, each assembled from a sub-unit of every one of
    // the b input rows; else it reads one unit of each of the b input rows and writes the b units
    // of the output row they make (stores b units apart across invocations). The strided copy
    // took 2-byte loads and a six-dimensional index per element (DepthToSpace x2 12ch @ 960x540
    // f16: 42 % of the copy bandwidth on an H100); the unit-per-row kernel reached 54 % on the
    // H200.
    const DType dt = desc.input.dtype;
    const uint32_t bits = dt == DType::u8 ? 8 : dt == DType::f16 ? 16 : dt == DType::i64 ? 0 : 32;
    const int64_t count_in = mul(mul(n, c), hw);
    if (bits != 0 && b >= 2 && b <= 4 && count_in > 0 && count_in <= int64_t(UINT32_MAX)) {
        const uint32_t per_word = 32 / bits;
        for (uint32_t words : {4u, 2u, 1u}) {
            const int64_t per_unit = int64_t(words * per_word);
            if (w % per_unit != 0) continue;
            const int64_t upr = w / per_unit;
            const int64_t units = count_in / per_unit; // of the input and of the output
            const bool split = words % uint32_t(b) == 0;
            // Up to 4 output units per invocation where there are enough: the grid then fits the
            // GPU in about one wave, each invocation with 4 b loads in flight.
            // k divides the units: there are n c H (W / unit) of them and b² >= 4 divides c.
            const uint32_t k = !split ? 1u : units >= 65536 ? 4u : units >= 8192 ? 2u : 1u;
            const int64_t invocations = split ? units / k : units / b; // else b input units each
            op->unit_bytes_ = words * 4;
            op->split_units_ = split ? k : 0;
            op->rows_count_ = uint32_t(invocations);
            op->rows_pipeline_ = &device.pipeline(
                {.shader = detail::shader_for(device, "DepthToSpace", "layout_depth_to_space", "i32"),
                 .bindings = 2,
                 .workgroup = {128, 1, 1},
                 .specialization = {op->rows_count_, bits, words, uint32_t(b), dcr ? 1u : 0u, uint32_t(oc),
                                    uint32_t(h), uint32_t(upr), split, k}});
            break;
        }
    }
    return op;
}

void DepthToSpace::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                               std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    if (rows_pipeline_ && buffers[0].offset % unit_bytes_ == 0 && buffers[1].offset % unit_bytes_ == 0) {
        cmd.dispatch(*rows_pipeline_, buffers, nullptr, 0, cmd.groups_for(*rows_pipeline_, rows_count_));
        return;
    }
    detail::record_layout_copy(cmd, plan_, inputs[0], outputs[0]);
}

std::unique_ptr<SpaceToDepth> SpaceToDepth::create(gpu::Device& device, const SpaceToDepthDesc& desc) {
    detail::require_rank("SpaceToDepth", "input", desc.input, 4);
    const int64_t b = desc.blocksize;
    if (b <= 0) fail("SpaceToDepth", "blocksize", "must be positive, is " + std::to_string(b));
    if (b > 65536) fail("SpaceToDepth", "blocksize", std::to_string(b) + " is larger than 65536");
    const Shape& in = desc.input.shape;
    const int64_t n = in[0], c = in[1], h = in[2], w = in[3];
    if (h % b != 0 || w % b != 0)
        fail("SpaceToDepth", "blocksize",
             "height " + std::to_string(h) + " and width " + std::to_string(w) + " must be multiples of " +
                 std::to_string(b));
    // The output viewed as [N, b1, b2, C, H', W']: channel (b1 * b + b2) * C + c reads
    // input (c, h' * b + b1, w' * b + b2).
    auto mul = [](int64_t x, int64_t y) { return detail::mul_dims("SpaceToDepth", "input", x, y); };
    LayoutStridedView v;
    v.add(n, mul(c, mul(h, w)));
    v.add(b, w);
    v.add(b, 1);
    v.add(c, mul(h, w));
    v.add(h / b, mul(b, w));
    v.add(w / b, b);
    auto op = std::unique_ptr<SpaceToDepth>(new SpaceToDepth(device));
    op->plan_ = detail::make_layout_copy(device, "SpaceToDepth", desc.input.dtype, v);
    op->inputs_ = {desc.input};
    op->outputs_ = {{Shape{n, mul(c, b * b), h / b, w / b}, desc.input.dtype}};
    return op;
}

void SpaceToDepth::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                               std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    detail::record_layout_copy(cmd, plan_, inputs[0], outputs[0]);
}

} // namespace vkml::ops
