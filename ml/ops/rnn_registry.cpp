#include "families.hpp"

namespace vkml::ops::detail {

void add_rnn_ops(std::vector<OpInfo>& out) {
    const char* family = "Recurrent";
    const std::string common =
        "directions forward, reverse, bidirectional; layout 0 and 1; activations Relu, Tanh, Sigmoid, Affine, "
        "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus with activation_alpha/beta; "
        "clip; sequence_lens (steps past a sequence's end output 0 and keep the state); initial_h";
    const std::string simple =
        ". One dispatch per time step, fp32 dot products per hidden unit, the state in fp32 (simple, not fast).";
    out.push_back({"RNN", family, "f32, f16", common + simple});
    out.push_back({"GRU", family, "f32, f16", common + "; linear_before_reset" + simple});
    out.push_back({"LSTM", family, "f32, f16", common + ", initial_c; peepholes P; input_forget" + simple});
}

} // namespace vkml::ops::detail
