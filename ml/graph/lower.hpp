#pragma once
// Lowering one graph node to a vkml operator (internal to the session and its passes). The
// lowering reads the node's attributes and constant inputs into an ops::*Desc, creates the op for
// the inputs' static shapes and the dtypes the precision policy wants, and says how the op's
// inputs and outputs map to the node's, including views (Reshape and friends create no op).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkml/graph/graph.hpp"
#include "vkml/ops/op.hpp"

namespace vkml::graph::detail {

struct LowerInput {
    bool present = false;
    ValueId id = no_value;
    gpu::Shape shape;
    DType ir = DType::undefined;         // the value's dtype in the graph
    gpu::DType stored = gpu::DType::f32; // how it is stored on the device now
    const TensorData* data = nullptr;    // its data when constant
};

struct Lowered {
    std::unique_ptr<ops::Op> op; // null for a view
    // Per op input: the node input it reads, and the shape to view it as when that differs.
    std::vector<int> op_inputs;
    std::vector<std::optional<gpu::Shape>> input_views;
    // Per op output: the node output it produces (-1: nothing reads it), and the node output's
    // shape when the op's output is reshaped for it (a view).
    std::vector<int> op_outputs;
    std::vector<std::optional<gpu::Shape>> output_views;
    // A view: node output 0 is node input `alias_input` with shape `alias_shape` (no op).
    int alias_input = -1;
    gpu::Shape alias_shape;
    // The graph dtype of each node output (the stored dtype may differ, e.g. i64 computed in i32).
    std::vector<DType> out_ir;
};

class LowerContext {
public:
    LowerContext(gpu::Device& device, const Graph& graph, const Node& node, std::vector<LowerInput> inputs,
                 gpu::DType float_dtype);

    gpu::Device& device;
    const Graph& graph;
    const Node& node;
    const gpu::DType float_dtype; // the node's float storage dtype (precision policy)
    const int64_t opset;
    // What Conv, Gemm and MatMul accumulate in (SessionOptions::accumulation).
    ops::Accumulation accumulation = ops::Accumulation::F32;

    size_t count() const { return in_.size(); }
    bool has(size_t i) const { return i < in_.size() && in_[i].present; }
    const LowerInput& input(size_t i) const; // fails naming the node when absent
    bool is_constant(size_t i) const { return has(i) && in_[i].data; }
    // Constant inputs that the op takes as descriptor fields; a computed one is an error that says
    // so (vkml creates operators for fixed parameters).
    const TensorData& constant(size_t i, const std::string& what) const;
    std::vector<int64_t> const_ints(size_t i, const std::string& what) const;
    std::vector<float> const_floats(size_t i, const std::string& what) const;
    // True when the optional input is absent or an empty tensor (ONNX's way of omitting one).
    bool empty_or_absent(size_t i) const;

    bool is_float(size_t i) const;
    bool is_bool(size_t i) const { return input(i).ir == DType::boolean; }
    // The dtype the policy wants for input i: floats in float_dtype, bool as u8, others unchanged.
    gpu::DType policy(size_t i) const;
    ops::TensorDesc desc(size_t i) const { return {input(i).shape, policy(i)}; }
    ops::TensorDesc stored(size_t i) const { return {input(i).shape, input(i).stored}; }
    ops::TensorDesc desc_as(size_t i, gpu::DType dtype) const { return {input(i).shape, dtype}; }
    // The dtype integer arithmetic runs in (the kernels have i32 only).
    static constexpr gpu::DType int_compute = gpu::DType::i32;

    [[noreturn]] void fail(const std::string& problem, ErrorCode code = ErrorCode::InvalidArgument) const;

private:
    std::vector<LowerInput> in_;
};

// Whether a node of this op type has a lowering (domain checked too).
bool lowerable(const Node& node);
// The ops::Activation a fusion pass stored on the node (kind None when there is none).
ops::Activation fused_activation(const Node& node);
// ONNX TensorProto data type code -> graph dtype (Cast's "to"); fails naming the node.
DType onnx_type(int64_t code, const Graph& graph, const Node& node);
gpu::DType storage_of(DType dtype); // bool -> u8; undefined -> f32

Lowered lower(LowerContext& ctx);

} // namespace vkml::graph::detail
