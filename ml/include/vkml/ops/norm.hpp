#pragma once
// Normalization operators (ONNX semantics): BatchNormalization (inference), InstanceNormalization,
// LayerNormalization, GroupNormalization and LRN.
//
// Instance, Layer and Group normalization share one kernel: each normalizes contiguous groups of
// elements (an (n, c) plane, a row of the normalized dims, a group of channels) with mean and
// variance accumulated in fp32 by Welford's method relative to the group's first element (so inputs
// with a large mean, e.g. 100 +- 1, lose no accuracy), then applies a scale and bias and an optional
// fused activation. A group is reduced either by one workgroup ("single-pass": statistics, then the
// output, in one dispatch) or, when there are few large groups, by several workgroups per group
// ("split": per-workgroup partial moments into scratch, then a second dispatch merges them and
// writes its share of the output), so that few large planes still fill the GPU. The split can also
// run as one dispatch (NormSplit::OneDispatch): each workgroup waits for the group's other
// workgroups' moments, then writes its chunk while it is still in the L2 cache (or registers).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "vkml/gpu/buffer.hpp"
#include "vkml/ops/op.hpp"

namespace vkml::gpu {
class Pipeline;
}

namespace vkml::ops {

// Inference-mode batch normalization: Y = (X - input_mean) / sqrt(input_var + epsilon) * scale + B,
// per channel (dimension 1). Every parameter is [C] with X's dtype.
struct BatchNormalizationDesc {
    TensorDesc input; // X: (N, C, D1, ...), rank >= 2
    TensorDesc scale, bias, input_mean, input_var;
    float epsilon = 1e-5f;
    float momentum = 0.9f;     // used by training only; accepted and ignored
    int64_t training_mode = 0; // 1 (training: batch statistics, running-stat outputs) is unsupported
    Activation activation;     // applied to Y before it is stored
};

class BatchNormalization final : public Op {
public:
    static std::unique_ptr<BatchNormalization> create(gpu::Device& device,
                                                      const BatchNormalizationDesc& desc);
    const char* type() const override { return "BatchNormalization"; }

private:
    explicit BatchNormalization(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint64_t elements_ = 0;
    float epsilon_ = 0.f;
    Activation activation_;
};

// How the workgroups that split one group (partials > 1) combine its moments.
//   TwoDispatches: every chunk's moments into scratch, then a second dispatch merges them and
//     writes the output: the input is read twice.
//   OneDispatch: each workgroup computes its chunk's moments, publishes them in the op's own
//     buffer and waits for the group's other workgroups to publish theirs, then writes its chunk,
//     reading it again while it is in the L2 cache (streamed) or, where partials is given, from
//     registers (held: chunks of up to 8192 elements, the input read once). Vulkan does not
//     promise that a dispatch's workgroups run side by side, so the wait is bounded; a workgroup
//     that waited too long computes the group's moments itself (the same result, more reads).
//     Workgroups take their chunks in the order they start, so a wait needs only a group's
//     workgroups side by side, never the whole grid's. For groups of whole
//     16-byte units (8-byte for f16 groups of whole 4-vectors) with no broadcast parameters and no
//     Mean/InvStdDev outputs; asking for it elsewhere is an error. X and Y not on 16 bytes at
//     record time take the two-dispatch kernels.
//   Auto: OneDispatch (streamed) where it applies on a GPU that reports its multiprocessors
//     (Capabilities::multiprocessors) when all the workgroups fit on them at once (four each) and
//     a group has at most 64; TwoDispatches elsewhere.
enum class NormSplit : uint8_t { Auto, TwoDispatches, OneDispatch };

// What Instance, Layer and Group normalization share: the compiled kernels and their launch shape.
// Not constructed by users; see the three ops below.
class GroupedNormalization : public Op {
public:
    // Workgroups that share one group's statistics: 1 for the single-pass kernel, more for the
    // split kernel.
    uint32_t partials() const { return partials_; }
    // Units (16 or 8 bytes) each invocation of the single-pass kernel (or of the one-dispatch
    // split's held form) keeps in registers, so the group is read once, when X and Y start on 16
    // bytes; 0 where it reads the group (its chunk) twice.
    uint32_t cached_units() const { return cached_units_; }
    // Whether the split runs as one dispatch (NormSplit::OneDispatch, chosen or asked for).
    bool one_dispatch() const { return coop_ != nullptr; }

protected:
    explicit GroupedNormalization(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    friend struct GroupedNormalizationBuilder;
    const gpu::Pipeline* single_ = nullptr;  // single-pass kernel
    const gpu::Pipeline* moments_ = nullptr; // split kernel, stage 1
    const gpu::Pipeline* apply_ = nullptr;   // split kernel, stage 2
    // The same kernels moving whole units per load and store (16 bytes, or 8 for f16 groups of
    // whole 4-vectors only; per-channel or per-element parameters), taken when X and Y start on 16
    // bytes.
    const gpu::Pipeline *single_vec_ = nullptr, *moments_vec_ = nullptr, *apply_vec_ = nullptr;
    // The one-dispatch split (whole units only) and its counters and published moments, zero
    // between runs.
    const gpu::Pipeline* coop_ = nullptr;
    gpu::Buffer sync_;
    std::array<uint32_t, 3> grid_{}; // workgroups: groups x partials, folded into y when large
    uint32_t partials_ = 1;
    uint32_t cached_units_ = 0;
    bool has_bias_ = true;
    bool stats_outputs_ = false;
    std::vector<uint32_t> push_; // push-constant words, fixed at create()
};

// Y = (X - mean) / sqrt(var + epsilon) * scale[c] + B[c], with mean and variance over the spatial
// dimensions of each (n, c). scale and B are [C] with X's dtype.
struct InstanceNormalizationDesc {
    TensorDesc input; // X: (N, C, D1, ...), rank >= 3
    TensorDesc scale, bias;
    float epsilon = 1e-5f;
    Activation activation; // e.g. the ReLU that follows it in fast-neural-style
    // Workgroups per (n, c) plane: 0 picks by size (the split kernel when there are few large
    // planes); a value forces that many (at most 256, or the device's workgroup-size limit; fewer
    // when the plane has fewer elements), so tests reach both kernels.
    uint32_t partials = 0;
    NormSplit split = NormSplit::Auto; // how a split plane's workgroups combine their moments
};

class InstanceNormalization final : public GroupedNormalization {
public:
    static std::unique_ptr<InstanceNormalization> create(gpu::Device& device,
                                                         const InstanceNormalizationDesc& desc);
    const char* type() const override { return "InstanceNormalization"; }

private:
    explicit InstanceNormalization(gpu::Device& device) : GroupedNormalization(device) {}
};

// Normalizes over the dimensions axis..rank-1: Y = (X - mean) * InvStdDev * Scale + B. Scale and the
// optional B (X's dtype) broadcast unidirectionally to X; the common [X.shape[axis:]] form takes a
// faster indexing path. Mean and variance are computed in fp32 (stash_type 1 only).
struct LayerNormalizationDesc {
    TensorDesc input; // X
    TensorDesc scale;
    std::optional<TensorDesc> bias;
    int64_t axis = -1;
    float epsilon = 1e-5f;
    int64_t stash_type = 1; // ONNX TensorProto FLOAT; others are unsupported
    // Also output Mean and InvStdDev (f32, shape X.shape[:axis] followed by ones), ONNX's optional
    // second and third outputs.
    bool stats_outputs = false;
    Activation activation;
    uint32_t partials = 0; // as InstanceNormalizationDesc::partials, per normalized row
    NormSplit split = NormSplit::Auto;
};

class LayerNormalization final : public GroupedNormalization {
public:
    static std::unique_ptr<LayerNormalization> create(gpu::Device& device,
                                                      const LayerNormalizationDesc& desc);
    const char* type() const override { return "LayerNormalization"; }

private:
    explicit LayerNormalization(gpu::Device& device) : GroupedNormalization(device) {}
};

// Splits the C channels into num_groups groups and normalizes each (n, group) over its channels
// and spatial dimensions. scale and bias are per channel ([C], opset 21); the opset-18 form with
// per-group [num_groups] scale and bias is accepted too when num_groups != C (when they are equal
// the two forms coincide).
struct GroupNormalizationDesc {
    TensorDesc input; // X: (N, C, D1, ...), rank >= 3
    TensorDesc scale, bias;
    int64_t num_groups = 0; // required, must divide C
    float epsilon = 1e-5f;
    int64_t stash_type = 1; // fp32 statistics only
    Activation activation;  // e.g. the SiLU that follows GroupNorm in diffusion U-Nets
    uint32_t partials = 0;  // as InstanceNormalizationDesc::partials, per (n, group)
    NormSplit split = NormSplit::Auto;
};

class GroupNormalization final : public GroupedNormalization {
public:
    static std::unique_ptr<GroupNormalization> create(gpu::Device& device,
                                                      const GroupNormalizationDesc& desc);
    const char* type() const override { return "GroupNormalization"; }

private:
    explicit GroupNormalization(gpu::Device& device) : GroupedNormalization(device) {}
};

// Local response normalization across channels:
// Y = X / (bias + alpha / size * sum of X^2 over channels c - floor((size-1)/2) .. c +
// ceil((size-1)/2))^beta.
struct LRNDesc {
    TensorDesc input; // X: (N, C, D1, ...), rank >= 2
    float alpha = 1e-4f;
    float beta = 0.75f;
    float bias = 1.f;
    int64_t size = 0; // required, >= 1
};

class LRN final : public Op {
public:
    static std::unique_ptr<LRN> create(gpu::Device& device, const LRNDesc& desc);
    const char* type() const override { return "LRN"; }

private:
    explicit LRN(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint64_t elements_ = 0;
    float alpha_ = 0.f, beta_ = 0.f, bias_ = 0.f;
};

// ---------------------------------------------------------------------------------------------
// BatchNormalization in training mode (ONNX opset 14/15): the batch's own per-channel mean and
// (population) variance normalize X, and the running statistics come out updated:
//   Y = (X - mean) / sqrt(var + epsilon) * scale + B
//   running_mean = input_mean * momentum + mean * (1 - momentum), running_var likewise.
// One invocation per channel (two passes over its N x spatial elements in fp32): simple, not fast.
// Outputs: Y, running_mean, running_var.
struct BatchNormTrainingDesc {
    TensorDesc input;                              // (N, C, D1, ...), rank >= 2
    TensorDesc scale, bias, input_mean, input_var; // [C]
    float epsilon = 1e-5f;
    float momentum = 0.9f;
};

class BatchNormTraining final : public Op {
public:
    static std::unique_ptr<BatchNormTraining> create(gpu::Device& device, const BatchNormTrainingDesc& desc);
    const char* type() const override { return "BatchNormalization"; }

private:
    explicit BatchNormTraining(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    struct Push {
        uint32_t C, N, inner;
        float epsilon, momentum;
    } push_{};
};

} // namespace vkml::ops
