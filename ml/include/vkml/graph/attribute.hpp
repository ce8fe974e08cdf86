#pragma once
// Typed node attributes, with ONNX's kinds. Importers of other formats translate their parameters
// into these, with ONNX names and meanings, so every operator reads one vocabulary.
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "vkml/graph/tensor_data.hpp"

namespace vkml::graph {

class Graph;

// Graph: a subgraph (ONNX GraphProto attribute: If's branches, Loop's and Scan's bodies), shared
// and immutable once imported, so copies of a graph stay cheap.
enum class AttributeKind { Int, Float, String, Ints, Floats, Strings, Tensor, Graph };
const char* attribute_kind_name(AttributeKind kind);

class Attribute {
public:
    Attribute(int64_t v) : value_(v) {}
    Attribute(int v) : value_(int64_t{v}) {}
    Attribute(float v) : value_(v) {}
    Attribute(std::string v) : value_(std::move(v)) {}
    Attribute(const char* v) : value_(std::string(v)) {}
    Attribute(std::vector<int64_t> v) : value_(std::move(v)) {}
    Attribute(std::vector<float> v) : value_(std::move(v)) {}
    Attribute(std::vector<std::string> v) : value_(std::move(v)) {}
    Attribute(TensorData v) : value_(std::move(v)) {}
    Attribute(std::shared_ptr<const Graph> v) : value_(std::move(v)) {}

    AttributeKind kind() const { return static_cast<AttributeKind>(value_.index()); }

    // Each accessor throws vkml::Error (InvalidArgument) naming both kinds when the kind differs;
    // Node's accessors add the node and attribute names to that message.
    int64_t as_int() const;
    float as_float() const;
    const std::string& as_string() const;
    const std::vector<int64_t>& as_ints() const;
    const std::vector<float>& as_floats() const;
    const std::vector<std::string>& as_strings() const;
    const TensorData& as_tensor() const;
    const Graph& as_graph() const;

    bool operator==(const Attribute&) const = default;

private:
    // The order matches AttributeKind.
    std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                 std::vector<std::string>, TensorData, std::shared_ptr<const Graph>>
        value_;
};

// Short text for dumps: 3, 0.5, "same", [1,1], f32[64] tensor.
std::string to_string(const Attribute& attribute);

} // namespace vkml::graph
