// LRN across channels: one element-wise pass, each invocation summing the squares of its window
// of channels (shaders/norm/lrn.comp). Windows are small (typically 5), so reading them again per
// element costs less than a separate pass for the squared sums.
#include <climits>

#include "norm_util.hpp"
#include "vkml/gpu/pipeline.hpp"

namespace vkml::ops {

namespace {
struct LrnPush {
    float alpha, beta, bias;
};
} // namespace

std::unique_ptr<LRN> LRN::create(gpu::Device& device, const LRNDesc& desc) {
    const char* name = "LRN";
    const TensorDesc& in = desc.input;
    detail::require_float(name, "input", in);
    if (in.shape.rank() < 2)
        fail(name, "input", "expected (N, C, D1, ...) of rank >= 2, got " + in.shape.str());
    if (desc.size < 1 || desc.size > INT_MAX)
        fail(name, "size", "must be >= 1 (it is required), got " + std::to_string(desc.size));
    for (auto [field, v] : {std::pair{"alpha", desc.alpha}, {"beta", desc.beta}, {"bias", desc.bias}})
        if (!std::isfinite(v)) fail(name, field, "must be finite");
    const uint32_t elements = detail::to_u32(name, "input", in.shape.elements());
    if (elements == 0) unsupported(name, "empty input " + to_string(in));

    auto op = std::unique_ptr<LRN>(new LRN(device));
    const uint32_t inner = uint32_t(detail::norm::dims_product(in.shape, 2, in.shape.rank()));
    op->pipeline_ =
        &device.pipeline({.shader = detail::shader_for(device, name, "norm_lrn", in.dtype),
                          .bindings = 2,
                          .push_constant_bytes = sizeof(LrnPush),
                          .workgroup = {128, 1, 1},
                          .specialization = {elements, uint32_t(in.shape[1]), inner, uint32_t(desc.size)}});
    op->elements_ = elements;
    op->alpha_ = desc.alpha;
    op->beta_ = desc.beta;
    op->bias_ = desc.bias;
    op->inputs_ = {in};
    op->outputs_ = {in};
    return op;
}

void LRN::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                      std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const std::array<gpu::BufferRange, 2> b{inputs[0].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, b, LrnPush{alpha_, beta_, bias_}, elements_);
}

} // namespace vkml::ops
