#include "families.hpp"

namespace vkml::ops::detail {

void add_loss_ops(std::vector<OpInfo>& out) {
    const char* family = "Losses";
    const std::string common =
        "reduction none, sum, mean (weighted by the targets' weights), ignore_index, weight; i32 or i64 "
        "targets, any number of spatial dims; fp32 accumulation, the sums in one workgroup.";
    out.push_back({"NegativeLogLikelihoodLoss", family, "f32, f16", common});
    out.push_back({"SoftmaxCrossEntropyLoss", family, "f32, f16",
                   "log-softmax over the class axis (fp32), then NegativeLogLikelihoodLoss; the log_prob "
                   "output. " +
                       common});
}

} // namespace vkml::ops::detail
