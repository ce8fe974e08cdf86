#include "vkml/passes/models.hpp"

#include <cstdlib>

#include "vkml/error.hpp"

namespace vkml::passes {

namespace fs = std::filesystem;

fs::path models_dir() {
    if (const char* env = std::getenv("VKML_MODELS"); env && *env) return env;
    const char* home = std::getenv("HOME");
    return fs::path(home && *home ? home : "/nonexistent") / ".cache/vkml/models";
}

namespace {
[[noreturn]] void invalid(const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, what);
}
} // namespace

std::optional<RegisteredModel> find_model(std::string_view name, int scale, const fs::path& dir) {
    const fs::path root = dir.empty() ? models_dir() : dir;
    const std::string n(name);
    RegisteredModel m;
    if (n.rfind("anime4k-", 0) == 0) {
        std::string size = n.substr(8), variant = "rl";
        if (const size_t dash = size.find('-'); dash != std::string::npos) {
            variant = size.substr(dash + 1);
            size = size.substr(0, dash);
        }
        if ((size != "s" && size != "m" && size != "l") ||
            (variant != "an" && variant != "rl" && variant != "3d"))
            invalid("unknown model '" + n + "' (anime4k-s, anime4k-m, anime4k-l, optionally with -an, -rl or -3d)");
        if (scale != 0 && scale != 2)
            invalid("the Anime4K models upscale 2x only, not " + std::to_string(scale) + "x");
        m.family = ModelFamily::Anime4K;
        m.path = root / "websr/weights/anime4k" / ("cnn-2x-" + size + "-" + variant + ".json");
        m.scale = 2;
        m.label = n + " (Anime4K CNN 2x, " + variant + ")";
        return m;
    }
    if (n == "esrgan-slim" || n == "esrgan-medium" || n == "esrgan-thick") {
        const int s = scale ? scale : 2;
        if (s != 2 && s != 3 && s != 4 && s != 8)
            invalid(n + " comes in 2x, 3x, 4x and 8x; " + std::to_string(s) + "x is none of them");
        m.family = ModelFamily::Esrgan;
        m.path = root / n / "models" / ("x" + std::to_string(s)) / "model.json";
        m.input_range = 255.f;
        m.scale = s;
        m.label = n + " x" + std::to_string(s);
        return m;
    }
    if (n == "nanodet") {
        if (scale != 0) invalid("nanodet is a detector: it has no scale");
        m.family = ModelFamily::NanoDet;
        m.path = root / "human-models/models/nanodet.json";
        m.label = "nanodet (NanoDet, human-models)";
        return m;
    }
    return std::nullopt;
}

std::vector<std::string> registered_model_names() {
    return {"anime4k-s", "anime4k-m", "anime4k-l", "esrgan-slim", "esrgan-medium", "esrgan-thick", "nanodet"};
}

} // namespace vkml::passes
