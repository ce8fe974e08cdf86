// Trilu (shaders/layout/trilu.comp).
#include <algorithm>

#include "layout_common.hpp"

namespace vkml::ops {

std::unique_ptr<Trilu> Trilu::create(gpu::Device& device, const TriluDesc& desc) {
    const Shape& in = desc.input.shape;
    if (in.rank() < 2) fail("Trilu", "input", "must have rank 2 or more, has shape " + in.str());
    const int64_t words = detail::layout_words(desc.input.dtype);
    if (in.elements() > int64_t(INT32_MAX) / words) fail("Trilu", "input", "has more elements than 32-bit indices reach");
    const int64_t rows = in[in.rank() - 2], cols = in[in.rank() - 1];
    // Beyond +-(rows + cols) every k keeps all or nothing: clamped so it fits 32 bits.
    const int64_t reach = rows + cols + 1;
    const int64_t k = std::clamp(desc.k, -reach, reach);
    auto op = std::unique_ptr<Trilu>(new Trilu(device));
    op->push_ = {int32_t(in.elements()), int32_t(rows), int32_t(cols), int32_t(k)};
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, "Trilu", "layout_trilu",
                                                                   detail::layout_variant(desc.input.dtype)),
                                      .bindings = 2,
                                      .push_constant_bytes = sizeof(op->push_),
                                      .workgroup = {256, 1, 1},
                                      .specialization = {uint32_t(words), desc.upper ? 1u : 0u}});
    op->inputs_ = {desc.input};
    op->outputs_ = {desc.input};
    return op;
}

void Trilu::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                        const gpu::BufferRange&) const {
    if (push_[0] == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, uint64_t(push_[0]));
}

} // namespace vkml::ops
