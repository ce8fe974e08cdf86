#include "vkml/graph/shape.hpp"

namespace vkml::graph {

Shape::Shape(std::initializer_list<int64_t> sizes) {
    for (int64_t s : sizes) dims_.push_back(Dim::known(s));
}

Shape::Shape(const std::vector<int64_t>& sizes) {
    for (int64_t s : sizes) dims_.push_back(Dim::known(s));
}

bool Shape::is_static() const {
    for (const Dim& d : dims_)
        if (!d.is_known()) return false;
    return true;
}

std::optional<int64_t> Shape::elements() const {
    int64_t n = 1;
    for (const Dim& d : dims_) {
        if (!d.is_known()) return std::nullopt;
        n *= d.size;
    }
    return n;
}

std::optional<std::vector<int64_t>> Shape::sizes() const {
    std::vector<int64_t> out;
    for (const Dim& d : dims_) {
        if (!d.is_known()) return std::nullopt;
        out.push_back(d.size);
    }
    return out;
}

std::string to_string(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.rank(); ++i) {
        if (i) s += ',';
        const Dim& d = shape[i];
        s += d.is_known() ? std::to_string(d.size) : d.symbol.empty() ? "?" : d.symbol;
    }
    return s + "]";
}

} // namespace vkml::graph
