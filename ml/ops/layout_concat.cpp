// Concat: up to 8 inputs per dispatch (shaders/layout/concat.comp), so a typical concat is one
// pass over the output instead of one dispatch per input.
#include <algorithm>

#include "layout_common.hpp"

namespace vkml::ops {

namespace {
constexpr size_t max_inputs_per_pass = 8;
}

std::unique_ptr<Concat> Concat::create(gpu::Device& device, const ConcatDesc& desc) {
    if (desc.inputs.empty()) fail("Concat", "inputs", "needs at least one input");
    const TensorDesc& first = desc.inputs[0];
    const size_t r = first.shape.rank();
    if (r == 0) fail("Concat", "inputs[0]", "must have rank 1 or more");
    const size_t a = detail::normalize_axis("Concat", "axis", desc.axis, r);
    int64_t total = 0;
    for (size_t i = 0; i < desc.inputs.size(); ++i) {
        const TensorDesc& in = desc.inputs[i];
        const std::string field = "inputs[" + std::to_string(i) + "]";
        if (in.dtype != first.dtype)
            fail("Concat", field,
                 std::string("is ") + gpu::dtype_name(in.dtype) + ", inputs[0] is " +
                     gpu::dtype_name(first.dtype));
        bool same = in.shape.rank() == r;
        for (size_t d = 0; same && d < r; ++d) same = d == a || in.shape[d] == first.shape[d];
        if (!same)
            fail("Concat", field,
                 in.shape.str() + " does not match inputs[0] " + first.shape.str() + " outside axis " +
                     std::to_string(a));
        total = detail::add_dims("Concat", field, total, in.shape[a]);
    }
    std::vector<int64_t> dims(first.shape.dims().begin(), first.shape.dims().end());
    dims[a] = total;
    const Shape out = detail::shape_of("Concat", "inputs", dims); // checks the new dimensions' product
    if (out.elements() > int64_t(UINT32_MAX) / int64_t(detail::layout_words(first.dtype)))
        fail("Concat", "output", "has more elements than 32-bit indices reach");
    int64_t outer = 1, inner = detail::layout_words(first.dtype);
    for (size_t d = 0; d < a; ++d) outer *= out[d];
    for (size_t d = a + 1; d < r; ++d) inner *= out[d];

    auto op = std::unique_ptr<Concat>(new Concat(device));
    // Rows of whole 16-byte units (a channel concat of f16 planes of 8k pixels): a unit per
    // invocation, when the tensors' offsets allow (record_impl checks; else the element pipeline).
    const uint64_t word_bytes = gpu::dtype_size(first.dtype) / uint64_t(detail::layout_words(first.dtype));
    const uint64_t unit_words = 16 / word_bytes;
    if (uint64_t(inner) % unit_words == 0) {
        op->unit_words_ = uint32_t(unit_words);
        op->vec_pipeline_ = &device.pipeline({.shader = detail::shader_for(device, "Concat", "layout_concat_v16", "i32"),
                                              .bindings = uint32_t(max_inputs_per_pass + 1),
                                              .push_constant_bytes = uint32_t(sizeof(Pass{}.push)),
                                              .workgroup = {256, 1, 1}});
    }
    op->pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, "Concat", "layout_concat", detail::layout_variant(first.dtype)),
         .bindings = uint32_t(max_inputs_per_pass + 1),
         .push_constant_bytes = uint32_t(sizeof(Pass{}.push)),
         .workgroup = {256, 1, 1}});
    int64_t row = 0;
    for (size_t i = 0; i < desc.inputs.size(); i += max_inputs_per_pass) {
        Pass pass;
        pass.first = uint32_t(i);
        pass.n = uint32_t(std::min(max_inputs_per_pass, desc.inputs.size() - i));
        pass.push[3] = pass.n;
        pass.push[4] = uint32_t(row);
        for (uint32_t j = 0; j < pass.n; ++j) {
            row += desc.inputs[i + j].shape[a];
            pass.push[5 + j] = uint32_t(row);
        }
        const int64_t span = row - int64_t(pass.push[4]);
        pass.count = uint32_t(outer * span * inner);
        pass.push[0] = pass.count;
        pass.push[1] = uint32_t(total);
        pass.push[2] = uint32_t(inner);
        if (pass.count) op->passes_.push_back(pass);
    }
    op->inputs_ = desc.inputs;
    op->outputs_ = {{out, first.dtype}};
    return op;
}

void Concat::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    for (size_t p = 0; p < passes_.size(); ++p) {
        const Pass& pass = passes_[p];
        // Every pass binds the whole output, so synchronization validation (rightly, as it cannot
        // know the passes write disjoint rows) wants them ordered.
        if (p) gpu::barrier::compute_to_compute(cmd);
        std::array<gpu::BufferRange, max_inputs_per_pass + 1> buffers;
        for (size_t j = 0; j < max_inputs_per_pass; ++j)
            buffers[j] = inputs[pass.first + (j < pass.n ? j : 0)].range();
        buffers[max_inputs_per_pass] = outputs[0].range();
        const bool aligned = vec_pipeline_ && std::all_of(buffers.begin(), buffers.end(), [](const gpu::BufferRange& b) {
                                 return b.offset % 16 == 0;
                             });
        if (aligned) {
            auto push = pass.push;
            push[0] /= unit_words_;
            push[2] /= unit_words_;
            detail::dispatch_1d(cmd, *vec_pipeline_, buffers, push, push[0]);
        } else {
            detail::dispatch_1d(cmd, *pipeline_, buffers, pass.push, pass.count);
        }
    }
}

} // namespace vkml::ops
