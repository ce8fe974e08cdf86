// Colour family: YuvToRgb and RgbToYuv against the double-precision references in
// tests/ops/ref/color_ref.*, on random frames (codes never 0) with padded strides and unaligned
// plane offsets, at odd sizes, for every layout x matrix x range in f32 and f16.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "op_test.hpp"
#include "ref/color_ref.hpp"
#include "vkml/ops/color.hpp"

namespace vkml::test {
namespace {

using ops::ChromaFilter;
using ops::ChromaSiting;
using ops::ColorMatrix;
using ops::ColorRange;
using ops::FrameDesc;
using ops::PixelFormat;

constexpr PixelFormat all_formats[] = {PixelFormat::Yuv420p,   PixelFormat::Yuv422p,   PixelFormat::Yuv444p,
                                       PixelFormat::Nv12,      PixelFormat::Yuv420p10, PixelFormat::Yuv422p10,
                                       PixelFormat::Yuv444p10, PixelFormat::P010,      PixelFormat::Rgb24,
                                       PixelFormat::Rgba,      PixelFormat::Bgra,      PixelFormat::Gbrp,
                                       PixelFormat::Gbrp16};
constexpr ColorMatrix all_matrices[] = {ColorMatrix::Bt601, ColorMatrix::Bt709, ColorMatrix::Bt2020};
constexpr ColorRange all_ranges[] = {ColorRange::Limited, ColorRange::Full};

// RGB formats (packed or planar): no matrix, no range.
bool rgb_format(PixelFormat f) {
    return ref_color::layout_of(f).rgb;
}

// A frame layout built here (not with ops::packed_frame): planes one after another with `gap`
// bytes between them and `pad` bytes of padding per row; `align` rounds offsets and strides
// (1 for reading, 4 for writing; 16-bit formats always even).
FrameDesc make_frame(PixelFormat format, uint32_t w, uint32_t h, uint32_t bits, uint32_t gap, uint32_t pad,
                     uint32_t align) {
    FrameDesc f;
    f.format = format;
    f.width = w;
    f.height = h;
    f.bits = bits;
    const auto l = ref_color::layout_of(format);
    align = std::max<uint32_t>(align, uint32_t(l.bytes));
    auto up = [&](uint64_t v) { return (v + align - 1) / align * align; };
    uint64_t at = up(gap);
    for (int p = 0; p < l.planes; ++p) {
        const auto s = ref_color::plane_size(f, p);
        const uint64_t stride = up(uint64_t(s[0]) * uint64_t(l.bytes) + pad);
        f.planes[size_t(p)] = {at, stride};
        at = up(at + stride * uint64_t(s[1]) + gap);
    }
    return f;
}

uint64_t buffer_bytes(const FrameDesc& f) {
    return (ops::frame_bytes(f) + 64) / 4 * 4;
}

// Random bytes everywhere, then every sample set to a random code in [1, 2^bits - 1].
std::vector<uint8_t> random_frame(const FrameDesc& f, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes(buffer_bytes(f));
    for (auto& b : bytes) b = uint8_t(rng());
    const auto l = ref_color::layout_of(f.format);
    const int max_code = (1 << ref_color::bits_of(f)) - 1;
    std::uniform_int_distribution<int> code(1, max_code);
    for (int p = 0; p < l.planes; ++p) {
        const auto s = ref_color::plane_size(f, p);
        for (int y = 0; y < s[1]; ++y)
            for (int x = 0; x < s[0]; ++x) ref_color::write_code(f, bytes, p, x, y, code(rng));
    }
    return bytes;
}

std::vector<double> run_to_rgb(gpu::Device& dev, const ops::YuvToRgb& op, const std::vector<uint8_t>& bytes,
                               gpu::DType dtype, bool through_tensor_api) {
    const FrameDesc& f = op.desc().frame;
    gpu::Tensor frame(dev, {int64_t(bytes.size())}, gpu::DType::u8, "frame");
    gpu::upload_raw(dev, frame, std::as_bytes(std::span(bytes)));
    gpu::Tensor rgb(dev, {1, 3, int64_t(f.height), int64_t(f.width)}, dtype, "rgb");
    dev.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        if (through_tensor_api) {
            // Op::record wants exactly frame_bytes(): a view of the front of the buffer.
            const gpu::Tensor in(frame.buffer(), 0, {int64_t(ops::frame_bytes(f))}, gpu::DType::u8);
            const gpu::Tensor ins[] = {in}, outs[] = {rgb};
            op.record(cmd, ins, outs);
        } else {
            op.record(cmd, frame.range(), rgb);
        }
        gpu::barrier::compute_to_transfer(cmd);
    });
    const auto got = gpu::download_floats(dev, rgb);
    return {got.begin(), got.end()};
}

struct Diff {
    double max_abs = 0, rel_l2 = 0;
    size_t worst = 0;
};
Diff compare(const std::vector<double>& got, const std::vector<double>& want) {
    Diff d;
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double e = std::fabs(got[i] - want[i]);
        if (e > d.max_abs) d.max_abs = e, d.worst = i;
        num += e * e;
        den += want[i] * want[i];
    }
    d.rel_l2 = std::sqrt(num / std::max(den, 1e-30));
    return d;
}

std::string name(const FrameDesc& f, gpu::DType dtype) {
    return std::string(ops::pixel_format_name(f.format)) + " bits " + std::to_string(f.bits) + " matrix " +
           std::to_string(int(f.matrix)) + " range " + std::to_string(int(f.range)) + " " +
           std::to_string(f.width) + "x" + std::to_string(f.height) + " " + gpu::dtype_name(dtype);
}

// f16 storage rounds values in [0, 1] to within 2^-12; f32 leaves the kernel's float arithmetic.
double max_error(gpu::DType dtype) {
    return dtype == gpu::DType::f16 ? 6e-4 : 2e-6;
}

void check_to_rgb(gpu::Device& dev, const FrameDesc& f, gpu::DType dtype, ChromaFilter filter,
                  ChromaSiting siting, uint32_t seed, bool tensor_api = true) {
    const auto bytes = random_frame(f, seed);
    const auto op =
        ops::YuvToRgb::create(dev, {.frame = f, .dtype = dtype, .filter = filter, .siting = siting});
    ASSERT_EQ(op->outputs()[0].shape, (gpu::Shape{1, 3, int64_t(f.height), int64_t(f.width)}));
    const auto got = run_to_rgb(dev, *op, bytes, dtype, tensor_api);
    const auto want = ref_color::yuv_to_rgb(f, bytes, filter, siting);
    const Diff d = compare(got, want);
    EXPECT_LE(d.max_abs, max_error(dtype))
        << name(f, dtype) << " filter " << int(filter) << " siting " << int(siting) << ": element " << d.worst
        << " is " << got[d.worst] << ", expected " << want[d.worst];
    // The values must span the range (not all clamped to 0 or 1).
    const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
    EXPECT_LT(*lo, 0.2) << name(f, dtype);
    EXPECT_GT(*hi, 0.8) << name(f, dtype);
}

class Color : public GpuTest {};

TEST_F(Color, LayoutHelpers) {
    // yuv420p 5x3, rows aligned to 4: Y 8 x 3 = 24 bytes, U and V 3 samples -> 4 x 2 = 8 each.
    const FrameDesc f = ops::packed_frame(PixelFormat::Yuv420p, 5, 3, 4);
    EXPECT_EQ(f.planes[0].offset, 0u);
    EXPECT_EQ(f.planes[0].stride, 8u);
    EXPECT_EQ(f.planes[1].offset, 24u);
    EXPECT_EQ(f.planes[1].stride, 4u);
    EXPECT_EQ(f.planes[2].offset, 32u);
    EXPECT_EQ(ops::frame_bytes(f), 40u);
    // p010 3x3: Y rows of 6 bytes, UV rows 2 pairs x 2 bytes = 8 bytes, 2 rows.
    const FrameDesc p = ops::packed_frame(PixelFormat::P010, 3, 3, 1);
    EXPECT_EQ(p.planes[0].stride, 6u);
    EXPECT_EQ(p.planes[1].offset, 18u);
    EXPECT_EQ(p.planes[1].stride, 8u);
    EXPECT_EQ(ops::frame_bytes(p), 36u); // 34 rounded up to a word
    EXPECT_EQ(ops::plane_count(PixelFormat::Nv12), 2u);
    EXPECT_EQ(ops::plane_count(PixelFormat::Bgra), 1u);
    EXPECT_EQ(ops::plane_samples(PixelFormat::Yuv422p, 7, 5, 2), (std::array<uint32_t, 2>{4, 5}));
    EXPECT_EQ(ops::plane_samples(PixelFormat::Rgb24, 7, 5, 0), (std::array<uint32_t, 2>{21, 5}));
    const auto spec = ops::pixel_format_from_ffmpeg("yuv420p12le");
    ASSERT_TRUE(spec);
    EXPECT_EQ(spec->format, PixelFormat::Yuv420p10);
    EXPECT_EQ(spec->bits, 12u);
    EXPECT_TRUE(ops::pixel_format_from_ffmpeg("yuvj444p")->full_range_hint);
    EXPECT_EQ(ops::pixel_format_from_ffmpeg("p010le")->format, PixelFormat::P010);
    EXPECT_FALSE(ops::pixel_format_from_ffmpeg("yuv410p"));
    EXPECT_EQ(ops::pixel_format_from_ffmpeg("gbrp")->format, PixelFormat::Gbrp);
    EXPECT_EQ(ops::pixel_format_from_ffmpeg("gbrp12le")->format, PixelFormat::Gbrp16);
    EXPECT_EQ(ops::pixel_format_from_ffmpeg("gbrp12le")->bits, 12u);
    EXPECT_EQ(ops::plane_count(PixelFormat::Gbrp16), 3u);
    EXPECT_EQ(ops::plane_samples(PixelFormat::Gbrp, 7, 5, 2), (std::array<uint32_t, 2>{7, 5}));
}

// Every layout x matrix x range, f32 and f16, 13x7 with padded rows and unaligned planes.
TEST_F(Color, YuvToRgbEveryLayout) {
    uint32_t seed = 1;
    for (const gpu::DType dtype : float_dtypes(dev()))
        for (const PixelFormat format : all_formats)
            for (const ColorMatrix matrix : all_matrices)
                for (const ColorRange range : all_ranges) {
                    if (rgb_format(format) && (matrix != ColorMatrix::Bt601 || range != ColorRange::Limited))
                        continue; // the matrix and range do not apply
                    FrameDesc f = make_frame(format, 13, 7, 0, 3, 5, 1);
                    f.matrix = matrix;
                    f.range = range;
                    ++seed;
                    check_to_rgb(dev(), f, dtype, ChromaFilter::Bilinear, ChromaSiting::Left, seed,
                                 seed % 2 == 0);
                }
}

// 16-bit formats at every significant-bit count FFmpeg uses.
TEST_F(Color, YuvToRgbBitDepths) {
    uint32_t seed = 100;
    for (const PixelFormat format :
         {PixelFormat::Yuv420p10, PixelFormat::Yuv444p10, PixelFormat::P010, PixelFormat::Gbrp16})
        for (const uint32_t bits : {9u, 12u, 16u}) {
            FrameDesc f = make_frame(format, 9, 6, bits, 2, 2, 2);
            f.range = bits == 12 ? ColorRange::Full : ColorRange::Limited;
            check_to_rgb(dev(), f, gpu::DType::f32, ChromaFilter::Bilinear, ChromaSiting::Center, ++seed);
        }
}

// Chroma filters and sitings, on tiny and odd sizes (1x1, 2x1, 1x3, 17x9).
TEST_F(Color, YuvToRgbChromaFilters) {
    uint32_t seed = 200;
    for (const PixelFormat format : {PixelFormat::Yuv420p, PixelFormat::Yuv422p, PixelFormat::Nv12})
        for (const ChromaFilter filter : {ChromaFilter::Bilinear, ChromaFilter::Nearest})
            for (const ChromaSiting siting :
                 {ChromaSiting::Left, ChromaSiting::Center, ChromaSiting::TopLeft})
                for (const auto& [w, h] :
                     std::vector<std::pair<uint32_t, uint32_t>>{{1, 1}, {2, 1}, {1, 3}, {17, 9}}) {
                    const FrameDesc f = make_frame(format, w, h, 0, 1, 3, 1);
                    const auto bytes = random_frame(f, ++seed);
                    const auto op = ops::YuvToRgb::create(
                        dev(), {.frame = f, .dtype = gpu::DType::f32, .filter = filter, .siting = siting});
                    const auto got = run_to_rgb(dev(), *op, bytes, gpu::DType::f32, false);
                    const Diff d = compare(got, ref_color::yuv_to_rgb(f, bytes, filter, siting));
                    EXPECT_LE(d.max_abs, 2e-6) << name(f, gpu::DType::f32) << " filter " << int(filter)
                                               << " siting " << int(siting) << " element " << d.worst;
                }
}

// A larger frame whose invocations span several workgroups in both directions.
TEST_F(Color, YuvToRgbLarger) {
    FrameDesc f = make_frame(PixelFormat::Nv12, 67, 35, 0, 64, 29, 64);
    f.matrix = ColorMatrix::Bt601;
    check_to_rgb(dev(), f, gpu::DType::f32, ChromaFilter::Bilinear, ChromaSiting::Left, 7);
}

// ---------------------------------------------------------------------------------------------

std::vector<double> random_rgb(uint32_t w, uint32_t h, gpu::DType dtype, uint32_t seed, double lo,
                               double hi) {
    // Away from 0 (never zero), a little outside [0, 1] to exercise the clamp when lo < 0 or hi > 1.
    const HostTensor t = random_tensor({1, 3, int64_t(h), int64_t(w)}, dtype, seed, lo, hi, 0.01);
    return t.data;
}

// Runs RgbToYuv on `rgb` into a buffer prefilled with `initial`; returns the buffer.
std::vector<uint8_t> run_to_yuv(gpu::Device& dev, const ops::RgbToYuv& op, const std::vector<double>& rgb,
                                const std::vector<uint8_t>& initial, bool tensor_api) {
    const FrameDesc& f = op.desc().frame;
    gpu::Tensor in(dev, {1, 3, int64_t(f.height), int64_t(f.width)}, op.desc().dtype, "rgb");
    gpu::upload(dev, in, std::vector<float>(rgb.begin(), rgb.end()));
    gpu::Tensor frame(dev, {int64_t(initial.size())}, gpu::DType::u8, "frame");
    gpu::upload_raw(dev, frame, std::as_bytes(std::span(initial)));
    dev.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        gpu::barrier::transfer_to_compute(cmd);
        if (tensor_api) {
            const gpu::Tensor out(frame.buffer(), 0, {int64_t(ops::frame_bytes(f))}, gpu::DType::u8);
            const gpu::Tensor ins[] = {in}, outs[] = {out};
            op.record(cmd, ins, outs);
        } else {
            op.record(cmd, in, frame.range());
        }
        gpu::barrier::compute_to_transfer(cmd);
    });
    const auto raw = gpu::download_raw(dev, frame);
    std::vector<uint8_t> out(raw.size());
    std::memcpy(out.data(), raw.data(), raw.size());
    return out;
}

// Codes may differ by one where the exact value lies within float rounding of a .5 tie; bytes
// outside the samples and their row words must be untouched. Compares sample codes, so 16-bit
// formats compare whole values.
void check_frames(const FrameDesc& f, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                  const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    std::vector<bool> sample(got.size(), false);
    const auto l = ref_color::layout_of(f.format);
    size_t off_by_one = 0, samples = 0;
    for (int p = 0; p < l.planes; ++p) {
        const auto s = ref_color::plane_size(f, p);
        for (int y = 0; y < s[1]; ++y)
            for (int x = 0; x < s[0]; ++x) {
                const int g = ref_color::read_code(f, got, p, x, y),
                          w = ref_color::read_code(f, want, p, x, y);
                ++samples;
                if (g != w) ++off_by_one;
                ASSERT_LE(std::abs(g - w), 1) << what << ": plane " << p << " sample (" << x << ", " << y
                                              << ") is " << g << ", expected " << w;
                const size_t a =
                    size_t(f.planes[size_t(p)].offset + f.planes[size_t(p)].stride * uint64_t(y)) +
                    size_t(x * l.bytes);
                for (int b = 0; b < l.bytes; ++b) sample[a + size_t(b)] = true;
            }
    }
    EXPECT_LE(off_by_one, samples / 50 + 1) << what << ": too many codes off by one";
    for (size_t i = 0; i < got.size(); ++i) {
        if (!sample[i]) {
            ASSERT_EQ(int(got[i]), int(want[i])) << what << ": byte " << i << " (not a sample)";
        }
    }
}

void check_to_yuv(gpu::Device& dev, const FrameDesc& f, gpu::DType dtype, uint32_t seed, bool tensor_api) {
    const auto rgb = random_rgb(f.width, f.height, dtype, seed, -0.1, 1.1);
    std::mt19937 rng(seed);
    std::vector<uint8_t> initial(buffer_bytes(f));
    for (auto& b : initial) b = uint8_t(rng());
    std::vector<uint8_t> want = initial;
    ref_color::rgb_to_yuv(f, rgb, want);
    const auto op = ops::RgbToYuv::create(dev, {.frame = f, .dtype = dtype});
    check_frames(f, run_to_yuv(dev, *op, rgb, initial, tensor_api), want, name(f, dtype));
}

TEST_F(Color, RgbToYuvEveryLayout) {
    uint32_t seed = 300;
    for (const gpu::DType dtype : float_dtypes(dev()))
        for (const PixelFormat format : all_formats)
            for (const ColorMatrix matrix : all_matrices)
                for (const ColorRange range : all_ranges) {
                    if (rgb_format(format) && (matrix != ColorMatrix::Bt601 || range != ColorRange::Limited))
                        continue;
                    // 11x5: odd, so chroma blocks at the right and bottom edges are partial.
                    FrameDesc f = make_frame(format, 11, 5, 0, 8, 3, 4);
                    f.matrix = matrix;
                    f.range = range;
                    ++seed;
                    check_to_yuv(dev(), f, dtype, seed, seed % 2 == 0);
                }
}

TEST_F(Color, RgbToYuvBitDepthsAndSizes) {
    uint32_t seed = 400;
    for (const PixelFormat format :
         {PixelFormat::Yuv420p10, PixelFormat::Yuv422p10, PixelFormat::P010, PixelFormat::Gbrp16})
        for (const uint32_t bits : {9u, 12u, 16u}) {
            FrameDesc f = make_frame(format, 7, 3, bits, 4, 0, 4);
            f.range = bits == 9 ? ColorRange::Full : ColorRange::Limited;
            check_to_yuv(dev(), f, gpu::DType::f32, ++seed, false);
        }
    for (const auto& [w, h] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 1}, {1, 2}, {3, 1}, {66, 33}})
        for (const PixelFormat format : {PixelFormat::Yuv420p, PixelFormat::Nv12, PixelFormat::Rgb24})
            check_to_yuv(dev(), make_frame(format, w, h, 0, 0, 0, 4), gpu::DType::f32, ++seed, true);
}

// RGB -> YUV 4:4:4 -> RGB returns the input within the codes' quantization: half a code step
// through the inverse matrix (gain below 2 per component).
TEST_F(Color, RoundTrip) {
    uint32_t seed = 500;
    for (const gpu::DType dtype : float_dtypes(dev()))
        for (const auto& [format, bits] : std::vector<std::pair<PixelFormat, uint32_t>>{
                 {PixelFormat::Yuv444p, 0}, {PixelFormat::Yuv444p10, 16}})
            for (const ColorRange range : all_ranges)
                for (const ColorMatrix matrix : all_matrices) {
                    FrameDesc f = make_frame(format, 10, 6, bits, 0, 4, 4);
                    f.matrix = matrix;
                    f.range = range;
                    // Inside the gamut's interior so no clamp (in either direction) hides an error.
                    const auto rgb = random_rgb(10, 6, dtype, ++seed, 0.05, 0.95);
                    const auto to_yuv = ops::RgbToYuv::create(dev(), {.frame = f, .dtype = dtype});
                    const auto frame =
                        run_to_yuv(dev(), *to_yuv, rgb, std::vector<uint8_t>(buffer_bytes(f), 1), true);
                    const auto to_rgb = ops::YuvToRgb::create(dev(), {.frame = f, .dtype = dtype});
                    const auto back = run_to_rgb(dev(), *to_rgb, frame, dtype, true);
                    const double step = range == ColorRange::Full ? 1.0 / ((1 << (bits ? bits : 8)) - 1)
                                                                  : 1.0 / (219 << ((bits ? bits : 8) - 8));
                    const Diff d = compare(back, rgb);
                    EXPECT_LE(d.max_abs, 2.5 * step + max_error(dtype) * 2) << name(f, dtype);
                    // 8-bit codes cannot carry random floats exactly (16-bit ones can, into f16).
                    if (bits == 0) {
                        EXPECT_GT(d.max_abs, 0.0)
                            << name(f, dtype) << ": a round trip through 8-bit codes is exact?";
                    }
                }
}

// Recording twice (idempotent) gives the same frame, and record() on a buffer range works with a
// frame placed at an aligned offset inside a larger buffer.
TEST_F(Color, RecordTwiceAtOffset) {
    const FrameDesc f = make_frame(PixelFormat::Yuv420p, 9, 5, 0, 0, 3, 4);
    const auto rgb = random_rgb(9, 5, gpu::DType::f32, 9, 0.0, 1.0);
    const uint64_t base = std::max<uint64_t>(dev().caps().min_storage_buffer_offset_alignment, 4) * 2;
    const auto op = ops::RgbToYuv::create(dev(), {.frame = f, .dtype = gpu::DType::f32});
    gpu::Tensor in(dev(), {1, 3, 5, 9}, gpu::DType::f32);
    gpu::upload(dev(), in, std::vector<float>(rgb.begin(), rgb.end()));
    const uint64_t bytes = ops::frame_bytes(f);
    gpu::Tensor buf(dev(), {int64_t(base + bytes)}, gpu::DType::u8);
    std::vector<uint8_t> initial(base + bytes, 7);
    gpu::upload_raw(dev(), buf, std::as_bytes(std::span(initial)));
    dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        gpu::barrier::transfer_to_compute(cmd);
        for (int r = 0; r < 2; ++r) {
            if (r) gpu::barrier::compute_to_compute(cmd);
            op->record(cmd, in, buf.buffer()->range(base, bytes));
        }
        gpu::barrier::compute_to_transfer(cmd);
    });
    const auto raw = gpu::download_raw(dev(), buf);
    std::vector<uint8_t> got(raw.size());
    std::memcpy(got.data(), raw.data(), raw.size());
    for (uint64_t i = 0; i < base; ++i) ASSERT_EQ(got[i], 7) << "byte " << i << " before the frame";
    std::vector<uint8_t> want(initial.begin() + long(base), initial.end());
    ref_color::rgb_to_yuv(f, rgb, want);
    check_frames(f, std::vector<uint8_t>(got.begin() + long(base), got.end()), want, "at offset");
}

TEST_F(Color, Errors) {
    const FrameDesc good = make_frame(PixelFormat::Yuv420p, 8, 4, 0, 0, 0, 4);
    auto to_rgb = [&](FrameDesc f, gpu::DType dtype = gpu::DType::f32) {
        ops::YuvToRgb::create(dev(), {.frame = f, .dtype = dtype});
    };
    auto to_yuv = [&](FrameDesc f) { ops::RgbToYuv::create(dev(), {.frame = f}); };
    FrameDesc f = good;
    f.width = 0;
    expect_error([&] { to_rgb(f); }, {"YuvToRgb", "frame.width", "is 0"});
    f = good;
    f.height = 0;
    expect_error([&] { to_yuv(f); }, {"RgbToYuv", "frame.height"});
    f = good;
    f.bits = 10;
    expect_error([&] { to_rgb(f); }, {"YuvToRgb", "frame.bits", "8-bit format yuv420p"});
    f = make_frame(PixelFormat::P010, 8, 4, 17, 0, 0, 4);
    expect_error([&] { to_rgb(f); }, {"YuvToRgb", "frame.bits", "9..16"});
    f = good;
    f.planes[1].stride = 3;
    expect_error([&] { to_rgb(f); }, {"YuvToRgb", "frame.planes[1].stride", "less than a row of 4 bytes"});
    f = make_frame(PixelFormat::Yuv420p10, 8, 4, 10, 0, 0, 4);
    f.planes[2].offset += 1;
    expect_error([&] { to_rgb(f); }, {"YuvToRgb", "frame.planes[2]", "even"});
    f = good;
    f.planes[0].stride = 9;
    to_rgb(f); // any stride reads
    expect_error([&] { to_yuv(f); }, {"RgbToYuv", "frame.planes[0]", "multiples of 4"});
    f = good;
    f.format = PixelFormat(99);
    expect_error([&] { to_rgb(f); }, {"YuvToRgb", "frame.format", "unknown"});
    f = good;
    f.matrix = ColorMatrix(7);
    expect_error([&] { to_yuv(f); }, {"RgbToYuv", "frame.matrix"});
    f = good;
    f.range = ColorRange(7);
    expect_error([&] { to_rgb(f); }, {"YuvToRgb", "frame.range"});
    expect_error([&] { to_rgb(good, gpu::DType::i32); }, {"YuvToRgb", "dtype", "f32 or f16"});
    expect_error([&] { ops::YuvToRgb::create(dev(), {.frame = good, .filter = ChromaFilter(5)}); },
                 {"YuvToRgb", "filter"});

    // Record-time checks: the wrong tensor, a too-small range.
    const auto op = ops::YuvToRgb::create(dev(), {.frame = good});
    gpu::Tensor small(dev(), {4}, gpu::DType::u8), wrong(dev(), {1, 3, 4, 9}, gpu::DType::f32);
    gpu::Tensor rgb(dev(), {1, 3, 4, 8}, gpu::DType::f32);
    gpu::Tensor big(dev(), {int64_t(ops::frame_bytes(good))}, gpu::DType::u8);
    gpu::CommandBuffer cmd(dev(), gpu::QueueRole::Compute);
    cmd.begin();
    expect_error([&] { op->record(cmd, small.buffer()->range(0, 4), rgb); }, {"YuvToRgb", "frame", "needs"});
    expect_error([&] { op->record(cmd, big.range(), wrong); }, {"YuvToRgb", "rgb", "created for"});
    const gpu::Tensor ins[] = {small}, outs[] = {rgb};
    expect_error([&] { op->record(cmd, ins, outs); }, {"YuvToRgb", "inputs[0]"});
    cmd.end();
}

} // namespace
} // namespace vkml::test
