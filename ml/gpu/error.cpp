#include "vkml/error.hpp"

namespace vkml {

std::string printable(std::string_view text) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    auto escape = [&](unsigned char c) {
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
            escape(c);
        } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
            escape(c); // a C1 control in UTF-8 (U+009B is a CSI on many terminals)
            escape(static_cast<unsigned char>(text[++i]));
        } else {
            out += char(c);
        }
    }
    return out;
}

const char* error_code_name(ErrorCode code) {
    switch (code) {
    case ErrorCode::Generic:
        return "error";
    case ErrorCode::InvalidArgument:
        return "invalid argument";
    case ErrorCode::Unsupported:
        return "unsupported";
    case ErrorCode::OutOfDeviceMemory:
        return "out of device memory";
    case ErrorCode::OutOfHostMemory:
        return "out of host memory";
    case ErrorCode::DeviceLost:
        return "device lost";
    case ErrorCode::Timeout:
        return "timeout";
    case ErrorCode::Io:
        return "i/o error";
    case ErrorCode::Vulkan:
        return "vulkan error";
    }
    return "error";
}

ErrorCode error_code_from(VkResult result) {
    switch (result) {
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
        return ErrorCode::OutOfDeviceMemory;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
        return ErrorCode::OutOfHostMemory;
    case VK_ERROR_DEVICE_LOST:
        return ErrorCode::DeviceLost;
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
        return ErrorCode::Unsupported;
    default:
        return ErrorCode::Vulkan;
    }
}

const char* vk_result_name(VkResult result) {
    switch (result) {
#define VKML_CASE(x)                                                                                         \
    case x:                                                                                                  \
        return #x;
        VKML_CASE(VK_SUCCESS)
        VKML_CASE(VK_NOT_READY)
        VKML_CASE(VK_TIMEOUT)
        VKML_CASE(VK_INCOMPLETE)
        VKML_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        VKML_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        VKML_CASE(VK_ERROR_INITIALIZATION_FAILED)
        VKML_CASE(VK_ERROR_DEVICE_LOST)
        VKML_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        VKML_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        VKML_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        VKML_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        VKML_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        VKML_CASE(VK_ERROR_TOO_MANY_OBJECTS)
        VKML_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        VKML_CASE(VK_ERROR_FRAGMENTED_POOL)
        VKML_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
        VKML_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        VKML_CASE(VK_ERROR_FRAGMENTATION)
        VKML_CASE(VK_PIPELINE_COMPILE_REQUIRED)
#undef VKML_CASE
    default:
        return "VkResult(unknown)";
    }
}

} // namespace vkml
