#pragma once
// ONNX models into vkml's graph IR, through the protobuf classes of Debian's libonnx-dev (no
// protobuf parsing of our own). What is read: the model's operator-set imports (kept on the graph,
// default domain 1 to 21 accepted; below 7 only the operators whose meaning has not changed since,
// see onnx_old_opset_op), graph inputs and outputs with their dim_param free dimensions,
// value_info types, initializers from raw_data or the typed fields (float_data, int32_data incl.
// f16 bit patterns, int64_data) or from external data files beside the model, and Constant nodes,
// which become constants. An If whose condition is a constant by then (an initializer, a Constant
// node) is replaced by the nodes of the branch it takes (and that branch's initializers). Other
// subgraph attributes (If's branches, Loop's and Scan's bodies) become Graph attributes, the outer
// values they read the owning node's extra inputs (vkml_captures; docs/architecture.md), nested at
// most 16 deep; sequence and optional types become the values' kinds. A file
// that is not a well-formed model is rejected with a vkml::Error that names the file and the
// problem; what is well-formed but beyond vkml (lists of subgraphs, maps, sparse or string tensors,
// dtypes outside f32/f16/i32/i64/u8/bool) is an Unsupported error naming the value or node.
// Operators are not checked here: the session reports the ones it cannot run.
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "vkml/graph/graph.hpp"

namespace vkml::import {

inline constexpr int64_t onnx_min_opset = 1;
inline constexpr int64_t onnx_max_opset = 21;
// Models importing an ai.onnx opset below 7 (the first with numpy broadcasting and today's
// Reshape, Concat, Pad, Split, BatchNormalization ...) are read when every node is one of the
// operators whose meaning in those early versions is the one vkml implements (a few early
// attributes such as consumed_inputs carry no meaning for inference and are ignored). Another
// operator is an Unsupported error naming the node and the opset.
bool onnx_old_opset_op(std::string_view op_type);

struct OnnxOptions {
    // Where external data files are looked up; empty means the model file's directory.
    std::filesystem::path external_data_dir;
};

graph::Graph load_onnx(const std::filesystem::path& path, const OnnxOptions& options = {});
// A model already in memory; `source` names it in errors (and in Graph::source).
graph::Graph load_onnx_bytes(std::span<const std::byte> bytes, const std::string& source,
                             const OnnxOptions& options = {});

// One serialized TensorProto, as the ONNX backend tests store inputs and expected outputs
// (test_data_set_*/input_*.pb).
struct NamedTensor {
    std::string name;
    graph::TensorData data;
};
NamedTensor load_onnx_tensor(const std::filesystem::path& path);

// One serialized value of any kind the backend tests store: a TensorProto (kind Tensor), a
// SequenceProto of tensors (Sequence) or an OptionalProto (Optional, holding a tensor or a
// sequence of tensors, or nothing). The file does not say which it is: the model's declared type
// of that input or output does.
struct NamedValue {
    std::string name;
    graph::ValueKind kind = graph::ValueKind::Tensor;
    bool present = true;                   // an optional holding nothing: false
    std::vector<graph::TensorData> tensors; // a tensor: one; a sequence: its tensors
};
NamedValue load_onnx_value(const std::filesystem::path& path, graph::ValueKind kind);

} // namespace vkml::import
