#include "families.hpp"

namespace vkml::ops::detail {

// Filled in as the norm operators land.
void add_norm_ops(std::vector<OpInfo>&) {}

} // namespace vkml::ops::detail
