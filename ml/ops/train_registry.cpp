#include "families.hpp"

namespace vkml::ops::detail {

void add_train_ops(std::vector<OpInfo>& out) {
    const char* family = "Training (ai.onnx.preview.training)";
    const std::string common = "R and T as tensors; one or more tensors per node; fp32 element-wise";
    out.push_back({"Adagrad", family, "f32", "decay_factor, epsilon, norm_coefficient; " + common});
    out.push_back({"Momentum", family, "f32", "alpha, beta, mode standard or nesterov, norm_coefficient; " + common});
    out.push_back({"Adam", family, "f32", "alpha, beta, epsilon, norm_coefficient, norm_coefficient_post; " + common});
}

} // namespace vkml::ops::detail
