#include "families.hpp"

namespace vkml::ops::detail {

void add_conv_ops(std::vector<OpInfo>& out) {
    const char* family = "Convolution";
    out.push_back(
        {"Conv", family, "f32, f16",
         "2-D NCHW (1-D as H = 1; 3-D NCDHW through ops::Conv3d, one invocation per output, fp32 sums). group (depthwise included), strides, dilations, "
         "asymmetric pads, auto_pad NOTSET/SAME_UPPER/SAME_LOWER/VALID, optional bias, kernel_shape checked "
         "against W. Fused activation and residual add (extra input): y = act(conv + bias + residual). "
         "Kernels: 1x1 GEMM (1x1, stride 1, no pads, group 1), tiled implicit GEMM through shared memory "
         "(group 1, kernel 3x3 or more; 64x64 tiles, 8 KiB), few outputs (group 1, at most 8 output "
         "channels, square 1x1/3x3/5x5, stride 1: every channel of a 16x64 tile per workgroup), direct "
         "(everything else). In f16 storage on a "
         "device with cooperative matrices: the tensor-core implicit GEMM, or the staged-window kernel for "
         "3x3, 5x5 and 9x9 at stride 1 and 3x3 and 5x5 at stride 2 (group 1, dilation 1, C a multiple of 8, "
         "or few channels folded into the taps; see docs/architecture.md). fp32 accumulation (f16 on tensor cores "
         "when ConvDesc::accumulation asks)."});
    out.push_back(
        {"ConvTranspose", family, "f32, f16",
         "2-D NCHW (1-D as H = 1; 3-D NCDHW through ops::Conv3d). group, strides, dilations, pads, output_padding, output_shape "
         "(pads derived as ONNX says), auto_pad, optional bias; fused activation and residual as in "
         "Conv. Direct gather kernel, fp32 accumulation."});
    out.push_back({"Gemm", family, "f32, f16",
                   "transA, transB, alpha, beta, optional C (rank 0-2, unidirectional broadcast to [M, N]); "
                   "fused activation. Tiled GEMM (64x64 tiles through shared memory), fp32 accumulation (f16 on "
                   "tensor cores when GemmDesc::accumulation asks)."});
    out.push_back({"MatMul", family, "f32, f16",
                   "numpy semantics: 1-D operands promoted and the promoted dimension dropped, batch "
                   "dimensions broadcast (output rank up to 6). Tiled GEMM, fp32 accumulation (f16 on tensor cores "
                   "when MatMulDesc::accumulation asks)."});
    const std::string exact =
        "expanded when the session is built (ml/graph/composite.cpp): the zero points subtracted in f32, the "
        "reduction split into chunks short enough that every partial sum is an integer below 2^24 (at most "
        "2^24 / (max|a - a_zero| x max|b - b_zero|) products, from the data where constant, else the types' "
        "ranges: 258 for uint8 against uint8), each chunk's f32 result cast to int32 and the chunks summed in "
        "int32 (wrapping): exact, in f16 sessions too";
    out.push_back({"MatMulInteger", family, "uint8, int8 -> i32",
                   "a_zero_point scalar or per row of A, b_zero_point scalar or per column of B; MatMul's "
                   "shapes; " + exact + "."});
    out.push_back({"ConvInteger", family, "uint8, int8 -> i32",
                   "Conv's attributes; x_zero_point scalar, w_zero_point scalar or per output channel; " + exact +
                       " (split over input channels at group 1; at group > 1, or a kernel of more taps than a "
                       "chunk holds, a longer reduction is an Unsupported error)."});
    const std::string requant =
        "; the int32 accumulator then scaled by scale_a x scale_b / y_scale in f32 and quantized by QuantizeLinear "
        "(round half to even, saturating), expanded when the session is built";
    out.push_back({"QLinearMatMul", family, "uint8, int8",
                   "MatMulInteger's exact int32 accumulator (a_scale scalar or per row, b_scale scalar or per column)" +
                       requant + "."});
    out.push_back({"QLinearConv", family, "uint8, int8",
                   "ConvInteger's exact int32 accumulator plus the optional int32 bias B [M] (w_scale scalar or per "
                   "output channel)" + requant + "."});
}

} // namespace vkml::ops::detail
