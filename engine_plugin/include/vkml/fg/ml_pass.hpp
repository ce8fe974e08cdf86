#pragma once
// ML passes from vkml operators. An ML pass is a compute pass whose callback records operators;
// this helper declares an ops::Op's tensors as the pass's buffer reads and writes and records it,
// so a model runtime (a Session, or one chunk of Session::split) plugs in the same way: declare
// its inputs and outputs, record it in the callback.
#include <span>
#include <string>
#include <vector>

#include "vkml/fg/frame_graph.hpp"
#include "vkml/ops/op.hpp"

namespace vkml::fg {

struct OpPassDesc {
    Queue queue = Queue::Graphics; // Queue::AsyncCompute to overlap it with rendering
    bool side_effect = false;
};

// Adds an ML pass that records `op` (which must outlive the graph) reading `inputs` and writing
// `outputs`, each viewed as the tensor the op was created for. A transient scratch buffer is added
// when the op needs one. Returns the outputs' new versions, in order.
std::vector<BufferHandle> add_op_pass(FrameGraph& graph, std::string name, const ops::Op& op,
                                      std::span<const BufferHandle> inputs,
                                      std::span<const BufferHandle> outputs, const OpPassDesc& desc = {});

} // namespace vkml::fg
