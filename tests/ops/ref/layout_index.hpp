#pragma once
// Double-precision CPU references of the layout family's indexing ops (Trilu, ScatterND,
// ScatterElements, GatherND, OneHot): the ONNX definitions as naive loops, sharing no code with
// the GPU path.
#include <cstdint>
#include <string>

#include "op_test.hpp"

namespace vkml::test::ref_layout_index {

HostTensor trilu(const HostTensor& x, int64_t k, bool upper);
// reduction: none, add, mul, max, min; updates applied in order; out-of-range indices skipped.
HostTensor scatter_elements(const HostTensor& data, const HostTensor& indices, const HostTensor& updates,
                            int64_t axis, const std::string& reduction);
HostTensor scatter_nd(const HostTensor& data, const HostTensor& indices, const HostTensor& updates,
                      const std::string& reduction);
HostTensor gather_nd(const HostTensor& data, const HostTensor& indices, int64_t batch_dims);
// GridSample, 2-D: mode bilinear, nearest, bicubic; padding zeros, border, reflection.
HostTensor grid_sample(const HostTensor& x, const HostTensor& grid, const std::string& mode, const std::string& padding,
                       bool align_corners);
HostTensor one_hot(const HostTensor& indices, int64_t depth, const HostTensor& values, int64_t axis);

} // namespace vkml::test::ref_layout_index
