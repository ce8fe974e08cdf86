#include "families.hpp"

namespace vkml::ops::detail {

// Filled in as the conv operators land.
void add_conv_ops(std::vector<OpInfo>&) {}

} // namespace vkml::ops::detail
