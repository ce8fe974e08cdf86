#pragma once
// vkml's one model IR. Every importer (ONNX, TF.js layers and graph models, Anime4K weights)
// translates into it with ONNX operator types and ONNX attribute meanings, and everything after
// import (shape inference, folding, fusion, memory planning, the executor) reads only this.
//
// Values are tensors named as in the source model and referred to by ValueId (an index), so passes
// can rewire nodes cheaply; a Value with data is a constant (an initializer). Nodes list their
// inputs and outputs as ValueIds, with no_value for an omitted optional input or output, as an
// empty name is in ONNX. The graph remembers the file it came from, and nodes their names, so
// that every later error can point at the model, the node and the op.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkml/error.hpp"
#include "vkml/graph/attribute.hpp"
#include "vkml/graph/dtype.hpp"
#include "vkml/graph/shape.hpp"
#include "vkml/graph/tensor_data.hpp"

namespace vkml::graph {

using ValueId = uint32_t;
inline constexpr ValueId no_value = ~ValueId{0};

// What a value is: a tensor, or one of ONNX's non-tensor types, a sequence of tensors or an
// optional (a tensor or a sequence, or nothing). vkml resolves sequences and optionals when a
// Session is built (graph::infer_and_fold): a resolved one lists the values it holds in
// Value::elements, and only tensors reach the device (see docs/architecture.md).
enum class ValueKind : uint8_t { Tensor, Sequence, Optional };
const char* value_kind_name(ValueKind kind); // "tensor", "sequence", "optional"

struct Value {
    std::string name;
    DType dtype = DType::undefined;         // sequences and optionals: their tensors' dtype
    std::optional<Shape> shape;             // nullopt: not even the rank is known yet (sequences and
                                            // optionals: the declared shape of their tensors, if any)
    std::shared_ptr<const TensorData> data; // set for constants; shared so copies of a graph are cheap
    ValueKind kind = ValueKind::Tensor;
    ValueKind element_kind = ValueKind::Tensor; // an optional's content: Tensor or Sequence
    // Set once resolved: a sequence's tensors in order, an optional's content (none or one value,
    // a tensor or a sequence). A resolved value needs no producer node.
    std::optional<std::vector<ValueId>> elements;

    bool is_constant() const { return data != nullptr; }
    bool is_tensor() const { return kind == ValueKind::Tensor; }
};

struct Node {
    std::string name;    // from the model; importers name unnamed nodes "<op_type>_<index>"
    std::string op_type; // ONNX operator type, e.g. "Conv"
    std::string domain;  // "" is the default ONNX domain (ai.onnx)
    std::vector<ValueId> inputs;
    std::vector<ValueId> outputs;
    std::map<std::string, Attribute, std::less<>> attributes;

    const Attribute* find(std::string_view attribute) const;
    bool has(std::string_view attribute) const { return find(attribute) != nullptr; }
    // Typed reads with a default for absent attributes; a present attribute of another kind is an
    // error naming the node, the op and the attribute.
    int64_t get_int(std::string_view attribute, int64_t fallback) const;
    float get_float(std::string_view attribute, float fallback) const;
    std::string get_string(std::string_view attribute, std::string_view fallback) const;
    std::vector<int64_t> get_ints(std::string_view attribute, std::vector<int64_t> fallback = {}) const;
    std::vector<float> get_floats(std::string_view attribute, std::vector<float> fallback = {}) const;
    std::vector<std::string> get_strings(std::string_view attribute,
                                         std::vector<std::string> fallback = {}) const;
    // Required attribute: absent is an error too.
    const TensorData& get_tensor(std::string_view attribute) const;

    // "node 'conv1' (Conv)"
    std::string describe() const;
};

struct OpsetImport {
    std::string domain; // "" for ai.onnx
    int64_t version = 0;
    bool operator==(const OpsetImport&) const = default;
};

class Graph {
public:
    std::string name;
    std::string source; // the model file, for error messages
    std::string format; // "onnx", "tfjs-layers", "tfjs-graph", "anime4k"
    std::vector<OpsetImport> opsets;
    // Free-form facts an importer keeps for the session or the user, e.g. producer, layout.
    std::map<std::string, std::string, std::less<>> metadata;

    // --- values ---
    // Adds a value; a name that is already taken is an error naming both.
    ValueId add_value(std::string value_name, DType dtype = DType::undefined,
                      std::optional<Shape> shape = {});
    // Adds a constant value whose dtype and shape are the data's.
    ValueId add_constant(std::string value_name, TensorData data);
    // Makes an existing value constant (e.g. an ONNX Constant node's output).
    void set_constant(ValueId id, TensorData data);
    ValueId find(std::string_view value_name) const; // no_value when absent
    ValueId id(std::string_view value_name) const;   // throws when absent
    Value& value(ValueId id);
    const Value& value(ValueId id) const;
    size_t value_count() const { return values_.size(); }
    // `base` itself when free, else base_1, base_2, ...: for values and nodes importers synthesize.
    std::string unique_name(std::string_view base) const;

    // --- nodes ---
    Node& add_node(std::string op_type, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                   std::string node_name = {});
    std::vector<Node>& nodes() { return nodes_; }
    const std::vector<Node>& nodes() const { return nodes_; }

    // --- interface ---
    std::vector<ValueId>& inputs() { return inputs_; }
    const std::vector<ValueId>& inputs() const { return inputs_; }
    std::vector<ValueId>& outputs() { return outputs_; }
    const std::vector<ValueId>& outputs() const { return outputs_; }
    std::vector<ValueId> constants() const;
    // A subgraph's values that its scope does not define (outer-scope values it reads, by name).
    // The node that owns the subgraph reads them as extra inputs (see vkml_captures in
    // docs/architecture.md), so they are ordinary data dependencies in the outer graph.
    std::vector<ValueId>& captures() { return captures_; }
    const std::vector<ValueId>& captures() const { return captures_; }

    // The imported version of an operator-set domain ("" or "ai.onnx" for the default), 0 if absent.
    int64_t opset_version(std::string_view domain = "") const;

    // --- checks and orderings ---
    // Throws vkml::Error naming the source and the node when: a value has more than one producer
    // (node output, graph input, constant); a node input or graph output is produced by nothing; a
    // node reads a value produced only by a later node (not topologically ordered); an id is out of
    // range.
    void validate() const;
    // Reorders nodes so producers precede consumers, keeping the existing order where it already
    // is valid. Throws naming a node on a cycle or with an input nothing produces.
    void sort_topologically();
    // Node indices in topological order without changing the graph (same rules as above).
    std::vector<size_t> topological_order() const;

    // Drops values that no node, graph input or graph output refers to (e.g. constants an
    // importer turned into attributes), renumbering the rest; ValueIds held elsewhere go stale.
    void remove_unused_values();

    // --- free dimensions (like ONNX Runtime's AddFreeDimensionOverrideByName) ---
    // Names of the symbolic dimensions used by any value, sorted.
    std::vector<std::string> free_dimensions() const;
    // Replaces every dimension named `symbol` by `size`; returns how many were replaced.
    size_t set_free_dimension(std::string_view symbol, int64_t size);

    // "node 'conv1' (Conv) in 'model.onnx'"
    std::string describe(const Node& node) const;
    // Throws vkml::Error "'<source>': <node description>: <problem>".
    [[noreturn]] void fail(const Node& node, const std::string& problem,
                           ErrorCode code = ErrorCode::InvalidArgument) const;
    [[noreturn]] void fail(const std::string& problem, ErrorCode code = ErrorCode::InvalidArgument) const;
    // For a handler of `e` raised while working on `node`: rethrows it as it is when its message
    // already names the node, else fails naming it (keeping the code). Call only inside the catch.
    [[noreturn]] void fail_for(const Node& node, const Error& e) const;

private:
    std::vector<Value> values_;
    std::map<std::string, ValueId, std::less<>> by_name_;
    std::vector<Node> nodes_;
    std::vector<ValueId> inputs_;
    std::vector<ValueId> outputs_;
    std::vector<ValueId> captures_;
};

// Applies several overrides; a name no dimension carries is an error that lists the graph's free
// dimensions (a typo in --free-dim should not pass silently), as is a size below 1.
void apply_free_dimension_overrides(Graph& graph,
                                    const std::map<std::string, int64_t, std::less<>>& overrides);

// Free-dimension overrides by denotation (like ONNX Runtime's AddFreeDimensionOverrideByDenotation,
// which its DirectML provider documents): every dimension of a graph input whose denotation
// (Dim::denotation, "DATA_BATCH", ...) equals a key, compared case-insensitively as ORT does, gets
// that size; a named free dimension everywhere its name appears. A key no input dimension carries
// is an error that lists the denotations the inputs have, as is a size below 1, and a dimension
// whose size is already fixed (by the model, or by a name override applied before) to another.
void apply_denotation_overrides(Graph& graph, const std::map<std::string, int64_t, std::less<>>& overrides);

// A readable, stable text form: header, opsets, inputs, constants (dtype and shape only), nodes in
// order with attributes (subgraphs in full, indented under their node), outputs. Meant for tests,
// debugging and `vkml info MODEL`.
std::string dump(const Graph& graph);

// Counts of nodes per op type, e.g. {"Conv": 12, "Relu": 4}.
std::map<std::string, int> op_histogram(const Graph& graph);

} // namespace vkml::graph
