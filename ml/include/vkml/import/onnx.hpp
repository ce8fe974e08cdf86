#pragma once
// ONNX models into vkml's graph IR, through the protobuf classes of Debian's libonnx-dev (no
// protobuf parsing of our own). What is read: the model's operator-set imports (kept on the graph,
// default domain 1 to 21 accepted; below 7 only the operators whose meaning has not changed since,
// see onnx_old_opset_op), graph inputs and outputs with their dim_param free dimensions,
// value_info types, initializers from raw_data or the typed fields (float_data, int32_data incl.
// f16 bit patterns, int64_data) or from external data files beside the model, and Constant nodes,
// which become constants. An If whose condition is a constant by then (an initializer, a Constant
// node) is replaced by the nodes of the branch it takes (and that branch's initializers). A file
// that is not a well-formed model is rejected with a vkml::Error that names the file and the
// problem; what is well-formed but beyond vkml (other subgraphs, sparse or string tensors, dtypes
// outside f32/f16/i32/i64/u8/bool) is an Unsupported error naming the value or node. Operators
// are not checked here: the session reports the ones it cannot run.
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

} // namespace vkml::import
