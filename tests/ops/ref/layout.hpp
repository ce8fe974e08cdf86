#pragma once
// Naive CPU references for the resampling and layout family, written from the ONNX operator
// definitions (element by element, multi-index loops), sharing no code with ml/ops/layout*.
#include <cstdint>
#include <string>
#include <vector>

#include "op_test.hpp"

namespace vkml::test::ref_layout {

// Multi-index helpers over a contiguous shape.
std::vector<int64_t> unravel(int64_t flat, const gpu::Shape& shape);
int64_t ravel(const std::vector<int64_t>& index, const gpu::Shape& shape);
gpu::Shape shape_of(const std::vector<int64_t>& dims);

HostTensor transpose(const HostTensor& x, const std::vector<int64_t>& perm);
// ONNX Slice (axes/steps may be empty: all leading axes, steps of 1).
HostTensor slice(const HostTensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
HostTensor concat(const std::vector<HostTensor>& xs, int64_t axis);
std::vector<HostTensor> split(const HostTensor& x, int64_t axis, const std::vector<int64_t>& sizes);
// pads = [begin..., end...] for every axis; mode constant, reflect, edge, wrap.
HostTensor pad(const HostTensor& x, const std::vector<int64_t>& pads, const std::string& mode, double value);
HostTensor gather(const HostTensor& data, const HostTensor& indices, int64_t axis);
HostTensor gather_elements(const HostTensor& data, const HostTensor& indices, int64_t axis);
HostTensor expand(const HostTensor& x, const std::vector<int64_t>& shape);
HostTensor tile(const HostTensor& x, const std::vector<int64_t>& repeats);
HostTensor depth_to_space(const HostTensor& x, int64_t blocksize, const std::string& mode);
HostTensor space_to_depth(const HostTensor& x, int64_t blocksize);

struct ResizeParams {
    std::vector<double> scales; // the float32 scale values, one per axis
    std::vector<int64_t> sizes;
    std::vector<double> roi; // [start..., end...] per axis (tf_crop_and_resize)
    std::vector<int64_t> axes;
    std::string mode = "nearest";
    std::string ctm = "half_pixel";
    std::string nearest_mode = "round_prefer_floor";
    std::string policy = "stretch";
    double cubic_a = -0.75;
    bool exclude_outside = false;
    double extrapolation = 0.0;
};
// ONNX Resize (opset 19), one axis after another; length_resized is the integer output length,
// except align_corners with scales (in * scale, as ONNX's reference has it).
HostTensor resize(const HostTensor& x, const ResizeParams& p);

} // namespace vkml::test::ref_layout
