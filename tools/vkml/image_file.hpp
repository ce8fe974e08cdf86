#pragma once
// Image files as 8-bit RGB for `vkml run` and `vkml detect` (PNG, JPEG, BMP and TGA through
// stb_image, Debian's libstb; other formats stb knows are refused by their signature), and
// `vkml run`'s conversion of an image into a model input.
// A file that claims more than max_image_pixels is refused from its header, before any decoding
// memory is allocated; every error names the file.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vkml/graph/tensor_data.hpp"

namespace vkml::tool {

struct RgbImage {
    int width = 0, height = 0;
    std::vector<uint8_t> pixels; // width * height * 3, rows top to bottom
};

inline constexpr int64_t max_image_pixels = int64_t{1} << 28; // 16384 x 16384

RgbImage read_rgb_image(const std::filesystem::path& path, int64_t max_pixels = max_image_pixels);
// The same from memory; `source` names the data in errors.
RgbImage decode_rgb_image(std::span<const uint8_t> bytes, const std::string& source,
                          int64_t max_pixels = max_image_pixels);

// How `vkml run` turns pixels into an input tensor: (pixel / 255 * scale - mean) / std per
// channel, NCHW or NHWC, resized first when asked to (or to the model's static size).
struct ImageOptions {
    float scale = 1.f;
    std::vector<float> mean{0.f}, std{1.f}; // 1 or 3 values
    bool nhwc = false;
    int resize_w = 0, resize_h = 0;
    float channel(const std::vector<float>& v, size_t c) const { return v.size() == 1 ? v[0] : v[c]; }
};

// `size`: the model's (width, height), 0 where it has none; --resize (resize_w, resize_h) wins.
// The tensor's dims tell whether the image was resized.
// `dtype`: the model input's (f32, f16, or undefined for f32). Errors name `source`.
graph::TensorData image_tensor(const RgbImage& image, const ImageOptions& options, std::pair<int, int> size,
                               graph::DType dtype, const std::string& source,
                               int64_t max_pixels = max_image_pixels);

} // namespace vkml::tool
