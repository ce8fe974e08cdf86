#include "vkml/graph/dtype.hpp"

namespace vkml::graph {

size_t dtype_size(DType dtype) {
    switch (dtype) {
    case DType::f32:
    case DType::i32:
    case DType::u32:
        return 4;
    case DType::f16:
    case DType::i16:
    case DType::u16:
        return 2;
    case DType::i64:
    case DType::f64:
    case DType::u64:
        return 8;
    case DType::u8:
    case DType::i8:
    case DType::boolean:
        return 1;
    case DType::undefined:
        return 0;
    }
    return 0;
}

const char* dtype_name(DType dtype) {
    switch (dtype) {
    case DType::f32:
        return "f32";
    case DType::f16:
        return "f16";
    case DType::i32:
        return "i32";
    case DType::i64:
        return "i64";
    case DType::u8:
        return "u8";
    case DType::boolean:
        return "bool";
    case DType::f64:
        return "f64";
    case DType::i8:
        return "i8";
    case DType::i16:
        return "i16";
    case DType::u16:
        return "u16";
    case DType::u32:
        return "u32";
    case DType::u64:
        return "u64";
    case DType::undefined:
        return "?";
    }
    return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (DType d : {DType::f32, DType::f16, DType::i32, DType::i64, DType::u8, DType::boolean, DType::f64,
                    DType::i8, DType::i16, DType::u16, DType::u32, DType::u64})
        if (name == dtype_name(d)) return d;
    return std::nullopt;
}

bool is_float(DType dtype) {
    return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::f64;
}

int64_t wrap_int(DType dtype, int64_t value) {
    const auto u = static_cast<uint64_t>(value);
    switch (dtype) {
    case DType::boolean:
        return value != 0;
    case DType::u8:
        return static_cast<int64_t>(u & 0xffu);
    case DType::i8:
        return static_cast<int8_t>(static_cast<uint8_t>(u));
    case DType::u16:
        return static_cast<int64_t>(u & 0xffffu);
    case DType::i16:
        return static_cast<int16_t>(static_cast<uint16_t>(u));
    case DType::u32:
        return static_cast<int64_t>(u & 0xffffffffu);
    case DType::i32:
        return static_cast<int32_t>(static_cast<uint32_t>(u));
    default:
        return value;
    }
}

} // namespace vkml::graph
