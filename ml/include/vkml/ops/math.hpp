#pragma once
// The linear-algebra family, with ONNX semantics: Einsum (one or two operands) and Det.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkml/ops/op.hpp"

namespace vkml::gpu {
class Pipeline;
}

namespace vkml::ops {

// ---------------------------------------------------------------------------------------------
// Einsum: the sum of products the equation names (numpy's einsum): "bij,bjk->bik", "ii->i"
// (diagonals: a label repeated in one operand), "...ij->...ji" (ellipsis, broadcast between the
// operands), "ij->i" (sums), implicit output ("ij,jk": the labels seen once, sorted, after the
// ellipsis dimensions). One or two operands (f32 or f16, the same dtype); at most 6 output
// dimensions and 6 summed labels. One invocation per output element sums in fp32 over the summed
// labels; the shapes are specialization constants (simple, not a tuned GEMM: MatMul is that).
struct EinsumDesc {
    std::string equation;
    std::vector<TensorDesc> inputs;
};

class Einsum final : public Op {
public:
    static std::unique_ptr<Einsum> create(gpu::Device& device, const EinsumDesc& desc);
    const char* type() const override { return "Einsum"; }

private:
    explicit Einsum(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t count_ = 0; // output elements
};

// ---------------------------------------------------------------------------------------------
// Det: the determinant of each square matrix of the last two dimensions ([..., M, M] ->
// [...]), by LU decomposition with partial pivoting in fp32, one invocation per matrix, the
// matrix copied to the op's scratch (fp32).
struct DetDesc {
    TensorDesc input; // f32 or f16, rank >= 2
};

class Det final : public Op {
public:
    static std::unique_ptr<Det> create(gpu::Device& device, const DetDesc& desc);
    const char* type() const override { return "Det"; }

private:
    explicit Det(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 2> push_{}; // matrices, M
};

// ---------------------------------------------------------------------------------------------
// DFT (opset 17): the discrete Fourier transform of length `length` along `axis` of a real
// ([..., 1]) or complex ([..., 2]) signal, into [..., length or length / 2 + 1 (onesided), 2];
// the signal is zero-padded or truncated to `length`; inverse divides by it. A direct O(n^2) sum
// per output in fp32 (angles reduced exactly: j k mod n), one invocation per output value.
struct DftDesc {
    TensorDesc input;    // f32 or f16, rank >= 2, last dimension 1 or 2
    int64_t axis = 1;    // a signal axis (not the last)
    int64_t length = 0;  // 0: the axis' size
    bool inverse = false, onesided = false;
};

class Dft final : public Op {
public:
    static std::unique_ptr<Dft> create(gpu::Device& device, const DftDesc& desc);
    const char* type() const override { return "DFT"; }

private:
    explicit Dft(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 8> push_{}; // count, n (input), L, n_out, inner, complex, inverse, (pad)
};

} // namespace vkml::ops
