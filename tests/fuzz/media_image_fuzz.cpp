// Image bytes -> media::decode_image, what `vkml upscale` and vkml.upscale_video read image files
// and folders with (stb_image into planar RGB frames: 8 or 16 bits; grey, grey + alpha, RGB, RGBA),
// then the frame's planes are read back whole. The pixel cap is lowered to 2^18 so the fuzzer's
// memory stays bounded; the check is the same. Seeds: the image harness's corpus (PNG, JPEG, BMP,
// TGA, PGM).
extern "C" {
#include <libavutil/frame.h>
}

#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_common.hpp"
#include "media/image.hpp"
#include "vkml/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    constexpr int64_t max_pixels = int64_t{1} << 18;
    try {
        vkml::media::ImageKind kind;
        const vkml::media::FramePtr f =
            vkml::media::decode_image(std::span(data, size), "fuzz.img", kind, max_pixels);
        if (kind.channels < 1 || kind.channels > 4 || (kind.bits != 8 && kind.bits != 16) || f->width < 1 ||
            f->height < 1 || int64_t(f->width) * f->height > max_pixels)
            __builtin_trap();
        // Every byte of every plane is readable (ASan checks the frame's buffers).
        unsigned sum = 0;
        const int bytes = f->width * (kind.bits / 8);
        for (int p = 0; p < (kind.alpha() ? 4 : 3); ++p)
            for (int y = 0; y < f->height; ++y)
                for (int x = 0; x < bytes; ++x) sum += f->data[p][int64_t(y) * f->linesize[p] + x];
        volatile unsigned sink = sum;
        (void)sink;
    } catch (const vkml::Error& e) {
        vkml::fuzz::expected(e);
    }
    return 0;
}
