#include "families.hpp"

namespace vkml::ops::detail {

// Filled in as the elementwise operators land.
void add_elementwise_ops(std::vector<OpInfo>&) {}

} // namespace vkml::ops::detail
