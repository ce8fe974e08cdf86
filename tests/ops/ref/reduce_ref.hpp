#pragma once
// Double-precision CPU references of the reduction family (ml/ops/reduce*.cpp): naive loops over
// the ONNX definitions, sharing no code with the GPU path.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "op_test.hpp"
#include "vkml/ops/reduce.hpp"

namespace vkml::test::ref_reduce {

// Reduce* over `axes` (ONNX rules for negative and empty axes).
HostTensor reduce(ops::ReduceKind kind, const HostTensor& x, const std::vector<int64_t>& axes, bool keepdims,
                  bool noop_with_empty_axes);
// Global pools: reduce every dimension after the first two to 1; kind Lp uses `p`.
HostTensor global_pool(ops::GlobalPoolKind kind, const HostTensor& x, int64_t p);
// ArgMax / ArgMin indices (as doubles) with dtype `index_dtype`.
HostTensor arg_reduce(bool is_min, const HostTensor& x, int64_t axis, bool keepdims, bool select_last,
                      gpu::DType index_dtype);
// TopK: (values, indices), ties broken by the lower index.
std::pair<HostTensor, HostTensor> topk(const HostTensor& x, int64_t k, int64_t axis, bool largest,
                                       gpu::DType index_dtype);
HostTensor softmax(const HostTensor& x, int64_t axis, bool log);
// Hardmax: 1 at the first maximum along `axis`, else 0.
HostTensor hardmax(const HostTensor& x, int64_t axis);
// CumSum along `axis`, exclusive and/or reverse.
HostTensor cumsum(const HostTensor& x, int64_t axis, bool exclusive, bool reverse);

enum class PoolKind { Max, Average, Lp };
struct PoolArgs {
    std::vector<int64_t> kernel, strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1};
    std::string auto_pad = "NOTSET";
    bool ceil_mode = false;
    bool count_include_pad = false;
    int64_t p = 2;
    int64_t storage_order = 0;
};
// 2-D pooling of an NCHW tensor: (values, MaxPool indices as i64; empty for the other kinds).
std::pair<HostTensor, HostTensor> pool(PoolKind kind, const HostTensor& x, const PoolArgs& args);

// Values with no exact ties along `axis` within each row, exactly representable in `dtype`
// (multiples of 1/512 with |v| >= 1/512, so never zero). Rows of f16 hold at most 4096 values.
HostTensor distinct_rows(const gpu::Shape& shape, int64_t axis, gpu::DType dtype, uint32_t seed);

} // namespace vkml::test::ref_reduce
