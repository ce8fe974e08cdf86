// Image bytes -> tool::decode_rgb_image (PNG, JPEG, BMP, GIF, ... through stb_image, as `vkml run`
// and `vkml detect` read them) -> tool::image_tensor, `vkml run`'s conversion to an input tensor,
// with options chosen by the input's length (resizing, layout, f16). The pixel cap is lowered to
// 2^18 so the fuzzer's memory stays bounded; the checks are the same.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_common.hpp"
#include "image_file.hpp"
#include "vkml/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    constexpr int64_t max_pixels = int64_t{1} << 18;
    try {
        const vkml::tool::RgbImage img =
            vkml::tool::decode_rgb_image(std::span(data, size), "fuzz.img", max_pixels);
        vkml::tool::ImageOptions o;
        o.nhwc = size % 2;
        o.mean = {0.5f, 0.4f, 0.3f};
        o.std = {0.2f};
        const bool resize = size % 3 == 0;
        const auto dtype = size % 5 == 0 ? vkml::graph::DType::f16 : vkml::graph::DType::f32;
        (void)vkml::tool::image_tensor(img, o, resize ? std::pair{7, 5} : std::pair{0, 0}, dtype, "fuzz.img",
                                       max_pixels);
    } catch (const vkml::Error& e) {
        vkml::fuzz::expected(e);
    }
    return 0;
}
