#pragma once
// The recurrent family, with ONNX semantics: RNN, GRU and LSTM (opset 14: layout), all directions
// (forward, reverse, bidirectional), every ONNX activation function with activation_alpha/beta,
// clip, sequence_lens, initial_h / initial_c, LSTM peepholes and input_forget, GRU
// linear_before_reset.
//
// Inputs (absent optional ones are simply not given, in this order): X, W, R [, B] [, sequence_lens
// (i32)] [, initial_h] [, initial_c (LSTM)] [, P (LSTM)]. Outputs: Y [S, D, B, H] (layout 1:
// [B, S, D, H]), Y_h [D, B, H] (layout 1: [B, D, H]) and, for LSTM, Y_c like Y_h. Steps past a
// batch entry's sequence length output zeros and keep its state (Y_h is the state after its last
// step); a reverse direction starts at that last step.
//
// The kernels are simple: one dispatch per time step (two for GRU without linear_before_reset),
// every invocation one hidden unit of one batch entry and direction computing its gates as fp32 dot
// products, the state in fp32 in the op's scratch. Not fast; correct.
#include <array>
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

enum class RnnKind : uint8_t { RNN, GRU, LSTM };
const char* rnn_name(RnnKind kind);

struct RnnDesc {
    RnnKind kind = RnnKind::LSTM;
    TensorDesc x;                    // [S, B, I] (layout 1: [B, S, I]), f32 or f16
    TensorDesc w, r;                 // [D, G * H, I], [D, G * H, H]; G = 1, 3, 4 gates
    std::optional<TensorDesc> b;     // [D, 2 * G * H]
    std::optional<TensorDesc> sequence_lens; // [B], i32
    std::optional<TensorDesc> initial_h;     // [D, B, H] (layout 1: [B, D, H])
    std::optional<TensorDesc> initial_c;     // LSTM, like initial_h
    std::optional<TensorDesc> p;             // LSTM peepholes [D, 3 * H]
    std::string direction = "forward";       // forward, reverse, bidirectional
    int64_t hidden_size = 0;                 // 0: from W
    // ONNX names: Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid,
    // Elu, Softsign, Softplus; per direction f (, g (, h)). Empty: the ONNX defaults.
    std::vector<std::string> activations;
    // The parameters of the activations that take them, in order (defaults when short: LeakyRelu
    // 0.01; ThresholdedRelu, Elu 1; HardSigmoid 0.2, 0.5; Affine, ScaledTanh 1, 0 / 1, 1).
    std::vector<float> activation_alpha, activation_beta;
    std::optional<float> clip;
    int64_t input_forget = 0;        // LSTM
    int64_t linear_before_reset = 0; // GRU
    int64_t layout = 0;
};

class Rnn final : public Op {
public:
    static std::unique_ptr<Rnn> create(gpu::Device& device, const RnnDesc& desc);
    const char* type() const override { return rnn_name(kind_); }

private:
    explicit Rnn(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    struct Push {
        uint32_t S, B, I, H, D, t, reverse_mask;
        float clip;
        std::array<uint32_t, 6> act;
        std::array<float, 6> alpha, beta;
    } push_{};
    RnnKind kind_ = RnnKind::LSTM;
    // Which inputs are present, as positions in the op's inputs (-1: absent).
    int b_ = -1, seq_ = -1, h0_ = -1, c0_ = -1, p_ = -1;
    const gpu::Pipeline* init_ = nullptr;
    const gpu::Pipeline* reset_ = nullptr; // GRU without linear_before_reset
    const gpu::Pipeline* step_ = nullptr;
    const gpu::Pipeline* final_ = nullptr;
};

} // namespace vkml::ops
