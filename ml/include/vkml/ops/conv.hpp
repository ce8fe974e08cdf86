#pragma once
// The convolution family: Conv, ConvTranspose, Gemm and MatMul, with ONNX semantics (NCHW).
// Storage is f32 or f16 (every input and the output share one dtype); accumulation is fp32
// unless a desc asks for f16 (Accumulation, op.hpp: on tensor cores only). Convolutions are 2-D; a 1-D convolution ([N, C, W] input, [M, C/group, KW] weight) runs
// as a 2-D one with H = 1. 3-D convolutions are not supported.
//
// vkml extensions: Conv, ConvTranspose and Gemm can fuse an activation, and the convolutions a
// residual add, into the store of their result, in this order:
//     y = activation(conv(x, w) + bias + residual)
// The residual is one more input after the ONNX ones, of the output's shape and dtype.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkml/ops/op.hpp"

namespace vkml::gpu {
class Pipeline;
}

namespace vkml::ops {

// The Conv kernels. Auto picks by shape (see ConvDesc::kernel); the others force one, which
// create() refuses when it cannot run the shape (so tests run every kernel on every case it
// supports).
enum class ConvKernel : uint8_t {
    Auto,
    Direct,       // one invocation per output; any group, stride, dilation, padding
    Gemm1x1,      // 1x1 kernel, stride 1, no padding, group 1: a batched GEMM W[M,C] x X[n][C,H*W]
    ImplicitGemm, // group 1, any kernel: tiled im2col GEMM staged through shared memory
    TensorCore,   // group 1, any kernel, f16 storage, VK_NV_cooperative_matrix: the implicit GEMM
                  // (1x1 / stride 1 / no padding: the plain GEMM) on tensor cores, fp32 accumulation
    FewOutputs,   // group 1, at most 8 output channels, square 1x1 / 3x3 / 5x5 kernel, stride 1,
                  // dilation 1: every output channel of a 16x64 tile per workgroup, its input
                  // window and weights staged in shared memory (conv/few.comp)
};
const char* conv_kernel_name(ConvKernel kernel);
// What the padding reads: zeros (ONNX Conv), or the input mirrored at the edge (ONNX Pad's
// "reflect": position -1 reads 1, so each pad must be below the axis' size) or repeated
// ("edge": -1 reads 0). Fusing a reflect / edge Pad into its Conv saves a pass over the
// padded tensor (the style network pads every layer so).
enum class ConvPadMode : uint8_t { Zero, Reflect, Edge };
// Whether Conv (ConvKernel::TensorCore), Gemm and MatMul run on tensor cores for `dtype` tensors on
// this device: f16 storage and VK_NV_cooperative_matrix (off with VKML_DISABLE_COOPMAT=1).
bool tensor_cores_available(const gpu::Device& device, DType dtype);
// Whether those tensor cores also sum in f16 (Accumulation::F16 takes effect): a 16x16x16
// f16 x f16 + f16 cooperative-matrix shape.
bool f16_accumulation_available(const gpu::Device& device, DType dtype);

struct ConvDesc {
    TensorDesc input;               // X [N, C, H, W] (or [N, C, W])
    TensorDesc weight;              // W [M, C/group, kH, kW] (or [M, C/group, kW])
    std::optional<TensorDesc> bias; // B [M]
    // ONNX attributes; empty means the ONNX default. kernel_shape, when given, must match W.
    std::vector<int64_t> kernel_shape;
    std::vector<int64_t> strides;    // per spatial axis, default 1
    std::vector<int64_t> pads;       // [begin..., end...] per spatial axis, default 0
    std::vector<int64_t> dilations;  // per spatial axis, default 1
    std::string auto_pad = "NOTSET"; // NOTSET, SAME_UPPER, SAME_LOWER, VALID
    int64_t group = 1;
    // vkml extensions.
    ConvPadMode pad_mode = ConvPadMode::Zero;
    Activation activation;
    bool residual = false; // adds an input R of the output's shape: y = act(conv + bias + R)
    // Auto: FewOutputs where it runs (at most 8 output channels; on tensor-core devices only while
    // KH * KW * M <= 72, beyond which the tensor cores win); TensorCore for group 1 in f16 storage
    // on a device with cooperative matrices (from 12 output channels); else Gemm1x1 for 1x1 / stride 1 / no padding / group 1;
    // ImplicitGemm for group 1 with a kernel of 3x3 (9 taps) or more; Direct otherwise (grouped,
    // depthwise, small kernels).
    ConvKernel kernel = ConvKernel::Auto;
    // TensorCore (not as a 1x1 GEMM): K chunks summed by a second pass. 0: chosen by the output
    // grid (split when it has at most VKML_SPLIT_TARGET / 16 workgroups and K >= 256); 1: never;
    // N: at most N chunks of whole 64-deep slices.
    uint32_t split_k = 0;
    // TensorCore, 3x3, 5x5 or 9x9 stride 1 (or 3x3 and 5x5 stride 2) / dilation 1 / top and left
    // pads below the kernel size / channels a multiple of 8 / not split: each output tile's input
    // window is staged in shared memory once for all taps (conv/halo.comp) instead of gathered tap
    // by tap. false: the implicit GEMM (for tests and tuning; VKML_DISABLE_CONV_HALO=1 turns it off
    // everywhere).
    bool halo = true;
    // The staged-window kernel also on grids of fewer than VKML_HALO_MIN_GROUPS workgroups (0 by
    // default: none), which Auto leaves to the implicit GEMM when that is set: for tests.
    bool halo_small_grids = false;
    // Output rows of the staged-window kernel's tiles (of 32 columns): 0 chosen by the grid (16 on
    // large maps, VKML_HALO_TALL_MIN, else 8); 8 or 16 ask for that height where a variant of it
    // runs the layer (16: 3x3 up to 64 rows a block, 5x5 64), for tests and tuning.
    uint32_t halo_rows = 0;
    // F16: the tensor-core kernels (TensorCore) sum in f16 fragments where the device has them
    // (see Accumulation); accumulation() says what the op got.
    Accumulation accumulation = Accumulation::F32;
};

// Inputs: X, W, then B when desc.bias is set, then R when desc.residual. Output: Y.
class Conv final : public Op {
public:
    static std::unique_ptr<Conv> create(gpu::Device& device, const ConvDesc& desc);
    const char* type() const override { return "Conv"; }
    ConvKernel kernel() const { return kernel_; } // the kernel create() chose
    uint32_t split_k() const { return split_; }   // K chunks it sums separately (1: none)
    bool halo() const { return halo_; }            // TensorCore on the staged-window kernel
    // ... its variant (a conv_halo line of shaders/conv.list, e.g. "conv_halo_s2_h32"), or nullptr
    const char* halo_shader() const { return halo_shader_; }
    Accumulation accumulation() const { return accumulation_; } // what its products are summed in
    // Effective pads [top, left, bottom, right] after auto_pad (1-D: top = bottom = 0).
    const std::array<int64_t, 4>& pads() const { return pads_; }
    // The tensor-core kernels' weights (input 1), re-packed tap-major on every run unless packed
    // once (Op::prepack).
    Prepack prepack() const override { return {1, pack_pipeline_ ? packed_bytes_ : 0}; }

private:
    explicit Conv(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    void record_prepack_impl(gpu::CommandBuffer& cmd, const Tensor& input, const gpu::BufferRange& packed) const override;
    void record_prepacked_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                               const gpu::BufferRange& scratch, const gpu::BufferRange& prepacked) const override;
    void record_with(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch, const gpu::BufferRange* prepacked) const;

    ConvKernel kernel_ = ConvKernel::Direct;
    uint32_t split_ = 1; // K chunks (TensorCore)
    bool halo_ = false;  // TensorCore: conv/halo.comp
    const char* halo_shader_ = nullptr;
    Accumulation accumulation_ = Accumulation::F32;
    std::array<int64_t, 4> pads_{};
    bool has_bias_ = false, has_residual_ = false;
    bool gemm_form_ = false; // recorded as the 1x1 GEMM (weights first)
    uint64_t direct_invocations_ = 0; // Direct: invocations (output channels blocked by up to 8)
    const gpu::Pipeline* pipeline_ = nullptr;
    const gpu::Pipeline* pack_pipeline_ = nullptr; // TensorCore: weights re-packed tap-major
    const gpu::Pipeline* reduce_pipeline_ = nullptr; // TensorCore with split K: adds the partials
    uint64_t packed_bytes_ = 0, partial_offset_ = 0, partial_bytes_ = 0, split_outputs_ = 0; // scratch layout
    std::array<uint32_t, 3> groups_{};
    std::array<float, 4> push_{}; // Gemm1x1: alpha, beta, act alpha, act beta; others: act alpha, beta
};

struct ConvTransposeDesc {
    TensorDesc input;                    // X [N, C, H, W] (or [N, C, W])
    TensorDesc weight;                   // W [C, M/group, kH, kW] (or [C, M/group, kW])
    std::optional<TensorDesc> bias;      // B [M]
    std::vector<int64_t> kernel_shape;   // must match W when given
    std::vector<int64_t> strides;        // default 1
    std::vector<int64_t> pads;           // [begin..., end...], default 0; ignored when output_shape is set
    std::vector<int64_t> dilations;      // default 1
    std::vector<int64_t> output_padding; // default 0; extra rows/columns at the end of the output
    // Spatial output shape (or the full [N, M, spatial...]); pads are then derived from it as
    // ONNX says (SAME_UPPER puts the odd pad at the end, other modes at the beginning).
    std::vector<int64_t> output_shape;
    std::string auto_pad = "NOTSET"; // SAME_*: output = input * stride
    int64_t group = 1;
    Activation activation; // vkml extension, as in Conv
    bool residual = false; // vkml extension, as in Conv
};

// Inputs: X, W, then B when desc.bias is set, then R when desc.residual. Output: Y.
class ConvTranspose final : public Op {
public:
    static std::unique_ptr<ConvTranspose> create(gpu::Device& device, const ConvTransposeDesc& desc);
    const char* type() const override { return "ConvTranspose"; }
    // Effective pads [top, left, bottom, right] after output_shape / auto_pad.
    const std::array<int64_t, 4>& pads() const { return pads_; }

private:
    explicit ConvTranspose(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    std::array<int64_t, 4> pads_{};
    bool has_bias_ = false, has_residual_ = false;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<float, 2> push_{};
};

struct GemmDesc {
    TensorDesc a;                // A [M, K], or [K, M] with trans_a
    TensorDesc b;                // B [K, N], or [N, K] with trans_b
    std::optional<TensorDesc> c; // C, unidirectionally broadcastable to [M, N] (rank 0..2)
    float alpha = 1.f;
    float beta = 1.f;
    bool trans_a = false;  // ONNX transA
    bool trans_b = false;  // ONNX transB
    Activation activation; // vkml extension: y = act(alpha * A'B' + beta * C)
    // F16: f16 accumulator fragments on tensor cores where the device has them (see Accumulation).
    Accumulation accumulation = Accumulation::F32;
};

// Inputs: A, B, then C when desc.c is set. Output: Y [M, N].
class Gemm final : public Op {
public:
    static std::unique_ptr<Gemm> create(gpu::Device& device, const GemmDesc& desc);
    const char* type() const override { return "Gemm"; }
    // Whether it runs on the few-rows kernel (at most 4 rows of A: K split across a workgroup)
    // rather than a tile.
    bool vector_kernel() const { return vector_; }
    Accumulation accumulation() const { return accumulation_; } // what its products are summed in

private:
    explicit Gemm(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    bool has_c_ = false;
    bool vector_ = false;
    Accumulation accumulation_ = Accumulation::F32;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 3> groups_{};
    std::array<float, 4> push_{};
};

struct MatMulDesc {
    TensorDesc a; // [..., M, K]; a 1-D [K] is promoted to [1, K] and the 1 dropped from Y
    TensorDesc b; // [..., K, N]; a 1-D [K] is promoted to [K, 1] and the 1 dropped from Y
    // F16: f16 accumulator fragments on tensor cores where the device has them (see Accumulation).
    Accumulation accumulation = Accumulation::F32;
};

// numpy matmul: batch dimensions broadcast (Y of rank up to 6). Inputs: A, B. Output: Y.
class MatMul final : public Op {
public:
    static std::unique_ptr<MatMul> create(gpu::Device& device, const MatMulDesc& desc);
    const char* type() const override { return "MatMul"; }
    // Whether it runs on the few-rows kernel (at most 4 rows of A: K split across a workgroup)
    // rather than a tile.
    bool vector_kernel() const { return vector_; }
    Accumulation accumulation() const { return accumulation_; } // what its products are summed in
    // The pipeline it records (shader and variant, e.g. "conv_gemm_cm256_f16": the tile Auto chose).
    const std::string& kernel() const;

private:
    explicit MatMul(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    bool vector_ = false;
    Accumulation accumulation_ = Accumulation::F32;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 3> groups_{};
    std::array<float, 4> push_{};
};

} // namespace vkml::ops
