// MaxUnpool (shaders/layout/max_unpool.comp): clear, then scatter.
#include "layout_common.hpp"
#include "vkml/gpu/command.hpp"

namespace vkml::ops {

std::unique_ptr<MaxUnpool> MaxUnpool::create(gpu::Device& device, const MaxUnpoolDesc& desc) {
    const Shape& in = desc.input.shape;
    detail::require_float("MaxUnpool", "input", desc.input);
    if (in.rank() != 4) fail("MaxUnpool", "input", "must be [N, C, H, W] (2-D unpooling), is " + in.str());
    if (desc.indices.dtype != DType::i32) fail("MaxUnpool", "indices", "must be i32");
    if (desc.indices.shape != in) fail("MaxUnpool", "indices", "must have X's shape " + in.str());
    if (desc.kernel_shape.size() != 2) fail("MaxUnpool", "kernel_shape", "must have 2 values");
    std::vector<int64_t> strides = desc.strides.empty() ? std::vector<int64_t>{1, 1} : desc.strides;
    std::vector<int64_t> pads = desc.pads.empty() ? std::vector<int64_t>{0, 0, 0, 0} : desc.pads;
    if (strides.size() != 2 || pads.size() != 4) fail("MaxUnpool", "strides", "strides need 2 values and pads 4");
    std::vector<int64_t> out = {in[0], in[1], 0, 0};
    for (size_t a = 0; a < 2; ++a) {
        if (desc.kernel_shape[a] < 1 || strides[a] < 1 || pads[a] < 0 || pads[a + 2] < 0)
            fail("MaxUnpool", "kernel_shape", "kernel and strides must be positive, pads non-negative");
        const int64_t grown = detail::mul_dims("MaxUnpool", "strides", in[a + 2] - 1, strides[a]);
        out[a + 2] = detail::add_dims("MaxUnpool", "kernel_shape", grown, desc.kernel_shape[a]) - pads[a] - pads[a + 2];
        if (out[a + 2] < 1) fail("MaxUnpool", "pads", "leave an empty output");
    }
    const int64_t dh = out[2], dw = out[3];
    if (!desc.output_shape.empty()) {
        if (desc.output_shape.size() != 4 || desc.output_shape[0] != in[0] || desc.output_shape[1] != in[1] ||
            desc.output_shape[2] < out[2] || desc.output_shape[3] < out[3] ||
            desc.output_shape[2] > out[2] + strides[0] || desc.output_shape[3] > out[3] + strides[1])
            fail("MaxUnpool", "output_shape", detail::layout_list(desc.output_shape) + " does not fit the input " + in.str());
        out = desc.output_shape;
    }
    const Shape out_shape = detail::shape_of("MaxUnpool", "output_shape", out);
    if (out_shape.elements() > int64_t(INT32_MAX) || in.elements() > int64_t(INT32_MAX))
        fail("MaxUnpool", "input", "has more elements than 32-bit indices reach");
    auto op = std::unique_ptr<MaxUnpool>(new MaxUnpool(device));
    op->push_ = {uint32_t(in.elements()), uint32_t(out_shape.elements()), uint32_t(dh), uint32_t(dw),
                 uint32_t(out_shape[2]), uint32_t(out_shape[3])};
    auto pipe = [&](uint32_t mode) {
        return &device.pipeline({.shader = detail::shader_for(device, "MaxUnpool", "layout_max_unpool", desc.input.dtype),
                                 .bindings = 3,
                                 .push_constant_bytes = sizeof(op->push_),
                                 .workgroup = {256, 1, 1},
                                 .specialization = {mode}});
    };
    op->clear_ = pipe(0);
    op->scatter_ = pipe(1);
    op->inputs_ = {desc.input, desc.indices};
    op->outputs_ = {{out_shape, desc.input.dtype}};
    return op;
}

void MaxUnpool::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                            const gpu::BufferRange&) const {
    if (push_[1] == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *clear_, buffers, push_, uint64_t(push_[1]));
    if (push_[0] == 0) return;
    gpu::barrier::compute_to_compute(cmd);
    detail::dispatch_1d(cmd, *scatter_, buffers, push_, uint64_t(push_[0]));
}

} // namespace vkml::ops
