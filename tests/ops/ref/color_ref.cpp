#include "color_ref.hpp"

#include <algorithm>
#include <cmath>

namespace vkml::test::ref_color {

using ops::PixelFormat;

Layout layout_of(PixelFormat f) {
    Layout l;
    switch (f) {
    case PixelFormat::Yuv420p:
        l = {3, 1, false, 2, 2};
        break;
    case PixelFormat::Yuv422p:
        l = {3, 1, false, 2, 1};
        break;
    case PixelFormat::Yuv444p:
        l = {3, 1, false, 1, 1};
        break;
    case PixelFormat::Nv12:
        l = {2, 1, false, 2, 2};
        break;
    case PixelFormat::Yuv420p10:
        l = {3, 2, false, 2, 2};
        break;
    case PixelFormat::Yuv422p10:
        l = {3, 2, false, 2, 1};
        break;
    case PixelFormat::Yuv444p10:
        l = {3, 2, false, 1, 1};
        break;
    case PixelFormat::P010:
        l = {2, 2, true, 2, 2};
        break;
    case PixelFormat::Rgb24:
        l = {1, 1, false, 1, 1, 3, 0, 1, 2, true};
        break;
    case PixelFormat::Rgba:
        l = {1, 1, false, 1, 1, 4, 0, 1, 2, true};
        break;
    case PixelFormat::Bgra:
        l = {1, 1, false, 1, 1, 4, 2, 1, 0, true};
        break;
    case PixelFormat::Gbrp: // FFmpeg's gbrp: data[0] = G, data[1] = B, data[2] = R
        l = {3, 1, false, 1, 1, 0, 2, 0, 1, true};
        break;
    case PixelFormat::Gbrp16:
        l = {3, 2, false, 1, 1, 0, 2, 0, 1, true};
        break;
    }
    return l;
}

int bits_of(const ops::FrameDesc& frame) {
    if (layout_of(frame.format).bytes == 1) return 8;
    return frame.bits ? int(frame.bits) : 10;
}

std::array<int, 2> plane_size(const ops::FrameDesc& frame, int p) {
    const Layout l = layout_of(frame.format);
    const int w = int(frame.width), h = int(frame.height);
    if (l.planes == 1) return {w * l.pixel_bytes, h};
    if (p == 0) return {w, h};
    const int cw = (w + l.sub_x - 1) / l.sub_x, ch = (h + l.sub_y - 1) / l.sub_y;
    return {l.planes == 2 ? 2 * cw : cw, ch};
}

static size_t address(const ops::FrameDesc& frame, int p, int col, int row) {
    const Layout l = layout_of(frame.format);
    return size_t(frame.planes[size_t(p)].offset + frame.planes[size_t(p)].stride * uint64_t(row) +
                  uint64_t(col) * uint64_t(l.bytes));
}

int read_code(const ops::FrameDesc& frame, const std::vector<uint8_t>& bytes, int p, int col, int row) {
    const Layout l = layout_of(frame.format);
    const size_t a = address(frame, p, col, row);
    if (l.bytes == 1) return bytes.at(a);
    const int v = bytes.at(a) | (bytes.at(a + 1) << 8); // little endian
    const int bits = bits_of(frame);
    return l.msb ? v >> (16 - bits) : v & ((1 << bits) - 1);
}

void write_code(const ops::FrameDesc& frame, std::vector<uint8_t>& bytes, int p, int col, int row, int code) {
    const Layout l = layout_of(frame.format);
    const size_t a = address(frame, p, col, row);
    if (l.bytes == 1) {
        bytes.at(a) = uint8_t(code);
        return;
    }
    const int v = l.msb ? code << (16 - bits_of(frame)) : code;
    bytes.at(a) = uint8_t(v & 0xff);
    bytes.at(a + 1) = uint8_t(v >> 8);
}

namespace {

using Mat = std::array<std::array<double, 3>, 3>;

// Y'CbCr from R'G'B' as the standards write it: Y = Kr R + Kg G + Kb B, Cb = (B - Y) / (2 (1 - Kb)),
// Cr = (R - Y) / (2 (1 - Kr)).
Mat forward(ops::ColorMatrix m) {
    double kr = 0, kb = 0;
    switch (m) {
    case ops::ColorMatrix::Bt601:
        kr = 0.299, kb = 0.114;
        break; // BT.601-7 table 2 item 2.2
    case ops::ColorMatrix::Bt709:
        kr = 0.2126, kb = 0.0722;
        break; // BT.709-6 item 3.2
    case ops::ColorMatrix::Bt2020:
        kr = 0.2627, kb = 0.0593;
        break; // BT.2020-2 table 4
    }
    const double kg = 1 - kr - kb;
    Mat y{};
    y[0] = {kr, kg, kb};
    for (int c = 0; c < 3; ++c) {
        const double unit_b = c == 2 ? 1 : 0, unit_r = c == 0 ? 1 : 0;
        y[1][size_t(c)] = (unit_b - y[0][size_t(c)]) / (2 * (1 - kb));
        y[2][size_t(c)] = (unit_r - y[0][size_t(c)]) / (2 * (1 - kr));
    }
    return y;
}

// Gauss-Jordan with partial pivoting.
Mat inverse(Mat a) {
    Mat inv{};
    for (int i = 0; i < 3; ++i) inv[size_t(i)][size_t(i)] = 1;
    for (size_t col = 0; col < 3; ++col) {
        size_t piv = col;
        for (size_t r = col + 1; r < 3; ++r)
            if (std::fabs(a[r][col]) > std::fabs(a[piv][col])) piv = r;
        std::swap(a[col], a[piv]);
        std::swap(inv[col], inv[piv]);
        const double d = a[col][col];
        for (size_t c = 0; c < 3; ++c) a[col][c] /= d, inv[col][c] /= d;
        for (size_t r = 0; r < 3; ++r) {
            if (r == col) continue;
            const double f = a[r][col];
            for (size_t c = 0; c < 3; ++c) a[r][c] -= f * a[col][c], inv[r][c] -= f * inv[col][c];
        }
    }
    return inv;
}

// Quantization ranges: BT.601/709/2020 "digital representation" (limited) and the JPEG/full
// convention FFmpeg calls "pc": Y = (2^n - 1) Y', C = (2^n - 1) C' + 2^(n-1).
struct Quant {
    double y_lo, y_span, c_mid, c_span;
};
Quant quant(ops::ColorRange r, int bits) {
    const double k = std::pow(2.0, bits - 8);
    if (r == ops::ColorRange::Limited) return {16 * k, 219 * k, 128 * k, 224 * k};
    const double max = std::pow(2.0, bits) - 1;
    return {0, max, std::pow(2.0, bits - 1), max};
}

double clamp01(double v) {
    return std::min(1.0, std::max(0.0, v));
}

} // namespace

std::vector<double> yuv_to_rgb(const ops::FrameDesc& frame, const std::vector<uint8_t>& bytes,
                               ops::ChromaFilter filter, ops::ChromaSiting siting) {
    const Layout l = layout_of(frame.format);
    const int w = int(frame.width), h = int(frame.height);
    std::vector<double> out(size_t(3 * w * h));
    auto put = [&](int x, int y, double r, double g, double b) {
        const size_t i = size_t(y * w + x), plane = size_t(w * h);
        out[i] = clamp01(r), out[plane + i] = clamp01(g), out[2 * plane + i] = clamp01(b);
    };
    if (l.planes == 1) {
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                auto ch = [&](int k) { return read_code(frame, bytes, 0, x * l.pixel_bytes + k, y) / 255.0; };
                put(x, y, ch(l.r), ch(l.g), ch(l.b));
            }
        return out;
    }
    if (l.rgb) { // planar RGB: each plane one channel, full range
        const double max = std::pow(2.0, bits_of(frame)) - 1;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                put(x, y, read_code(frame, bytes, l.r, x, y) / max, read_code(frame, bytes, l.g, x, y) / max,
                    read_code(frame, bytes, l.b, x, y) / max);
        return out;
    }
    const Quant q = quant(frame.range, bits_of(frame));
    const Mat m = inverse(forward(frame.matrix));
    const auto csize = plane_size(frame, 1);
    const int cw = l.planes == 2 ? csize[0] / 2 : csize[0], ch = csize[1];
    auto chroma = [&](int cx, int cy, int comp) {
        cx = std::clamp(cx, 0, cw - 1), cy = std::clamp(cy, 0, ch - 1);
        return l.planes == 2 ? read_code(frame, bytes, 1, 2 * cx + comp, cy)
                             : read_code(frame, bytes, 1 + comp, cx, cy);
    };
    // Luma position of chroma sample 0 along each subsampled axis.
    const double site_x = siting == ops::ChromaSiting::Center ? 0.5 : 0.0;
    const double site_y = siting == ops::ChromaSiting::TopLeft ? 0.0 : 0.5;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            double c[2];
            for (int comp = 0; comp < 2; ++comp) {
                if (filter == ops::ChromaFilter::Nearest || (l.sub_x == 1 && l.sub_y == 1)) {
                    c[comp] = chroma(x / l.sub_x, y / l.sub_y, comp);
                    continue;
                }
                const double fx = l.sub_x == 2 ? (x - site_x) / 2 : x,
                             fy = l.sub_y == 2 ? (y - site_y) / 2 : y;
                const int x0 = int(std::floor(fx)), y0 = int(std::floor(fy));
                const double ax = fx - x0, ay = fy - y0;
                c[comp] = (1 - ay) * ((1 - ax) * chroma(x0, y0, comp) + ax * chroma(x0 + 1, y0, comp)) +
                          ay * ((1 - ax) * chroma(x0, y0 + 1, comp) + ax * chroma(x0 + 1, y0 + 1, comp));
            }
            const double yn = (read_code(frame, bytes, 0, x, y) - q.y_lo) / q.y_span;
            const double cb = (c[0] - q.c_mid) / q.c_span, cr = (c[1] - q.c_mid) / q.c_span;
            double rgb[3];
            for (size_t k = 0; k < 3; ++k) rgb[k] = m[k][0] * yn + m[k][1] * cb + m[k][2] * cr;
            put(x, y, rgb[0], rgb[1], rgb[2]);
        }
    return out;
}

void rgb_to_yuv(const ops::FrameDesc& frame, const std::vector<double>& rgb, std::vector<uint8_t>& bytes) {
    const Layout l = layout_of(frame.format);
    const int w = int(frame.width), h = int(frame.height), bits = bits_of(frame);
    const int max_code = (1 << bits) - 1;
    auto px = [&](int x, int y, int c) { return clamp01(rgb[size_t(c * w * h + y * w + x)]); };
    auto code = [&](double v) { return int(std::clamp(std::floor(v + 0.5), 0.0, double(max_code))); };
    // Zero the row padding up to the next multiple of 4 bytes.
    for (int p = 0; p < l.planes; ++p) {
        const auto s = plane_size(frame, p);
        const int row_bytes = s[0] * l.bytes, padded = (row_bytes + 3) / 4 * 4;
        for (int y = 0; y < s[1]; ++y)
            for (int b = row_bytes; b < padded; ++b)
                bytes.at(
                    size_t(frame.planes[size_t(p)].offset + frame.planes[size_t(p)].stride * uint64_t(y)) +
                    size_t(b)) = 0;
    }
    if (l.planes == 1) {
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                write_code(frame, bytes, 0, x * l.pixel_bytes + l.r, y, code(px(x, y, 0) * 255));
                write_code(frame, bytes, 0, x * l.pixel_bytes + l.g, y, code(px(x, y, 1) * 255));
                write_code(frame, bytes, 0, x * l.pixel_bytes + l.b, y, code(px(x, y, 2) * 255));
                if (l.pixel_bytes == 4) write_code(frame, bytes, 0, x * 4 + 3, y, 255);
            }
        return;
    }
    if (l.rgb) {
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                write_code(frame, bytes, l.r, x, y, code(px(x, y, 0) * max_code));
                write_code(frame, bytes, l.g, x, y, code(px(x, y, 1) * max_code));
                write_code(frame, bytes, l.b, x, y, code(px(x, y, 2) * max_code));
            }
        return;
    }
    const Quant q = quant(frame.range, bits);
    const Mat m = forward(frame.matrix);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double yn = m[0][0] * px(x, y, 0) + m[0][1] * px(x, y, 1) + m[0][2] * px(x, y, 2);
            write_code(frame, bytes, 0, x, y, code(yn * q.y_span + q.y_lo));
        }
    const auto csize = plane_size(frame, 1);
    const int cw = l.planes == 2 ? csize[0] / 2 : csize[0], ch = csize[1];
    for (int cy = 0; cy < ch; ++cy)
        for (int cx = 0; cx < cw; ++cx) {
            // Convert every pixel of the block, then average the chroma values.
            double sum[2] = {0, 0};
            int n = 0;
            for (int y = cy * l.sub_y; y < std::min(h, (cy + 1) * l.sub_y); ++y)
                for (int x = cx * l.sub_x; x < std::min(w, (cx + 1) * l.sub_x); ++x, ++n)
                    for (int k = 0; k < 2; ++k)
                        sum[k] += m[size_t(k + 1)][0] * px(x, y, 0) + m[size_t(k + 1)][1] * px(x, y, 1) +
                                  m[size_t(k + 1)][2] * px(x, y, 2);
            for (int k = 0; k < 2; ++k) {
                const int c = code(sum[k] / n * q.c_span + q.c_mid);
                if (l.planes == 2)
                    write_code(frame, bytes, 1, 2 * cx + k, cy, c);
                else
                    write_code(frame, bytes, 1 + k, cx, cy, c);
            }
        }
}

} // namespace vkml::test::ref_color
