#pragma once
// Small helpers for the benchmarks' --json files (read by bench/run_peers.py).
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

namespace vkml::bench {

// A JSON string literal, quotes included.
inline std::string json_quote(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

// A JSON number; NaN and infinities (which JSON lacks) become null.
inline std::string json_number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

// Writes `text` to `path`; false (with a message on stderr) when the file cannot be written.
inline bool write_text_file(const std::string& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
        std::fprintf(stderr, "vkml bench: cannot write '%s'\n", path.c_str());
        return false;
    }
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    return (std::fclose(f) == 0) && ok;
}

} // namespace vkml::bench
