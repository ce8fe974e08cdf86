#pragma once
// Each operator family appends its ops to the registry (see registry.cpp). A function per family,
// defined in that family's source, keeps the families out of each other's files.
#include <vector>

#include "vkml/ops/registry.hpp"

namespace vkml::ops::detail {
void add_elementwise_ops(std::vector<OpInfo>& out);
void add_conv_ops(std::vector<OpInfo>& out);
void add_reduce_ops(std::vector<OpInfo>& out);
void add_norm_ops(std::vector<OpInfo>& out);
void add_layout_ops(std::vector<OpInfo>& out);
void add_detect_ops(std::vector<OpInfo>& out);
void add_color_ops(std::vector<OpInfo>& out);
void add_loss_ops(std::vector<OpInfo>& out);
void add_rnn_ops(std::vector<OpInfo>& out);
void add_math_ops(std::vector<OpInfo>& out);
void add_train_ops(std::vector<OpInfo>& out);
void add_host_ops(std::vector<OpInfo>& out);
} // namespace vkml::ops::detail
