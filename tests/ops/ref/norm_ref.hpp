#pragma once
// Double-precision references for the normalization operators (ONNX semantics), written from the
// ONNX specification independently of the GPU kernels: plain loops, two-pass mean and variance.
#include <cstdint>

#include "op_test.hpp"
#include "vkml/ops/op.hpp"

namespace vkml::test::ref_norm {

// The fused activations of ops::Activation (ONNX definitions: Gelu with the exact erf).
double activate(const ops::Activation& act, double x);

HostTensor batch_norm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias,
                      const HostTensor& mean, const HostTensor& var, float epsilon,
                      const ops::Activation& act = {});

HostTensor instance_norm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias, float epsilon,
                         const ops::Activation& act = {});

struct LayerNormResult {
    HostTensor y;
    HostTensor mean;        // shape x[:axis] followed by ones
    HostTensor inv_std_dev; // 1 / sqrt(var + epsilon)
};
// Scale and the optional bias broadcast unidirectionally to x (numpy rules).
LayerNormResult layer_norm(const HostTensor& x, const HostTensor& scale, const HostTensor* bias, int64_t axis,
                           float epsilon, const ops::Activation& act = {});

// scale and bias of length C (per channel) or num_groups (per group, opset 18).
HostTensor group_norm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias,
                      int64_t num_groups, float epsilon, const ops::Activation& act = {});

HostTensor lrn(const HostTensor& x, float alpha, float beta, float bias, int64_t size);

} // namespace vkml::test::ref_norm
