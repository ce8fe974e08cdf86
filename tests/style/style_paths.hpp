#pragma once
// Where the style tests find their files: the fixtures of tests/style/fixtures (made by
// make_fixtures.py) and the committed models in assets/models/style.
#include <cstdlib>
#include <filesystem>
#include <string>

#ifndef VKML_STYLE_FIXTURES
#error "VKML_STYLE_FIXTURES must name tests/style/fixtures"
#endif
#ifndef VKML_STYLE_ASSETS
#error "VKML_STYLE_ASSETS must name assets/models/style"
#endif

namespace vkml::test {

inline std::filesystem::path style_fixture(const std::string& name) {
    return std::filesystem::path(VKML_STYLE_FIXTURES) / name;
}

// $VKML_STYLE_DIR (as the sample reads it), else the source tree's assets/models/style.
inline std::filesystem::path style_assets() {
    if (const char* d = std::getenv("VKML_STYLE_DIR"); d && *d) return d;
    return VKML_STYLE_ASSETS;
}

} // namespace vkml::test
