// Command lines -> the option parsers of `vkml run` (tool::parse_run_args) and `vkml detect`
// (detect_app::parse_args, shared with samples/detect). The input is one argument per line.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "detect_app.hpp"
#include "fuzz_common.hpp"
#include "run_args.hpp"
#include "vkml/error.hpp"

namespace {

// --help prints the usage to stdout, thousands of times a second: into /dev/null with it.
const bool quiet = std::freopen("/dev/null", "w", stdout) != nullptr;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    (void)quiet;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> lines;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t eol = text.find('\n', at);
        lines.emplace_back(
            text.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at));
        if (eol == std::string_view::npos) break;
        at = eol + 1;
    }
    const std::vector<std::string_view> args(lines.begin(), lines.end());
    try {
        (void)vkml::tool::parse_run_args(args);
    } catch (const vkml::Error& e) {
        vkml::fuzz::expected(e);
    }
    try {
        (void)vkml::detect_app::parse_args(args, "vkml detect");
    } catch (const vkml::Error& e) {
        vkml::fuzz::expected(e);
    }
    return 0;
}
