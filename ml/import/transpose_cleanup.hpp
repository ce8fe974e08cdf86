#pragma once
// Import-time tidying for translations that wrap NHWC operators in Transposes: a Transpose whose
// input comes straight from another Transpose, with permutations that compose to the identity,
// is bypassed, and nodes left without consumers are dropped. Exact, so it changes no result.
#include "vkml/graph/graph.hpp"

namespace vkml::import {

// Returns how many Transpose pairs were cancelled.
int cancel_transpose_pairs(graph::Graph& g);
// Removes nodes none of whose outputs is read by another node or is a graph output.
void remove_unused_nodes(graph::Graph& g);

} // namespace vkml::import
