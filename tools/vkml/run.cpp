// `vkml run MODEL --input NAME=FILE ... --output-dir DIR`: any model on image or .npy inputs,
// outputs written as .npy (and PNG when they look like images), optionally profiled.
#include <stb_image.h>
#include <stb_image_resize.h>
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "npy.hpp"
#include "vkml/gpu/half.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"

namespace vkml::tool {

namespace fs = std::filesystem;
using graph::DType;
using graph::TensorData;

namespace {

void usage(FILE* out) {
    std::fprintf(out,
                 "usage: vkml run MODEL [--input [NAME=]FILE]... --output-dir DIR [options]\n\n"
                 "Runs MODEL (ONNX, TF.js model.json, Anime4K JSON) on the inputs and writes every output\n"
                 "as DIR/<name>.npy, and as DIR/<name>.png when it is image-shaped (1 x 1|3|4 x H x W).\n\n"
                 "inputs: FILE is a .npy array (converted to the input's dtype), or a PNG/JPEG image\n"
                 "  that becomes (pixel / 255 * scale - mean) / std per channel, RGB:\n"
                 "  --scale S            pixel multiplier after /255 (default 1; 255 for 0..255 models)\n"
                 "  --mean A[,B,C]       per-channel mean (default 0)\n"
                 "  --std A[,B,C]        per-channel std (default 1)\n"
                 "  --layout NCHW|NHWC   the image tensor's layout (default NCHW)\n"
                 "  --resize WxH         resize images first (default: the model's size, else as is)\n"
                 "  NAME may be left out when the model has one input.\n\n"
                 "options:\n"
                 "  --fp32               store every tensor in f32 (default: f16 where the device can)\n"
                 "  --precision KEY=f32|f16  per node name or op type, e.g. Softmax=f32\n"
                 "  --free-dim NAME=SIZE fix a free dimension (e.g. height=64); image inputs fix theirs\n"
                 "  --no-fuse            skip the fusion passes\n"
                 "  --profile            print per-op GPU times and write DIR/profile.json (Chrome trace)\n"
                 "  --describe           print the lowered steps, barriers and memory plan\n");
}

[[noreturn]] void bad_usage(const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, "run: " + what + " (vkml run --help)");
}

std::vector<float> float_list(std::string_view text, const char* option) {
    std::vector<float> v;
    std::string s(text);
    size_t p = 0;
    while (p <= s.size()) {
        const size_t c = s.find(',', p);
        const std::string item = s.substr(p, c == std::string::npos ? std::string::npos : c - p);
        try {
            size_t used = 0;
            v.push_back(std::stof(item, &used));
            if (used != item.size()) throw std::invalid_argument(item);
        } catch (const std::exception&) {
            bad_usage(std::string(option) + ": '" + item + "' is not a number");
        }
        if (c == std::string::npos) break;
        p = c + 1;
    }
    if (v.size() != 1 && v.size() != 3) bad_usage(std::string(option) + " takes 1 or 3 values");
    return v;
}

int64_t parse_int(std::string_view text, const std::string& what) {
    try {
        size_t used = 0;
        const long long v = std::stoll(std::string(text), &used);
        if (used != text.size()) throw std::invalid_argument("");
        return v;
    } catch (const std::exception&) {
        bad_usage(what + ": '" + std::string(text) + "' is not an integer");
    }
}

struct ImageOptions {
    float scale = 1.f;
    std::vector<float> mean{0.f}, std{1.f};
    bool nhwc = false;
    int resize_w = 0, resize_h = 0;
    float channel(const std::vector<float>& v, size_t c) const { return v.size() == 1 ? v[0] : v[c]; }
};

bool is_image(const fs::path& p) {
    std::string e = p.extension().string();
    std::transform(e.begin(), e.end(), e.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return e == ".png" || e == ".jpg" || e == ".jpeg";
}

// The image's size a model input wants: its static H and W, if any.
std::pair<int, int> wanted_size(const graph::Value& v, bool nhwc) {
    if (!v.shape || v.shape->rank() != 4) return {0, 0};
    const auto& d = v.shape->dims();
    const graph::Dim &h = d[nhwc ? 1 : 2], &w = d[nhwc ? 2 : 3];
    if (!h.is_known() || !w.is_known()) return {0, 0};
    return {static_cast<int>(w.size), static_cast<int>(h.size)};
}

TensorData load_image(const fs::path& path, const ImageOptions& o, std::pair<int, int> model_size,
                      DType dtype) {
    int w = 0, h = 0, c = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load(path.c_str(), &w, &h, &c, 3), stbi_image_free);
    if (!px)
        throw Error(ErrorCode::Io,
                    "'" + path.string() + "': cannot read the image: " + stbi_failure_reason());
    int tw = o.resize_w ? o.resize_w : model_size.first, th = o.resize_h ? o.resize_h : model_size.second;
    std::vector<uint8_t> pixels(px.get(), px.get() + static_cast<size_t>(w) * h * 3);
    if (tw && th && (tw != w || th != h)) {
        std::vector<uint8_t> resized(static_cast<size_t>(tw) * th * 3);
        if (!stbir_resize_uint8(pixels.data(), w, h, 0, resized.data(), tw, th, 0, 3))
            throw Error(ErrorCode::Generic, "'" + path.string() + "': resizing failed");
        std::fprintf(stderr, "vkml run: %s resized from %dx%d to %dx%d\n", path.c_str(), w, h, tw, th);
        pixels = std::move(resized);
        w = tw;
        h = th;
    }
    const size_t plane = static_cast<size_t>(w) * h;
    std::vector<float> v(plane * 3);
    for (size_t i = 0; i < plane; ++i)
        for (size_t ch = 0; ch < 3; ++ch) {
            const float x =
                (pixels[i * 3 + ch] / 255.f * o.scale - o.channel(o.mean, ch)) / o.channel(o.std, ch);
            v[o.nhwc ? i * 3 + ch : ch * plane + i] = x;
        }
    const std::vector<int64_t> dims =
        o.nhwc ? std::vector<int64_t>{1, h, w, 3} : std::vector<int64_t>{1, 3, h, w};
    if (dtype == DType::f16) {
        std::vector<uint16_t> half(v.size());
        gpu::floats_to_halves(v, half);
        return TensorData::from_halves(dims, half);
    }
    if (dtype != DType::f32 && dtype != DType::undefined)
        throw Error(ErrorCode::InvalidArgument, "'" + path.string() + "': the model input is " +
                                                    graph::dtype_name(dtype) +
                                                    "; images feed float inputs only");
    return TensorData::from_floats(dims, v);
}

// A .npy array in the dtype the model input has (floats to floats, integers to integers).
TensorData convert_to(const TensorData& t, DType want, const std::string& source) {
    if (want == DType::undefined || t.dtype() == want) return t;
    const bool src_float = t.dtype() == DType::f32 || t.dtype() == DType::f16;
    if (want == DType::f32 && src_float) return TensorData::from_floats(t.dims(), t.to_floats());
    if (want == DType::f16 && src_float) {
        const auto f = t.to_floats();
        std::vector<uint16_t> h(f.size());
        gpu::floats_to_halves(f, h);
        return TensorData::from_halves(t.dims(), h);
    }
    if (!src_float && want == DType::i64) return TensorData::from_int64s(t.dims(), t.to_int64s());
    if (!src_float && want == DType::i32) {
        const auto v = t.to_int64s();
        return TensorData::from_int32s(t.dims(), std::vector<int32_t>(v.begin(), v.end()));
    }
    throw Error(ErrorCode::InvalidArgument, "'" + source + "' holds " + graph::dtype_name(t.dtype()) +
                                                " values, the model input is " + graph::dtype_name(want));
}

std::string file_name(std::string name) {
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
    return name.empty() ? "output" : name;
}

// PNG of an image-shaped output: [1, C, H, W] (or [1, H, W, C] with --layout NHWC), C = 1, 3 or 4,
// with the input transform undone.
bool write_png(const fs::path& path, const TensorData& t, const ImageOptions& o) {
    const auto& d = t.dims();
    if (d.size() != 4 || d[0] != 1 || (t.dtype() != DType::f32 && t.dtype() != DType::f16)) return false;
    const int64_t c = o.nhwc ? d[3] : d[1], h = o.nhwc ? d[1] : d[2], w = o.nhwc ? d[2] : d[3];
    if (c != 1 && c != 3 && c != 4) return false;
    const auto v = t.to_floats();
    const size_t plane = static_cast<size_t>(h * w);
    std::vector<uint8_t> px(plane * static_cast<size_t>(c));
    for (size_t i = 0; i < plane; ++i)
        for (size_t ch = 0; ch < static_cast<size_t>(c); ++ch) {
            const float x = v[o.nhwc ? i * static_cast<size_t>(c) + ch : ch * plane + i];
            const size_t k = std::min<size_t>(ch, 2);
            const float p = (x * o.channel(o.std, k) + o.channel(o.mean, k)) / o.scale;
            px[i * static_cast<size_t>(c) + ch] =
                static_cast<uint8_t>(std::lround(std::clamp(p, 0.f, 1.f) * 255.f));
        }
    return stbi_write_png(path.c_str(), static_cast<int>(w), static_cast<int>(h), static_cast<int>(c),
                          px.data(), static_cast<int>(w * c)) != 0;
}

} // namespace

int run_main(Args args) {
    fs::path model, out_dir;
    std::vector<std::pair<std::string, fs::path>> input_files;
    SessionOptions so;
    ImageOptions io;
    bool profile = false, describe = false;
    auto value = [&](size_t& i, std::string_view opt) -> std::string_view {
        if (i + 1 >= args.size()) bad_usage(std::string(opt) + " needs a value");
        return args[++i];
    };
    auto key_value = [&](std::string_view kv, std::string_view opt) {
        const size_t eq = kv.find('=');
        if (eq == std::string_view::npos || eq == 0) bad_usage(std::string(opt) + " takes NAME=VALUE");
        return std::make_pair(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    };
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        } else if (a == "--input" || a == "-i") {
            const std::string_view v = value(i, a);
            const size_t eq = v.find('=');
            if (eq != std::string_view::npos && !fs::exists(std::string(v)))
                input_files.emplace_back(std::string(v.substr(0, eq)),
                                         fs::path(std::string(v.substr(eq + 1))));
            else
                input_files.emplace_back("", fs::path(std::string(v)));
        } else if (a == "--output-dir" || a == "-o") {
            out_dir = std::string(value(i, a));
        } else if (a == "--fp32") {
            so.fp32 = true;
        } else if (a == "--no-fuse") {
            so.fuse = false;
        } else if (a == "--profile") {
            profile = true;
        } else if (a == "--describe") {
            describe = true;
        } else if (a == "--free-dim") {
            const auto [k, v] = key_value(value(i, a), a);
            so.free_dims[k] = parse_int(v, "--free-dim " + k);
        } else if (a == "--precision") {
            const auto [k, v] = key_value(value(i, a), a);
            if (v != "f32" && v != "f16") bad_usage("--precision " + k + ": f32 or f16, not '" + v + "'");
            so.precision[k] = v == "f32" ? Precision::F32 : Precision::F16;
        } else if (a == "--scale") {
            io.scale = float_list(value(i, a), "--scale").at(0);
        } else if (a == "--mean") {
            io.mean = float_list(value(i, a), "--mean");
        } else if (a == "--std") {
            io.std = float_list(value(i, a), "--std");
        } else if (a == "--layout") {
            const std::string_view v = value(i, a);
            if (v != "NCHW" && v != "NHWC") bad_usage("--layout is NCHW or NHWC");
            io.nhwc = v == "NHWC";
        } else if (a == "--resize") {
            const std::string v(value(i, a));
            const size_t x = v.find('x');
            if (x == std::string::npos) bad_usage("--resize takes WxH");
            io.resize_w = static_cast<int>(parse_int(std::string_view(v).substr(0, x), "--resize"));
            io.resize_h = static_cast<int>(parse_int(std::string_view(v).substr(x + 1), "--resize"));
            if (io.resize_w < 1 || io.resize_h < 1) bad_usage("--resize needs positive sizes");
        } else if (!a.empty() && a[0] == '-') {
            bad_usage("unknown option '" + std::string(a) + "'");
        } else if (model.empty()) {
            model = std::string(a);
        } else {
            bad_usage("more than one model given ('" + model.string() + "', '" + std::string(a) + "')");
        }
    }
    if (model.empty()) {
        usage(stderr);
        return 2;
    }
    if (out_dir.empty()) bad_usage("--output-dir is required");

    graph::Graph g = import::load_model(model);
    // Name each input file; image inputs fix the free dimensions of theirs.
    std::map<std::string, TensorData, std::less<>> data;
    for (auto& [name, file] : input_files) {
        if (name.empty()) {
            if (g.inputs().size() != 1)
                bad_usage("the model has " + std::to_string(g.inputs().size()) +
                          " inputs: use --input NAME=FILE");
            name = g.value(g.inputs()[0]).name;
        }
        const graph::ValueId id = g.find(name);
        if (id == graph::no_value ||
            std::find(g.inputs().begin(), g.inputs().end(), id) == g.inputs().end()) {
            std::string names;
            for (graph::ValueId v : g.inputs()) names += (names.empty() ? "" : ", ") + g.value(v).name;
            bad_usage("the model has no input '" + name + "' (its inputs: " + names + ")");
        }
        const graph::Value& v = g.value(id);
        TensorData t = is_image(file) ? load_image(file, io, wanted_size(v, io.nhwc), v.dtype)
                                      : convert_to(read_npy(file), v.dtype, file.string());
        so.input_shapes[name] = t.dims();
        data.insert_or_assign(name, std::move(t));
    }
    auto device = gpu::Device::create();
    const auto t0 = std::chrono::steady_clock::now();
    Session session(*device, g, so);
    const auto t1 = std::chrono::steady_clock::now();
    if (describe) std::fputs(session.describe().c_str(), stdout);
    std::vector<TensorData> inputs;
    for (const TensorInfo& t : session.inputs()) {
        auto it = data.find(t.name);
        if (it == data.end()) bad_usage("no --input for the model's input '" + t.name + "'");
        inputs.push_back(it->second);
    }
    const auto outputs = session.run(inputs);
    const auto t2 = std::chrono::steady_clock::now();
    fs::create_directories(out_dir);
    for (size_t j = 0; j < outputs.size(); ++j) {
        const std::string base = file_name(session.outputs()[j].name);
        write_npy(out_dir / (base + ".npy"), outputs[j]);
        const bool png = write_png(out_dir / (base + ".png"), outputs[j], io);
        std::printf("%s: %s -> %s%s\n", session.outputs()[j].name.c_str(),
                    graph::describe(outputs[j]).c_str(), (out_dir / (base + ".npy")).c_str(),
                    png ? (", " + base + ".png").c_str() : "");
    }
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    const SessionMemory m = session.memory();
    std::printf(
        "%s on %s: session %.1f ms to create, first run %.1f ms (wall, with uploads); %zu steps; arena "
        "%.2f MiB, constants %.2f MiB\n",
        model.filename().c_str(), device->caps().device_name.c_str(), ms(t1 - t0), ms(t2 - t1),
        session.steps().size(), static_cast<double>(m.arena) / (1 << 20),
        static_cast<double>(m.constants) / (1 << 20));
    if (profile) {
        const SessionProfile p = session.profile(inputs);
        std::fputs(p.table().c_str(), stdout);
        const fs::path trace = out_dir / "profile.json";
        std::ofstream(trace) << p.chrome_trace();
        std::printf("Chrome trace: %s (chrome://tracing or ui.perfetto.dev)\n", trace.c_str());
    }
    return 0;
}

} // namespace vkml::tool
