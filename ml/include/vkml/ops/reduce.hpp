#pragma once
// Reductions and pooling, with ONNX semantics (latest opset): ReduceSum/Mean/Max/Min/Prod/L1/L2/
// LogSumExp/SumSquare, ArgMax/ArgMin, TopK, Softmax/LogSoftmax (opset 13: along one axis),
// MaxPool/AveragePool/LpPool (2-D, NCHW) and GlobalAveragePool/GlobalMaxPool/GlobalLpPool.
// Float data is stored as f32 or f16 and always accumulated in f32.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkml/ops/op.hpp"

namespace vkml::gpu {
class Pipeline;
}

namespace vkml::ops {

class Reduce;
class ArgReduce;
class TopK;
class Softmax;
class MaxPool;
class AveragePool;
class LpPool;
class GlobalPool;
class CumSum;

namespace detail {
class ReduceKernel; // the reduction kernel shared by Reduce* and the global pools
// Lets create() use std::make_unique while only the family's own code can construct its ops.
class ReduceKey {
    friend class vkml::ops::Reduce;
    friend class vkml::ops::ArgReduce;
    friend class vkml::ops::TopK;
    friend class vkml::ops::Softmax;
    friend class vkml::ops::MaxPool;
    friend class vkml::ops::AveragePool;
    friend class vkml::ops::LpPool;
    friend class vkml::ops::GlobalPool;
    friend class vkml::ops::CumSum;
    ReduceKey() = default;
};
} // namespace detail

// The kernel a reduction-style op (Reduce*, ArgMax/ArgMin, Softmax, the global pools) runs.
// Auto picks by the reduced extent and the memory layout; the others force one kernel (tests,
// benchmarks). Both give the same results up to f32 rounding.
enum class ReducePath : uint8_t {
    Auto,
    PerOutput, // one invocation per output, looping over its reduced elements
    Workgroup, // one workgroup per output, partial results combined in shared memory
    // Softmax / LogSoftmax over the innermost axis only: contiguous rows, several invocations per
    // row (several rows per workgroup), vector loads, the row kept in registers between the
    // reduction and the store (shaders/reduce/softmax_rows.comp).
    Rows,
};
const char* reduce_path_name(ReducePath path);

// ---- Reduce* ----------------------------------------------------------------------------------

enum class ReduceKind : uint8_t { Sum, Mean, Max, Min, Prod, L1, L2, LogSumExp, SumSquare, LogSum };
const char* reduce_op_name(ReduceKind kind); // "ReduceSum", ...

struct ReduceDesc {
    ReduceKind kind = ReduceKind::Sum;
    TensorDesc input;
    // ONNX `axes` (the opset-18 input, or the older attribute); negative values count from the end.
    // Empty: every axis, unless noop_with_empty_axes, when no axis is reduced (each output is the
    // op over one element: Sum/Mean/Max/Min/Prod/LogSumExp give x, L1/L2 |x|, SumSquare x², LogSum log x).
    std::vector<int64_t> axes;
    int64_t keepdims = 1;
    int64_t noop_with_empty_axes = 0;
    ReducePath path = ReducePath::Auto;
};

class Reduce final : public Op {
public:
    static std::unique_ptr<Reduce> create(gpu::Device& device, const ReduceDesc& desc);
    ~Reduce() override;
    const char* type() const override;
    ReducePath path() const; // the kernel chosen at creation

    Reduce(gpu::Device& device, detail::ReduceKey); // through create() only

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    ReduceKind kind_ = ReduceKind::Sum;
    std::unique_ptr<detail::ReduceKernel> kernel_;
};

// ---- ArgMax / ArgMin -------------------------------------------------------------------------

enum class ArgReduceKind : uint8_t { ArgMax, ArgMin };

struct ArgReduceDesc {
    ArgReduceKind kind = ArgReduceKind::ArgMax;
    TensorDesc input;
    int64_t axis = 0;
    int64_t keepdims = 1;
    int64_t select_last_index = 0;   // ties: 0 the first index, 1 the last
    DType output_dtype = DType::i64; // ONNX's i64, or i32
    ReducePath path = ReducePath::Auto;
};

class ArgReduce final : public Op {
public:
    static std::unique_ptr<ArgReduce> create(gpu::Device& device, const ArgReduceDesc& desc);
    const char* type() const override;
    ReducePath path() const { return path_; }

    ArgReduce(gpu::Device& device, detail::ReduceKey) : Op(device) {}

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    ArgReduceKind kind_ = ArgReduceKind::ArgMax;
    ReducePath path_ = ReducePath::PerOutput;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t outputs_count_ = 0, n_ = 0, inner_ = 0;
};

// ---- TopK ------------------------------------------------------------------------------------

// TopK's kernels: SharedSort sorts each row in shared memory (one workgroup per row, rows up to
// what shared memory holds: 2048 elements with 16 KiB); Rank gives each element its rank in its
// row (one invocation per element; about n·k·log n comparisons per row for random data, up to
// n²/2 when the row is already sorted the other way) and works for any row length.
enum class TopKPath : uint8_t { Auto, SharedSort, Rank };

struct TopKDesc {
    TensorDesc input;
    int64_t k = 1; // ONNX's K input, known at creation
    int64_t axis = -1;
    int64_t largest = 1;
    // 0 allows any order; vkml's outputs are always sorted (largest: descending), ties broken
    // by the lower index as ONNX requires.
    int64_t sorted = 1;
    DType indices_dtype = DType::i64; // ONNX's i64, or i32
    TopKPath path = TopKPath::Auto;
};

// Outputs: Values (the input's dtype) and Indices; the shape of both is the input's with
// shape[axis] = k.
class TopK final : public Op {
public:
    static std::unique_ptr<TopK> create(gpu::Device& device, const TopKDesc& desc);
    const char* type() const override { return "TopK"; }
    TopKPath path() const { return path_; }

    TopK(gpu::Device& device, detail::ReduceKey) : Op(device) {}

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    TopKPath path_ = TopKPath::Rank;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t rows_ = 0, n_ = 0, inner_ = 0, k_ = 0;
};

// ---- Softmax / LogSoftmax ----------------------------------------------------------------------

// Hardmax: 1 at the first maximum of each row, 0 elsewhere (always one invocation per row).
enum class SoftmaxKind : uint8_t { Softmax, LogSoftmax, Hardmax };

struct SoftmaxDesc {
    SoftmaxKind kind = SoftmaxKind::Softmax;
    TensorDesc input;
    int64_t axis = -1; // opset 13: normalizes along this one axis
    ReducePath path = ReducePath::Auto;
};

class Softmax final : public Op {
public:
    static std::unique_ptr<Softmax> create(gpu::Device& device, const SoftmaxDesc& desc);
    const char* type() const override;
    ReducePath path() const { return path_; }
    // The rows kernel merges each row's states by subgroup arithmetic (one row per workgroup, on
    // devices with subgroup add and max).
    bool rows_subgroup() const { return rows_subgroup_; }

    Softmax(gpu::Device& device, detail::ReduceKey) : Op(device) {}

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    SoftmaxKind kind_ = SoftmaxKind::Softmax;
    ReducePath path_ = ReducePath::PerOutput;
    const gpu::Pipeline* pipeline_ = nullptr; // the per-output or workgroup kernel
    bool wg_ = false;                         // pipeline_ is the workgroup kernel
    uint32_t rows_ = 0, n_ = 0, inner_ = 0;
    // Rows: its pipeline, and whether it loads vectors (then record() falls back to pipeline_ for
    // tensors not on 16 bytes).
    const gpu::Pipeline* rows_pipeline_ = nullptr;
    bool rows_vec_ = false;
    bool rows_subgroup_ = false;
    uint32_t rows_invocations_ = 0;
};

// ---- MaxPool / AveragePool / LpPool (2-D, NCHW) ------------------------------------------------

// The sliding window shared by the pools. Input [N, C, H, W]; kernel_shape is required (2
// values); strides and dilations default to 1; pads are [top, left, bottom, right] (default 0) and
// may not be combined with an auto_pad other than NOTSET. auto_pad: NOTSET, VALID, SAME_UPPER,
// SAME_LOWER. ceil_mode rounds the output size up; a window that would start in the bottom/right
// padding is dropped (PyTorch's and ONNX's rule) and its taps past the padding are ignored.
struct PoolWindow {
    std::vector<int64_t> kernel_shape;
    std::vector<int64_t> strides;
    std::vector<int64_t> pads;
    std::vector<int64_t> dilations;
    std::string auto_pad = "NOTSET";
    int64_t ceil_mode = 0;
};

struct MaxPoolDesc {
    TensorDesc input;
    PoolWindow window;
    // ONNX's optional Indices output (i64, flattened NCHW index of each maximum; first maximum in
    // window order on ties). storage_order 1 indexes as if each H×W plane were column-major.
    bool indices = false;
    int64_t storage_order = 0;
};

struct AveragePoolDesc {
    TensorDesc input;
    PoolWindow window;
    // 1: padding taps count in the divisor (taps past the padding, from ceil_mode, never do).
    int64_t count_include_pad = 0;
};

struct LpPoolDesc {
    TensorDesc input;
    PoolWindow window;
    int64_t p = 2; // (sum over the window of |x|^p)^(1/p); padding contributes 0
};

// The part the three windowed pools share: resolving the window (auto_pad, ceil_mode) and the
// kernel of shaders/reduce/pool.comp (one invocation per output, the window loops unrolled).
class Pool : public Op {
public:
    // The pads the window resolved to, [top, left, bottom, right] (auto_pad SAME_* computes them).
    const std::vector<int64_t>& effective_pads() const { return pads_; }

protected:
    explicit Pool(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    // Validates the window against `input` and fills outputs_, the pads and the push constants.
    void setup(const char* op, const TensorDesc& input, const PoolWindow& window, float p);

    struct Params {
        uint32_t total, h, w, oh, ow;
        int32_t stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, padded_h, padded_w;
        float p;
    };
    Params params_{};
    std::vector<int64_t> pads_;
    std::vector<int64_t> kernel_;
    const gpu::Pipeline* pipeline_ = nullptr;
};

class MaxPool final : public Pool {
public:
    static std::unique_ptr<MaxPool> create(gpu::Device& device, const MaxPoolDesc& desc);
    const char* type() const override { return "MaxPool"; }

    MaxPool(gpu::Device& device, detail::ReduceKey) : Pool(device) {}
};

class AveragePool final : public Pool {
public:
    static std::unique_ptr<AveragePool> create(gpu::Device& device, const AveragePoolDesc& desc);
    const char* type() const override { return "AveragePool"; }

    AveragePool(gpu::Device& device, detail::ReduceKey) : Pool(device) {}
};

class LpPool final : public Pool {
public:
    static std::unique_ptr<LpPool> create(gpu::Device& device, const LpPoolDesc& desc);
    const char* type() const override { return "LpPool"; }

    LpPool(gpu::Device& device, detail::ReduceKey) : Pool(device) {}
};

// ---- GlobalAveragePool / GlobalMaxPool / GlobalLpPool -----------------------------------------

enum class GlobalPoolKind : uint8_t { Average, Max, Lp };

// Input [N, C, spatial...] (rank 3 to 6); output [N, C, 1, ...].
struct GlobalPoolDesc {
    GlobalPoolKind kind = GlobalPoolKind::Average;
    TensorDesc input;
    int64_t p = 2; // GlobalLpPool only
    ReducePath path = ReducePath::Auto;
};

class GlobalPool final : public Op {
public:
    static std::unique_ptr<GlobalPool> create(gpu::Device& device, const GlobalPoolDesc& desc);
    ~GlobalPool() override;
    const char* type() const override;
    ReducePath path() const;

    GlobalPool(gpu::Device& device, detail::ReduceKey);

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    GlobalPoolKind kind_ = GlobalPoolKind::Average;
    std::unique_ptr<detail::ReduceKernel> kernel_;
};

// CumSum: running sums along `axis` (ONNX's axis input, a descriptor constant here); exclusive
// starts from 0, reverse runs from the end. f32 and f16 (fp32 sums) or i32 (wrapping). One
// invocation per line (simple, not fast).
struct CumSumDesc {
    TensorDesc input;
    int64_t axis = 0;
    bool exclusive = false;
    bool reverse = false;
};

class CumSum final : public Op {
public:
    static std::unique_ptr<CumSum> create(gpu::Device& device, const CumSumDesc& desc);
    const char* type() const override { return "CumSum"; }
    CumSum(gpu::Device& device, detail::ReduceKey) : Op(device) {}

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t rows_ = 0, n_ = 0, inner_ = 0;
};

// ---------------------------------------------------------------------------------------------
// MaxPool and AveragePool over three spatial dimensions: input [N, C, D, H, W], the window's
// kernel_shape, strides, pads (6), dilations, auto_pad and ceil_mode as ONNX has them; AveragePool's
// count_include_pad. One invocation per output, fp32 math (no Indices output).
struct Pool3dDesc {
    bool max = true; // MaxPool, else AveragePool
    TensorDesc input;
    PoolWindow window;
    int64_t count_include_pad = 0;
};

class Pool3d final : public Op {
public:
    static std::unique_ptr<Pool3d> create(gpu::Device& device, const Pool3dDesc& desc);
    const char* type() const override { return max_ ? "MaxPool" : "AveragePool"; }

private:
    explicit Pool3d(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t count_ = 0;
    bool max_ = true;
};

} // namespace vkml::ops
