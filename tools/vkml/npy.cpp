// The .npy format: magic "\x93NUMPY", a version byte pair, a little-endian header length (2 bytes
// in 1.0, 4 in 2.0/3.0), then a Python dict literal {'descr': '<f4', 'fortran_order': False,
// 'shape': (1, 3), } padded with spaces to a multiple of 64 bytes, then the raw elements.
#include "npy.hpp"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "vkml/error.hpp"

namespace vkml::tool {

using graph::DType;
using graph::TensorData;

namespace {

[[noreturn]] void bad(const std::string& source, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, "'" + source + "': " + what);
}

// The header dict: only the three keys numpy writes, each parsed strictly.
struct Header {
    std::string descr;
    bool fortran = false;
    std::vector<int64_t> shape;
};

Header parse_header(const std::string& h, const std::string& source) {
    Header out;
    size_t p = 0;
    auto skip = [&] {
        while (p < h.size() && std::isspace(static_cast<unsigned char>(h[p]))) ++p;
    };
    auto expect = [&](char c) {
        skip();
        if (p >= h.size() || h[p] != c)
            bad(source, std::string("malformed .npy header: expected '") + c + "' in " + h);
        ++p;
    };
    auto quoted = [&] {
        skip();
        if (p >= h.size() || (h[p] != '\'' && h[p] != '"'))
            bad(source, "malformed .npy header: expected a string in " + h);
        const char q = h[p++];
        const size_t end = h.find(q, p);
        if (end == std::string::npos) bad(source, "malformed .npy header: unterminated string");
        std::string s = h.substr(p, end - p);
        p = end + 1;
        return s;
    };
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    for (;;) {
        skip();
        if (p < h.size() && h[p] == '}') break;
        const std::string key = quoted();
        expect(':');
        skip();
        if (key == "descr") {
            out.descr = quoted();
            have_descr = true;
        } else if (key == "fortran_order") {
            if (h.compare(p, 4, "True") == 0) {
                out.fortran = true;
                p += 4;
            } else if (h.compare(p, 5, "False") == 0) {
                p += 5;
            } else {
                bad(source, "malformed .npy header: fortran_order must be True or False");
            }
            have_order = true;
        } else if (key == "shape") {
            expect('(');
            for (;;) {
                skip();
                if (p < h.size() && h[p] == ')') {
                    ++p;
                    break;
                }
                size_t used = 0;
                long long v = 0;
                try {
                    v = std::stoll(h.substr(p), &used);
                } catch (const std::exception&) {
                    bad(source, "malformed .npy header: bad shape in " + h);
                }
                if (v < 0) bad(source, "malformed .npy header: negative dimension in the shape");
                out.shape.push_back(v);
                p += used;
                skip();
                if (p < h.size() && h[p] == ',') ++p;
            }
            have_shape = true;
        } else {
            bad(source, "malformed .npy header: unknown key '" + key + "'");
        }
        skip();
        if (p < h.size() && h[p] == ',') ++p;
    }
    if (!have_descr || !have_order || !have_shape)
        bad(source, "malformed .npy header: it needs descr, fortran_order and shape: " + h);
    return out;
}

struct Element {
    DType dtype;  // what vkml holds it as
    size_t bytes; // in the file
    char kind;    // f, i, u, b
};

Element element_of(const std::string& descr, const std::string& source) {
    if (descr.size() < 3) bad(source, "unsupported .npy dtype '" + descr + "'");
    const char order = descr[0], kind = descr[1];
    const std::string size = descr.substr(2);
    if (order == '>' && size != "1")
        bad(source, "big-endian .npy data ('" + descr + "') is not supported; save it little-endian");
    if (order != '<' && order != '|' && order != '=')
        bad(source, "unsupported .npy byte order in '" + descr + "'");
    if (kind == 'f' && size == "2") return {DType::f16, 2, kind};
    if (kind == 'f' && size == "4") return {DType::f32, 4, kind};
    if (kind == 'f' && size == "8") return {DType::f32, 8, kind};
    if (kind == 'i' && (size == "1" || size == "2" || size == "4"))
        return {DType::i32, std::stoul(size), kind};
    if (kind == 'i' && size == "8") return {DType::i64, 8, kind};
    if (kind == 'u' && size == "1") return {DType::u8, 1, kind};
    if (kind == 'u' && (size == "2" || size == "4")) return {DType::i64, std::stoul(size), kind};
    if (kind == 'b' && size == "1") return {DType::boolean, 1, kind};
    bad(source, "unsupported .npy dtype '" + descr + "' (vkml reads f2, f4, f8, i1-i8, u1-u4 and bool)");
}

} // namespace

TensorData parse_npy(const std::string& d, const std::string& source) {
    if (d.size() < 10 || std::memcmp(d.data(), "\x93NUMPY", 6) != 0)
        bad(source, "not a .npy file (no \\x93NUMPY magic)");
    const auto major = static_cast<uint8_t>(d[6]);
    if (major < 1 || major > 3) bad(source, "unsupported .npy format version " + std::to_string(major));
    size_t header_len = 0, start = 0;
    if (major == 1) {
        header_len = static_cast<uint8_t>(d[8]) | (size_t{static_cast<uint8_t>(d[9])} << 8);
        start = 10;
    } else {
        if (d.size() < 12) bad(source, "truncated .npy header");
        for (int k = 0; k < 4; ++k) header_len |= size_t{static_cast<uint8_t>(d[8 + k])} << (8 * k);
        start = 12;
    }
    if (start + header_len > d.size()) bad(source, "truncated .npy header");
    const Header h = parse_header(d.substr(start, header_len), source);
    if (h.fortran)
        bad(source, "Fortran-order .npy arrays are not supported; save it with np.ascontiguousarray");
    const Element e = element_of(h.descr, source);
    int64_t n = 1;
    for (int64_t dim : h.shape) {
        if (dim != 0 && n > (int64_t{1} << 40) / dim) bad(source, "implausibly large .npy shape");
        n *= dim;
    }
    const size_t data_at = start + header_len;
    const size_t want = static_cast<size_t>(n) * e.bytes;
    if (d.size() - data_at < want)
        bad(source, "truncated .npy data: " + std::to_string(want) + " bytes expected, " +
                        std::to_string(d.size() - data_at) + " present");
    if (d.size() - data_at > want)
        bad(source,
            "the .npy file has " + std::to_string(d.size() - data_at - want) + " bytes after its data");
    const char* p = d.data() + data_at;
    const auto count = static_cast<size_t>(n);
    if (e.kind == 'f' && e.bytes == 8) {
        std::vector<float> f(count);
        for (size_t k = 0; k < count; ++k) {
            double v;
            std::memcpy(&v, p + 8 * k, 8);
            f[k] = static_cast<float>(v);
        }
        return TensorData::from_floats(h.shape, f);
    }
    if ((e.kind == 'i' && e.bytes < 4) || (e.kind == 'u' && e.bytes > 1)) {
        std::vector<int64_t> v(count);
        for (size_t k = 0; k < count; ++k) {
            uint64_t bits = 0;
            std::memcpy(&bits, p + e.bytes * k, e.bytes);
            if (e.kind == 'i') {
                const int shift = 64 - 8 * static_cast<int>(e.bytes);
                v[k] = static_cast<int64_t>(bits << shift) >> shift; // sign-extend
            } else {
                v[k] = static_cast<int64_t>(bits);
            }
        }
        if (e.dtype == DType::i32) {
            std::vector<int32_t> w(v.begin(), v.end());
            return TensorData::from_int32s(h.shape, w);
        }
        return TensorData::from_int64s(h.shape, v);
    }
    std::vector<std::byte> bytes(want);
    if (want) std::memcpy(bytes.data(), p, want); // an empty vector's data() may be null
    if (e.dtype == DType::boolean)
        for (std::byte& b : bytes) b = b != std::byte{0} ? std::byte{1} : std::byte{0};
    return TensorData(e.dtype, h.shape, std::move(bytes));
}

std::string format_npy(const TensorData& t) {
    const char* descr = nullptr;
    switch (t.dtype()) {
    case DType::f32:
        descr = "<f4";
        break;
    case DType::f16:
        descr = "<f2";
        break;
    case DType::i32:
        descr = "<i4";
        break;
    case DType::i64:
        descr = "<i8";
        break;
    case DType::u8:
        descr = "|u1";
        break;
    case DType::boolean:
        descr = "|b1";
        break;
    case DType::f64:
        descr = "<f8";
        break;
    case DType::i8:
        descr = "|i1";
        break;
    case DType::i16:
        descr = "<i2";
        break;
    case DType::u16:
        descr = "<u2";
        break;
    case DType::u32:
        descr = "<u4";
        break;
    case DType::u64:
        descr = "<u8";
        break;
    case DType::undefined:
        throw Error(ErrorCode::InvalidArgument, "write_npy: the tensor has no dtype");
    }
    std::string shape = "(";
    for (int64_t dim : t.dims()) shape += std::to_string(dim) + ", ";
    if (t.dims().size() > 1) shape.resize(shape.size() - 2); // "(3, 4)", but "(3, )" -> "(3,)" below
    if (t.dims().size() == 1) shape.resize(shape.size() - 1);
    shape += ")";
    std::string header =
        std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    // Pad with spaces so the data starts at a multiple of 64 bytes, ending the header with '\n'.
    const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
    header.append(total - 10 - header.size() - 1, ' ');
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>((header.size() >> 8) & 0xff);
    out += header;
    out.append(reinterpret_cast<const char*>(t.bytes().data()), t.bytes().size());
    return out;
}

TensorData read_npy(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(ErrorCode::Io, "'" + path.string() + "': cannot open");
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return parse_npy(bytes, path.string());
}

void write_npy(const std::filesystem::path& path, const TensorData& t) {
    const std::string bytes = format_npy(t);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw Error(ErrorCode::Io, "'" + path.string() + "': cannot write");
}

} // namespace vkml::tool
