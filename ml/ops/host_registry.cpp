#include "families.hpp"

namespace vkml::ops::detail {

// Ops the graph runtime evaluates on the host (ml/graph/host_eval.cpp), in double and int64, when
// their inputs are constants (initializers, or values folded before them); a model that computes
// such an input on the device is an Unsupported error naming the node. Shape-computation
// subgraphs fold away this way; NonZero's output shape depends on its data, so it is host-only.
void add_host_ops(std::vector<OpInfo>& out) {
    const char* family = "Host-evaluated (constant inputs)";
    const char* all = "f32, f16, i32, i64, u8, bool";
    out.push_back({"Shape", family, all, "start, end; needs only a static input shape."});
    out.push_back({"Size", family, all, "needs only a static input shape."});
    out.push_back({"EyeLike", family, all, "dtype, k; needs only a static 2-D input shape."});
    out.push_back({"Range", family, "f32, f16, i32, i64", "exact int64 arithmetic; at most 2^27 elements."});
    out.push_back({"ConstantOfShape", family, all, "value; at most 2^27 elements."});
    out.push_back({"NonZero", family, all, "the output's shape depends on the data: host only."});
    out.push_back({"Compress", family, all, "axis; the output's shape depends on the condition: host only."});
    out.push_back({"Unique", family, all,
                   "axis, sorted; outputs Y, indices, inverse_indices, counts; data-dependent shapes: host only."});
    for (const char* w : {"HannWindow", "HammingWindow", "BlackmanWindow"})
        out.push_back({w, family, "f32, f16, i32, i64", "periodic, output_datatype; computed in double."});
}

} // namespace vkml::ops::detail
