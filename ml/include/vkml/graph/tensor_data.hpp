#pragma once
// A constant tensor held on the host: initializers (weights) and tensor-valued attributes. The
// bytes are little-endian elements in row-major order, exactly what a GPU upload needs, so the
// session copies them without conversion.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vkml/graph/dtype.hpp"

namespace vkml::graph {

class TensorData {
public:
    TensorData() = default; // an empty f32 scalar placeholder; see is_valid()
    // Throws vkml::Error (InvalidArgument) when the byte count does not match dtype and dims.
    TensorData(DType dtype, std::vector<int64_t> dims, std::vector<std::byte> bytes);

    static TensorData from_floats(std::vector<int64_t> dims, std::span<const float> values);
    static TensorData from_halves(std::vector<int64_t> dims, std::span<const uint16_t> bits);
    static TensorData from_int64s(std::vector<int64_t> dims, std::span<const int64_t> values);
    static TensorData from_int32s(std::vector<int64_t> dims, std::span<const int32_t> values);
    static TensorData scalar(float value) { return from_floats({}, std::span<const float>(&value, 1)); }

    DType dtype() const { return dtype_; }
    const std::vector<int64_t>& dims() const { return dims_; }
    int64_t elements() const;
    size_t byte_size() const { return bytes_.size(); }
    std::span<const std::byte> bytes() const { return bytes_; }
    bool is_valid() const { return dtype_ != DType::undefined; }

    // Typed views; throw vkml::Error when the dtype differs (f16 is viewed as uint16_t bits, bool
    // and u8 as uint8_t).
    std::span<const float> floats() const;
    std::span<const uint16_t> halves() const;
    std::span<const int32_t> int32s() const;
    std::span<const int64_t> int64s() const;
    std::span<const uint8_t> uint8s() const;

    // Converted copies, for shape constants and host-side folding: floats from any numeric type,
    // integers from any integer or bool type (not from floating point, which would hide a bug).
    std::vector<float> to_floats() const;
    std::vector<int64_t> to_int64s() const; // u64 as its bits
    std::vector<double> to_doubles() const; // any numeric type

    // Tensors of any dtype from doubles (float types rounded; integer types truncated toward zero
    // and wrapped to their width, NaN as 0) or from int64 values (wrapped to the type's width).
    static TensorData from_doubles(DType dtype, std::vector<int64_t> dims, std::span<const double> values);
    static TensorData from_ints(DType dtype, std::vector<int64_t> dims, std::span<const int64_t> values);
    // This tensor in another dtype, as a cast does (floats -> integers truncate; -> bool is != 0).
    TensorData converted(DType to) const;

    bool operator==(const TensorData&) const = default;

private:
    template <class T>
    std::span<const T> view(DType expected, const char* type_name) const;

    DType dtype_ = DType::undefined;
    std::vector<int64_t> dims_;
    std::vector<std::byte> bytes_;
};

// "f32[64,3,3,3]"
std::string describe(const TensorData& tensor);

} // namespace vkml::graph
