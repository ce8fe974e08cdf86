// BatchNormalization in training mode (shaders/norm/batch_training.comp).
#include <cmath>

#include "util.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/norm.hpp"

namespace vkml::ops {

std::unique_ptr<BatchNormTraining> BatchNormTraining::create(gpu::Device& device, const BatchNormTrainingDesc& desc) {
    const char* name = "BatchNormalization";
    detail::require_float(name, "input", desc.input);
    const Shape& in = desc.input.shape;
    if (in.rank() < 2) fail(name, "input", "must have rank 2 or more, is " + in.str());
    const int64_t C = in[1];
    for (const auto& [field, t] : {std::pair{"scale", &desc.scale}, std::pair{"bias", &desc.bias},
                                   std::pair{"input_mean", &desc.input_mean}, std::pair{"input_var", &desc.input_var}})
        if (t->shape != Shape{C} || t->dtype != desc.input.dtype)
            fail(name, field, "must be [" + std::to_string(C) + "] of the input's dtype, is " + t->shape.str());
    if (!std::isfinite(desc.epsilon) || !std::isfinite(desc.momentum)) fail(name, "epsilon", "must be finite");
    if (in.elements() > int64_t(UINT32_MAX)) fail(name, "input", "has more elements than 32-bit indices reach");
    auto op = std::unique_ptr<BatchNormTraining>(new BatchNormTraining(device));
    const int64_t inner = C == 0 || in[0] == 0 ? 0 : in.elements() / (in[0] * C);
    op->push_ = {uint32_t(C), uint32_t(in[0]), uint32_t(inner), desc.epsilon, desc.momentum};
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, name, "norm_batch_training", desc.input.dtype),
                                      .bindings = 8,
                                      .push_constant_bytes = sizeof(Push),
                                      .workgroup = {64, 1, 1}});
    op->inputs_ = {desc.input, desc.scale, desc.bias, desc.input_mean, desc.input_var};
    op->outputs_ = {desc.input, {Shape{C}, desc.input.dtype}, {Shape{C}, desc.input.dtype}};
    return op;
}

void BatchNormTraining::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                    std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    if (push_.C == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(),  inputs[1].range(),  inputs[2].range(),
                                        inputs[3].range(),  inputs[4].range(),  outputs[0].range(),
                                        outputs[1].range(), outputs[2].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, uint64_t(push_.C));
}

} // namespace vkml::ops
