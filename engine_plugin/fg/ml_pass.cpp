#include "vkml/fg/ml_pass.hpp"

#include <utility>

#include "vkml/error.hpp"

namespace vkml::fg {

std::vector<BufferHandle> add_op_pass(FrameGraph& graph, std::string name, const ops::Op& op,
                                      std::span<const BufferHandle> inputs,
                                      std::span<const BufferHandle> outputs, const OpPassDesc& desc) {
    if (inputs.size() != op.inputs().size() || outputs.size() != op.outputs().size())
        throw Error(ErrorCode::InvalidArgument, "frame graph: ML pass '" + name + "': " + op.type() +
                                                    " takes " + std::to_string(op.inputs().size()) +
                                                    " inputs and " + std::to_string(op.outputs().size()) +
                                                    " outputs, " + std::to_string(inputs.size()) + " and " +
                                                    std::to_string(outputs.size()) + " were given");
    BufferHandle scratch;
    if (op.scratch_bytes()) scratch = graph.create_buffer(name + "/scratch", {.size = op.scratch_bytes()});
    PassBuilder pass = graph.add_ml_pass(name);
    for (const BufferHandle& in : inputs) pass.read(in);
    std::vector<BufferHandle> written;
    for (const BufferHandle& out : outputs) written.push_back(pass.write(out));
    if (scratch) scratch = pass.write(scratch, BufferWrite::StorageReadWrite);
    pass.queue(desc.queue);
    if (desc.side_effect) pass.side_effect();
    std::vector<BufferHandle> ins(inputs.begin(), inputs.end());
    pass.record([&op, ins, outs = written, scratch](PassContext& ctx) {
        std::vector<gpu::Tensor> in_tensors, out_tensors;
        for (size_t i = 0; i < ins.size(); ++i)
            in_tensors.push_back(ctx.tensor(ins[i], op.inputs()[i].shape, op.inputs()[i].dtype));
        for (size_t i = 0; i < outs.size(); ++i)
            out_tensors.push_back(ctx.tensor(outs[i], op.outputs()[i].shape, op.outputs()[i].dtype));
        op.record(ctx.cmd(), in_tensors, out_tensors, scratch ? ctx.buffer(scratch) : gpu::BufferRange{});
    });
    return written;
}

} // namespace vkml::fg
