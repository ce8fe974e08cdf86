#include "families.hpp"

namespace vkml::ops::detail {

void add_math_ops(std::vector<OpInfo>& out) {
    const char* family = "Linear algebra";
    out.push_back({"Einsum", family, "f32, f16",
                   "one or two operands; diagonals (repeated labels), ellipsis with broadcasting, implicit "
                   "output; up to 6 output dimensions and 6 summed labels; one invocation per output element, "
                   "fp32 sums (simple, not a tuned GEMM)"});
    out.push_back({"Det", family, "f32, f16",
                   "[..., M, M] -> [...]; LU with partial pivoting in fp32, one invocation per matrix"});
    out.push_back({"DFT", family, "f32, f16",
                   "opset 17 (axis attribute; dft_length a constant input); real or complex input, inverse, onesided; "
                   "a direct O(n^2) sum per output in fp32 (simple, not an FFT)"});
    out.push_back({"STFT", family, "f32, f16",
                   "onesided; frame_step and frame_length constant inputs, optional window; expanded when the "
                   "session is built (ml/graph/composite.cpp) into a Gather of the frames by a constant index table, "
                   "a Mul by the window and DFT over the frame axis"});
}

} // namespace vkml::ops::detail
