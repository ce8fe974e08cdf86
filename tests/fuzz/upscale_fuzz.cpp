// Command lines -> `vkml upscale`'s option parser (tool::parse_upscale_args). The input is one
// argument per line, as for cli_fuzz.cpp.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.hpp"
#include "upscale_args.hpp"
#include "vkml/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
        const vkml::tool::UpscaleArgs a = vkml::tool::parse_upscale_args(args);
        // What parses is within the documented ranges.
        const auto& d = a.desc;
        if (a.model.scale < 0 || a.model.scale > 16 || d.tile < 0 || d.tile > 65536 || d.crf < -1 ||
            d.crf > 63 || d.max_frames < 0 || d.threads.load < 0 || d.threads.proc < 0 ||
            d.threads.save < 0 ||
            (a.model.input_range != 0.f && a.model.input_range != 1.f && a.model.input_range != 255.f))
            __builtin_trap();
        for (const auto& [key, value] : d.encoder_options)
            if (key.empty()) __builtin_trap();
    } catch (const vkml::Error& e) {
        vkml::fuzz::expected(e);
    }
    return 0;
}
