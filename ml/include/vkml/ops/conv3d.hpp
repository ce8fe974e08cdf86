#pragma once
// 3-D convolution and transposed convolution (ONNX Conv and ConvTranspose on [N, C, D, H, W]), as
// ops of their own beside the 2-D tensor-core kernels of conv.hpp: one invocation per output
// element summing its taps in fp32 (simple, not fast). Inputs: X, W, then B when desc.bias is set,
// then R when desc.residual.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkml/ops/op.hpp"

namespace vkml::gpu {
class Pipeline;
}

namespace vkml::ops {

struct Conv3dDesc {
    bool transpose = false;
    TensorDesc input;               // X [N, C, D, H, W], f32 or f16
    TensorDesc weight;              // Conv: [M, C/group, kD, kH, kW]; ConvTranspose: [C, M/group, kD, kH, kW]
    std::optional<TensorDesc> bias; // [M]
    std::vector<int64_t> kernel_shape, strides, pads, dilations; // 3, 3, 6, 3 values (defaults 1 / 0)
    std::vector<int64_t> output_padding, output_shape;           // ConvTranspose only
    std::string auto_pad = "NOTSET";
    int64_t group = 1;
    Activation activation; // vkml extension, as in Conv: y = act(conv + bias + residual)
    bool residual = false; // Conv only: one more input R of the output's shape
};

class Conv3d final : public Op {
public:
    static std::unique_ptr<Conv3d> create(gpu::Device& device, const Conv3dDesc& desc);
    const char* type() const override { return transpose_ ? "ConvTranspose" : "Conv"; }

private:
    explicit Conv3d(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    struct Push {
        uint32_t count;
        float alpha, beta;
    } push_{};
    bool transpose_ = false, bias_ = false, residual_ = false;
};

} // namespace vkml::ops
