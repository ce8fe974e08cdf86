// BatchNormalization in inference mode: one element-wise pass with the per-channel statistics
// given as inputs (shaders/norm/batch_norm.comp).
#include "norm_util.hpp"
#include "vkml/gpu/pipeline.hpp"

namespace vkml::ops {

namespace {
struct BatchNormPush {
    float epsilon, alpha, beta;
};
} // namespace

std::unique_ptr<BatchNormalization> BatchNormalization::create(gpu::Device& device,
                                                               const BatchNormalizationDesc& desc) {
    const char* name = "BatchNormalization";
    const TensorDesc& in = desc.input;
    detail::require_float(name, "input", in);
    if (in.shape.rank() < 2)
        fail(name, "input", "expected (N, C, D1, ...) of rank >= 2, got " + in.shape.str());
    if (desc.training_mode == 1)
        unsupported(name, "training_mode 1 (batch statistics and running-mean outputs): only inference "
                          "(training_mode 0) is implemented");
    if (desc.training_mode != 0)
        fail(name, "training_mode", "must be 0 or 1, got " + std::to_string(desc.training_mode));
    detail::norm::check_epsilon(name, desc.epsilon);
    const int64_t channels = in.shape[1];
    detail::norm::check_vector(name, "scale", desc.scale, channels, in);
    detail::norm::check_vector(name, "bias", desc.bias, channels, in);
    detail::norm::check_vector(name, "input_mean", desc.input_mean, channels, in);
    detail::norm::check_vector(name, "input_var", desc.input_var, channels, in);
    const uint32_t elements = detail::to_u32(name, "input", in.shape.elements());
    if (elements == 0) unsupported(name, "empty input " + to_string(in));

    auto op = std::unique_ptr<BatchNormalization>(new BatchNormalization(device));
    const uint32_t inner = uint32_t(detail::norm::dims_product(in.shape, 2, in.shape.rank()));
    op->pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, name, "norm_batch", in.dtype),
         .bindings = 6,
         .push_constant_bytes = sizeof(BatchNormPush),
         .workgroup = {128, 1, 1},
         .specialization = {elements, uint32_t(channels), inner, uint32_t(desc.activation.kind)}});
    op->elements_ = elements;
    op->epsilon_ = desc.epsilon;
    op->activation_ = desc.activation;
    op->inputs_ = {in, desc.scale, desc.bias, desc.input_mean, desc.input_var};
    op->outputs_ = {in};
    return op;
}

void BatchNormalization::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                     std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const std::array<gpu::BufferRange, 6> b{inputs[0].range(), inputs[1].range(), inputs[2].range(),
                                            inputs[3].range(), inputs[4].range(), outputs[0].range()};
    const BatchNormPush push{epsilon_, activation_.alpha, activation_.beta};
    detail::dispatch_1d(cmd, *pipeline_, b, push, elements_);
}

} // namespace vkml::ops
