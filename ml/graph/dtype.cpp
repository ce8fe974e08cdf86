#include "vkml/graph/dtype.hpp"

namespace vkml::graph {

size_t dtype_size(DType dtype) {
    switch (dtype) {
    case DType::f32:
    case DType::i32:
        return 4;
    case DType::f16:
        return 2;
    case DType::i64:
        return 8;
    case DType::u8:
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
    case DType::undefined:
        return "?";
    }
    return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (DType d : {DType::f32, DType::f16, DType::i32, DType::i64, DType::u8, DType::boolean})
        if (name == dtype_name(d)) return d;
    return std::nullopt;
}

} // namespace vkml::graph
