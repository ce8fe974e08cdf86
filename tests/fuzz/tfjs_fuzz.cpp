// TF.js model.json plus weight shards -> import::load_model (format detection, the layers and
// graph importers, the weight manifest) -> the device-free passes. The input is model.json, then
// the shards as "\n#vkml-file NAME\n" sections (fuzz_common.hpp), written to a scratch folder.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_common.hpp"
#include "vkml/error.hpp"
#include "vkml/import/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto dir = vkml::fuzz::scratch_dir() / "tfjs";
    vkml::fuzz::write_files(
        dir,
        vkml::fuzz::split_files(std::string_view(reinterpret_cast<const char*>(data), size), "model.json"));
    try {
        vkml::graph::Graph g = vkml::import::load_model(dir / "model.json");
        vkml::fuzz::host_passes(g);
    } catch (const vkml::Error& e) {
        vkml::fuzz::expected(e);
    }
    return 0;
}
