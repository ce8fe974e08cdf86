// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (shaders/loss/).
#include "vkml/ops/loss.hpp"

#include <limits>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"

namespace vkml::ops {

std::unique_ptr<Loss> Loss::create(gpu::Device& device, const LossDesc& desc) {
    const char* op = desc.softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
    detail::require_float(op, "input", desc.input);
    const Shape& x = desc.input.shape;
    const Shape& t = desc.target.shape;
    if (x.rank() < 2) fail(op, "input", "expected [N, C, d1, ...] of rank >= 2, got " + x.str());
    if (desc.target.dtype != DType::i32 && desc.target.dtype != DType::i64)
        fail(op, "target", std::string("must be i32 or i64, is ") + gpu::dtype_name(desc.target.dtype));
    bool fits = t.rank() + 1 == x.rank() && t[0] == x[0];
    for (size_t k = 1; fits && k < t.rank(); ++k) fits = t[k] == x[k + 1];
    if (!fits) fail(op, "target", "shape " + t.str() + " does not match input " + x.str() + " without its C");
    const int64_t classes = x[1];
    if (desc.weight) {
        if (desc.weight->dtype != desc.input.dtype)
            fail(op, "weight", "must have the input's dtype " + std::string(gpu::dtype_name(desc.input.dtype)));
        if (desc.weight->shape.rank() != 1 || desc.weight->shape[0] != classes)
            fail(op, "weight", "expected [" + std::to_string(classes) + "], got " + desc.weight->shape.str());
    }
    uint32_t reduction = 0;
    if (desc.reduction == "sum")
        reduction = 1;
    else if (desc.reduction == "mean")
        reduction = 2;
    else if (desc.reduction != "none")
        fail(op, "reduction", "must be none, sum or mean, is \"" + desc.reduction + "\"");
    if (desc.log_prob && !desc.softmax) fail(op, "log_prob", "only SoftmaxCrossEntropyLoss outputs it");
    const bool has_ignore = desc.ignore_index.has_value();
    if (has_ignore && (*desc.ignore_index < std::numeric_limits<int32_t>::min() ||
                       *desc.ignore_index > std::numeric_limits<int32_t>::max()))
        fail(op, "ignore_index", "must fit 32 bits, is " + std::to_string(*desc.ignore_index));
    detail::to_u32(op, "input elements", x.elements());

    auto l = std::unique_ptr<Loss>(new Loss(device));
    l->softmax_ = desc.softmax;
    l->has_weight_ = desc.weight.has_value();
    l->log_prob_ = desc.log_prob;
    l->reduce_ = reduction != 0;
    const uint32_t count = detail::to_u32(op, "target elements", t.elements());
    const uint32_t inner = x[0] == 0 ? 1u : uint32_t(t.elements() / x[0]);
    l->push_ = {count, detail::to_u32(op, "input", classes), inner, has_ignore ? int32_t(*desc.ignore_index) : 0};
    const uint32_t words = desc.target.dtype == DType::i64 ? 2u : 1u;
    l->nll_ = &device.pipeline(
        {.shader = detail::shader_for(device, op, "loss_nll", desc.input.dtype),
         .bindings = 4,
         .push_constant_bytes = sizeof(Push),
         .workgroup = {256, 1, 1},
         .specialization = {words, l->has_weight_ ? 1u : 0u, reduction, has_ignore ? 1u : 0u}});
    if (desc.softmax) {
        l->log_softmax_ = &device.pipeline({.shader = detail::shader_for(device, op, "loss_log_softmax", desc.input.dtype),
                                            .bindings = 2,
                                            .push_constant_bytes = sizeof(Push),
                                            .workgroup = {64, 1, 1}});
        if (!desc.log_prob) l->scratch_bytes_ = uint64_t(x.elements()) * gpu::dtype_size(desc.input.dtype);
    }
    l->inputs_ = {desc.input, desc.target};
    if (desc.weight) l->inputs_.push_back(*desc.weight);
    l->outputs_ = {{reduction == 0 ? t : Shape{}, desc.input.dtype}};
    if (desc.log_prob) l->outputs_.push_back(desc.input);
    return l;
}

void Loss::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                       const gpu::BufferRange& scratch) const {
    gpu::BufferRange x = inputs[0].range();
    if (softmax_) {
        const gpu::BufferRange lp =
            log_prob_ ? outputs[1].range() : gpu::BufferRange{scratch.buffer, scratch.offset, scratch_bytes_};
        if (push_.count != 0) {
            const gpu::BufferRange bufs[] = {x, lp};
            detail::dispatch_1d(cmd, *log_softmax_, bufs, push_, push_.count);
            gpu::barrier::compute_to_compute(cmd);
        }
        x = lp;
    }
    const gpu::BufferRange w = has_weight_ ? inputs[2].range() : inputs[0].range();
    const gpu::BufferRange bufs[] = {x, inputs[1].range(), w, outputs[0].range()};
    if (reduce_)
        cmd.dispatch(*nll_, bufs, push_, {1, 1, 1});
    else if (push_.count != 0)
        detail::dispatch_1d(cmd, *nll_, bufs, push_, push_.count);
}

} // namespace vkml::ops
