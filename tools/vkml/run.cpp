// `vkml run MODEL --input NAME=FILE ... --output-dir DIR`: any model on image or .npy inputs,
// outputs written as .npy (and PNG when they look like images), optionally profiled.
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
#include "run_args.hpp"
#include "vkml/gpu/half.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"

namespace vkml::tool {

namespace fs = std::filesystem;
using graph::DType;
using graph::TensorData;

namespace {

[[noreturn]] void bad_usage(const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, "run: " + what + " (vkml run --help)");
}

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
    if (!h.is_known() || !w.is_known() || h.size > 65536 || w.size > 65536) return {0, 0};
    return {static_cast<int>(w.size), static_cast<int>(h.size)};
}

// A .npy array in the dtype the model input has (floats to floats, integers to integers).
TensorData convert_to(const TensorData& t, DType want, const std::string& source) {
    if (want == DType::undefined || t.dtype() == want) return t;
    const bool src_float = graph::is_float(t.dtype());
    if (src_float == graph::is_float(want) && want != DType::boolean && t.dtype() != DType::boolean)
        return t.converted(want);
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
    const RunArgs r = parse_run_args(args);
    if (r.help) {
        run_usage(stdout);
        return 0;
    }
    if (r.model.empty()) {
        run_usage(stderr);
        return 2;
    }
    const fs::path& model = r.model;
    const fs::path& out_dir = r.out_dir;
    const ImageOptions& io = r.image;
    SessionOptions so = r.session;
    std::vector<std::pair<std::string, fs::path>> input_files = r.inputs;
    const bool profile = r.profile, describe = r.describe;

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
        TensorData t;
        if (is_image(file)) {
            const RgbImage img = read_rgb_image(file);
            t = image_tensor(img, io, wanted_size(v, io.nhwc), v.dtype, file.string());
            const int64_t h = t.dims()[io.nhwc ? 1 : 2], w = t.dims()[io.nhwc ? 2 : 3];
            if (w != img.width || h != img.height)
                std::fprintf(stderr, "vkml run: %s resized from %dx%d to %lldx%lld\n", file.c_str(),
                             img.width, img.height, static_cast<long long>(w), static_cast<long long>(h));
        } else {
            t = convert_to(read_npy(file), v.dtype, file.string());
        }
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
    if (!session.kept_in_f32().empty())
        std::fprintf(stderr, "vkml run: f16 guard: kept in f32: %s\n",
                     to_string(session.kept_in_f32()).c_str());
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
        "%s on %s: session %.1f ms to create, first run %.1f ms (wall, with uploads%s); %zu steps; arena "
        "%.2f MiB, constants %.2f MiB\n",
        model.filename().c_str(), device->caps().device_name.c_str(), ms(t1 - t0), ms(t2 - t1),
        so.f16_guard && !so.fp32 && device->caps().storage16 ? " and the f16 guard's calibration" : "",
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
