// DFT (shaders/math/dft.comp).
#include "util.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/math.hpp"

namespace vkml::ops {

std::unique_ptr<Dft> Dft::create(gpu::Device& device, const DftDesc& desc) {
    detail::require_float("DFT", "input", desc.input);
    const Shape& in = desc.input.shape;
    if (in.rank() < 2 || (in[in.rank() - 1] != 1 && in[in.rank() - 1] != 2))
        fail("DFT", "input", "must be [..., 1] (real) or [..., 2] (complex), is " + in.str());
    const size_t ax = detail::normalize_axis("DFT", "axis", desc.axis, in.rank());
    if (ax == in.rank() - 1) fail("DFT", "axis", "must be a signal axis, not the last (real/imaginary) one");
    const int64_t n = in[ax];
    const int64_t L = desc.length == 0 ? n : desc.length;
    if (L < 1 || L > (int64_t(1) << 24))
        fail("DFT", "dft_length", "must be in [1, 2^24], is " + std::to_string(L));
    const int64_t n_out = desc.onesided ? L / 2 + 1 : L;
    std::vector<int64_t> out(in.dims().begin(), in.dims().end());
    out[ax] = n_out;
    out.back() = 2;
    const Shape out_shape = detail::shape_of("DFT", "output", out);
    if (out_shape.elements() > int64_t(UINT32_MAX) || in.elements() > int64_t(UINT32_MAX))
        fail("DFT", "input", "has more elements than 32-bit indices reach");
    int64_t inner = 1;
    for (size_t a = ax + 1; a + 1 < in.rank(); ++a) inner *= in[a];
    auto op = std::unique_ptr<Dft>(new Dft(device));
    op->push_ = {uint32_t(out_shape.elements() / 2), uint32_t(n), uint32_t(L), uint32_t(n_out), uint32_t(inner),
                 uint32_t(in[in.rank() - 1] == 2), desc.inverse ? 1u : 0u, 0u};
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, "DFT", "math_dft", desc.input.dtype),
                                      .bindings = 2,
                                      .push_constant_bytes = sizeof(op->push_),
                                      .workgroup = {64, 1, 1}});
    op->inputs_ = {desc.input};
    op->outputs_ = {{out_shape, desc.input.dtype}};
    return op;
}

void Dft::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                      const gpu::BufferRange&) const {
    if (push_[0] == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, uint64_t(push_[0]));
}

} // namespace vkml::ops
