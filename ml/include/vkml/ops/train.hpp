#pragma once
// The training family: ONNX's ai.onnx.preview.training optimizer steps Adagrad, Momentum (standard
// and Nesterov) and Adam, element-wise, on one or more tensors at once, in fp32.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkml/ops/op.hpp"

namespace vkml::gpu {
class Pipeline;
}

namespace vkml::ops {

enum class OptimizerKind : uint8_t { Adagrad, Momentum, Adam };

// Inputs: r (learning rate, f32 scalar), t (step count, i32 scalar), then per tensor X, G and the
// state (Adagrad: H; Momentum: V; Adam: V and H), grouped as ONNX orders them: X_1..X_n, G_1..G_n,
// V_1..V_n[, H_1..H_n]. Outputs: the new X_1..X_n, then the new states in the same grouping.
struct OptimizerDesc {
    OptimizerKind kind = OptimizerKind::Adagrad;
    TensorDesc r, t;
    std::vector<TensorDesc> x; // one per optimized tensor, f32; G and the states take the same shapes
    float decay_factor = 0.f, epsilon = 0.f, norm_coefficient = 0.f, norm_coefficient_post = 0.f;
    float alpha = 0.9f, beta = 0.999f; // Adam's defaults; Momentum's are required attributes
    bool nesterov = false;             // Momentum's mode
};

class Optimizer final : public Op {
public:
    static std::unique_ptr<Optimizer> create(gpu::Device& device, const OptimizerDesc& desc);
    const char* type() const override;

private:
    explicit Optimizer(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    struct Push {
        uint32_t n, mode;
        float decay_factor, epsilon, norm_coefficient, norm_coefficient_post, alpha, beta;
    } push_{};
    OptimizerKind kind_ = OptimizerKind::Adagrad;
    size_t tensors_ = 0, states_ = 1;
};

} // namespace vkml::ops
