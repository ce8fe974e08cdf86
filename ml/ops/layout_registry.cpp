#include "families.hpp"

namespace vkml::ops::detail {

// Filled in as the layout operators land.
void add_layout_ops(std::vector<OpInfo>&) {}

} // namespace vkml::ops::detail
