#pragma once
// Element types of graph values. The set is what vkml can execute (gpu::DType plus bool, which the
// GPU stores as u8); importers reject models whose tensors need anything else, naming the value.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vkml::graph {

enum class DType : uint8_t {
    undefined, // not yet known (an intermediate value before shape inference)
    f32,
    f16,
    i32,
    i64,
    u8,
    boolean,
};

// Bytes per element; 0 for undefined.
size_t dtype_size(DType dtype);
// "f32", "f16", "i32", "i64", "u8", "bool", "?"
const char* dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);

} // namespace vkml::graph
