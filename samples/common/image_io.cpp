#include "common/image_io.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <string_view>

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include "vkml/error.hpp"

namespace vkml::samples {

namespace {
bool ends_with(std::string_view s, std::string_view tail) {
    if (s.size() < tail.size()) return false;
    return std::equal(tail.rbegin(), tail.rend(), s.rbegin(),
                      [](char a, char b) { return a == char(std::tolower(static_cast<unsigned char>(b))); });
}
} // namespace

Image8 read_image(const std::string& path, int channels) {
    if (channels != 3 && channels != 4)
        throw Error(ErrorCode::InvalidArgument, "read_image: channels must be 3 or 4");
    int w = 0, h = 0, n = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load(path.c_str(), &w, &h, &n, channels),
                                                   stbi_image_free);
    if (!data) {
        const char* why = stbi_failure_reason();
        throw Error(ErrorCode::Io, path + ": cannot read image (" + (why ? why : "unknown reason") + ")");
    }
    Image8 image(w, h, channels);
    std::memcpy(image.pixels.data(), data.get(), image.pixels.size());
    return image;
}

void write_image(const std::string& path, const Image8& image) {
    if (image.width <= 0 || image.height <= 0 ||
        image.pixels.size() != size_t(image.width) * image.height * image.channels)
        throw Error(ErrorCode::InvalidArgument, path + ": image to write has an inconsistent size");
    int ok = 0;
    if (ends_with(path, ".png"))
        ok = stbi_write_png(path.c_str(), image.width, image.height, image.channels, image.pixels.data(),
                            image.width * image.channels);
    else if (ends_with(path, ".jpg") || ends_with(path, ".jpeg"))
        ok = stbi_write_jpg(path.c_str(), image.width, image.height, image.channels, image.pixels.data(), 95);
    else
        throw Error(ErrorCode::InvalidArgument, path + ": unknown image extension (use .png or .jpg)");
    if (!ok) throw Error(ErrorCode::Io, path + ": cannot write image (directory missing or disk full?)");
}

Image8 to_channels(const Image8& image, int channels) {
    if (image.channels == channels) return image;
    Image8 out(image.width, image.height, channels);
    const size_t n = size_t(image.width) * image.height;
    for (size_t i = 0; i < n; ++i) {
        const uint8_t* s = image.pixels.data() + i * image.channels;
        uint8_t* d = out.pixels.data() + i * channels;
        d[0] = s[0], d[1] = s[1], d[2] = s[2];
        if (channels == 4) d[3] = image.channels == 4 ? s[3] : 255;
    }
    return out;
}

void blit(Image8& dst, const Image8& src, int x, int y) {
    for (int sy = 0; sy < src.height; ++sy) {
        const int dy = y + sy;
        if (dy < 0 || dy >= dst.height) continue;
        for (int sx = 0; sx < src.width; ++sx) {
            const int dx = x + sx;
            if (dx < 0 || dx >= dst.width) continue;
            const uint8_t* s = src.at(sx, sy);
            uint8_t* d = dst.at(dx, dy);
            d[0] = s[0], d[1] = s[1], d[2] = s[2];
            if (dst.channels == 4) d[3] = src.channels == 4 ? s[3] : 255;
        }
    }
}

} // namespace vkml::samples
