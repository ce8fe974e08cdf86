#pragma once
// Double-precision CPU references of the loss family (ml/ops/loss.cpp): the ONNX definitions as
// naive loops, sharing no code with the GPU path.
#include <cstdint>
#include <optional>
#include <string>

#include "op_test.hpp"

namespace vkml::test::ref_loss {

// NegativeLogLikelihoodLoss of log-probabilities x [N, C, d...] at targets t [N, d...] (integers
// as doubles), weight [C] or none. Reduction none: t's shape; sum, mean: a scalar.
HostTensor nll(const HostTensor& x, const HostTensor& t, const HostTensor* weight, const std::string& reduction,
               std::optional<int64_t> ignore_index);
// Log-softmax over axis 1.
HostTensor log_softmax_axis1(const HostTensor& x);

} // namespace vkml::test::ref_loss
