// .npy bytes -> tool::parse_npy (what `vkml run --input x.npy` reads); what parses must write back
// (format_npy) to bytes that parse to the same tensor.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_common.hpp"
#include "npy.hpp"
#include "vkml/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    vkml::graph::TensorData t;
    try {
        t = vkml::tool::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    } catch (const vkml::Error& e) {
        vkml::fuzz::expected(e);
        return 0;
    }
    const vkml::graph::TensorData again = vkml::tool::parse_npy(vkml::tool::format_npy(t), "again.npy");
    if (!(again == t)) std::abort();
    return 0;
}
