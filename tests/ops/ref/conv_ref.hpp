#pragma once
// Naive double-precision references for the convolution family (Conv, ConvTranspose, Gemm,
// MatMul), written from the ONNX operator pages and sharing nothing with the GPU code: output
// shapes and auto_pad are worked out here again, ConvTranspose is computed as a scatter (the GPU
// kernel gathers), and 1-D convolutions are done on their own axis.
#include <cstdint>
#include <string>
#include <vector>

#include "op_test.hpp"
#include "vkml/ops/op.hpp"

namespace vkml::test::ref_conv {

struct ConvAttrs {
    std::vector<int64_t> strides, pads, dilations; // empty: ONNX defaults
    std::string auto_pad = "NOTSET";
    int64_t group = 1;
};
// ONNX Conv. x [N, C, spatial...], w [M, C/group, k...], bias [M] or null; 1 or 2 spatial dims.
HostTensor conv(const HostTensor& x, const HostTensor& w, const HostTensor* bias, const ConvAttrs& attrs);

struct ConvTransposeAttrs {
    std::vector<int64_t> strides, pads, dilations, output_padding, output_shape;
    std::string auto_pad = "NOTSET";
    int64_t group = 1;
};
// ONNX ConvTranspose. w [C, M/group, k...]. output_shape (spatial) overrides pads.
HostTensor conv_transpose(const HostTensor& x, const HostTensor& w, const HostTensor* bias,
                          const ConvTransposeAttrs& attrs);

// ONNX Gemm: alpha * A' * B' + beta * C, C broadcast to [M, N].
HostTensor gemm(const HostTensor& a, const HostTensor& b, const HostTensor* c, double alpha, double beta,
                bool trans_a, bool trans_b);
// numpy matmul.
HostTensor matmul(const HostTensor& a, const HostTensor& b);

// The activation in double precision.
double activate(const ops::Activation& act, double v);
// y = act(y + residual) element-wise (residual may be null), in place; returns y.
HostTensor fuse(HostTensor y, const HostTensor* residual, const ops::Activation& act);

} // namespace vkml::test::ref_conv
