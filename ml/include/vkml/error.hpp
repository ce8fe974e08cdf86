#pragma once
// vkml reports every failure as a vkml::Error exception carrying a message a user can act on and
// a code a program can branch on (e.g. retry with smaller tiles on OutOfDeviceMemory).
#include <stdexcept>
#include <string>
#include <string_view>

#include <vulkan/vulkan_core.h>

namespace vkml {

enum class ErrorCode {
    Generic,
    InvalidArgument,   // a descriptor, shape or option is wrong; the message names it
    Unsupported,       // the device or build lacks a feature the request needs
    OutOfDeviceMemory, // the memory budget or the driver refused; free memory or shrink the work
    OutOfHostMemory,
    DeviceLost, // the driver reported VK_ERROR_DEVICE_LOST: nothing more runs on the device
    Timeout,    // the GPU made no progress for the wait limit (a hung device; VKML_WAIT_TIMEOUT)
    Io,         // a file could not be read or written
    Vulkan,     // any other Vulkan failure
};

const char* error_code_name(ErrorCode code);

// `text` with terminal control characters escaped as \xNN (C0 controls but newline and tab, DEL,
// and the UTF-8 encoded C1 controls U+0080..U+009F): names read from a model or a file can then be
// printed without rewriting the user's terminal. Every Error message goes through it.
std::string printable(std::string_view text);

class Error : public std::runtime_error {
public:
    Error(ErrorCode code, const std::string& message) : std::runtime_error(printable(message)), code_(code) {}
    explicit Error(const std::string& message) : Error(ErrorCode::Generic, message) {}
    ErrorCode code() const noexcept { return code_; }

private:
    ErrorCode code_;
};

// Maps a VkResult to the matching ErrorCode.
ErrorCode error_code_from(VkResult result);
const char* vk_result_name(VkResult result);

// Throws vkml::Error naming `what` when `result` is a failure.
inline void check_vk(VkResult result, const char* what) {
    if (result < 0) [[unlikely]] {
        throw Error(error_code_from(result), std::string(what) + " failed: " + vk_result_name(result));
    }
}

} // namespace vkml
