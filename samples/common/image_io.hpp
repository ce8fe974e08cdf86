#pragma once
// PNG and JPEG files through Debian's libstb (stb_image / stb_image_write).
#include <cstdint>
#include <string>
#include <vector>

namespace vkml::samples {

// 8-bit interleaved pixels, rows tightly packed.
struct Image8 {
    int width = 0, height = 0, channels = 4; // 3 (RGB) or 4 (RGBA)
    std::vector<uint8_t> pixels;
    Image8() = default;
    Image8(int w, int h, int c) : width(w), height(h), channels(c), pixels(size_t(w) * h * c) {}
    uint8_t* at(int x, int y) { return pixels.data() + (size_t(y) * width + x) * channels; }
    const uint8_t* at(int x, int y) const { return pixels.data() + (size_t(y) * width + x) * channels; }
};

// Reads PNG, JPEG (and anything else stb_image reads) as `channels` (3 or 4) channels. Throws
// vkml::Error(Io) naming the file and stb's reason.
Image8 read_image(const std::string& path, int channels = 4);
// Writes by extension: .png, .jpg / .jpeg (quality 95). Throws vkml::Error(Io) naming the file.
void write_image(const std::string& path, const Image8& image);

// RGBA <-> RGB conversions, and copying `src` into `dst` at (x, y) (clipped; channels converted).
Image8 to_channels(const Image8& image, int channels);
void blit(Image8& dst, const Image8& src, int x, int y);

} // namespace vkml::samples
