// Anime4K weights JSON (websr's {"name", "layers"}) -> import::load_anime4k -> the device-free
// passes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_common.hpp"
#include "vkml/error.hpp"
#include "vkml/import/anime4k.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto path = vkml::fuzz::scratch_dir() / "anime4k.json";
    vkml::fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
    try {
        vkml::graph::Graph g = vkml::import::load_anime4k(path);
        vkml::fuzz::host_passes(g);
    } catch (const vkml::Error& e) {
        vkml::fuzz::expected(e);
    }
    return 0;
}
