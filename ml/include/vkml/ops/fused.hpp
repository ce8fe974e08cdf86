#pragma once
// Fused subgraphs: whole networks (or parts) that one kernel computes in a single dispatch,
// keeping the intermediate activations on chip. A graph pass (ml/graph/passes.hpp,
// fuse_conv_stacks) builds them from the ops they replace; they can be created directly too.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkml/gpu/buffer.hpp"
#include "vkml/ops/op.hpp"

namespace vkml::ops {

// ---------------------------------------------------------------------------------------------
// FusedConvStack: a network of few-channel 3x3 convolutions as Anime4K's (S, M, L, UL and its
// restore networks), in one dispatch (shaders/fused/conv_stack.comp). With D layers of C channels
// and act = CReLU ([relu(f), relu(-f)], 2C channels) or ReLU:
//
//   f_0 = conv3x3(x)                      x: [N, Cin, H, W], Cin 1..4
//   f_l = conv3x3(act(f_{l-1}))            l = 1 .. D-1, C outputs each (C 1..8)
//   head: Concat1x1  h = conv1x1(concat(act(f_0), ..., act(f_{D-1})))    K outputs, K <= 16
//         LastLayer  h = f_{D-1}, whose layer has K outputs (K <= 8)
//   y:    DepthToSpaceBilinear  DepthToSpace(h, 2, CRD) + Resize(x, 2x, linear, half_pixel)
//                               [N, max(K/4, Cin), 2H, 2W]; K/4 and Cin are 1 (broadcast) or equal
//         Residual              x + h[:, :Cin]        [N, Cin, H, W]
//
// Every 3x3 convolution has stride 1, dilation 1 and zero padding 1. A workgroup computes a tile
// of the output and every layer's window around it in shared memory (the halo shrinks by a pixel
// a layer), so the activations never reach memory; the weights are packed once, at creation, into
// the op's own buffer. The input and output have the input's dtype; `smem` is the precision of
// the activations between layers (f16: packed halves, as f16 storage would round them; f32: exact).
struct ConvStackLayer {
    std::vector<float> weight; // [outputs, inputs, 3, 3] (the 1x1 head: [K, inputs, 1, 1]), ONNX order
    std::vector<float> bias;   // [outputs], or empty for zeros
    int64_t outputs = 0;
};

enum class StackAct : uint8_t { CRelu, Relu };
enum class StackHead : uint8_t { Concat1x1, LastLayer };
enum class StackOutput : uint8_t { DepthToSpaceBilinear, Residual };
// Which kernel computes the stack. TensorCores (shaders/fused/conv_stack_mma.comp) runs every 3x3
// layer and the 1x1 head as f16 x f16 cooperative-matrix products with fp32 sums; it needs
// VK_NV/KHR_cooperative_matrix with 16x16x16 f16 shapes, 32-wide subgroups and smem f16 (its
// weights are rounded to f16 too), on NVIDIA only. Scalar (fused/conv_stack.comp) runs anywhere.
// Auto takes the tensor cores where they run and the layers read more than 8 channels (CReLU of
// 8, as Anime4K L; below that the scalar kernel is faster), VKML_STACK_MMA=0 never.
enum class StackKernel : uint8_t { Auto, Scalar, TensorCores };

struct ConvStackDesc {
    TensorDesc input;
    std::vector<ConvStackLayer> layers; // the 3x3 layers, f_0 first
    StackAct act = StackAct::CRelu;
    StackHead head = StackHead::Concat1x1;
    ConvStackLayer head_conv; // Concat1x1 only
    StackOutput output = StackOutput::DepthToSpaceBilinear;
    DType smem = DType::f16; // f16 or f32
    // The output tile (width, height) a workgroup computes; {0, 0}: chosen from the shapes and
    // the device's shared memory (VKML_STACK_TILE=WxH overrides that choice for tuning).
    std::array<int, 2> tile{0, 0};
    StackKernel kernel = StackKernel::Auto;
};

class FusedConvStack final : public Op {
public:
    static std::unique_ptr<FusedConvStack> create(gpu::Device& device, const ConvStackDesc& desc);
    // Whether create() would succeed (the desc is valid, a tile fits the device's shared memory
    // and the shader variant runs there), without building anything; `why` says why not.
    static bool supported(gpu::Device& device, const ConvStackDesc& desc, std::string* why = nullptr);
    const char* type() const override { return "FusedConvStack"; }

    std::array<int, 2> tile() const { return tile_; }
    bool tensor_cores() const { return tensor_cores_; } // the kernel create() chose
    uint32_t shared_bytes() const { return shared_bytes_; } // per workgroup
    std::array<uint32_t, 3> groups() const { return groups_; }

private:
    explicit FusedConvStack(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    gpu::Buffer weights_;
    std::array<int, 2> tile_{};
    bool tensor_cores_ = false;
    uint32_t shared_bytes_ = 0;
    std::array<uint32_t, 3> groups_{};
};

// ---------------------------------------------------------------------------------------------
// FusedAttention: scaled dot-product attention in one dispatch (shaders/fused/attention.comp),
//
//   S = scale * Q K^T                     Q: [batch..., Sq, D], K: [batch..., Sk, D]
//   S = select ? (cond == select_keep ? S : fill) : S       cond: bool, broadcast to S
//   S = S + mask                          mask: float, broadcast to S ([batch..., Sq, Sk])
//   Y = softmax(S, last axis) V           V: [batch..., Sk, Dv], Y: [batch..., Sq, Dv]
//
// as the MatMul -> Mul/Div -> (Where) -> (Add) -> Softmax -> MatMul pattern of exported
// transformers computes it (graph::fuse_attention finds it). The batch dimensions broadcast as
// MatMul's do (numpy; multi-query attention's K and V of one head). With k_transposed, `k` holds
// K^T ([batch..., D, Sk]) and is read as such, so no transposed copy is made.
//
// A workgroup owns a block of query rows of one batch index and walks K and V in tiles staged
// through shared memory, keeping a running row maximum, sum and output (online softmax, as
// flash attention does): the scores never reach memory. Sums and the softmax are fp32; Q, K, V,
// the mask and Y are stored in f32 or f16 (Q, K, V and Y of one dtype; the additive mask too).
// A row whose every score is -inf gets the mean of V's rows, as vkml's Softmax gives such a row
// equal weights.
struct AttentionDesc {
    TensorDesc q, k, v;
    bool k_transposed = false;
    float scale = 1.f;
    bool select = false;     // a boolean mask `cond` (u8) selects between the score and `fill`
    bool select_keep = true; // the score is kept where cond == select_keep
    float fill = 0.f;
    TensorDesc cond;       // select only
    bool add_mask = false; // an additive float `mask`
    TensorDesc mask;
    // Query rows and key rows per tile; {0, 0}: chosen from the shapes and the device's shared
    // memory (tests pick each size).
    std::array<int, 2> tile{0, 0};
};

class FusedAttention final : public Op {
public:
    // The largest D and Dv the kernel takes.
    static constexpr int64_t max_head_dim = 256;
    // Inputs in this order: q, k, v, then cond (with select), then mask (with add_mask).
    static std::unique_ptr<FusedAttention> create(gpu::Device& device, const AttentionDesc& desc);
    // Whether create() would succeed, without building anything; `why` says why not.
    static bool supported(gpu::Device& device, const AttentionDesc& desc, std::string* why = nullptr);
    const char* type() const override { return "FusedAttention"; }

    std::array<int, 2> tile() const { return tile_; }
    uint32_t shared_bytes() const { return shared_bytes_; }

private:
    explicit FusedAttention(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<int, 2> tile_{};
    uint32_t shared_bytes_ = 0;
    std::array<uint32_t, 3> groups_{};
    bool has_cond_ = false, has_mask_ = false;
    std::array<uint32_t, 32> push_{}; // the shader's push constants (shapes and strides)
};

} // namespace vkml::ops
