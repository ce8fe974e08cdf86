#include "families.hpp"

namespace vkml::ops::detail {

void add_norm_ops(std::vector<OpInfo>& out) {
    const char* family = "Normalization";
    const char* grouped =
        "fp32 Welford statistics centred on each group's first element (stable for large "
        "offsets); one workgroup per group, or for few large groups a split kernel (partial "
        "moments in scratch, merged by a second dispatch); fused activation";
    out.push_back(
        {"BatchNormalization", family, "f32, f16",
         "training_mode 0 (one element-wise pass, fused activation) and 1 (batch statistics and the "
         "running_mean / running_var outputs with momentum; one invocation per channel); epsilon; scale, B, "
         "input_mean, input_var [C] in X's dtype (mixed T1/T2 dtypes unsupported); X rank >= 2"});
    out.push_back({"InstanceNormalization", family, "f32, f16",
                   std::string("epsilon; scale and B [C] in X's dtype; X rank >= 3; ") + grouped});
    out.push_back(
        {"LayerNormalization", family, "f32, f16",
         std::string("axis, epsilon, stash_type 1 only; Scale and optional B in X's dtype, broadcast "
                     "unidirectionally to X (X.shape[axis:] takes the fast path); optional Mean and "
                     "InvStdDev outputs (f32); ") +
             grouped});
    out.push_back(
        {"GroupNormalization", family, "f32, f16",
         std::string("num_groups, epsilon, stash_type 1 only; scale and bias per channel [C] (opset "
                     "21), or per group [num_groups] (opset 18) when num_groups != C; X rank >= 2; ") +
             grouped});
    out.push_back({"MeanVarianceNormalization", family, "f32, f16",
                   "axes (default [0, 2, 3]); expanded when the session is built (ml/graph/composite.cpp) into "
                   "ONNX's function body: D = X - ReduceMean(X), Y = D / (Sqrt(ReduceMean(D * D)) + 1e-9), "
                   "the variance taken around the mean"});
    out.push_back(
        {"LRN", family, "f32, f16",
         "alpha, beta, bias, size (any size >= 1, window clamped to the channels); across channels, X "
         "rank >= 2; one element-wise pass"});
}

} // namespace vkml::ops::detail
