// CPU text and box drawing (vkml/passes/text.hpp): the font table's shape and a few glyphs against
// art written here, ink counts, every drawing call against the per-pixel double-precision
// reference of reference.hpp, clipping at all four edges into a guard-banded buffer, and the
// blending rounding checked exhaustively.
#include <gtest/gtest.h>

#include <bit>
#include <climits>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "reference.hpp"
#include "vkml/passes/text.hpp"

namespace vkml::passes::test {
namespace {

std::vector<uint8_t> random_pixels(size_t bytes, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> v(bytes);
    for (auto& b : v) b = uint8_t(rng() & 0xff);
    return v;
}

// Art for a few glyphs, drawn here independently of the library's table (12 rows of 6 columns).
struct Art {
    char c;
    const char* rows[12];
};
const Art hand_checked[] = {
    {'H',
     {"......", "......", "#...#.", "#...#.", "#...#.", "#####.", "#...#.", "#...#.", "#...#.", "......",
      "......", "......"}},
    {'T',
     {"......", "......", "#####.", "..#...", "..#...", "..#...", "..#...", "..#...", "..#...", "......",
      "......", "......"}},
    {'g',
     {"......", "......", "......", "......", ".####.", "#...#.", "#...#.", "#...#.", ".####.", "....#.",
      ".###..", "......"}},
    {'1',
     {"......", "......", "..#...", ".##...", "..#...", "..#...", "..#...", "..#...", ".###..", "......",
      "......", "......"}},
    {'.',
     {"......", "......", "......", "......", "......", "......", "......", ".##...", ".##...", "......",
      "......", "......"}},
    {'\x7f',
     {"......", "......", "#####.", "#...#.", "#...#.", "#...#.", "#...#.", "#...#.", "#####.", "......",
      "......", "......"}},
};

TEST(TextCpu, FontTableShape) {
    std::set<std::vector<uint32_t>> distinct;
    for (int g = 0; g < font_glyph_count; ++g) {
        std::vector<uint32_t> rows;
        int ink = 0;
        for (int r = 0; r < font_cell_h; ++r) {
            const uint32_t bits = font_row(g, r);
            EXPECT_EQ(bits & ~0x1fu, 0u) << "glyph " << g << " row " << r << ": the last column stays blank";
            if (r == 0 || r == font_cell_h - 1) {
                EXPECT_EQ(bits, 0u) << "glyph " << g << ": first/last row blank";
            }
            ink += std::popcount(bits);
            rows.push_back(bits);
        }
        if (g == 0) {
            EXPECT_EQ(ink, 0) << "space";
        } else {
            EXPECT_GE(ink, 2) << "glyph " << g << " ('" << char(g + font_first_char) << "') has ink";
        }
        distinct.insert(rows);
    }
    EXPECT_EQ(distinct.size(), size_t(font_glyph_count)) << "every glyph differs from every other";
    EXPECT_EQ(font_row(-1, 3), 0u);
    EXPECT_EQ(font_row(font_glyph_count, 3), 0u);
    EXPECT_EQ(font_row(5, font_cell_h), 0u);
}

TEST(TextCpu, GlyphsMatchArtWrittenInTheTest) {
    for (const Art& art : hand_checked) {
        const int g = font_glyph(art.c);
        for (int r = 0; r < font_cell_h; ++r) {
            uint32_t want = 0;
            for (int c = 0; c < font_cell_w; ++c)
                if (art.rows[r][c] == '#') want |= 1u << c;
            EXPECT_EQ(font_row(g, r), want) << "'" << art.c << "' row " << r;
        }
    }
}

TEST(TextCpu, GlyphIndex) {
    EXPECT_EQ(font_glyph(' '), 0);
    EXPECT_EQ(font_glyph('A'), 'A' - 32);
    EXPECT_EQ(font_glyph('~'), 94);
    for (char c : {'\0', '\t', '\x1f', '\x7f', '\x80', '\xff'})
        EXPECT_EQ(font_glyph(c), font_box_glyph) << int(c);
}

TEST(TextCpu, TextSize) {
    EXPECT_EQ(text_size("", 3).w, 0);
    EXPECT_EQ(text_size("", 3).h, 0);
    EXPECT_EQ(text_size("abc", 1).w, 3 * font_cell_w);
    EXPECT_EQ(text_size("abc", 1).h, font_cell_h);
    const TextSize s = text_size("ab\nabcd\n", 2);
    EXPECT_EQ(s.w, 4 * font_cell_w * 2);
    EXPECT_EQ(s.h, 3 * font_cell_h * 2) << "a trailing newline starts an (empty) third line";
    EXPECT_EQ(text_size("x", 0).w, font_cell_w) << "scale < 1 is 1";
    EXPECT_EQ(text_size("x", 1000).w, font_cell_w * 255) << "scale is clamped to 255";
}

// Every printable character, scales 1..3: the ink drawn is the table's ink times scale squared,
// placed where the table says, and nothing else changes.
TEST(TextCpu, InkMatchesTable) {
    for (int scale = 1; scale <= 3; ++scale) {
        for (int c = font_first_char; c <= font_last_char + 1; ++c) {
            const int w = 20, h = 40, ox = 3, oy = 2;
            std::vector<uint8_t> img(size_t(w) * h * 3, 0);
            const std::string s(1, char(c));
            draw_text({img.data(), w, h, w * 3, 3}, ox, oy, s, {255, 255, 255, 255}, scale);
            int ink = 0, want = 0;
            for (int r = 0; r < font_cell_h; ++r) want += std::popcount(font_row(font_glyph(char(c)), r));
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < w; ++x) {
                    const uint8_t* p = &img[(size_t(y) * w + x) * 3];
                    const bool lit = p[0] == 255 && p[1] == 255 && p[2] == 255;
                    EXPECT_TRUE(lit || (p[0] == 0 && p[1] == 0 && p[2] == 0));
                    ink += lit;
                    const int dx = x - ox, dy = y - oy;
                    const bool expect = dx >= 0 && dy >= 0 && dx < font_cell_w * scale &&
                                        dy < font_cell_h * scale &&
                                        (font_row(font_glyph(char(c)), dy / scale) >> (dx / scale) & 1u);
                    ASSERT_EQ(lit, expect) << "char " << c << " scale " << scale << " at " << x << "," << y;
                }
            EXPECT_EQ(ink, want * scale * scale) << "char " << c;
        }
    }
}

// Random items (text with and without backgrounds, outlines, fills, translucent, crossing edges)
// on random RGB and RGBA images equal the double-precision per-pixel reference exactly.
TEST(TextCpu, DrawingMatchesReference) {
    for (int channels : {3, 4}) {
        for (uint32_t seed = 1; seed <= 6; ++seed) {
            const int w = 71, h = 53;
            const auto items = random_items(seed, w, h, 14);
            std::vector<uint8_t> got = random_pixels(size_t(w) * h * channels, seed * 7 + uint32_t(channels));
            std::vector<uint8_t> want = got;
            library_draw({got.data(), w, h, w * channels, channels}, items);
            reference_draw(want, w, h, channels, items);
            size_t bad = 0;
            for (size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
            EXPECT_EQ(bad, 0u) << "channels " << channels << " seed " << seed;
        }
    }
}

// Items across all four edges and far outside, drawn into an image that sits inside a larger
// buffer (guard rows above and below, guard bytes at the end of every row): the guards keep their
// pattern and the image equals the reference.
TEST(TextCpu, ClipsAtEveryEdgeWithoutWritingOutside) {
    const int w = 37, h = 29, channels = 4, pad = 13, guard_rows = 3;
    const int stride = w * channels + pad;
    std::vector<uint8_t> buffer = random_pixels(size_t(stride) * (h + 2 * guard_rows), 99);
    const std::vector<uint8_t> before = buffer;
    const PixelView view{buffer.data() + size_t(stride) * guard_rows, w, h, stride, channels};

    const Rgba red{255, 0, 0, 200}, white{255, 255, 255, 255}, bg{0, 0, 64, 128};
    std::vector<TestItem> items = {
        {.kind = Kind::Text,
         .x0 = -7,
         .y0 = -5,
         .text = "left\ntop",
         .scale = 2,
         .color = white,
         .background = bg},
        {.kind = Kind::Text,
         .x0 = w - 9,
         .y0 = h - 7,
         .text = "right\nbottom",
         .scale = 1,
         .color = red,
         .background = bg},
        {.kind = Kind::Text, .x0 = -100000, .y0 = 5, .text = "far left", .scale = 3, .color = white},
        {.kind = Kind::Text,
         .x0 = INT_MAX - 5,
         .y0 = INT_MAX - 5,
         .text = "overflow?",
         .scale = 255,
         .color = white,
         .background = bg},
        {.kind = Kind::Text, .x0 = INT_MIN, .y0 = INT_MIN, .text = "min", .scale = 255, .color = white},
        {.kind = Kind::Rect, .x0 = -3, .y0 = -4, .x1 = w + 2, .y1 = h + 5, .thickness = 5, .color = red},
        {.kind = Kind::Rect, .x0 = w + 3, .y0 = 10, .x1 = w - 4, .y1 = -20, .thickness = 2, .color = white},
        {.kind = Kind::Rect,
         .x0 = INT_MIN,
         .y0 = INT_MIN,
         .x1 = INT_MAX,
         .y1 = INT_MAX,
         .thickness = INT_MAX,
         .color = bg},
        {.kind = Kind::Rect, .x0 = INT_MIN, .y0 = 3, .x1 = 4, .y1 = INT_MAX, .thickness = 3, .color = red},
        {.kind = Kind::Fill, .x0 = w - 2, .y0 = -9, .x1 = w + 50, .y1 = h + 50, .color = red},
        {.kind = Kind::Fill,
         .x0 = INT_MAX,
         .y0 = INT_MAX,
         .x1 = INT_MIN,
         .y1 = INT_MIN,
         .color = {9, 9, 9, 30}},
        {.kind = Kind::Fill, .x0 = -20, .y0 = h - 1, .x1 = 3, .y1 = h + 1, .color = white},
    };
    library_draw(view, items);

    std::vector<uint8_t> want(size_t(w) * h * channels);
    for (int y = 0; y < h; ++y)
        std::copy_n(&before[size_t(stride) * (y + guard_rows)], w * channels,
                    &want[size_t(y) * w * channels]);
    reference_draw(want, w, h, channels, items);

    for (int y = 0; y < h + 2 * guard_rows; ++y) {
        const bool image_row = y >= guard_rows && y < guard_rows + h;
        for (int b = 0; b < stride; ++b) {
            const size_t i = size_t(y) * stride + size_t(b);
            if (image_row && b < w * channels) {
                ASSERT_EQ(buffer[i], want[size_t(y - guard_rows) * w * channels + size_t(b)])
                    << "pixel " << b / channels << "," << y - guard_rows;
            } else {
                ASSERT_EQ(buffer[i], before[i]) << "guard byte " << b << " of buffer row " << y << " written";
            }
        }
    }
}

// The integer rounding against double precision, for every source, destination and alpha.
TEST(TextCpu, BlendRoundingExhaustive) {
    size_t bad = 0;
    for (int a = 0; a < 256; ++a)
        for (int s = 0; s < 256; ++s)
            for (int d = 0; d < 256; ++d) {
                uint8_t p[4] = {uint8_t(d), uint8_t(255 - d), uint8_t(d / 2), uint8_t(d)};
                blend_pixel(p, 4, {uint8_t(s), uint8_t(255 - s), uint8_t(s), uint8_t(a)});
                bad += p[0] != blend_ref(uint8_t(d), uint8_t(s), uint8_t(a));
                bad += p[1] != blend_ref(uint8_t(255 - d), uint8_t(255 - s), uint8_t(a));
                bad += p[3] != blend_ref(uint8_t(d), 255, uint8_t(a));
            }
    EXPECT_EQ(bad, 0u);
}

// A translucent outline blends every pixel once: its corners look like its sides.
TEST(TextCpu, OutlineCornersBlendOnce) {
    const int w = 16, h = 12;
    std::vector<uint8_t> img(size_t(w) * h * 3, 100);
    draw_rect({img.data(), w, h, w * 3, 3}, 2, 1, 13, 10, {200, 0, 50, 100}, 3);
    const uint8_t side[3] = {blend_ref(100, 200, 100), blend_ref(100, 0, 100), blend_ref(100, 50, 100)};
    int outline = 0;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const uint8_t* p = &img[(size_t(y) * w + x) * 3];
            const bool in_box = x >= 2 && x < 13 && y >= 1 && y < 10;
            const bool in_hole = x >= 5 && x < 10 && y >= 4 && y < 7;
            if (in_box && !in_hole) {
                ++outline;
                EXPECT_TRUE(p[0] == side[0] && p[1] == side[1] && p[2] == side[2]) << x << "," << y;
            } else {
                EXPECT_TRUE(p[0] == 100 && p[1] == 100 && p[2] == 100) << x << "," << y;
            }
        }
    EXPECT_EQ(outline, 11 * 9 - 5 * 3);
}

TEST(TextCpu, DegenerateInputsDrawNothing) {
    std::vector<uint8_t> img(8 * 8 * 4, 7);
    const std::vector<uint8_t> before = img;
    draw_text({nullptr, 8, 8, 32, 4}, 0, 0, "x", {});
    draw_text({img.data(), 8, 8, 32, 2}, 0, 0, "x", {}); // 2 channels: not supported
    draw_text({img.data(), 8, 8, 16, 4}, 0, 0, "x", {}); // stride shorter than a row
    draw_text({img.data(), 8, 8, 32, 4}, 0, 0, "", {}, 1, Rgba{1, 2, 3, 255});
    draw_rect({img.data(), 8, 8, 32, 4}, 0, 0, 8, 8, {}, 0);
    fill_rect({img.data(), 8, 8, 32, 4}, 0, 0, 8, 8, {1, 2, 3, 0});
    fill_rect({img.data(), 8, 8, 32, 4}, 3, 0, 3, 8, {1, 2, 3, 255}); // zero width
    EXPECT_EQ(img, before);
}

} // namespace
} // namespace vkml::passes::test
