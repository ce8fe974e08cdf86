#include "vkml/graph/attribute.hpp"

#include <cstdio>

#include "vkml/error.hpp"
#include "vkml/graph/graph.hpp"

namespace vkml::graph {

const char* attribute_kind_name(AttributeKind kind) {
    switch (kind) {
    case AttributeKind::Int:
        return "int";
    case AttributeKind::Float:
        return "float";
    case AttributeKind::String:
        return "string";
    case AttributeKind::Ints:
        return "ints";
    case AttributeKind::Floats:
        return "floats";
    case AttributeKind::Strings:
        return "strings";
    case AttributeKind::Tensor:
        return "tensor";
    case AttributeKind::Graph:
        return "graph";
    }
    return "?";
}

namespace {

template <class T>
const T& get(const auto& variant, AttributeKind kind, AttributeKind expected) {
    if (kind != expected)
        throw Error(ErrorCode::InvalidArgument, std::string("attribute is ") + attribute_kind_name(kind) +
                                                    ", expected " + attribute_kind_name(expected));
    return std::get<T>(variant);
}

std::string float_text(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    return buf;
}

} // namespace

int64_t Attribute::as_int() const {
    return get<int64_t>(value_, kind(), AttributeKind::Int);
}
float Attribute::as_float() const {
    return get<float>(value_, kind(), AttributeKind::Float);
}
const std::string& Attribute::as_string() const {
    return get<std::string>(value_, kind(), AttributeKind::String);
}
const std::vector<int64_t>& Attribute::as_ints() const {
    return get<std::vector<int64_t>>(value_, kind(), AttributeKind::Ints);
}
const std::vector<float>& Attribute::as_floats() const {
    return get<std::vector<float>>(value_, kind(), AttributeKind::Floats);
}
const std::vector<std::string>& Attribute::as_strings() const {
    return get<std::vector<std::string>>(value_, kind(), AttributeKind::Strings);
}
const TensorData& Attribute::as_tensor() const {
    return get<TensorData>(value_, kind(), AttributeKind::Tensor);
}

const Graph& Attribute::as_graph() const {
    return *get<std::shared_ptr<const Graph>>(value_, kind(), AttributeKind::Graph);
}

std::string to_string(const Attribute& a) {
    auto list = [](const auto& items, auto one) {
        std::string s = "[";
        for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + one(items[i]);
        return s + "]";
    };
    auto quoted = [](const std::string& s) { return "\"" + s + "\""; };
    switch (a.kind()) {
    case AttributeKind::Int:
        return std::to_string(a.as_int());
    case AttributeKind::Float:
        return float_text(a.as_float());
    case AttributeKind::String:
        return quoted(a.as_string());
    case AttributeKind::Ints:
        return list(a.as_ints(), [](int64_t v) { return std::to_string(v); });
    case AttributeKind::Floats:
        return list(a.as_floats(), float_text);
    case AttributeKind::Strings:
        return list(a.as_strings(), quoted);
    case AttributeKind::Tensor:
        return describe(a.as_tensor()) + " tensor";
    case AttributeKind::Graph:
        return "graph '" + a.as_graph().name + "' (" + std::to_string(a.as_graph().nodes().size()) + " nodes)";
    }
    return "?";
}

} // namespace vkml::graph
