#pragma once
// The list of operators vkml supports, as the code itself declares them. docs/ops.md is generated
// from it (`vkml ops --markdown`) and a test fails when the page and the code disagree.
#include <string>
#include <vector>

namespace vkml::ops {

struct OpInfo {
    std::string type;   // ONNX operator type, e.g. "Conv"
    std::string family; // e.g. "Convolution"
    std::string dtypes; // storage dtypes, e.g. "f32, f16"
    std::string notes;  // attributes covered, kernels, limits
};

// Every supported op, sorted by family then type.
const std::vector<OpInfo>& registry();
std::string registry_markdown();

} // namespace vkml::ops
