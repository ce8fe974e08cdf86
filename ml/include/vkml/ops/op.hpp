#pragma once
// vkml's layer-by-layer operator API, in the manner of DirectML: an operator is created once for
// fixed input shapes and dtypes (validating its descriptor and building its pipelines), then
// recorded any number of times into the caller's command buffers. Recording allocates and builds
// nothing. Barriers between the caller's ops are the caller's (see gpu::barrier); the graph
// runtime and the frame graph insert them automatically.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vkml/error.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/tensor.hpp"

namespace vkml::ops {

using gpu::DType;
using gpu::Shape;
using gpu::Tensor;

// The shape and dtype of an op's input or output.
struct TensorDesc {
    Shape shape;
    DType dtype = DType::f32;
    bool operator==(const TensorDesc&) const = default;
};
std::string to_string(const TensorDesc& desc); // "f16[1, 3, 224, 224]"

// Activations that ops such as Conv, Gemm and the element-wise ops can apply to their result
// before storing it, saving a pass over memory. Parameters follow ONNX: LeakyRelu alpha, Clip
// min (alpha) and max (beta), HardSigmoid alpha and beta, Elu alpha.
enum class ActivationKind : uint8_t {
    None,
    Relu,
    LeakyRelu,
    Clip,
    Sigmoid,
    HardSigmoid,
    HardSwish,
    Tanh,
    Silu,
    Gelu,
    Elu,
    Mish
};
struct Activation {
    ActivationKind kind = ActivationKind::None;
    float alpha = 0.f;
    float beta = 0.f;
};
const char* activation_name(ActivationKind kind);

// The arithmetic precision of an op on f16 tensors (a per-op choice; f32 tensors always get fp32).
//   Auto: half-precision arithmetic when the device has shaderFloat16 and the op has such a path,
//         which ops offer only where it keeps (or nearly keeps) the error bound of fp32 math
//         followed by the f16 store; each op's registry notes say which. Otherwise fp32 math.
//   F32:  fp32 math always (f16 values widened on load, rounded once on store).
// Reductions and normalization statistics accumulate in fp32 either way; convolutions, Gemm and
// MatMul too unless asked otherwise (Accumulation).
enum class MathPrecision : uint8_t { Auto, F32 };

// What Conv, Gemm and MatMul sum their products in (a per-op choice, ConvDesc / GemmDesc /
// MatMulDesc::accumulation).
//   F32: fp32 always (the default).
//   F16: f16 accumulator fragments where the op runs on tensor cores (f16 storage) and the device
//        multiplies f16 x f16 + f16 cooperative matrices: half the accumulator registers, but every
//        partial sum rounded to f16 (relative error growing with the reduction length; for short
//        reductions of well-scaled data, as in image networks). Everywhere else the op accumulates
//        in fp32; its accumulation() says which it got.
enum class Accumulation : uint8_t { F32, F16 };

class Op {
public:
    virtual ~Op() = default;
    Op(const Op&) = delete;
    Op& operator=(const Op&) = delete;

    // The ONNX operator type, e.g. "Conv".
    virtual const char* type() const = 0;
    const std::vector<TensorDesc>& inputs() const { return inputs_; }
    const std::vector<TensorDesc>& outputs() const { return outputs_; }
    // Bytes of temporary device memory record() needs, 0 for most ops.
    uint64_t scratch_bytes() const { return scratch_bytes_; }

    // Records the op into `cmd`. The tensors must have the shapes and dtypes given at creation
    // (checked, with an error naming the op and the tensor) and be bound at offsets aligned to the
    // device's minStorageBufferOffsetAlignment. `scratch` must hold scratch_bytes().
    void record(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                const gpu::BufferRange& scratch = {}) const;

    // An input the op re-packs on every run before its main work (Conv's weights, tap-major for
    // the tensor cores), which a caller that knows it constant (a model's weights) can have
    // packed once: prepack() names the input and the packed form's size (bytes 0: the op packs
    // nothing); record_prepack() writes the packed form of that input into `packed`; record()
    // given that range (its contents kept since, the writes made visible by a barrier) then skips
    // the pack and its barrier. The Session packs its constant weights so when it is built.
    struct Prepack {
        uint32_t input = 0;
        uint64_t bytes = 0;
    };
    virtual Prepack prepack() const { return {}; }
    void record_prepack(gpu::CommandBuffer& cmd, const Tensor& input, const gpu::BufferRange& packed) const;
    void record(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                const gpu::BufferRange& scratch, const gpu::BufferRange& prepacked) const;

protected:
    explicit Op(gpu::Device& device) : device_(device) {}
    virtual void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, const gpu::BufferRange& scratch) const = 0;
    // For ops whose prepack() has bytes: the pack alone, and a run that reads `prepacked` instead.
    virtual void record_prepack_impl(gpu::CommandBuffer& cmd, const Tensor& input,
                                     const gpu::BufferRange& packed) const;
    virtual void record_prepacked_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                       std::span<const Tensor> outputs, const gpu::BufferRange& scratch,
                                       const gpu::BufferRange& prepacked) const;

    gpu::Device& device_;
    std::vector<TensorDesc> inputs_;
    std::vector<TensorDesc> outputs_;
    uint64_t scratch_bytes_ = 0;
};

// Throws vkml::Error(InvalidArgument) with "<op>: <field>: <what>".
[[noreturn]] void fail(const char* op, const std::string& field, const std::string& what);
// Throws vkml::Error(Unsupported) with "<op>: <what>".
[[noreturn]] void unsupported(const char* op, const std::string& what);

} // namespace vkml::ops
