#include "vkml/graph/tensor_data.hpp"

#include <cstring>
#include <limits>

#include "vkml/error.hpp"
#include "vkml/gpu/half.hpp"

namespace vkml::graph {

namespace {

// Element count, or -1 when a dimension is negative or the product overflows: dims come from
// files, so a corrupted one must not wrap around into a small, "valid" size.
int64_t checked_elements(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) {
        if (d < 0) return -1;
        if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
        n *= d;
    }
    return n;
}

std::string dims_text(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
    return s + "]";
}

template <class T>
TensorData make(DType dtype, std::vector<int64_t> dims, std::span<const T> values) {
    std::vector<std::byte> bytes(values.size_bytes());
    if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return TensorData(dtype, std::move(dims), std::move(bytes));
}

} // namespace

TensorData::TensorData(DType dtype, std::vector<int64_t> dims, std::vector<std::byte> bytes)
    : dtype_(dtype), dims_(std::move(dims)), bytes_(std::move(bytes)) {
    if (dtype_ == DType::undefined) throw Error(ErrorCode::InvalidArgument, "tensor data needs a dtype");
    const int64_t n = checked_elements(dims_);
    if (n < 0)
        throw Error(ErrorCode::InvalidArgument,
                    "tensor dimensions " + dims_text(dims_) + " are negative or too large");
    const size_t size = dtype_size(dtype_);
    if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / size ||
        bytes_.size() != static_cast<size_t>(n) * size)
        throw Error(ErrorCode::InvalidArgument, std::string(dtype_name(dtype_)) + dims_text(dims_) +
                                                    " needs " + std::to_string(n) + " elements of " +
                                                    std::to_string(size) + " bytes, but the data has " +
                                                    std::to_string(bytes_.size()) + " bytes");
}

TensorData TensorData::from_floats(std::vector<int64_t> dims, std::span<const float> values) {
    return make(DType::f32, std::move(dims), values);
}
TensorData TensorData::from_halves(std::vector<int64_t> dims, std::span<const uint16_t> bits) {
    return make(DType::f16, std::move(dims), bits);
}
TensorData TensorData::from_int64s(std::vector<int64_t> dims, std::span<const int64_t> values) {
    return make(DType::i64, std::move(dims), values);
}
TensorData TensorData::from_int32s(std::vector<int64_t> dims, std::span<const int32_t> values) {
    return make(DType::i32, std::move(dims), values);
}

int64_t TensorData::elements() const {
    return dtype_ == DType::undefined ? 0 : static_cast<int64_t>(bytes_.size() / dtype_size(dtype_));
}

template <class T>
std::span<const T> TensorData::view(DType expected, const char* type_name) const {
    const bool ok = dtype_ == expected || (expected == DType::u8 && dtype_ == DType::boolean);
    if (!ok)
        throw Error(ErrorCode::InvalidArgument,
                    std::string("tensor is ") + dtype_name(dtype_) + ", not viewable as " + type_name);
    // The buffer comes from operator new, aligned for every fundamental type.
    return {reinterpret_cast<const T*>(bytes_.data()), bytes_.size() / sizeof(T)};
}

std::span<const float> TensorData::floats() const {
    return view<float>(DType::f32, "float");
}
std::span<const uint16_t> TensorData::halves() const {
    return view<uint16_t>(DType::f16, "half");
}
std::span<const int32_t> TensorData::int32s() const {
    return view<int32_t>(DType::i32, "int32");
}
std::span<const int64_t> TensorData::int64s() const {
    return view<int64_t>(DType::i64, "int64");
}
std::span<const uint8_t> TensorData::uint8s() const {
    return view<uint8_t>(DType::u8, "uint8");
}

std::vector<float> TensorData::to_floats() const {
    switch (dtype_) {
    case DType::f32: {
        auto v = floats();
        return {v.begin(), v.end()};
    }
    case DType::f16: {
        std::vector<float> out(static_cast<size_t>(elements()));
        gpu::halves_to_floats(halves(), out);
        return out;
    }
    case DType::i32: {
        auto v = int32s();
        return {v.begin(), v.end()};
    }
    case DType::i64: {
        auto v = int64s();
        return {v.begin(), v.end()};
    }
    case DType::u8:
    case DType::boolean: {
        auto v = uint8s();
        return {v.begin(), v.end()};
    }
    case DType::undefined:
        break;
    }
    throw Error(ErrorCode::InvalidArgument, "tensor has no dtype");
}

std::vector<int64_t> TensorData::to_int64s() const {
    switch (dtype_) {
    case DType::i32: {
        auto v = int32s();
        return {v.begin(), v.end()};
    }
    case DType::i64: {
        auto v = int64s();
        return {v.begin(), v.end()};
    }
    case DType::u8:
    case DType::boolean: {
        auto v = uint8s();
        return {v.begin(), v.end()};
    }
    default:
        throw Error(ErrorCode::InvalidArgument,
                    std::string("a ") + dtype_name(dtype_) + " tensor cannot be read as integers");
    }
}

std::string describe(const TensorData& tensor) {
    return std::string(dtype_name(tensor.dtype())) + dims_text(tensor.dims());
}

} // namespace vkml::graph
