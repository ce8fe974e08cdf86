// Adagrad, Momentum and Adam steps (shaders/train/optimizer.comp), one dispatch per tensor.
#include <cmath>

#include "util.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/train.hpp"

namespace vkml::ops {

const char* Optimizer::type() const {
    return kind_ == OptimizerKind::Adagrad ? "Adagrad" : kind_ == OptimizerKind::Momentum ? "Momentum" : "Adam";
}

std::unique_ptr<Optimizer> Optimizer::create(gpu::Device& device, const OptimizerDesc& desc) {
    const char* name = desc.kind == OptimizerKind::Adagrad    ? "Adagrad"
                       : desc.kind == OptimizerKind::Momentum ? "Momentum"
                       : desc.kind == OptimizerKind::Adam     ? "Adam"
                                                              : nullptr;
    if (!name) fail("Optimizer", "kind", "unknown kind");
    if (desc.r.dtype != DType::f32 || desc.r.shape.elements() != 1) fail(name, "r", "must be one f32 value");
    if (desc.t.dtype != DType::i32 || desc.t.shape.elements() != 1) fail(name, "t", "must be one i32 value");
    if (desc.x.empty()) fail(name, "x", "needs at least one tensor to optimize");
    for (const TensorDesc& x : desc.x) {
        if (x.dtype != DType::f32) fail(name, "x", "tensors must be f32");
        if (x.shape.elements() > int64_t(UINT32_MAX)) fail(name, "x", "has more elements than 32-bit indices reach");
    }
    for (float v : {desc.decay_factor, desc.epsilon, desc.norm_coefficient, desc.norm_coefficient_post, desc.alpha, desc.beta})
        if (!std::isfinite(v)) fail(name, "attributes", "must be finite");
    auto op = std::unique_ptr<Optimizer>(new Optimizer(device));
    op->kind_ = desc.kind;
    op->tensors_ = desc.x.size();
    op->states_ = desc.kind == OptimizerKind::Adam ? 2 : 1;
    const uint32_t mode = desc.kind == OptimizerKind::Adagrad ? 0u
                          : desc.kind == OptimizerKind::Adam  ? 3u
                          : desc.nesterov                     ? 2u
                                                              : 1u;
    op->push_ = {0, mode, desc.decay_factor, desc.epsilon, desc.norm_coefficient, desc.norm_coefficient_post,
                 desc.alpha, desc.beta};
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, name, "train_optimizer", DType::f32),
                                      .bindings = 9,
                                      .push_constant_bytes = sizeof(Push),
                                      .workgroup = {256, 1, 1}});
    op->inputs_ = {desc.r, desc.t};
    for (size_t group = 0; group < 2 + op->states_; ++group) op->inputs_.insert(op->inputs_.end(), desc.x.begin(), desc.x.end());
    for (size_t group = 0; group < 1 + op->states_; ++group) op->outputs_.insert(op->outputs_.end(), desc.x.begin(), desc.x.end());
    return op;
}

void Optimizer::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                            const gpu::BufferRange&) const {
    const size_t n = tensors_;
    for (size_t k = 0; k < n; ++k) {
        Push p = push_;
        p.n = uint32_t(outputs[k].elements());
        if (p.n == 0) continue;
        const bool adam = states_ == 2;
        const gpu::BufferRange buffers[] = {inputs[0].range(),
                                            inputs[1].range(),
                                            inputs[2 + k].range(),
                                            inputs[2 + n + k].range(),
                                            inputs[2 + 2 * n + k].range(),
                                            inputs[2 + (adam ? 3 : 2) * n + k].range(),
                                            outputs[k].range(),
                                            outputs[n + k].range(),
                                            outputs[(adam ? 2 : 1) * n + k].range()};
        detail::dispatch_1d(cmd, *pipeline_, buffers, p, uint64_t(p.n));
    }
}

} // namespace vkml::ops
