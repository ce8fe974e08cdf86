// MaxPool, AveragePool and LpPool over 2-D NCHW inputs (shaders/reduce/pool.comp).
#include <climits>
#include <string>

#include "reduce_common.hpp"
#include "vkml/gpu/command.hpp"

namespace vkml::ops {

namespace {

// Values of pool.comp's KIND specialization constant.
enum class PoolKind : uint32_t { Max = 0, Average = 1, Lp = 2 };

std::string list(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

// An attribute of `count` values, each >= `min` and 32-bit (as the kernel's positions are, which
// also keeps the window arithmetic below far from overflow); empty gives `fallback` for each.
std::vector<int64_t> attribute(const char* op, const char* field, const std::vector<int64_t>& v, size_t count,
                               int64_t min, int64_t fallback) {
    if (v.empty()) return std::vector<int64_t>(count, fallback);
    if (v.size() != count)
        fail(op, field, "expected " + std::to_string(count) + " values for 2-D pooling, got " + list(v));
    for (int64_t x : v) {
        if (x < min) fail(op, field, "values must be at least " + std::to_string(min) + ", got " + list(v));
        if (x > INT32_MAX) fail(op, field, list(v) + " exceeds the kernel's 32-bit positions");
    }
    return v;
}

} // namespace

void Pool::setup(const char* op, const TensorDesc& input, const PoolWindow& window, float p) {
    detail::require_float(op, "input", input);
    if (input.shape.rank() != 4)
        fail(op, "input", "must be 4-D NCHW (vkml pools 2-D inputs only), is " + to_string(input));
    detail::require_nonempty(op, input);
    if (window.kernel_shape.empty()) fail(op, "kernel_shape", "is required");
    kernel_ = attribute(op, "kernel_shape", window.kernel_shape, 2, 1, 1);
    const auto strides = attribute(op, "strides", window.strides, 2, 1, 1);
    const auto dilations = attribute(op, "dilations", window.dilations, 2, 1, 1);
    pads_ = attribute(op, "pads", window.pads, 4, 0, 0);
    const std::string& mode = window.auto_pad;
    if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER")
        fail(op, "auto_pad",
             "unknown value '" + mode + "' (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)");
    if (mode != "NOTSET" && pads_ != std::vector<int64_t>(4, 0))
        fail(op, "pads", list(pads_) + " cannot be combined with auto_pad " + mode);
    if (window.ceil_mode != 0 && window.ceil_mode != 1)
        fail(op, "ceil_mode", "must be 0 or 1, is " + std::to_string(window.ceil_mode));

    int64_t out[2];
    for (size_t d = 0; d < 2; ++d) {
        const int64_t in = input.shape[2 + d], s = strides[d];
        const int64_t extent = (kernel_[d] - 1) * dilations[d] + 1; // the dilated window
        if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
            // Output ceil(in / stride); the padding it needs goes mostly at the end (UPPER) or
            // the beginning (LOWER). ceil_mode does not apply.
            out[d] = (in + s - 1) / s;
            const int64_t total = std::max<int64_t>(0, (out[d] - 1) * s + extent - in);
            pads_[d] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
            pads_[d + 2] = total - pads_[d];
            continue;
        }
        for (int64_t pad : {pads_[d], pads_[d + 2]})
            if (pad >= extent)
                fail(op, "pads",
                     list(pads_) + ": a pad must be smaller than the window extent " +
                         std::to_string(extent) + ", or windows lie wholly in the padding");
        const int64_t span = in + pads_[d] + pads_[d + 2] - extent;
        if (span < 0)
            fail(op, "kernel_shape",
                 list(kernel_) + ": the window extent " + std::to_string(extent) +
                     " is larger than the padded input " + std::to_string(in + pads_[d] + pads_[d + 2]) +
                     " along " + (d == 0 ? "H" : "W"));
        out[d] = window.ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
        // ceil_mode may add a window that starts in the end padding; drop it (PyTorch, ONNX).
        if (window.ceil_mode && (out[d] - 1) * s >= in + pads_[d]) --out[d];
    }

    const Shape out_shape{input.shape[0], input.shape[1], out[0], out[1]};
    inputs_ = {input};
    outputs_ = {{out_shape, input.dtype}};
    params_ = {.total = detail::to_u32(op, "output", out_shape.elements()),
               .h = uint32_t(input.shape[2]),
               .w = uint32_t(input.shape[3]),
               .oh = detail::to_u32(op, "output", out[0]),
               .ow = detail::to_u32(op, "output", out[1]),
               .stride_h = int32_t(detail::to_u32(op, "strides", strides[0])),
               .stride_w = int32_t(detail::to_u32(op, "strides", strides[1])),
               .pad_top = int32_t(pads_[0]),
               .pad_left = int32_t(pads_[1]),
               .dil_h = int32_t(detail::to_u32(op, "dilations", dilations[0])),
               .dil_w = int32_t(detail::to_u32(op, "dilations", dilations[1])),
               .padded_h = int32_t(input.shape[2] + pads_[2]),
               .padded_w = int32_t(input.shape[3] + pads_[3]),
               .p = p};
    // Window positions are computed in int32 in the shader.
    for (size_t d = 0; d < 2; ++d)
        if ((out[d] - 1) * strides[d] + (kernel_[d] - 1) * dilations[d] >= int64_t(INT32_MAX))
            fail(op, "strides", "windows reach past the 32-bit positions vkml's kernel uses");
}

void Pool::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                       std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    if (outputs.size() == 2) {
        const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range(), outputs[1].range()};
        detail::dispatch_1d(cmd, *pipeline_, buffers, params_, params_.total);
    } else {
        const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
        detail::dispatch_1d(cmd, *pipeline_, buffers, params_, params_.total);
    }
}

namespace {
const gpu::Pipeline& pool_pipeline(gpu::Device& device, const char* op, const char* shader, DType dtype,
                                   uint32_t bindings, uint32_t push_bytes, PoolKind kind,
                                   const std::vector<int64_t>& kernel, uint32_t count_include_pad,
                                   uint32_t storage_order) {
    return device.pipeline({.shader = detail::shader_for(device, op, shader, dtype),
                            .bindings = bindings,
                            .push_constant_bytes = push_bytes,
                            .workgroup = {detail::reduce_loop_size, 1, 1},
                            .specialization = {uint32_t(kind), detail::to_u32(op, "kernel_shape", kernel[0]),
                                               detail::to_u32(op, "kernel_shape", kernel[1]),
                                               count_include_pad, storage_order}});
}
} // namespace

std::unique_ptr<MaxPool> MaxPool::create(gpu::Device& device, const MaxPoolDesc& desc) {
    auto m = std::make_unique<MaxPool>(device, detail::ReduceKey{});
    m->setup("MaxPool", desc.input, desc.window, 1.f);
    if (desc.storage_order != 0 && desc.storage_order != 1)
        fail("MaxPool", "storage_order", "must be 0 or 1, is " + std::to_string(desc.storage_order));
    if (desc.indices) m->outputs_.push_back({m->outputs_[0].shape, DType::i64});
    m->pipeline_ = &pool_pipeline(device, "MaxPool", desc.indices ? "reduce_pool_idx" : "reduce_pool",
                                  desc.input.dtype, desc.indices ? 3 : 2, sizeof(Params), PoolKind::Max,
                                  m->kernel_, 0, uint32_t(desc.storage_order));
    return m;
}

std::unique_ptr<AveragePool> AveragePool::create(gpu::Device& device, const AveragePoolDesc& desc) {
    auto a = std::make_unique<AveragePool>(device, detail::ReduceKey{});
    a->setup("AveragePool", desc.input, desc.window, 1.f);
    if (desc.count_include_pad != 0 && desc.count_include_pad != 1)
        fail("AveragePool", "count_include_pad",
             "must be 0 or 1, is " + std::to_string(desc.count_include_pad));
    a->pipeline_ = &pool_pipeline(device, "AveragePool", "reduce_pool", desc.input.dtype, 2, sizeof(Params),
                                  PoolKind::Average, a->kernel_, uint32_t(desc.count_include_pad), 0);
    return a;
}

std::unique_ptr<LpPool> LpPool::create(gpu::Device& device, const LpPoolDesc& desc) {
    auto l = std::make_unique<LpPool>(device, detail::ReduceKey{});
    if (desc.p < 1) fail("LpPool", "p", "must be at least 1, is " + std::to_string(desc.p));
    l->setup("LpPool", desc.input, desc.window, float(desc.p));
    l->pipeline_ = &pool_pipeline(device, "LpPool", "reduce_pool", desc.input.dtype, 2, sizeof(Params),
                                  PoolKind::Lp, l->kernel_, 0, 0);
    return l;
}

} // namespace vkml::ops
