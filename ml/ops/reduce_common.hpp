#pragma once
// Internal helpers of the reduction family (ml/ops/reduce*.cpp): the reduction kernel shared by
// Reduce* and the global pools, the [outer, n, inner] view around one axis, and the kernel choice.
#include <array>
#include <cstdint>
#include <vector>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/reduce.hpp"

namespace vkml::ops::detail {

// Workgroup size of the per-workgroup kernels (a power of two: the shared-memory trees halve it)
// and of the per-output kernels.
inline constexpr uint32_t reduce_wg_size = 128;
inline constexpr uint32_t reduce_loop_size = 64;

// A tensor seen as [outer, n, inner] around `axis`.
struct AxisSplit {
    uint32_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at_axis(const char* op, const Shape& shape, size_t axis);

// Fails naming `op` unless every dimension is positive and the element count fits 32-bit indices.
void require_nonempty(const char* op, const TensorDesc& input);

// Workgroups for one workgroup per item, folded into y past the device's x limit (the shaders
// undo this with reduce_group_id() in shaders/reduce/util.glsl).
std::array<uint32_t, 3> groups_per_item(const gpu::Device& device, uint32_t items);

// Resolves ReducePath::Auto. A workgroup per output pays off when each output reduces many
// elements, unless those elements are far apart in memory while there are enough outputs to keep
// the GPU busy with one invocation each (then neighbouring invocations read neighbouring words).
ReducePath choose_reduce_path(ReducePath requested, uint64_t reduced, uint64_t outputs, bool contiguous);

// Values of the MODE specialization constant of shaders/reduce/reduce.comp.
enum class ReduceMode : uint32_t { Sum, Mean, Max, Min, Prod, L1, L2, LogSumExp, SumSquare, Lp, LogSum };

class ReduceKernel {
public:
    // `reduced[i]`: whether input dimension i is reduced. `p` is the exponent of ReduceMode::Lp.
    ReduceKernel(gpu::Device& device, const char* op, const TensorDesc& input,
                 const std::vector<bool>& reduced, ReduceMode mode, float p, ReducePath path);
    void record(gpu::CommandBuffer& cmd, const Tensor& input, const Tensor& output) const;
    ReducePath path() const { return path_; }

private:
    struct Params {
        uint32_t outputs = 1, count = 1;
        std::array<uint32_t, 3> kept_size{1, 1, 1}, kept_stride{0, 0, 0};
        std::array<uint32_t, 3> red_size{1, 1, 1}, red_stride{0, 0, 0};
        float p = 1.f;
    };
    Params params_;
    ReducePath path_ = ReducePath::PerOutput;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<uint32_t, 3> groups_{};
};

} // namespace vkml::ops::detail
