#pragma once
// The table of operator types (op_types.inc) as data, for the code that asks what a node's type is:
// lowered to an operator (lower.cpp, which also reads the table for its lowering functions),
// evaluated on the host (host_eval.cpp), expanded before lowering (composite.cpp, control.cpp),
// listed by `vkml ops` (ml/ops/registry.cpp). Internal to the library.
#include <cstdint>
#include <span>
#include <string_view>

namespace vkml::graph::detail {

// The domains of the table's types (a node's Node::domain).
namespace op_domain {
inline constexpr std::string_view onnx = "";
inline constexpr std::string_view training = "ai.onnx.preview.training";
inline constexpr std::string_view vkml = "vkml"; // types the graph passes make
// Operators an application creates itself: no node type (find_op_type does not find them).
inline constexpr std::string_view api = "(api)";
} // namespace op_domain

// How host_eval.cpp computes a type on constant inputs (no: it does not).
enum class HostEval : uint8_t { no, copy, unary, binary, variadic, reduce, other };
// Whether a type is expanded into other nodes before lowering.
enum class Expand : uint8_t {
    no,
    composite,  // composite.cpp: into ops vkml has, once shapes and dtypes are known
    structural, // control.cpp: sequences, optionals, control flow, resolved at session build
};

struct OpType {
    std::string_view domain;
    std::string_view type;
    std::string_view lowering; // lower.cpp's lower_<lowering>; "none": not lowered
    HostEval host;
    Expand expand;
    bool listed; // `vkml ops` lists it (ops::registry())

    bool lowered() const { return lowering != "none"; }
};

// Every line of op_types.inc, in its order.
std::span<const OpType> op_types();
// The line of a node's (domain, type), or null when vkml does not know the type.
const OpType* find_op_type(std::string_view domain, std::string_view type);

} // namespace vkml::graph::detail
