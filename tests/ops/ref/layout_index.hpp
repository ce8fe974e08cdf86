#pragma once
// Double-precision CPU references of the layout family's indexing ops (Trilu, ScatterND,
// ScatterElements, GatherND, OneHot): the ONNX definitions as naive loops, sharing no code with
// the GPU path.
#include <cstdint>
#include <string>

#include "op_test.hpp"

namespace vkml::test::ref_layout_index {

HostTensor trilu(const HostTensor& x, int64_t k, bool upper);

} // namespace vkml::test::ref_layout_index
