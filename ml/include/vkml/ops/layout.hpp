#pragma once
// The resampling and layout family, with ONNX semantics: Resize, DepthToSpace, SpaceToDepth,
// Concat, Split, Slice, Transpose, Pad, Gather, GatherElements, Expand, Tile; and Reshape,
// Flatten, Squeeze and Unsqueeze as views (no kernel: shape functions plus gpu::Tensor views).
//
// Layout ops move bits, never convert: they take f32, f16, i32, i64 (copied as pairs of 32-bit
// words, so no shaderInt64 is needed) and u8 (bool; needs 8-bit storage), and their results are
// exact. Resize interpolates and takes f32 or f16 only.
//
// ONNX passes some attributes as tensor inputs (Slice starts/ends/axes/steps, Pad pads/
// constant_value/axes, Resize roi/scales/sizes, Split split, Expand shape, Tile repeats). Shapes
// are fixed at create(), so those are descriptor fields here, not tensors.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vkml/ops/op.hpp"

namespace vkml::gpu {
class Pipeline;
}

namespace vkml::ops {

// ---------------------------------------------------------------------------------------------
// Views: Reshape, Flatten, Squeeze, Unsqueeze. No kernel runs; the *_shape functions apply ONNX's
// shape rules (failing with "<Op>: <field>: ..." on a bad argument) and the *_view functions return
// a gpu::Tensor sharing the input's memory. A view needs a contiguous input.

// ONNX Reshape: 0 copies the input's dimension (unless allowzero), one -1 is inferred.
Shape reshape_shape(const Shape& in, std::span<const int64_t> shape, bool allowzero = false);
// ONNX Flatten: [prod(in[:axis]), prod(in[axis:])], axis in [-rank, rank].
Shape flatten_shape(const Shape& in, int64_t axis = 1);
// ONNX Squeeze: drops the size-1 dimensions named by `axes` (empty: every size-1 dimension).
Shape squeeze_shape(const Shape& in, std::span<const int64_t> axes = {});
// ONNX Unsqueeze: inserts size-1 dimensions at `axes`, which index the output's dimensions.
Shape unsqueeze_shape(const Shape& in, std::span<const int64_t> axes);

Tensor reshape_view(const Tensor& t, std::span<const int64_t> shape, bool allowzero = false);
Tensor flatten_view(const Tensor& t, int64_t axis = 1);
Tensor squeeze_view(const Tensor& t, std::span<const int64_t> axes = {});
Tensor unsqueeze_view(const Tensor& t, std::span<const int64_t> axes);

namespace detail {
// Parameters of the strided-copy kernel that Transpose, Slice, Expand, Tile, DepthToSpace,
// SpaceToDepth and Split share (internal; see layout_copy.cpp).
struct LayoutCopyPlan {
    const gpu::Pipeline* pipeline = nullptr;
    uint32_t count = 0; // invocations (32-bit words or elements copied); 0: nothing to do
    std::array<uint32_t, 28> push{};
};
} // namespace detail

// ---------------------------------------------------------------------------------------------
// Resize (opset 19). Inputs: X. Output: Y.
//
// nearest works over any dimensions; linear and cubic interpolate the last two dimensions (H, W
// of NCHW; a rank-1 input counts as W) and need every other dimension unchanged. Coordinates
// follow the ONNX formulas with length_resized the integer output length; the arithmetic is fp32
// on the GPU.
struct ResizeDesc {
    TensorDesc input;
    // Exactly one of scales and sizes, one value per axis in `axes` (all axes when empty).
    std::vector<float> scales;
    std::vector<int64_t> sizes;
    // tf_crop_and_resize only: [start..., end...] per axis, normalized coordinates (default 0, 1).
    std::vector<float> roi;
    std::vector<int64_t> axes;
    std::string mode = "nearest";                              // nearest, linear, cubic
    std::string coordinate_transformation_mode = "half_pixel"; // half_pixel, half_pixel_symmetric,
                                                               // pytorch_half_pixel, align_corners,
                                                               // asymmetric, tf_crop_and_resize,
                                                               // tf_half_pixel_for_nn ((x + 0.5) / scale)
    std::string nearest_mode = "round_prefer_floor";  // round_prefer_floor, round_prefer_ceil, floor, ceil
    std::string keep_aspect_ratio_policy = "stretch"; // stretch, not_larger, not_smaller (sizes only)
    float cubic_coeff_a = -0.75f;
    int64_t exclude_outside = 0;
    float extrapolation_value = 0.f; // tf_crop_and_resize: value of samples outside the input
    int64_t antialias = 0;           // not supported: must be 0
};

class Resize final : public Op {
public:
    static std::unique_ptr<Resize> create(gpu::Device& device, const ResizeDesc& desc);
    const char* type() const override { return "Resize"; }
    // Nearest by whole factors over the last two dimensions in a mode where that is oh / KH, ow / KW:
    // the eight-outputs-an-invocation kernel (layout/upsample.comp).
    bool integer_upsample() const { return upsample_pipeline_ != nullptr; }
    // Linear by whole factors (1, 2, 4) over the last two dimensions, rows of whole runs of 16
    // bytes (f32: 4 outputs; f16: 8, or 4 where rows are not whole 8-runs): the vector-store kernel
    // (layout/resize_up.comp), taken when both tensors start on 16 bytes. 0 where only the
    // general kernel applies, else the run length.
    uint32_t linear_upsample_run() const { return linear_up_run_; }

private:
    explicit Resize(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t count_ = 0;
    const gpu::Pipeline* upsample_pipeline_ = nullptr; // layout/upsample.comp, or null
    uint32_t upsample_groups_ = 0;                     // its invocations
    const gpu::Pipeline* linear_up_pipeline_ = nullptr; // layout/resize_up.comp, or null
    uint32_t linear_up_count_ = 0;                      // its invocations
    uint32_t linear_up_run_ = 0;
    float extrapolation_ = 0.f;
};

// ---------------------------------------------------------------------------------------------
// DepthToSpace: X [N, C, H, W] -> Y [N, C / b², H * b, W * b]; mode DCR (depth-column-row) or CRD.
struct DepthToSpaceDesc {
    TensorDesc input;
    int64_t blocksize = 0;
    std::string mode = "DCR";
};

class DepthToSpace final : public Op {
public:
    static std::unique_ptr<DepthToSpace> create(gpu::Device& device, const DepthToSpaceDesc& desc);
    const char* type() const override { return "DepthToSpace"; }
    // Bytes per load and store of the row kernel (layout/depth_to_space.comp: 16, 8 or 4), or 0
    // where only the general strided copy applies (i64, or rows of no whole unit). record() takes
    // the row kernel when both tensors start on a unit.
    uint32_t row_unit_bytes() const { return unit_bytes_; }
    // Output units each row-kernel invocation stores when it stores whole output units
    // (neighbouring invocations neighbouring units: blocksize dividing the unit's words), else 0.
    uint32_t row_units_per_invocation() const { return split_units_; }

private:
    explicit DepthToSpace(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    detail::LayoutCopyPlan plan_;
    const gpu::Pipeline* rows_pipeline_ = nullptr; // layout/depth_to_space.comp, or null
    uint32_t rows_count_ = 0;                      // its invocations
    uint32_t unit_bytes_ = 0;
    uint32_t split_units_ = 0;
};

// SpaceToDepth: X [N, C, H, W] -> Y [N, C * b², H / b, W / b].
struct SpaceToDepthDesc {
    TensorDesc input;
    int64_t blocksize = 0;
};

class SpaceToDepth final : public Op {
public:
    static std::unique_ptr<SpaceToDepth> create(gpu::Device& device, const SpaceToDepthDesc& desc);
    const char* type() const override { return "SpaceToDepth"; }

private:
    explicit SpaceToDepth(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    detail::LayoutCopyPlan plan_;
};

// ---------------------------------------------------------------------------------------------
// Concat: inputs of one dtype and rank, equal except along `axis`. One dispatch per 8 inputs.
struct ConcatDesc {
    std::vector<TensorDesc> inputs;
    int64_t axis = 0;
};

class Concat final : public Op {
public:
    static std::unique_ptr<Concat> create(gpu::Device& device, const ConcatDesc& desc);
    const char* type() const override { return "Concat"; }

private:
    explicit Concat(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    struct Pass {
        uint32_t first = 0, n = 0, count = 0; // inputs [first, first + n), invocations
        std::array<uint32_t, 16> push{};
    };
    const gpu::Pipeline* pipeline_ = nullptr;
    const gpu::Pipeline* vec_pipeline_ = nullptr; // 16-byte units (rows of whole units), or null
    uint32_t unit_words_ = 1;                      // storage words per unit
    std::vector<Pass> passes_;
};

// Split: `split` gives the output lengths along `axis` (they must sum to its length); or
// num_outputs equal chunks of ceil(length / num_outputs), the last one smaller (opset 18).
struct SplitDesc {
    TensorDesc input;
    int64_t axis = 0;
    std::vector<int64_t> split;
    int64_t num_outputs = 0;
};

class Split final : public Op {
public:
    static std::unique_ptr<Split> create(gpu::Device& device, const SplitDesc& desc);
    const char* type() const override { return "Split"; }

private:
    explicit Split(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    std::vector<detail::LayoutCopyPlan> plans_;
};

// Slice: starts/ends/axes/steps as in ONNX (negative indices count from the end and are clamped;
// negative steps walk backwards). axes default to 0..n-1, steps to 1.
struct SliceDesc {
    TensorDesc input;
    std::vector<int64_t> starts, ends, axes, steps;
};

class Slice final : public Op {
public:
    static std::unique_ptr<Slice> create(gpu::Device& device, const SliceDesc& desc);
    const char* type() const override { return "Slice"; }

private:
    explicit Slice(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    detail::LayoutCopyPlan plan_;
};

// Transpose: output dimension i is input dimension perm[i]; perm defaults to reversing.
struct TransposeDesc {
    TensorDesc input;
    std::vector<int64_t> perm;
    // Applied to every element moved (f32 and f16 inputs): the element-wise activation before a
    // Transpose, fused into it (it commutes with any permutation).
    Activation activation;
};

class Transpose final : public Op {
public:
    static std::unique_ptr<Transpose> create(gpu::Device& device, const TransposeDesc& desc);
    const char* type() const override { return "Transpose"; }

private:
    explicit Transpose(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    detail::LayoutCopyPlan plan_;
};

// Pad (opset 19+): pads = [begin..., end...] for `axes` (all axes when empty); negative pads crop.
// Modes constant (constant_value, converted to the input's dtype), reflect, edge, wrap. reflect
// and wrap repeat as numpy.pad does when a pad exceeds the input length.
struct PadDesc {
    TensorDesc input;
    std::vector<int64_t> pads;
    double constant_value = 0.0;
    std::vector<int64_t> axes;
    std::string mode = "constant";
};

class Pad final : public Op {
public:
    static std::unique_ptr<Pad> create(gpu::Device& device, const PadDesc& desc);
    const char* type() const override { return "Pad"; }

private:
    explicit Pad(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t count_ = 0;
    std::array<uint32_t, 29> push_{};
};

// Gather: Y = data indexed along `axis` by `indices` (i32 or i64; negative counts from the end).
// Inputs: data, indices. Output rank = rank(data) - 1 + rank(indices), at most 6. An index out of
// [-n, n) cannot raise an error on the GPU: its output elements are 0.
struct GatherDesc {
    TensorDesc data;
    TensorDesc indices;
    int64_t axis = 0;
};

class Gather final : public Op {
public:
    static std::unique_ptr<Gather> create(gpu::Device& device, const GatherDesc& desc);
    const char* type() const override { return "Gather"; }

private:
    explicit Gather(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t count_ = 0;
    std::array<uint32_t, 4> push_{};
};

// GatherElements: Y[i...] = data[i... with i[axis] = indices[i...]]; indices (i32 or i64) have
// data's rank and no dimension longer than data's (except along axis); Y has indices' shape.
// Out-of-range indices give 0, as in Gather.
struct GatherElementsDesc {
    TensorDesc data;
    TensorDesc indices;
    int64_t axis = 0;
};

class GatherElements final : public Op {
public:
    static std::unique_ptr<GatherElements> create(gpu::Device& device, const GatherElementsDesc& desc);
    const char* type() const override { return "GatherElements"; }

private:
    explicit GatherElements(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t count_ = 0;
    std::array<uint32_t, 16> push_{};
};

// Expand: broadcasts the input and `shape` against each other (numpy rules, both directions).
struct ExpandDesc {
    TensorDesc input;
    std::vector<int64_t> shape;
};

class Expand final : public Op {
public:
    static std::unique_ptr<Expand> create(gpu::Device& device, const ExpandDesc& desc);
    const char* type() const override { return "Expand"; }

private:
    explicit Expand(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    detail::LayoutCopyPlan plan_;
};

// Tile: output dimension i is input dimension i repeated repeats[i] times.
struct TileDesc {
    TensorDesc input;
    std::vector<int64_t> repeats;
};

class Tile final : public Op {
public:
    static std::unique_ptr<Tile> create(gpu::Device& device, const TileDesc& desc);
    const char* type() const override { return "Tile"; }

private:
    explicit Tile(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    detail::LayoutCopyPlan plan_;
};

// ---------------------------------------------------------------------------------------------
// GridSample (opsets 16 and 20, 2-D): X [N, C, H, W] sampled at grid [N, Ho, Wo, 2] ((x, y) in
// [-1, 1]) into Y [N, C, Ho, Wo]. mode bilinear/linear, nearest (halves to even), bicubic/cubic
// (A = -0.75); padding_mode zeros, border, reflection; align_corners. As ONNX's reference: the
// coordinate is reflected first under reflection padding, then each pixel read is padded. fp32.
struct GridSampleDesc {
    TensorDesc input, grid;
    std::string mode = "bilinear";
    std::string padding_mode = "zeros";
    int64_t align_corners = 0;
};

class GridSample final : public Op {
public:
    static std::unique_ptr<GridSample> create(gpu::Device& device, const GridSampleDesc& desc);
    const char* type() const override { return "GridSample"; }

private:
    explicit GridSample(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 6> push_{};
};

// ---------------------------------------------------------------------------------------------
// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each matrix of the last
// two dimensions, zeroes the rest. k is ONNX's optional input, a descriptor constant here.
struct TriluDesc {
    TensorDesc input; // rank >= 2
    int64_t k = 0;
    bool upper = true;
};

class Trilu final : public Op {
public:
    static std::unique_ptr<Trilu> create(gpu::Device& device, const TriluDesc& desc);
    const char* type() const override { return "Trilu"; }

private:
    explicit Trilu(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<int32_t, 4> push_{}; // elements, rows, cols, k
};

// ---------------------------------------------------------------------------------------------
// ScatterElements and ScatterND: Y = data with updates written (or combined by `reduction`: none,
// add, mul, max, min) at the places `indices` (i32 or i64; negative count from the end) name.
// ScatterElements: indices and updates have one shape, of data's rank; update u goes to u's
// position with its `axis` coordinate replaced by its index. ScatterND: indices [..., q] hold
// tuples of q leading coordinates; updates [..., data.shape[q:]] the slices. Out-of-range indices
// are skipped (ONNX calls them errors). Reductions apply the updates in order in one invocation
// (simple, not fast); none writes in parallel (duplicate indices: one of them wins, as ONNX allows).
struct ScatterDesc {
    bool nd = false; // ScatterND (else ScatterElements)
    TensorDesc data, indices, updates;
    int64_t axis = 0; // ScatterElements
    std::string reduction = "none";
};

class Scatter final : public Op {
public:
    static std::unique_ptr<Scatter> create(gpu::Device& device, const ScatterDesc& desc);
    const char* type() const override { return nd_ ? "ScatterND" : "ScatterElements"; }

private:
    explicit Scatter(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    bool nd_ = false, sequential_ = false;
    detail::LayoutCopyPlan copy_;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 16> push_{};
};

// GatherND (opset 13, batch_dims): indices [..., q] (i32 or i64) select slices of data; the
// output is indices.shape[:-1] + data.shape[batch_dims + q:]. Out-of-range indices give 0.
struct GatherNDDesc {
    TensorDesc data, indices;
    int64_t batch_dims = 0;
};

class GatherND final : public Op {
public:
    static std::unique_ptr<GatherND> create(gpu::Device& device, const GatherNDDesc& desc);
    const char* type() const override { return "GatherND"; }

private:
    explicit GatherND(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 17> push_{};
};

// OneHot: inputs indices (i32, i64, or f32 truncated toward zero; negative count from depth) and values [off, on]; the output
// has values' dtype and indices' shape with `depth` (a descriptor constant) inserted at `axis`.
struct OneHotDesc {
    TensorDesc indices, values;
    int64_t depth = 0;
    int64_t axis = -1;
};

class OneHot final : public Op {
public:
    static std::unique_ptr<OneHot> create(gpu::Device& device, const OneHotDesc& desc);
    const char* type() const override { return "OneHot"; }

private:
    explicit OneHot(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 3> push_{};
};

// ---------------------------------------------------------------------------------------------
// ReverseSequence: X [T, B, ...] (time_axis 0, batch_axis 1) or [B, T, ...] (1, 0) with the first
// sequence_lens[b] steps of each batch entry b reversed, the rest copied. sequence_lens: [B], i32
// (lengths past T are clamped, negative ones are 0).
struct ReverseSequenceDesc {
    TensorDesc input, sequence_lens;
    int64_t time_axis = 0, batch_axis = 1;
};

class ReverseSequence final : public Op {
public:
    static std::unique_ptr<ReverseSequence> create(gpu::Device& device, const ReverseSequenceDesc& desc);
    const char* type() const override { return "ReverseSequence"; }

private:
    explicit ReverseSequence(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 5> push_{}; // elements (words), T, B, inner (words), batch first
};

// ---------------------------------------------------------------------------------------------
// MaxUnpool (2-D): Y [N, C, Ho, Wo] is zero except where MaxPool's indices I (i32) put X's values.
// The default output (H - 1) * stride - pads + kernel is what the indices are flat indices into;
// a larger output_shape keeps each value at the same (n, c, y, x) (as ONNX's reference). Indices
// outside the default output are skipped. Two dispatches: clear, then scatter (duplicates: one wins).
struct MaxUnpoolDesc {
    TensorDesc input, indices;
    std::vector<int64_t> kernel_shape, strides, pads, output_shape;
};

class MaxUnpool final : public Op {
public:
    static std::unique_ptr<MaxUnpool> create(gpu::Device& device, const MaxUnpoolDesc& desc);
    const char* type() const override { return "MaxUnpool"; }

private:
    explicit MaxUnpool(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline *clear_ = nullptr, *scatter_ = nullptr;
    std::array<uint32_t, 6> push_{}; // input elements, output elements, default H, W, output H, W
};

// ---------------------------------------------------------------------------------------------
// RoiAlign (opsets 10 and 16): X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2, in X's coordinates
// before spatial_scale), batch_indices [R] (i32) -> Y [R, C, output_height, output_width]. Each
// bin averages (mode avg) or takes the largest (max, as ONNX Runtime: the largest weighted corner)
// of sampling_ratio^2 bilinear samples (0: ceil(bin size) per axis, at most 1024). coordinate_transformation_mode
// half_pixel (opset 16's default: the roi shifted by half a pixel) or output_half_pixel. fp32.
struct RoiAlignDesc {
    TensorDesc input, rois, batch_indices;
    std::string mode = "avg";
    int64_t output_height = 1, output_width = 1, sampling_ratio = 0;
    float spatial_scale = 1.f;
    std::string coordinate_transformation_mode = "half_pixel";
};

class RoiAlign final : public Op {
public:
    static std::unique_ptr<RoiAlign> create(gpu::Device& device, const RoiAlignDesc& desc);
    const char* type() const override { return "RoiAlign"; }

private:
    explicit RoiAlign(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    struct Push {
        uint32_t count, C, H, W, oh, ow, sampling, max_mode, N;
        float scale, offset;
    } push_{};
};

} // namespace vkml::ops
