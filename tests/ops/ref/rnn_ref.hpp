#pragma once
// Double-precision CPU reference of the recurrent family (ml/ops/rnn.cpp): the ONNX equations of
// RNN, GRU and LSTM step by step, sharing no code with the GPU path.
#include <optional>
#include <string>
#include <vector>

#include "op_test.hpp"
#include "vkml/ops/rnn.hpp"

namespace vkml::test::ref_rnn {

struct Inputs {
    HostTensor x, w, r;
    const HostTensor* b = nullptr;
    const HostTensor* seq = nullptr; // lengths as doubles
    const HostTensor* h0 = nullptr;
    const HostTensor* c0 = nullptr;
    const HostTensor* p = nullptr;
};
// Y, Y_h (and Y_c for LSTM), with the desc's attributes (activations by ONNX name).
std::vector<HostTensor> rnn(const ops::RnnDesc& desc, const Inputs& in);

} // namespace vkml::test::ref_rnn
