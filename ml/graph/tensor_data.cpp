#include "vkml/graph/tensor_data.hpp"

#include <cmath>
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

namespace {

template <class T>
std::vector<T> read_as(std::span<const std::byte> bytes) {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
}

template <class T, class Out>
std::vector<Out> widen(std::span<const std::byte> bytes) {
    const auto v = read_as<T>(bytes);
    return std::vector<Out>(v.begin(), v.end());
}

} // namespace

std::vector<float> TensorData::to_floats() const {
    switch (dtype_) {
    case DType::f64:
    case DType::i8:
    case DType::i16:
    case DType::u16:
    case DType::u32:
    case DType::u64: {
        const auto d = to_doubles();
        return {d.begin(), d.end()};
    }
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
    case DType::i8:
        return widen<int8_t, int64_t>(bytes_);
    case DType::i16:
        return widen<int16_t, int64_t>(bytes_);
    case DType::u16:
        return widen<uint16_t, int64_t>(bytes_);
    case DType::u32:
        return widen<uint32_t, int64_t>(bytes_);
    case DType::u64:
        return read_as<int64_t>(bytes_);
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

std::vector<double> TensorData::to_doubles() const {
    switch (dtype_) {
    case DType::f64:
        return read_as<double>(bytes_);
    case DType::u64:
        return widen<uint64_t, double>(bytes_);
    case DType::f32:
    case DType::f16: {
        const auto f = to_floats();
        return {f.begin(), f.end()};
    }
    case DType::undefined:
        throw Error(ErrorCode::InvalidArgument, "tensor has no dtype");
    default: {
        const auto i = to_int64s();
        return {i.begin(), i.end()};
    }
    }
}

namespace {

template <class T>
void put(std::vector<std::byte>& bytes, size_t k, T v) {
    std::memcpy(bytes.data() + k * sizeof(T), &v, sizeof(T));
}

// Stores element k of an integer dtype from an int64 (wrapped to the type's width).
void put_int(std::vector<std::byte>& bytes, DType dtype, size_t k, int64_t v) {
    const int64_t w = wrap_int(dtype, v);
    switch (dtype_size(dtype)) {
    case 1:
        put(bytes, k, static_cast<uint8_t>(w));
        break;
    case 2:
        put(bytes, k, static_cast<uint16_t>(w));
        break;
    case 4:
        put(bytes, k, static_cast<uint32_t>(w));
        break;
    default:
        put(bytes, k, w);
        break;
    }
}

int64_t trunc_to_int(double v) {
    if (std::isnan(v)) return 0;
    if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
    if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
}

} // namespace

TensorData TensorData::from_doubles(DType dtype, std::vector<int64_t> dims, std::span<const double> values) {
    std::vector<std::byte> bytes(values.size() * dtype_size(dtype));
    for (size_t k = 0; k < values.size(); ++k) {
        const double v = values[k];
        switch (dtype) {
        case DType::f64:
            put(bytes, k, v);
            break;
        case DType::f32:
            put(bytes, k, static_cast<float>(v));
            break;
        case DType::f16:
            put(bytes, k, gpu::float_to_half(static_cast<float>(v)));
            break;
        case DType::boolean:
            put(bytes, k, static_cast<uint8_t>(v != 0.0));
            break;
        case DType::u64: // beyond int64's range through uint64
            put(bytes, k, v >= 9223372036854775808.0 && v < 18446744073709551616.0 ? static_cast<uint64_t>(v)
                                                                                    : static_cast<uint64_t>(trunc_to_int(v)));
            break;
        default:
            put_int(bytes, dtype, k, trunc_to_int(v));
            break;
        }
    }
    return TensorData(dtype, std::move(dims), std::move(bytes));
}

TensorData TensorData::from_ints(DType dtype, std::vector<int64_t> dims, std::span<const int64_t> values) {
    if (is_float(dtype)) {
        std::vector<double> d(values.begin(), values.end());
        return from_doubles(dtype, std::move(dims), d);
    }
    std::vector<std::byte> bytes(values.size() * dtype_size(dtype));
    for (size_t k = 0; k < values.size(); ++k) put_int(bytes, dtype, k, values[k]);
    return TensorData(dtype, std::move(dims), std::move(bytes));
}

TensorData TensorData::converted(DType to) const {
    if (to == dtype_) return *this;
    if (is_float(dtype_) || dtype_ == DType::u64) {
        const auto d = to_doubles();
        if (dtype_ == DType::u64 && !is_float(to)) return from_ints(to, dims_, to_int64s());
        return from_doubles(to, dims_, d);
    }
    return from_ints(to, dims_, to_int64s());
}

std::string describe(const TensorData& tensor) {
    return std::string(dtype_name(tensor.dtype())) + dims_text(tensor.dims());
}

} // namespace vkml::graph
