#include "image_file.hpp"

#include <stb_image.h>
#include <stb_image_resize.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string_view>

#include "vkml/error.hpp"
#include "vkml/gpu/half.hpp"

namespace vkml::tool {

namespace {

[[noreturn]] void bad(const std::string& source, const std::string& what, ErrorCode code = ErrorCode::Io) {
    throw Error(code, "'" + source + "': " + what);
}

void check_size(int64_t w, int64_t h, int64_t max_pixels, const std::string& source, const char* what) {
    if (w < 1 || h < 1) bad(source, std::string(what) + " has no pixels", ErrorCode::InvalidArgument);
    if (w > max_pixels / h)
        bad(source,
            std::string(what) + " is " + std::to_string(w) + "x" + std::to_string(h) + ", more than the " +
                std::to_string(max_pixels) + " pixels vkml reads",
            ErrorCode::Unsupported);
}

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic) {
    return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

// Only the formats vkml reads go to stb_image, which would otherwise decode whatever it
// recognises: its PNM reader (Debian's libstb 2022-09) reads past the end of a truncated 16-bit
// file (found by tests/fuzz/image_fuzz.cpp). TGA has no signature: it is what is left once the
// other formats stb knows are ruled out by theirs.
void check_format(std::span<const uint8_t> bytes, const std::string& source) {
    if (starts_with(bytes, "\x89PNG") || starts_with(bytes, "\xff\xd8\xff") || starts_with(bytes, "BM"))
        return;
    static const std::pair<std::string_view, const char*> refused[] = {
        {"GIF8", "GIF"},       {"8BPS", "PSD"},   {"\x53\x80\xf6\x34", "PIC"},
        {"#?RADIANCE", "HDR"}, {"#?RGBE", "HDR"}, {"P5", "PGM"},
        {"P6", "PPM"},         {"P1", "PBM"},     {"P2", "PGM"},
        {"P3", "PPM"},         {"P4", "PBM"}};
    for (const auto& [magic, name] : refused)
        if (starts_with(bytes, magic))
            bad(source, std::string("is a ") + name + " image; vkml reads PNG, JPEG, BMP and TGA",
                ErrorCode::Unsupported);
}

} // namespace

RgbImage decode_rgb_image(std::span<const uint8_t> bytes, const std::string& source, int64_t max_pixels) {
    if (bytes.size() > size_t(INT_MAX)) bad(source, "is larger than 2 GiB", ErrorCode::Unsupported);
    const auto* data = bytes.data();
    const int len = static_cast<int>(bytes.size());
    check_format(bytes, source);
    int w = 0, h = 0, c = 0;
    // The header first: a file may claim any size, and stb would try to allocate it.
    if (!stbi_info_from_memory(data, len, &w, &h, &c))
        bad(source, std::string("cannot read the image: ") + stbi_failure_reason());
    check_size(w, h, max_pixels, source, "the image");
    std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load_from_memory(data, len, &w, &h, &c, 3),
                                                 stbi_image_free);
    if (!px) bad(source, std::string("cannot read the image: ") + stbi_failure_reason());
    // The decoder may disagree with the header it was asked about (e.g. a GIF's later frame).
    check_size(w, h, max_pixels, source, "the image");
    RgbImage img{w, h, {}};
    img.pixels.assign(px.get(), px.get() + static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
    return img;
}

RgbImage read_rgb_image(const std::filesystem::path& path, int64_t max_pixels) {
    std::ifstream f(path, std::ios::binary);
    if (!f) bad(path.string(), "cannot open");
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (f.bad()) bad(path.string(), "read failed");
    return decode_rgb_image(bytes, path.string(), max_pixels);
}

graph::TensorData image_tensor(const RgbImage& image, const ImageOptions& o, std::pair<int, int> size,
                               graph::DType dtype, const std::string& source, int64_t max_pixels) {
    if (dtype != graph::DType::f32 && dtype != graph::DType::f16 && dtype != graph::DType::undefined)
        bad(source,
            std::string("the model input is ") + graph::dtype_name(dtype) + "; images feed float inputs only",
            ErrorCode::InvalidArgument);
    int w = image.width, h = image.height;
    const int tw = o.resize_w ? o.resize_w : size.first, th = o.resize_h ? o.resize_h : size.second;
    std::vector<uint8_t> resized;
    const uint8_t* pixels = image.pixels.data();
    if (tw > 0 && th > 0 && (tw != w || th != h)) {
        check_size(tw, th, max_pixels, source, "the resized image");
        resized.resize(static_cast<size_t>(tw) * static_cast<size_t>(th) * 3);
        if (!stbir_resize_uint8(image.pixels.data(), w, h, 0, resized.data(), tw, th, 0, 3))
            bad(source, "resizing failed", ErrorCode::Generic);
        pixels = resized.data();
        w = tw;
        h = th;
    }
    const size_t plane = static_cast<size_t>(w) * static_cast<size_t>(h);
    std::vector<float> v(plane * 3);
    for (size_t i = 0; i < plane; ++i)
        for (size_t ch = 0; ch < 3; ++ch) {
            const float x =
                (pixels[i * 3 + ch] / 255.f * o.scale - o.channel(o.mean, ch)) / o.channel(o.std, ch);
            v[o.nhwc ? i * 3 + ch : ch * plane + i] = x;
        }
    const std::vector<int64_t> dims =
        o.nhwc ? std::vector<int64_t>{1, h, w, 3} : std::vector<int64_t>{1, 3, h, w};
    if (dtype == graph::DType::f16) {
        std::vector<uint16_t> half(v.size());
        gpu::floats_to_halves(v, half);
        return graph::TensorData::from_halves(dims, half);
    }
    return graph::TensorData::from_floats(dims, v);
}

} // namespace vkml::tool
