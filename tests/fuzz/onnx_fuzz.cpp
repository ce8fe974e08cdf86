// ONNX protobuf bytes -> import::load_onnx_bytes -> the device-free passes. External data is read
// from a scratch folder holding external.bin (256 bytes), so offsets, lengths and names from the
// file are exercised against a real file.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "fuzz_common.hpp"
#include "vkml/error.hpp"
#include "vkml/import/onnx.hpp"

namespace {

std::filesystem::path external_dir() {
    const auto dir = vkml::fuzz::scratch_dir() / "onnx";
    std::filesystem::create_directories(dir);
    std::string bytes(256, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i);
    vkml::fuzz::write_file(dir / "external.bin", bytes);
    return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::filesystem::path dir = external_dir();
    try {
        vkml::graph::Graph g =
            vkml::import::load_onnx_bytes(std::span(reinterpret_cast<const std::byte*>(data), size),
                                          "fuzz.onnx", {.external_data_dir = dir});
        vkml::fuzz::host_passes(g);
    } catch (const vkml::Error& e) {
        vkml::fuzz::expected(e);
    }
    return 0;
}
