#pragma once
// An independent reference for text.hpp / overlay.hpp: every pixel asks "which items cover me?"
// from the items' definitions alone (no loops over glyphs or boxes as the library runs them), and
// blends in double precision. Only the glyph bitmaps come from the library (font_row), and
// text_cpu_test.cpp checks those against art written in the test.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "vkml/passes/text.hpp"

namespace vkml::passes::test {

enum class Kind { Text, Rect, Fill };

struct TestItem {
    Kind kind = Kind::Fill;
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0; // Text: x0, y0 = origin
    int thickness = 2;
    std::string text;
    int scale = 1;
    Rgba color;
    std::optional<Rgba> background;
};

// Whether the glyph ink of `it` (a Text item) covers pixel (px, py).
inline bool text_covers(const TestItem& it, int64_t px, int64_t py) {
    const int64_t s = std::clamp(it.scale, 1, 255);
    const int64_t dx = px - it.x0, dy = py - it.y0;
    if (dx < 0 || dy < 0) return false;
    const int64_t line = dy / (font_cell_h * s), row = dy % (font_cell_h * s) / s;
    size_t start = 0;
    for (int64_t l = 0; l < line; ++l) {
        start = it.text.find('\n', start);
        if (start == std::string::npos) return false;
        ++start;
    }
    size_t end = it.text.find('\n', start);
    if (end == std::string::npos) end = it.text.size();
    const int64_t index = dx / (font_cell_w * s), col = dx % (font_cell_w * s) / s;
    if (index >= int64_t(end - start)) return false;
    const char c = it.text[start + size_t(index)];
    return (font_row(font_glyph(c), int(row)) >> col & 1u) != 0;
}

inline bool box_covers(int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t px, int64_t py) {
    return px >= std::min(x0, x1) && px < std::max(x0, x1) && py >= std::min(y0, y1) && py < std::max(y0, y1);
}

// The blend layers `it` puts on pixel (px, py), in order (0, 1 or 2 colours).
inline std::vector<Rgba> layers(const TestItem& it, int64_t px, int64_t py) {
    std::vector<Rgba> out;
    switch (it.kind) {
    case Kind::Fill:
        if (box_covers(it.x0, it.y0, it.x1, it.y1, px, py)) out.push_back(it.color);
        break;
    case Kind::Rect: {
        if (it.thickness < 1) break;
        const int64_t t = it.thickness;
        const int64_t x0 = std::min(it.x0, it.x1), x1 = std::max(it.x0, it.x1);
        const int64_t y0 = std::min(it.y0, it.y1), y1 = std::max(it.y0, it.y1);
        if (box_covers(x0, y0, x1, y1, px, py) &&
            !(px >= x0 + t && px < x1 - t && py >= y0 + t && py < y1 - t))
            out.push_back(it.color);
        break;
    }
    case Kind::Text: {
        if (it.text.empty()) break;
        if (it.background) {
            const TextSize size = text_size(it.text, it.scale);
            if (box_covers(it.x0, it.y0, int64_t(it.x0) + size.w, int64_t(it.y0) + size.h, px, py))
                out.push_back(*it.background);
        }
        if (text_covers(it, px, py)) out.push_back(it.color);
        break;
    }
    }
    return out;
}

// Double-precision "over", rounded half up to 8 bits after every layer (the library's contract).
inline uint8_t blend_ref(uint8_t dst, uint8_t src, uint8_t a) {
    const double v = src * (a / 255.0) + dst * (1.0 - a / 255.0);
    return uint8_t(std::floor(v + 0.5)); // never a tie: 255 v + 127.5 is no multiple of 255
}

// 8-bit reference image: `pixels` (width x height x channels, tightly packed) with `items` drawn.
inline void reference_draw(std::vector<uint8_t>& pixels, int width, int height, int channels,
                           const std::vector<TestItem>& items) {
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            uint8_t* p = &pixels[(size_t(y) * width + x) * channels];
            for (const TestItem& it : items)
                for (const Rgba& c : layers(it, x, y)) {
                    const uint8_t src[4] = {c.r, c.g, c.b, 255};
                    for (int ch = 0; ch < channels; ++ch) p[ch] = blend_ref(p[ch], src[ch], c.a);
                }
        }
}

// The library's CPU drawing of the same items.
inline void library_draw(const PixelView& view, const std::vector<TestItem>& items) {
    for (const TestItem& it : items) {
        switch (it.kind) {
        case Kind::Text:
            draw_text(view, it.x0, it.y0, it.text, it.color, it.scale, it.background);
            break;
        case Kind::Rect:
            draw_rect(view, it.x0, it.y0, it.x1, it.y1, it.color, it.thickness);
            break;
        case Kind::Fill:
            fill_rect(view, it.x0, it.y0, it.x1, it.y1, it.color);
            break;
        }
    }
}

// Random items over a width x height image, many crossing its edges, translucent and overlapping.
inline std::vector<TestItem> random_items(uint32_t seed, int width, int height, int count) {
    std::mt19937 rng(seed);
    auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto color = [&](bool translucent) {
        return Rgba{uint8_t(uni(0, 255)), uint8_t(uni(0, 255)), uint8_t(uni(0, 255)),
                    uint8_t(translucent ? uni(1, 254) : 255)};
    };
    static const char* texts[] = {"frame 16.7 ms",
                                  "ML 3.25 ms\nnanodet 416x416",
                                  "dog 0.91",
                                  "Queue: async\ncompute",
                                  "{[(~`|\\^_)]}",
                                  "tab\there\x01\xff!",
                                  "0123456789",
                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                                  "abcdefghijklmnopqrstuvwxyz",
                                  "!\"#$%&'*+,-./:;<=>?@",
                                  "\n\nline 3",
                                  "x"};
    std::vector<TestItem> items;
    for (int i = 0; i < count; ++i) {
        TestItem it;
        const int k = uni(0, 2);
        it.kind = k == 0 ? Kind::Text : k == 1 ? Kind::Rect : Kind::Fill;
        it.color = color(uni(0, 2) == 0);
        it.x0 = uni(-width / 2, width);
        it.y0 = uni(-height / 2, height);
        it.x1 = uni(-width / 4, width + width / 4);
        it.y1 = uni(-height / 4, height + height / 4);
        it.thickness = uni(1, 5);
        it.text = texts[uni(0, int(std::size(texts)) - 1)];
        it.scale = uni(1, 3);
        if (uni(0, 1)) it.background = color(true);
        items.push_back(it);
    }
    return items;
}

} // namespace vkml::passes::test
