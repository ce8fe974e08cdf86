#include "families.hpp"

namespace vkml::ops::detail {

// Filled in as the reduce operators land.
void add_reduce_ops(std::vector<OpInfo>&) {}

} // namespace vkml::ops::detail
