#pragma once
// Static shapes with symbolic ("free") dimensions, as models declare them: a dimension is either a
// known size or a name such as "batch" or "height" that is fixed later, at the latest when the
// session sees its inputs, or up front by a free-dimension override (see Graph).
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace vkml::graph {

struct Dim {
    int64_t size = -1;  // >= 0 when known
    std::string symbol; // the free dimension's name when size is unknown; may be empty (anonymous)
    // What the dimension means, as ONNX's dimension denotation says ("DATA_BATCH",
    // "DATA_CHANNEL", ...; empty when the model says nothing). A label for free-dimension
    // overrides by denotation (apply_free_dimension_overrides), not part of the shape: equality
    // ignores it.
    std::string denotation;

    static Dim known(int64_t n) { return Dim{n, {}, {}}; }
    static Dim symbolic(std::string name) { return Dim{-1, std::move(name), {}}; }
    bool is_known() const { return size >= 0; }
    bool operator==(const Dim& o) const { return size == o.size && symbol == o.symbol; }
};

class Shape {
public:
    Shape() = default; // rank 0: a scalar
    Shape(std::initializer_list<int64_t> sizes);
    explicit Shape(const std::vector<int64_t>& sizes);
    explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}

    size_t rank() const { return dims_.size(); }
    const Dim& operator[](size_t i) const { return dims_[i]; }
    Dim& operator[](size_t i) { return dims_[i]; }
    const std::vector<Dim>& dims() const { return dims_; }
    std::vector<Dim>& dims() { return dims_; }

    bool is_static() const;
    // Element count when every dimension is known.
    std::optional<int64_t> elements() const;
    // The sizes, when every dimension is known.
    std::optional<std::vector<int64_t>> sizes() const;
    bool operator==(const Shape&) const = default;

private:
    std::vector<Dim> dims_;
};

// "[N,3,224,224]"; anonymous unknown dimensions print as "?".
std::string to_string(const Shape& shape);

} // namespace vkml::graph
