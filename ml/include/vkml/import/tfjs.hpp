#pragma once
// TF.js models into vkml's graph IR.
//
// Layers models (model.json with format "layers-model": a Keras topology plus weight shards) are
// translated layer by layer into ONNX-style nodes. TF.js is channels-last (NHWC); vkml runs NCHW.
// The importer converts at the edges of the model rather than around every layer: every rank-4
// tensor of the Keras model is an NCHW tensor in the graph (the model's inputs and outputs
// included: an input declared [null, null, null, 3] becomes f32[batch,3,height,width]), convolution
// kernels are transposed at import from [kh, kw, in, out] to ONNX's [out, in, kh, kw], and
// channel-axis parameters (Concatenate axis, BatchNormalization axis, Softmax axis) are remapped.
// Only layers whose meaning depends on the memory order (Flatten, Reshape, Dense on images) get a
// Transpose back to NHWC, so weights trained on that order still line up. Graph metadata
// "layout" records this.
//
// Graph models (format "graph-model": a TensorFlow GraphDef as JSON plus weight shards, often
// float16-quantized) are translated node by node with TensorFlow semantics kept exactly: NHWC
// operators are wrapped in Transposes to and from NCHW, and the Transpose pairs that then meet
// (TF graphs converted from NCHW frameworks are full of them) are cancelled.
//
// Every problem is a vkml::Error naming model.json (or the shard) and the JSON path, layer or node.
#include <filesystem>

#include "vkml/graph/graph.hpp"

namespace vkml::import {

graph::Graph load_tfjs_layers(const std::filesystem::path& model_json);
graph::Graph load_tfjs_graph(const std::filesystem::path& model_json);
// Either of the above, chosen by the file's "format" (or, without one, by its topology).
graph::Graph load_tfjs(const std::filesystem::path& model_json);

} // namespace vkml::import
