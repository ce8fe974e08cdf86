// YuvToRgb / RgbToYuv: one dispatch each (shaders/color/*.comp). The frame layout becomes
// specialization constants (so each format's branches fold away), sizes, plane offsets/strides
// and the colour coefficients push constants (so one pipeline per format serves every size).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/color.hpp"

namespace vkml::ops {

namespace {

enum Kind : uint32_t { Planar = 0, Semi = 1, Rgb24Kind = 2, RgbaKind = 3, BgraKind = 4, GbrpKind = 5 };

struct FormatInfo {
    const char* name;
    Kind kind;
    uint32_t bytes; // per sample
    bool msb;       // 16-bit value in the high bits
    bool subx, suby;
};

bool known(PixelFormat f) {
    return uint32_t(f) <= uint32_t(PixelFormat::Gbrp16);
}

FormatInfo info(PixelFormat f) {
    switch (f) {
    case PixelFormat::Yuv420p:
        return {"yuv420p", Planar, 1, false, true, true};
    case PixelFormat::Yuv422p:
        return {"yuv422p", Planar, 1, false, true, false};
    case PixelFormat::Yuv444p:
        return {"yuv444p", Planar, 1, false, false, false};
    case PixelFormat::Nv12:
        return {"nv12", Semi, 1, false, true, true};
    case PixelFormat::Yuv420p10:
        return {"yuv420p10", Planar, 2, false, true, true};
    case PixelFormat::Yuv422p10:
        return {"yuv422p10", Planar, 2, false, true, false};
    case PixelFormat::Yuv444p10:
        return {"yuv444p10", Planar, 2, false, false, false};
    case PixelFormat::P010:
        return {"p010", Semi, 2, true, true, true};
    case PixelFormat::Rgb24:
        return {"rgb24", Rgb24Kind, 1, false, false, false};
    case PixelFormat::Rgba:
        return {"rgba", RgbaKind, 1, false, false, false};
    case PixelFormat::Bgra:
        return {"bgra", BgraKind, 1, false, false, false};
    case PixelFormat::Gbrp:
        return {"gbrp", GbrpKind, 1, false, false, false};
    case PixelFormat::Gbrp16:
        return {"gbrp16", GbrpKind, 2, false, false, false};
    }
    return {"?", Planar, 1, false, false, false};
}

uint32_t ceil_half(uint32_t v) {
    return (v + 1) / 2;
}

// Kr, Kb of the standards: ITU-R BT.601-7, BT.709-6, BT.2020-2 (non-constant luminance).
std::array<double, 2> kr_kb(ColorMatrix m) {
    switch (m) {
    case ColorMatrix::Bt601:
        return {0.299, 0.114};
    case ColorMatrix::Bt709:
        return {0.2126, 0.0722};
    case ColorMatrix::Bt2020:
        return {0.2627, 0.0593};
    }
    return {0, 0};
}

// Code <-> normalized value: Y' = (code - y_off) / y_range, Cb/Cr = (code - c_off) / c_range.
struct RangeInfo {
    double y_off, y_range, c_off, c_range;
};

RangeInfo range_info(ColorRange r, uint32_t bits) {
    const double k = std::ldexp(1.0, int(bits) - 8);
    if (r == ColorRange::Limited) return {16 * k, 219 * k, 128 * k, 224 * k};
    const double max = std::ldexp(1.0, int(bits)) - 1;
    return {0, max, std::ldexp(1.0, int(bits) - 1), max};
}

uint32_t significant_bits(const FrameDesc& f) {
    return info(f.format).bytes == 1 ? 8 : (f.bits ? f.bits : 10);
}

uint32_t fbits(double v) {
    const float f = float(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Validates everything of a frame except write alignment; returns its bytes.
uint64_t check_frame(const char* op, const FrameDesc& f) {
    if (!known(f.format)) fail(op, "frame.format", "unknown pixel format " + std::to_string(int(f.format)));
    const FormatInfo fi = info(f.format);
    if (f.width == 0) fail(op, "frame.width", "is 0");
    if (f.height == 0) fail(op, "frame.height", "is 0");
    if (fi.bytes == 1 && f.bits != 0 && f.bits != 8)
        fail(op, "frame.bits", std::to_string(f.bits) + " for the 8-bit format " + fi.name + " (use 0 or 8)");
    if (fi.bytes == 2 && f.bits != 0 && (f.bits < 9 || f.bits > 16))
        fail(op, "frame.bits", std::to_string(f.bits) + " is not in 9..16 (0 means 10)");
    if (uint32_t(f.matrix) > uint32_t(ColorMatrix::Bt2020))
        fail(op, "frame.matrix", "unknown matrix " + std::to_string(int(f.matrix)));
    if (uint32_t(f.range) > uint32_t(ColorRange::Full))
        fail(op, "frame.range", "unknown range " + std::to_string(int(f.range)));
    const uint64_t bytes = frame_bytes(f);
    for (uint32_t p = 0; p < plane_count(f.format); ++p) {
        const std::string field = "frame.planes[" + std::to_string(p) + "]";
        const PlaneDesc& pd = f.planes[p];
        const uint64_t row = uint64_t(plane_samples(f.format, f.width, f.height, p)[0]) * fi.bytes;
        if (pd.stride < row)
            fail(op, field + ".stride",
                 std::to_string(pd.stride) + " bytes is less than a row of " + std::to_string(row) +
                     " bytes");
        if (fi.bytes == 2 && (pd.offset % 2 || pd.stride % 2))
            fail(op, field, "offset and stride of 16-bit samples must be even");
    }
    if (bytes > 0xffffffffull)
        fail(op, "frame", "needs " + std::to_string(bytes) + " bytes, more than 4 GiB");
    detail::to_u32(op, "frame", int64_t(f.width) * f.height * 3);
    return bytes;
}

} // namespace

const char* pixel_format_name(PixelFormat format) {
    return known(format) ? info(format).name : "?";
}

uint32_t plane_count(PixelFormat format) {
    switch (info(format).kind) {
    case Planar:
    case GbrpKind:
        return 3;
    case Semi:
        return 2;
    default:
        return 1;
    }
}

uint32_t bytes_per_sample(PixelFormat format) {
    return info(format).bytes;
}

std::array<uint32_t, 2> plane_samples(PixelFormat format, uint32_t width, uint32_t height, uint32_t plane) {
    const FormatInfo fi = info(format);
    if (fi.kind == Rgb24Kind) return {width * 3, height};
    if (fi.kind == RgbaKind || fi.kind == BgraKind) return {width * 4, height};
    if (plane == 0) return {width, height};
    const uint32_t cw = fi.subx ? ceil_half(width) : width, ch = fi.suby ? ceil_half(height) : height;
    return {fi.kind == Semi ? 2 * cw : cw, ch};
}

FrameDesc packed_frame(PixelFormat format, uint32_t width, uint32_t height, uint32_t row_align) {
    FrameDesc f;
    f.format = format;
    f.width = width;
    f.height = height;
    const uint32_t align = std::max<uint32_t>(row_align, 1);
    uint64_t at = 0;
    for (uint32_t p = 0; p < plane_count(format); ++p) {
        const auto s = plane_samples(format, width, height, p);
        const uint64_t row = uint64_t(s[0]) * bytes_per_sample(format);
        const uint64_t stride = (row + align - 1) / align * align;
        f.planes[p] = {at, stride};
        at += stride * s[1];
        at = (at + align - 1) / align * align;
    }
    return f;
}

uint64_t frame_bytes(const FrameDesc& frame) {
    uint64_t end = 0;
    for (uint32_t p = 0; p < plane_count(frame.format); ++p) {
        const auto s = plane_samples(frame.format, frame.width, frame.height, p);
        const uint64_t row = uint64_t(s[0]) * bytes_per_sample(frame.format);
        if (s[1] == 0) continue;
        end = std::max(end, frame.planes[p].offset + frame.planes[p].stride * (s[1] - 1) + row);
    }
    return (end + 3) / 4 * 4;
}

std::optional<PixelFormatSpec> pixel_format_from_ffmpeg(std::string_view name) {
    struct Entry {
        std::string_view name;
        PixelFormat format;
        uint32_t bits;
        bool full;
    };
    static constexpr Entry table[] = {
        {"yuv420p", PixelFormat::Yuv420p, 8, false},
        {"yuvj420p", PixelFormat::Yuv420p, 8, true},
        {"yuv422p", PixelFormat::Yuv422p, 8, false},
        {"yuvj422p", PixelFormat::Yuv422p, 8, true},
        {"yuv444p", PixelFormat::Yuv444p, 8, false},
        {"yuvj444p", PixelFormat::Yuv444p, 8, true},
        {"nv12", PixelFormat::Nv12, 8, false},
        {"yuv420p9le", PixelFormat::Yuv420p10, 9, false},
        {"yuv420p10le", PixelFormat::Yuv420p10, 10, false},
        {"yuv420p12le", PixelFormat::Yuv420p10, 12, false},
        {"yuv420p14le", PixelFormat::Yuv420p10, 14, false},
        {"yuv420p16le", PixelFormat::Yuv420p10, 16, false},
        {"yuv422p9le", PixelFormat::Yuv422p10, 9, false},
        {"yuv422p10le", PixelFormat::Yuv422p10, 10, false},
        {"yuv422p12le", PixelFormat::Yuv422p10, 12, false},
        {"yuv422p14le", PixelFormat::Yuv422p10, 14, false},
        {"yuv422p16le", PixelFormat::Yuv422p10, 16, false},
        {"yuv444p9le", PixelFormat::Yuv444p10, 9, false},
        {"yuv444p10le", PixelFormat::Yuv444p10, 10, false},
        {"yuv444p12le", PixelFormat::Yuv444p10, 12, false},
        {"yuv444p14le", PixelFormat::Yuv444p10, 14, false},
        {"yuv444p16le", PixelFormat::Yuv444p10, 16, false},
        {"p010le", PixelFormat::P010, 10, false},
        {"p012le", PixelFormat::P010, 12, false},
        {"p016le", PixelFormat::P010, 16, false},
        {"rgb24", PixelFormat::Rgb24, 8, false},
        {"rgba", PixelFormat::Rgba, 8, false},
        {"rgb0", PixelFormat::Rgba, 8, false},
        {"bgra", PixelFormat::Bgra, 8, false},
        {"bgr0", PixelFormat::Bgra, 8, false},
        {"gbrp", PixelFormat::Gbrp, 8, false},
        {"gbrp9le", PixelFormat::Gbrp16, 9, false},
        {"gbrp10le", PixelFormat::Gbrp16, 10, false},
        {"gbrp12le", PixelFormat::Gbrp16, 12, false},
        {"gbrp14le", PixelFormat::Gbrp16, 14, false},
        {"gbrp16le", PixelFormat::Gbrp16, 16, false},
    };
    for (const Entry& e : table)
        if (e.name == name) return PixelFormatSpec{e.format, e.bits, e.full};
    return std::nullopt;
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<YuvToRgb> YuvToRgb::create(gpu::Device& device, const YuvToRgbDesc& desc) {
    return std::make_unique<YuvToRgb>(device, desc);
}

YuvToRgb::YuvToRgb(gpu::Device& device, const YuvToRgbDesc& desc) : Op(device), desc_(desc) {
    const char* op = "YuvToRgb";
    const FrameDesc& f = desc.frame;
    const uint64_t bytes = check_frame(op, f);
    detail::require_float(op, "dtype", {{1}, desc.dtype});
    if (uint32_t(desc.filter) > uint32_t(ChromaFilter::Nearest))
        fail(op, "filter", "unknown chroma filter " + std::to_string(int(desc.filter)));
    if (uint32_t(desc.siting) > uint32_t(ChromaSiting::TopLeft))
        fail(op, "siting", "unknown chroma siting " + std::to_string(int(desc.siting)));
    const std::array<uint32_t, 3> groups{(f.width + 15) / 16, (f.height + 15) / 16, 1};
    if (groups[0] > device.caps().max_workgroup_count[0] || groups[1] > device.caps().max_workgroup_count[1])
        unsupported(op, std::to_string(f.width) + "x" + std::to_string(f.height) +
                            " pixels exceed the device's workgroup grid");

    const FormatInfo fi = info(f.format);
    const uint32_t bits = significant_bits(f);
    const RangeInfo r = range_info(f.range, bits);
    const auto [kr, kb] = kr_kb(f.matrix);
    const double kg = 1 - kr - kb;
    const auto chroma = plane_samples(f.format, f.width, f.height, 1);
    const uint32_t cw = fi.kind == Semi ? chroma[0] / 2 : chroma[0];
    const double site_x = desc.siting == ChromaSiting::Center ? 0.5 : 0.0;
    const double site_y =
        desc.siting == ChromaSiting::Left || desc.siting == ChromaSiting::Center ? 0.5 : 0.0;
    push_ = {f.width,
             f.height,
             uint32_t(f.planes[0].offset),
             uint32_t(f.planes[0].stride),
             uint32_t(f.planes[1].offset),
             uint32_t(f.planes[1].stride),
             uint32_t(f.planes[2].offset),
             uint32_t(f.planes[2].stride),
             cw,
             chroma[1],
             fbits(site_x),
             fbits(site_y),
             fbits(r.y_off),
             fbits(1 / r.y_range),
             fbits(r.c_off),
             fbits(1 / r.c_range),
             fbits(2 * (1 - kr)),
             fbits(2 * kb * (1 - kb) / kg),
             fbits(2 * kr * (1 - kr) / kg),
             fbits(2 * (1 - kb))};
    gpu::ComputePipelineDesc pd;
    pd.shader = detail::shader_for(device, op, "yuv_to_rgb", desc.dtype);
    pd.bindings = 2;
    pd.push_constant_bytes = 20 * 4;
    pd.workgroup = {16, 16, 1};
    pd.specialization = {uint32_t(fi.kind),
                         fi.bytes,
                         fi.msb ? 16 - bits : 0u,
                         bits,
                         fi.subx ? 1u : 0u,
                         fi.suby ? 1u : 0u,
                         desc.filter == ChromaFilter::Nearest ? 1u : 0u};
    pd.name = std::string("YuvToRgb ") + fi.name;
    pipeline_ = &device.pipeline(pd);
    inputs_ = {{{int64_t(bytes)}, DType::u8}};
    outputs_ = {{{1, 3, int64_t(f.height), int64_t(f.width)}, desc.dtype}};
}

void YuvToRgb::record(gpu::CommandBuffer& cmd, const gpu::BufferRange& frame, const Tensor& rgb) const {
    if (!frame.buffer) fail(type(), "frame", "no buffer bound");
    if (frame.size != VK_WHOLE_SIZE && frame.size < uint64_t(inputs_[0].shape[0]))
        fail(type(), "frame",
             "range has " + std::to_string(frame.size) + " bytes, the frame needs " +
                 std::to_string(inputs_[0].shape[0]));
    const uint64_t align = device_.caps().min_storage_buffer_offset_alignment;
    if (align > 1 && frame.offset % align != 0)
        fail(type(), "frame",
             "starts at byte " + std::to_string(frame.offset) +
                 ", not a multiple of the device's storage-buffer alignment " + std::to_string(align));
    if (!rgb) fail(type(), "rgb", "no tensor bound");
    if (rgb.shape() != outputs_[0].shape || rgb.dtype() != outputs_[0].dtype)
        fail(type(), "rgb",
             "is " + to_string({rgb.shape(), rgb.dtype()}) + ", the op was created for " +
                 to_string(outputs_[0]));
    if (!rgb.contiguous()) fail(type(), "rgb", "is not contiguous");
    if (align > 1 && rgb.byte_offset() % align != 0)
        fail(type(), "rgb", "starts at byte " + std::to_string(rgb.byte_offset()) + ", not aligned");
    const gpu::BufferRange buffers[] = {frame, rgb.range()};
    cmd.dispatch(*pipeline_, buffers, push_.data(), 20 * 4,
                 {(desc_.frame.width + 15) / 16, (desc_.frame.height + 15) / 16, 1});
}

void YuvToRgb::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                           std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    record(cmd, inputs[0].range(), outputs[0]);
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<RgbToYuv> RgbToYuv::create(gpu::Device& device, const RgbToYuvDesc& desc) {
    return std::make_unique<RgbToYuv>(device, desc);
}

RgbToYuv::RgbToYuv(gpu::Device& device, const RgbToYuvDesc& desc) : Op(device), desc_(desc) {
    const char* op = "RgbToYuv";
    const FrameDesc& f = desc.frame;
    const uint64_t bytes = check_frame(op, f);
    detail::require_float(op, "dtype", {{1}, desc.dtype});
    const FormatInfo fi = info(f.format);
    std::array<uint32_t, 3> row_words{}, off{}, stride{};
    uint64_t ends[3]{};
    uint64_t total = 0;
    for (uint32_t p = 0; p < plane_count(f.format); ++p) {
        const std::string field = "frame.planes[" + std::to_string(p) + "]";
        if (f.planes[p].offset % 4 || f.planes[p].stride % 4)
            fail(op, field,
                 "offset " + std::to_string(f.planes[p].offset) + " and stride " +
                     std::to_string(f.planes[p].stride) + " must be multiples of 4 to be written");
        const auto s = plane_samples(f.format, f.width, f.height, p);
        row_words[p] = (s[0] * fi.bytes + 3) / 4;
        off[p] = uint32_t(f.planes[p].offset / 4);
        stride[p] = uint32_t(f.planes[p].stride / 4);
        total += uint64_t(row_words[p]) * s[1];
        ends[p] = total;
    }
    for (uint32_t p = plane_count(f.format); p < 3; ++p) ends[p] = total;
    words_ = total;
    detail::to_u32(op, "frame", int64_t(total));

    const uint32_t bits = significant_bits(f);
    const RangeInfo r = range_info(f.range, bits);
    const auto [kr, kb] = kr_kb(f.matrix);
    const double kg = 1 - kr - kb;
    // Cb = (B - Y) / (2 (1 - Kb)), Cr = (R - Y) / (2 (1 - Kr)), expanded into dot products with RGB.
    const double cb_d = 2 * (1 - kb), cr_d = 2 * (1 - kr);
    const auto chroma = plane_samples(f.format, f.width, f.height, 1);
    const uint32_t cw = fi.kind == Semi ? chroma[0] / 2 : chroma[0];
    push_ = {f.width,
             f.height,
             off[0],
             stride[0],
             off[1],
             stride[1],
             off[2],
             stride[2],
             row_words[0],
             row_words[1],
             row_words[2],
             uint32_t(ends[0]),
             uint32_t(ends[1]),
             cw,
             chroma[1],
             fbits(r.y_off),
             fbits(r.y_range),
             fbits(r.c_off),
             fbits(r.c_range),
             fbits(kr),
             fbits(kg),
             fbits(kb),
             fbits(-kr / cb_d),
             fbits(-kg / cb_d),
             fbits((1 - kb) / cb_d),
             fbits((1 - kr) / cr_d),
             fbits(-kg / cr_d),
             fbits(-kb / cr_d)};
    gpu::ComputePipelineDesc pd;
    pd.shader = detail::shader_for(device, op, "rgb_to_yuv", desc.dtype);
    pd.bindings = 2;
    pd.push_constant_bytes = 28 * 4;
    pd.workgroup = {64, 1, 1};
    pd.specialization = {uint32_t(fi.kind), fi.bytes,         fi.msb ? 16 - bits : 0u, bits,
                         fi.subx ? 1u : 0u, fi.suby ? 1u : 0u};
    pd.name = std::string("RgbToYuv ") + fi.name;
    pipeline_ = &device.pipeline(pd);
    inputs_ = {{{1, 3, int64_t(f.height), int64_t(f.width)}, desc.dtype}};
    outputs_ = {{{int64_t(bytes)}, DType::u8}};
}

void RgbToYuv::record(gpu::CommandBuffer& cmd, const Tensor& rgb, const gpu::BufferRange& frame) const {
    if (!rgb) fail(type(), "rgb", "no tensor bound");
    if (rgb.shape() != inputs_[0].shape || rgb.dtype() != inputs_[0].dtype)
        fail(type(), "rgb",
             "is " + to_string({rgb.shape(), rgb.dtype()}) + ", the op was created for " +
                 to_string(inputs_[0]));
    if (!rgb.contiguous()) fail(type(), "rgb", "is not contiguous");
    const uint64_t align = device_.caps().min_storage_buffer_offset_alignment;
    if (align > 1 && rgb.byte_offset() % align != 0)
        fail(type(), "rgb", "starts at byte " + std::to_string(rgb.byte_offset()) + ", not aligned");
    if (!frame.buffer) fail(type(), "frame", "no buffer bound");
    if (frame.size != VK_WHOLE_SIZE && frame.size < uint64_t(outputs_[0].shape[0]))
        fail(type(), "frame",
             "range has " + std::to_string(frame.size) + " bytes, the frame needs " +
                 std::to_string(outputs_[0].shape[0]));
    if (align > 1 && frame.offset % align != 0)
        fail(type(), "frame",
             "starts at byte " + std::to_string(frame.offset) +
                 ", not a multiple of the device's storage-buffer alignment " + std::to_string(align));
    const gpu::BufferRange buffers[] = {rgb.range(), frame};
    cmd.dispatch(*pipeline_, buffers, push_.data(), 28 * 4, cmd.groups_for(*pipeline_, words_));
}

void RgbToYuv::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                           std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    record(cmd, inputs[0], outputs[0].range());
}

} // namespace vkml::ops
