#pragma once
// Just enough PNG for the golden-image tests: 8-bit RGB or RGBA, not interlaced (what the model
// packages ship), inflated with zlib. Returns the RGB planes as floats 0..255. Test-only code.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "import/ref_eval.hpp"

namespace vkml::test {

inline Image read_png_rgb(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    const std::vector<unsigned char> d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto be32 = [&](size_t p) {
        return (uint32_t{d.at(p)} << 24) | (uint32_t{d.at(p + 1)} << 16) | (uint32_t{d.at(p + 2)} << 8) |
               d.at(p + 3);
    };
    if (d.size() < 8 || d[1] != 'P' || d[2] != 'N' || d[3] != 'G')
        throw std::runtime_error(path.string() + ": not a PNG");
    uint32_t w = 0, h = 0, channels = 0;
    std::vector<unsigned char> idat;
    for (size_t p = 8; p + 8 <= d.size();) {
        const uint32_t n = be32(p);
        const std::string type(d.begin() + static_cast<long>(p) + 4, d.begin() + static_cast<long>(p) + 8);
        if (type == "IHDR") {
            w = be32(p + 8);
            h = be32(p + 12);
            if (d.at(p + 16) != 8 || d.at(p + 20) != 0 || (d.at(p + 17) != 2 && d.at(p + 17) != 6))
                throw std::runtime_error(path.string() + ": only 8-bit RGB/RGBA, non-interlaced");
            channels = d.at(p + 17) == 2 ? 3 : 4;
        } else if (type == "IDAT") {
            idat.insert(idat.end(), d.begin() + static_cast<long>(p) + 8,
                        d.begin() + static_cast<long>(p + 8 + n));
        }
        p += 12 + n;
    }
    const size_t stride = size_t{w} * channels;
    std::vector<unsigned char> raw((stride + 1) * h);
    uLongf raw_size = static_cast<uLongf>(raw.size());
    if (uncompress(raw.data(), &raw_size, idat.data(), static_cast<uLong>(idat.size())) != Z_OK ||
        raw_size != raw.size())
        throw std::runtime_error(path.string() + ": bad image data");
    std::vector<unsigned char> px(stride * h), prev(stride, 0);
    for (size_t y = 0; y < h; ++y) {
        const unsigned char filter = raw[y * (stride + 1)];
        unsigned char* line = &px[y * stride];
        const unsigned char* in = &raw[y * (stride + 1) + 1];
        for (size_t x = 0; x < stride; ++x) {
            const int a = x >= channels ? line[x - channels] : 0, b = prev[x],
                      c = x >= channels ? prev[x - channels] : 0;
            int pred = 0;
            if (filter == 1)
                pred = a;
            else if (filter == 2)
                pred = b;
            else if (filter == 3)
                pred = (a + b) / 2;
            else if (filter == 4) {
                const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
                pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
            }
            line[x] = static_cast<unsigned char>(in[x] + pred);
        }
        prev.assign(line, line + stride);
    }
    Image img = Image::zeros(3, h, w);
    for (int64_t c = 0; c < 3; ++c)
        for (int64_t y = 0; y < h; ++y)
            for (int64_t x = 0; x < w; ++x)
                img.at(c, y, x) = px[(static_cast<size_t>(y) * w + static_cast<size_t>(x)) * channels +
                                     static_cast<size_t>(c)];
    return img;
}

inline Image crop(const Image& im, int64_t y0, int64_t x0, int64_t h, int64_t w) {
    Image out = Image::zeros(im.c, h, w);
    for (int64_t c = 0; c < im.c; ++c)
        for (int64_t y = 0; y < h; ++y)
            for (int64_t x = 0; x < w; ++x) out.at(c, y, x) = im.get(c, y0 + y, x0 + x);
    return out;
}

} // namespace vkml::test
