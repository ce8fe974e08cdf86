#include "families.hpp"

namespace vkml::ops::detail {

// Filled in as the detect operators land.
void add_detect_ops(std::vector<OpInfo>&) {}

} // namespace vkml::ops::detail
