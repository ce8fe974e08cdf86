// vkml's bitmap font and CPU drawing (text.hpp). The glyphs below were drawn for vkml on a 5 x 10
// grid ('#' = ink), one line per character: rows 1..10 of the 6 x 12 cell, top to bottom, so the
// cell's first and last rows and its last column stay blank. Capitals and digits use rows 2..8
// (the baseline is under row 8), lower case rows 4..8 with ascenders from row 2 and descenders in
// rows 9..10.
#include "vkml/passes/text.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace vkml::passes {
namespace {

struct GlyphArt {
    char c;
    const char* rows; // 10 rows of 5 pixels, separated by single spaces
};

// clang-format off
constexpr GlyphArt glyph_art[font_glyph_count] = {
    {' ',  "..... ..... ..... ..... ..... ..... ..... ..... ..... ....."},
    {'!',  "..... ..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#.. ..... ....."},
    {'"',  "..... .#.#. .#.#. .#.#. ..... ..... ..... ..... ..... ....."},
    {'#',  "..... .#.#. .#.#. ##### .#.#. ##### .#.#. .#.#. ..... ....."},
    {'$',  "..#.. .#### #.#.. #.#.. .###. ..#.# ..#.# ####. ..#.. ....."},
    {'%',  "..... ##... ##..# ...#. ..#.. .#... #..## ...## ..... ....."},
    {'&',  "..... .##.. #..#. #.#.. .#... #.#.# #..#. .##.# ..... ....."},
    {'\'', "..... ..#.. ..#.. .#... ..... ..... ..... ..... ..... ....."},
    {'(',  "...#. ..#.. .#... .#... .#... .#... .#... ..#.. ...#. ....."},
    {')',  ".#... ..#.. ...#. ...#. ...#. ...#. ...#. ..#.. .#... ....."},
    {'*',  "..... ..... ..#.. #.#.# .###. #.#.# ..#.. ..... ..... ....."},
    {'+',  "..... ..... ..#.. ..#.. ##### ..#.. ..#.. ..... ..... ....."},
    {',',  "..... ..... ..... ..... ..... ..... .##.. .##.. ..#.. .#..."},
    {'-',  "..... ..... ..... ..... ##### ..... ..... ..... ..... ....."},
    {'.',  "..... ..... ..... ..... ..... ..... .##.. .##.. ..... ....."},
    {'/',  "..... ....# ....# ...#. ..#.. .#... #.... #.... ..... ....."},
    {'0',  "..... .###. #...# #..## #.#.# ##..# #...# .###. ..... ....."},
    {'1',  "..... ..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###. ..... ....."},
    {'2',  "..... .###. #...# ....# ...#. ..#.. .#... ##### ..... ....."},
    {'3',  "..... ##### ...#. ..#.. ...#. ....# #...# .###. ..... ....."},
    {'4',  "..... ...#. ..##. .#.#. #..#. ##### ...#. ...#. ..... ....."},
    {'5',  "..... ##### #.... ####. ....# ....# #...# .###. ..... ....."},
    {'6',  "..... ..##. .#... #.... ####. #...# #...# .###. ..... ....."},
    {'7',  "..... ##### ....# ...#. ..#.. .#... .#... .#... ..... ....."},
    {'8',  "..... .###. #...# #...# .###. #...# #...# .###. ..... ....."},
    {'9',  "..... .###. #...# #...# .#### ....# ...#. .##.. ..... ....."},
    {':',  "..... ..... ..... .##.. .##.. ..... .##.. .##.. ..... ....."},
    {';',  "..... ..... ..... .##.. .##.. ..... .##.. .##.. ..#.. .#..."},
    {'<',  "..... ...#. ..#.. .#... #.... .#... ..#.. ...#. ..... ....."},
    {'=',  "..... ..... ..... ##### ..... ##### ..... ..... ..... ....."},
    {'>',  "..... .#... ..#.. ...#. ....# ...#. ..#.. .#... ..... ....."},
    {'?',  "..... .###. #...# ....# ...#. ..#.. ..... ..#.. ..... ....."},
    {'@',  "..... .###. #...# #.### #.#.# #.### #.... .###. ..... ....."},
    {'A',  "..... .###. #...# #...# ##### #...# #...# #...# ..... ....."},
    {'B',  "..... ####. #...# #...# ####. #...# #...# ####. ..... ....."},
    {'C',  "..... .###. #...# #.... #.... #.... #...# .###. ..... ....."},
    {'D',  "..... ###.. #..#. #...# #...# #...# #..#. ###.. ..... ....."},
    {'E',  "..... ##### #.... #.... ####. #.... #.... ##### ..... ....."},
    {'F',  "..... ##### #.... #.... ####. #.... #.... #.... ..... ....."},
    {'G',  "..... .###. #...# #.... #.### #...# #...# .#### ..... ....."},
    {'H',  "..... #...# #...# #...# ##### #...# #...# #...# ..... ....."},
    {'I',  "..... .###. ..#.. ..#.. ..#.. ..#.. ..#.. .###. ..... ....."},
    {'J',  "..... ..### ...#. ...#. ...#. ...#. #..#. .##.. ..... ....."},
    {'K',  "..... #...# #..#. #.#.. ##... #.#.. #..#. #...# ..... ....."},
    {'L',  "..... #.... #.... #.... #.... #.... #.... ##### ..... ....."},
    {'M',  "..... #...# ##.## #.#.# #.#.# #...# #...# #...# ..... ....."},
    {'N',  "..... #...# #...# ##..# #.#.# #..## #...# #...# ..... ....."},
    {'O',  "..... .###. #...# #...# #...# #...# #...# .###. ..... ....."},
    {'P',  "..... ####. #...# #...# ####. #.... #.... #.... ..... ....."},
    {'Q',  "..... .###. #...# #...# #...# #.#.# #..#. .##.# ..... ....."},
    {'R',  "..... ####. #...# #...# ####. #.#.. #..#. #...# ..... ....."},
    {'S',  "..... .#### #.... #.... .###. ....# ....# ####. ..... ....."},
    {'T',  "..... ##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..... ....."},
    {'U',  "..... #...# #...# #...# #...# #...# #...# .###. ..... ....."},
    {'V',  "..... #...# #...# #...# #...# #...# .#.#. ..#.. ..... ....."},
    {'W',  "..... #...# #...# #...# #.#.# #.#.# #.#.# .#.#. ..... ....."},
    {'X',  "..... #...# #...# .#.#. ..#.. .#.#. #...# #...# ..... ....."},
    {'Y',  "..... #...# #...# .#.#. ..#.. ..#.. ..#.. ..#.. ..... ....."},
    {'Z',  "..... ##### ....# ...#. ..#.. .#... #.... ##### ..... ....."},
    {'[',  ".###. .#... .#... .#... .#... .#... .#... .#... .###. ....."},
    {'\\', "..... #.... #.... .#... ..#.. ...#. ....# ....# ..... ....."},
    {']',  ".###. ...#. ...#. ...#. ...#. ...#. ...#. ...#. .###. ....."},
    {'^',  "..... ..#.. .#.#. #...# ..... ..... ..... ..... ..... ....."},
    {'_',  "..... ..... ..... ..... ..... ..... ..... ..... ##### ....."},
    {'`',  "..... .#... ..#.. ..... ..... ..... ..... ..... ..... ....."},
    {'a',  "..... ..... ..... .###. ....# .#### #...# .#### ..... ....."},
    {'b',  "..... #.... #.... ####. #...# #...# #...# ####. ..... ....."},
    {'c',  "..... ..... ..... .#### #.... #.... #.... .#### ..... ....."},
    {'d',  "..... ....# ....# .#### #...# #...# #...# .#### ..... ....."},
    {'e',  "..... ..... ..... .###. #...# ##### #.... .###. ..... ....."},
    {'f',  "..... ..##. .#..# .#... ###.. .#... .#... .#... ..... ....."},
    {'g',  "..... ..... ..... .#### #...# #...# #...# .#### ....# .###."},
    {'h',  "..... #.... #.... #.##. ##..# #...# #...# #...# ..... ....."},
    {'i',  "..... ..#.. ..... .##.. ..#.. ..#.. ..#.. .###. ..... ....."},
    {'j',  "..... ...#. ..... ..##. ...#. ...#. ...#. ...#. #..#. .##.."},
    {'k',  "..... #.... #.... #..#. #.#.. ##... #.#.. #..#. ..... ....."},
    {'l',  "..... .##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###. ..... ....."},
    {'m',  "..... ..... ..... ##.#. #.#.# #.#.# #.#.# #.#.# ..... ....."},
    {'n',  "..... ..... ..... #.##. ##..# #...# #...# #...# ..... ....."},
    {'o',  "..... ..... ..... .###. #...# #...# #...# .###. ..... ....."},
    {'p',  "..... ..... ..... ####. #...# #...# #...# ####. #.... #...."},
    {'q',  "..... ..... ..... .#### #...# #...# #...# .#### ....# ....#"},
    {'r',  "..... ..... ..... #.##. ##..# #.... #.... #.... ..... ....."},
    {'s',  "..... ..... ..... .#### #.... .###. ....# ####. ..... ....."},
    {'t',  "..... .#... .#... ####. .#... .#... .#..# ..##. ..... ....."},
    {'u',  "..... ..... ..... #...# #...# #...# #..## .##.# ..... ....."},
    {'v',  "..... ..... ..... #...# #...# #...# .#.#. ..#.. ..... ....."},
    {'w',  "..... ..... ..... #...# #...# #.#.# #.#.# .#.#. ..... ....."},
    {'x',  "..... ..... ..... #...# .#.#. ..#.. .#.#. #...# ..... ....."},
    {'y',  "..... ..... ..... #...# #...# #...# #...# .#### ....# .###."},
    {'z',  "..... ..... ..... ##### ...#. ..#.. .#... ##### ..... ....."},
    {'{',  "...## ..#.. ..#.. ..#.. .#... ..#.. ..#.. ..#.. ...## ....."},
    {'|',  "..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ....."},
    {'}',  "##... ..#.. ..#.. ..#.. ...#. ..#.. ..#.. ..#.. ##... ....."},
    {'~',  "..... ..... ..... .#... #.#.# ...#. ..... ..... ..... ....."},
    {'\0', "..... ##### #...# #...# #...# #...# #...# ##### ..... ....."}, // unknown: a hollow box
};
// clang-format on

using Glyphs = std::array<std::array<uint8_t, font_cell_h>, font_glyph_count>;

// Parses the art at compile time; a malformed row or a character out of order fails the build.
consteval Glyphs parse_glyphs() {
    Glyphs g{};
    for (int i = 0; i < font_glyph_count; ++i) {
        const GlyphArt& art = glyph_art[i];
        if (i < font_box_glyph && art.c != char(font_first_char + i)) throw "glyph table out of order";
        const char* p = art.rows;
        for (int r = 1; r <= 10; ++r) {
            uint8_t bits = 0;
            for (int c = 0; c < 5; ++c, ++p) {
                if (*p == '#')
                    bits = uint8_t(bits | (1u << c));
                else if (*p != '.')
                    throw "glyph row must be 5 of '#' or '.'";
            }
            if (r < 10 && *p++ != ' ') throw "glyph rows must be separated by one space";
            g[size_t(i)][size_t(r)] = bits;
        }
        if (*p != '\0') throw "glyph art has more than 10 rows";
    }
    return g;
}

constexpr Glyphs glyphs = parse_glyphs();

int clamp_scale(int scale) {
    return std::clamp(scale, 1, 255);
}

// The box [x0, x1) x [y0, y1) (corners in any order) clipped to the image, in 64-bit so that no
// coordinate sum overflows. Empty when nothing is visible.
struct Box {
    int64_t x0, y0, x1, y1;
    bool empty() const { return x0 >= x1 || y0 >= y1; }
};

Box normalized(int64_t x0, int64_t y0, int64_t x1, int64_t y1) {
    return {std::min(x0, x1), std::min(y0, y1), std::max(x0, x1), std::max(y0, y1)};
}

Box clipped(const PixelView& image, Box b) {
    return {std::max<int64_t>(b.x0, 0), std::max<int64_t>(b.y0, 0), std::min<int64_t>(b.x1, image.width),
            std::min<int64_t>(b.y1, image.height)};
}

bool valid(const PixelView& image) {
    return image.pixels && image.width > 0 && image.height > 0 &&
           (image.channels == 3 || image.channels == 4) && image.stride_bytes >= image.width * image.channels;
}

uint8_t* pixel_at(const PixelView& image, int64_t x, int64_t y) {
    return image.pixels + y * image.stride_bytes + x * image.channels;
}

void fill_box(const PixelView& image, Box b, Rgba color) {
    b = clipped(image, b);
    if (b.empty() || color.a == 0) return;
    for (int64_t y = b.y0; y < b.y1; ++y) {
        uint8_t* p = pixel_at(image, b.x0, y);
        for (int64_t x = b.x0; x < b.x1; ++x, p += image.channels) blend_pixel(p, image.channels, color);
    }
}

} // namespace

uint32_t font_row(int glyph, int row) {
    if (glyph < 0 || glyph >= font_glyph_count || row < 0 || row >= font_cell_h) return 0;
    return glyphs[size_t(glyph)][size_t(row)];
}

int font_glyph(char c) {
    const int u = static_cast<unsigned char>(c);
    return u >= font_first_char && u <= font_last_char ? u - font_first_char : font_box_glyph;
}

TextSize text_size(std::string_view text, int scale) {
    if (text.empty()) return {};
    scale = clamp_scale(scale);
    size_t longest = 0, line = 0, lines = 1;
    for (char c : text) {
        if (c == '\n') {
            ++lines;
            line = 0;
        } else {
            longest = std::max(longest, ++line);
        }
    }
    return {int(longest) * font_cell_w * scale, int(lines) * font_cell_h * scale};
}

void blend_pixel(uint8_t* pixel, int channels, Rgba color) {
    const uint32_t a = color.a;
    if (a == 0) return;
    const uint8_t src[4] = {color.r, color.g, color.b, 255};
    for (int c = 0; c < channels; ++c) {
        // Alpha composes as a + dst_a (1 - a), which is the colour formula with a source of 255.
        pixel[c] = uint8_t((src[c] * a + pixel[c] * (255 - a) + 127) / 255);
    }
}

void draw_text(const PixelView& image, int x, int y, std::string_view text, Rgba color, int scale,
               std::optional<Rgba> background) {
    if (!valid(image) || text.empty()) return;
    scale = clamp_scale(scale);
    if (background) {
        const TextSize size = text_size(text, scale);
        fill_box(image, {x, y, int64_t(x) + size.w, int64_t(y) + size.h}, *background);
    }
    if (color.a == 0) return;
    int64_t line_y = y, cx = x;
    for (char c : text) {
        if (c == '\n') {
            line_y += int64_t(font_cell_h) * scale;
            cx = x;
            continue;
        }
        const auto& rows = glyphs[size_t(font_glyph(c))];
        for (int r = 0; r < font_cell_h; ++r) {
            for (int col = 0; col < font_cell_w; ++col) {
                if (!(rows[size_t(r)] >> col & 1u)) continue;
                const int64_t px = cx + int64_t(col) * scale, py = line_y + int64_t(r) * scale;
                fill_box(image, {px, py, px + scale, py + scale}, color);
            }
        }
        cx += int64_t(font_cell_w) * scale;
    }
}

void draw_rect(const PixelView& image, int x0, int y0, int x1, int y1, Rgba color, int thickness) {
    if (!valid(image) || thickness < 1 || color.a == 0) return;
    const Box outer = normalized(x0, y0, x1, y1);
    const Box inner{outer.x0 + thickness, outer.y0 + thickness, outer.x1 - thickness, outer.y1 - thickness};
    const Box b = clipped(image, outer);
    if (b.empty()) return;
    for (int64_t y = b.y0; y < b.y1; ++y) {
        const bool inner_row = y >= inner.y0 && y < inner.y1;
        for (int64_t x = b.x0; x < b.x1; ++x) {
            if (inner_row && x >= inner.x0 && x < inner.x1) {
                x = inner.x1 - 1; // skip the hollow middle
                continue;
            }
            blend_pixel(pixel_at(image, x, y), image.channels, color);
        }
    }
}

void fill_rect(const PixelView& image, int x0, int y0, int x1, int y1, Rgba color) {
    if (!valid(image)) return;
    fill_box(image, normalized(x0, y0, x1, y1), color);
}

} // namespace vkml::passes
