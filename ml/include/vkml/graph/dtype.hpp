#pragma once
// Element types of graph values: what vkml can execute (gpu::DType plus bool, which the GPU stores
// as u8) and the ONNX types it holds in a wider device type (graph::detail::storage_of): f64 is
// stored and computed as the float policy's type (f32 or f16: ONNX's double tensors are rounded to
// f32 on the way in and widened on the way out), i8, i16 and u16 as i32, u32 and u64 as i64 (exact;
// integer arithmetic then runs in i32, as for i64). Importers reject anything else, naming the value.
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
    f64,
    i8,
    i16,
    u16,
    u32,
    u64,
};

// Bytes per element; 0 for undefined.
size_t dtype_size(DType dtype);
// "f32", "f16", "i32", "i64", "u8", "bool", "f64", "i8", "i16", "u16", "u32", "u64", "?"
const char* dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);
// f32, f16 and f64.
bool is_float(DType dtype);
// An integer value as the integer type `dtype` holds it: wrapped to its width as a C cast does
// (bool: != 0); the value unchanged for i64, u64 (the same bits) and the float types.
int64_t wrap_int(DType dtype, int64_t value);

} // namespace vkml::graph
