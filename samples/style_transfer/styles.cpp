#include "styles.hpp"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include "common/app.hpp"
#include "vkml/error.hpp"

namespace vkml::style_sample {

namespace {

std::vector<std::filesystem::path> models_in(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> found;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        if (e.is_regular_file(ec) && e.path().extension() == ".onnx") found.push_back(e.path());
    std::sort(found.begin(), found.end());
    return found;
}

std::string names(const std::vector<std::filesystem::path>& models) {
    std::string s;
    for (const auto& m : models) s += (s.empty() ? "" : ", ") + m.stem().string();
    return s;
}

} // namespace

std::filesystem::path style_dir() {
    if (const char* d = std::getenv("VKML_STYLE_DIR"); d && *d) return d;
    return VKML_STYLE_DIR;
}

std::vector<std::filesystem::path> resolve_styles(const std::vector<std::string>& args) {
    const std::filesystem::path dir = style_dir();
    const std::vector<std::filesystem::path> committed = models_in(dir);
    if (args.empty()) {
        if (committed.empty())
            throw Error(ErrorCode::Io,
                        "no style models in " + dir.string() +
                            " (assets/models/style/*.onnx are not there yet): pass --style PATH "
                            "to a fast-neural-style ONNX model, e.g. the ONNX model zoo's candy-9.onnx");
        return committed;
    }
    std::vector<std::filesystem::path> out;
    for (const std::string& a : args) {
        std::error_code ec;
        const std::filesystem::path p(a);
        const bool looks_like_path = a.find('/') != std::string::npos || p.has_extension();
        if (looks_like_path || std::filesystem::exists(p, ec)) {
            if (!std::filesystem::is_regular_file(p, ec))
                throw Error(ErrorCode::Io,
                            "style model '" + a + "' " +
                                (std::filesystem::exists(p, ec) ? "is not a file" : "does not exist"));
            out.push_back(p);
            continue;
        }
        const auto it = std::find_if(committed.begin(), committed.end(),
                                     [&](const std::filesystem::path& m) { return m.stem() == a; });
        if (it == committed.end())
            throw Error(ErrorCode::Io, "no style named '" + a + "' in " + dir.string() +
                                           (committed.empty() ? std::string(" (it has no models yet)")
                                                              : " (it has: " + names(committed) + ")") +
                                           "; --style also takes a path to an ONNX model");
        out.push_back(*it);
    }
    return out;
}

float parse_strength(const std::string& text) {
    char* end = nullptr;
    const float v = std::strtof(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(v >= 0.f && v <= 1.f))
        throw samples::UsageError("--strength takes a number from 0 to 1, not '" + text + "'");
    return v;
}

} // namespace vkml::style_sample
