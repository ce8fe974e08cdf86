// ReverseSequence (shaders/layout/reverse_sequence.comp).
#include "layout_common.hpp"

namespace vkml::ops {

std::unique_ptr<ReverseSequence> ReverseSequence::create(gpu::Device& device, const ReverseSequenceDesc& desc) {
    const Shape& in = desc.input.shape;
    if (in.rank() < 2) fail("ReverseSequence", "input", "must have rank 2 or more, has shape " + in.str());
    if (!((desc.time_axis == 0 && desc.batch_axis == 1) || (desc.time_axis == 1 && desc.batch_axis == 0)))
        fail("ReverseSequence", "time_axis", "time_axis and batch_axis must be 0 and 1 in some order, are " +
                                                 std::to_string(desc.time_axis) + " and " + std::to_string(desc.batch_axis));
    const int64_t T = in[size_t(desc.time_axis)], B = in[size_t(desc.batch_axis)];
    if (desc.sequence_lens.dtype != DType::i32) fail("ReverseSequence", "sequence_lens", "must be i32");
    if (desc.sequence_lens.shape.rank() != 1 || desc.sequence_lens.shape[0] != B)
        fail("ReverseSequence", "sequence_lens", "must be [" + std::to_string(B) + "], is " + desc.sequence_lens.shape.str());
    const int64_t words = detail::layout_words(desc.input.dtype);
    if (in.elements() > int64_t(INT32_MAX) / words)
        fail("ReverseSequence", "input", "has more elements than 32-bit indices reach");
    auto op = std::unique_ptr<ReverseSequence>(new ReverseSequence(device));
    const int64_t inner = in.elements() == 0 ? 0 : in.elements() / (T * B);
    op->push_ = {uint32_t(in.elements() * words), uint32_t(T), uint32_t(B), uint32_t(inner * words),
                 desc.batch_axis == 0 ? 1u : 0u};
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, "ReverseSequence", "layout_reverse_sequence",
                                                                   detail::layout_variant(desc.input.dtype)),
                                      .bindings = 3,
                                      .push_constant_bytes = sizeof(op->push_),
                                      .workgroup = {256, 1, 1}});
    op->inputs_ = {desc.input, desc.sequence_lens};
    op->outputs_ = {desc.input};
    return op;
}

void ReverseSequence::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                  std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    if (push_[0] == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, uint64_t(push_[0]));
}

} // namespace vkml::ops
