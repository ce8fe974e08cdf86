#include "families.hpp"

namespace vkml::ops::detail {

namespace {
constexpr const char* reduce_paths =
    "Kernels: one invocation per output for small reduced extents, one workgroup per output "
    "(shared-memory tree) from 128 reduced elements when they are contiguous or outputs are few.";
}

void add_reduce_ops(std::vector<OpInfo>& out) {
    const std::string family = "Pooling and reduction";
    const std::string floats = "f32, f16";
    const std::string reduce_notes =
        std::string("axes (negative, several, non-adjacent), keepdims, noop_with_empty_axes (reduces over no "
                    "axis: SumSquare gives x^2, L1/L2 |x|, the others x, as ONNX's reference does); fp32 "
                    "accumulation; NaN propagation not guaranteed. ") +
        reduce_paths;
    for (const char* type : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                             "ReduceL2", "ReduceSumSquare"})
        out.push_back({type, family, floats, reduce_notes});
    out.push_back({"ReduceLogSum", family, floats, reduce_notes + " log of the fp32 sum (LogSum gives log x)."});
    out.push_back({"ReduceLogSumExp", family, floats,
                   reduce_notes + " Max-subtracting online form: no overflow for large inputs."});
    for (const char* type : {"ArgMax", "ArgMin"})
        out.push_back({type, family, floats,
                       std::string("axis, keepdims, select_last_index; i64 (or i32) indices. NaN inputs: "
                                   "unspecified. ") +
                           reduce_paths});
    out.push_back(
        {"TopK", family, floats,
         "K fixed at creation, axis, largest, sorted (outputs are always sorted); ties: lower index "
         "first; i64 (or i32) indices. Rows up to 4096 elements (2048 with 16 KiB of shared memory) "
         "are bitonic-sorted in shared memory; longer rows, and rows of at most 64, use a per-element rank "
         "kernel "
         "(about n·k·log n comparisons per row for random data, up to n²/2 for presorted rows). NaN "
         "inputs: unspecified."});
    out.push_back({"CumSum", family, "f32, f16, i32 (i64 computed in i32)",
                   "axis (a constant), exclusive, reverse; fp32 sums for floats. One invocation per line."});
    out.push_back({"Hardmax", family, floats,
                   "axis (opset 13; before: coerced to 2-D as Softmax); 1 at the first maximum of each row. One "
                   "invocation per row."});
    for (const char* type : {"Softmax", "LogSoftmax"})
        out.push_back(
            {type, family, floats,
             std::string("opset 13 (one axis, negative allowed); max-subtracting online form. ") +
                 reduce_paths +
                 " The innermost axis: several invocations per row, vector loads, the row held in "
                 "registers (ReducePath::Rows)." +
                 (std::string(type) == "Softmax"
                      ? " Inside attention (MatMul, scale, optional masks, Softmax, MatMul) the graph "
                        "optimizer runs the whole pattern as one FusedAttention kernel instead (online "
                        "softmax over K/V tiles, the scores never stored; docs/architecture.md)."
                      : "")});
    const std::string window =
        "1-D, 2-D NCHW and (MaxPool, AveragePool without Indices; one invocation per output) 3-D NCDHW; "
        "kernel_shape, strides, pads, dilations, auto_pad (NOTSET, VALID, "
        "SAME_UPPER, SAME_LOWER), ceil_mode (windows starting in the end padding are "
        "dropped); pads must be smaller than the dilated window.";
    out.push_back(
        {"MaxPool", family, floats + "; uint8, int8 through f32 (exact)",
         window + " Optional Indices output (i64, storage_order 0 and 1; first maximum wins ties). uint8 "
                  "and int8 inputs are cast to f32 and back around it when the session is built."});
    out.push_back({"AveragePool", family, floats,
                   window + " count_include_pad 0/1 (taps past the padding from ceil_mode never count)."});
    out.push_back({"LpPool", family, floats, window + " Integer p >= 1; padding contributes 0."});
    const std::string global =
        std::string("input [N, C, spatial...] rank 3-6; fp32 accumulation. ") + reduce_paths;
    out.push_back({"GlobalAveragePool", family, floats, global});
    out.push_back({"GlobalMaxPool", family, floats, global});
    out.push_back({"GlobalLpPool", family, floats, "p (integer >= 1); " + global});
}

} // namespace vkml::ops::detail
