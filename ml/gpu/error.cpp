#include "vkml/error.hpp"

namespace vkml {

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
