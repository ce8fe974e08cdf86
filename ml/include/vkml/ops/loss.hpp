#pragma once
// The loss family, with ONNX semantics: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// Both take scores or log-probabilities X [N, C, d1, ..., dk] (f32 or f16) and class indices
// T [N, d1, ..., dk] (i32 or i64), an optional per-class weight W [C], a reduction (none, sum,
// mean) and an optional ignore_index. With l[n, d] = -X[n, T[n, d], d] * W[T[n, d]] (0 where T is
// ignore_index, W = 1 when absent): reduction none gives l with T's shape, sum its sum, mean its sum
// divided by the sum of the weights of the targets not ignored (ONNX's weighted mean), both as
// scalars. SoftmaxCrossEntropyLoss first takes the log-softmax of X over C and can output it
// (log_prob, X's shape). A target outside [0, C) that is not ignore_index contributes nothing (ONNX
// leaves it undefined). Accumulation in fp32; the reductions run in one workgroup (simple, not
// fast: losses are computed once per batch).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "vkml/ops/op.hpp"

namespace vkml::gpu {
class Pipeline;
}

namespace vkml::ops {

struct LossDesc {
    bool softmax = false;             // SoftmaxCrossEntropyLoss (else NegativeLogLikelihoodLoss)
    TensorDesc input;                 // X: [N, C, d1, ..., dk], f32 or f16
    TensorDesc target;                // T: [N, d1, ..., dk], i32 or i64
    std::optional<TensorDesc> weight; // W: [C], X's dtype
    std::string reduction = "mean";   // none, sum, mean
    std::optional<int64_t> ignore_index;
    bool log_prob = false; // softmax only: a second output, the log-probabilities (X's shape)
};

// Inputs X, T (, W). Outputs: the loss (T's shape for none, else a scalar), then log_prob when
// asked for. Scratch: the log-probabilities when softmax is set and log_prob is not.
class Loss final : public Op {
public:
    static std::unique_ptr<Loss> create(gpu::Device& device, const LossDesc& desc);
    const char* type() const override {
        return softmax_ ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
    }

private:
    explicit Loss(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    bool softmax_ = false, has_weight_ = false, log_prob_ = false, reduce_ = false;
    const gpu::Pipeline* log_softmax_ = nullptr;
    const gpu::Pipeline* nll_ = nullptr;
    struct Push {
        uint32_t count;  // target elements (N * d1 * ... * dk)
        uint32_t classes;
        uint32_t inner;  // d1 * ... * dk
        int32_t ignore;  // ignore_index when HAS_IGNORE
    } push_{};
    uint64_t log_prob_bytes_ = 0;
};

} // namespace vkml::ops
