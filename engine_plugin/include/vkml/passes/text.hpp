#pragma once
// vkml's own text and box drawing on the CPU: a built-in bitmap font (printable ASCII 32..126,
// drawn for vkml, no font file), text, rectangle outlines and alpha-blended fills on 8-bit RGB or
// RGBA pixels. Used for detection boxes on images, and as the reference the GPU Overlay
// (overlay.hpp) matches pixel for pixel.
//
//     std::vector<uint8_t> rgb(w * h * 3);
//     passes::PixelView view{rgb.data(), w, h, w * 3, 3};
//     passes::draw_rect(view, box.x0, box.y0, box.x1, box.y1, {255, 64, 0, 255}, 2);
//     passes::draw_text(view, box.x0, box.y0 - passes::text_size("dog 0.91", 2).h, "dog 0.91",
//                       {255, 255, 255, 255}, 2, passes::Rgba{255, 64, 0, 200});
//
// Conventions (shared with the GPU overlay):
// - Coordinates are pixels, x to the right, y down; boxes are half-open [x0, x1) x [y0, y1) and
//   may be given in either corner order. Anything outside the image is clipped: nothing is ever
//   written out of bounds, negative and huge coordinates are fine.
// - Blending is "over" in 8-bit sRGB-encoded values (no linearisation, as UI overlays do):
//   c = (src * a + dst * (255 - a) + 127) / 255 per colour channel, and for a 4-channel image
//   alpha = a + dst_a * (255 - a) / 255 (same rounding). a = 255 replaces, a = 0 leaves the pixel.
// - Each pixel is blended at most once per call (a rectangle outline's corners are not blended
//   twice), so translucent colours look even.
#include <cstdint>
#include <optional>
#include <string_view>

namespace vkml::passes {

struct Rgba {
    uint8_t r = 255, g = 255, b = 255, a = 255;
    bool operator==(const Rgba&) const = default;
};

// A view of 8-bit pixels; `channels` is 3 (RGB) or 4 (RGBA). Rows are `stride_bytes` apart.
struct PixelView {
    uint8_t* pixels = nullptr;
    int width = 0, height = 0, stride_bytes = 0, channels = 4;
};

struct TextSize {
    int w = 0, h = 0;
};

// The font: every character is a fixed cell of font_cell_w x font_cell_h pixels (at scale 1);
// the glyph itself leaves the last column and the first and last rows blank, so text needs no
// extra spacing and a background box has a margin. Capitals are 7 pixels tall, descenders 2.
inline constexpr int font_cell_w = 6;
inline constexpr int font_cell_h = 12;
inline constexpr int font_first_char = 32;
inline constexpr int font_last_char = 126;
// Glyph index font_box_glyph is drawn for any byte outside 32..126 except '\n' (a hollow box).
inline constexpr int font_box_glyph = font_last_char - font_first_char + 1;
inline constexpr int font_glyph_count = font_box_glyph + 1;

// Row `row` (0 = top) of glyph `glyph` (character - 32, or font_box_glyph): bit c (0 = leftmost
// pixel) set where the glyph has ink. The GPU overlay uploads this same table.
uint32_t font_row(int glyph, int row);
// The glyph index drawn for byte `c` (font_box_glyph for anything unprintable).
int font_glyph(char c);

// Size of `text` in pixels: the longest line's characters x cell width, lines x cell height
// (lines split at '\n'; an empty string is {0, 0}). Scales are clamped to 1..255 everywhere.
TextSize text_size(std::string_view text, int scale = 1);

// Draws `text` with its top-left corner at (x, y): each glyph pixel becomes a scale x scale block
// of `color` (blended by color.a). '\n' starts a new line at x. With `background`, the whole
// text_size() box is filled (blended) first.
void draw_text(const PixelView& image, int x, int y, std::string_view text, Rgba color, int scale = 1,
               std::optional<Rgba> background = {});

// Outline of the box [x0, x1) x [y0, y1), `thickness` pixels wide, drawn inside the box (a box
// thinner than 2 x thickness is filled). thickness < 1 draws nothing.
void draw_rect(const PixelView& image, int x0, int y0, int x1, int y1, Rgba color, int thickness = 2);

// Fills the box [x0, x1) x [y0, y1), blended by color.a.
void fill_rect(const PixelView& image, int x0, int y0, int x1, int y1, Rgba color);

// One pixel blended with the convention above (exposed for tests and for callers drawing their
// own shapes). `pixel` points at `channels` (3 or 4) bytes.
void blend_pixel(uint8_t* pixel, int channels, Rgba color);

} // namespace vkml::passes
