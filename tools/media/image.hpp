#pragma once
// Image files as frames for the transcoder: PNG (8 or 16 bits; grey, grey + alpha, RGB, RGBA) and
// JPEG (8-bit grey or RGB) are read with stb into planar RGB frames the GPU colour conversion
// takes (gbrp / gbrp16le, with the alpha as a fourth plane: gbrap / gbrap16le), and written back
// keeping the channels and bit depth the file had, as far as the output's file type allows
// (PNG: all of them, through libavcodec's encoder; JPEG: 8 bits, no alpha).
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "vkml/media/reader.hpp"

namespace vkml::media {

// What an image file holds.
struct ImageKind {
    int channels = 3; // 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA
    int bits = 8;     // 8 or 16
    bool alpha() const { return channels == 2 || channels == 4; }
    bool grey() const { return channels <= 2; }
};

// Reads an image into a frame: gbrp or gbrp16le (grey: the same values in the three planes),
// gbrap or gbrap16le with an alpha channel. Throws Error(Io) naming the file. A file whose header
// claims more than max_pixels pixels is refused from the header, before anything is decoded.
inline constexpr int64_t max_image_pixels = int64_t{1} << 28; // 16384 x 16384, as `vkml run`
FramePtr load_image(const std::filesystem::path& path, ImageKind& kind);
// The same from the file's bytes (`name` for messages): what load_image does after reading it.
FramePtr decode_image(std::span<const uint8_t> bytes, const std::filesystem::path& name, ImageKind& kind,
                      int64_t max_pixels = max_image_pixels);

// What an output file of `path`'s type keeps of an image of `kind` (JPEG: 8 bits, no alpha).
ImageKind image_kind_for(const std::filesystem::path& path, const ImageKind& kind);
// One line saying what the output loses, or "" when it keeps everything.
std::string image_loss(const std::filesystem::path& path, const ImageKind& kind);

// Encodes `frame` (gbrp, gbrp16le, gbrap or gbrap16le) as `path`'s file type with the channels
// and bits of image_kind_for(path, kind), and writes it atomically (vkml/media/output_file.hpp).
void save_image(const AVFrame& frame, const ImageKind& kind, const std::filesystem::path& path);

} // namespace vkml::media
