#include "run_args.hpp"

#include <string_view>

#include "vkml/error.hpp"

namespace vkml::tool {

namespace fs = std::filesystem;

namespace {

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

int64_t parse_int(std::string_view text, const std::string& what, int64_t lo, int64_t hi) {
    long long v = 0;
    try {
        size_t used = 0;
        v = std::stoll(std::string(text), &used);
        if (used != text.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
        bad_usage(what + ": '" + std::string(text) + "' is not an integer");
    }
    if (v < lo || v > hi)
        bad_usage(what + ": " + std::to_string(v) + " is not in " + std::to_string(lo) + ".." +
                  std::to_string(hi));
    return v;
}

} // namespace

void run_usage(FILE* out) {
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
                 "  --precision auto|f16|fp32  float storage (default auto): auto is f16 where the device\n"
                 "                       can, with the f16 guard: the first run is a calibration run (the\n"
                 "                       model step by step in f32 and in f16) that keeps the nodes whose\n"
                 "                       values overflow or underflow f16, and their neighbours, in f32,\n"
                 "                       and reports them; f16 is f16 storage unchecked; fp32 (or f32)\n"
                 "                       every tensor in f32\n"
                 "  --fp32               the same as --precision fp32\n"
                 "  --precision KEY=f32|f16  per node name or op type, e.g. Softmax=f32 (wins over auto)\n"
                 "  --free-dim NAME=SIZE fix a free dimension (e.g. height=64); image inputs fix theirs\n"
                 "  --free-dim-denotation DENOTATION=SIZE  fix the input dimensions the model denotes\n"
                 "                       so (ONNX denotations, e.g. DATA_BATCH=1; case does not matter)\n"
                 "  --no-fuse            skip the fusion passes\n"
                 "  --profile            print per-op GPU times and write DIR/profile.json (Chrome trace)\n"
                 "  --describe           print the lowered steps, barriers and memory plan\n");
}

RunArgs parse_run_args(Args args) {
    RunArgs r;
    r.session.f16_guard = true; // --precision auto
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
            r.help = true;
            return r;
        } else if (a == "--input" || a == "-i") {
            const std::string_view v = value(i, a);
            const size_t eq = v.find('=');
            std::error_code ec;
            if (eq != std::string_view::npos && !fs::exists(std::string(v), ec))
                r.inputs.emplace_back(std::string(v.substr(0, eq)), fs::path(std::string(v.substr(eq + 1))));
            else
                r.inputs.emplace_back("", fs::path(std::string(v)));
        } else if (a == "--output-dir" || a == "-o") {
            r.out_dir = std::string(value(i, a));
        } else if (a == "--fp32") {
            r.session.fp32 = true;
        } else if (a == "--no-fuse") {
            r.session.fuse = false;
        } else if (a == "--profile") {
            r.profile = true;
        } else if (a == "--describe") {
            r.describe = true;
        } else if (a == "--free-dim") {
            const auto [k, v] = key_value(value(i, a), a);
            r.session.free_dims[k] = parse_int(v, "--free-dim " + k, 1, int64_t{1} << 31);
        } else if (a == "--free-dim-denotation") {
            const auto [k, v] = key_value(value(i, a), a);
            r.session.free_dim_denotations[k] =
                parse_int(v, "--free-dim-denotation " + k, 1, int64_t{1} << 31);
        } else if (a == "--precision" && i + 1 < args.size() &&
                   args[i + 1].find('=') == std::string_view::npos) {
            const std::string_view v = value(i, a);
            if (v != "auto" && v != "f16" && v != "fp32" && v != "f32")
                bad_usage("--precision takes auto, f16, fp32 or KEY=f32|f16, not '" + std::string(v) + "'");
            r.session.fp32 = v == "fp32" || v == "f32";
            r.session.f16_guard = v == "auto";
        } else if (a == "--precision") {
            const auto [k, v] = key_value(value(i, a), a);
            if (v != "f32" && v != "f16") bad_usage("--precision " + k + ": f32 or f16, not '" + v + "'");
            r.session.precision[k] = v == "f32" ? Precision::F32 : Precision::F16;
        } else if (a == "--scale") {
            r.image.scale = float_list(value(i, a), "--scale").at(0);
        } else if (a == "--mean") {
            r.image.mean = float_list(value(i, a), "--mean");
        } else if (a == "--std") {
            r.image.std = float_list(value(i, a), "--std");
        } else if (a == "--layout") {
            const std::string_view v = value(i, a);
            if (v != "NCHW" && v != "NHWC") bad_usage("--layout is NCHW or NHWC");
            r.image.nhwc = v == "NHWC";
        } else if (a == "--resize") {
            const std::string v(value(i, a));
            const size_t x = v.find('x');
            if (x == std::string::npos) bad_usage("--resize takes WxH");
            r.image.resize_w =
                static_cast<int>(parse_int(std::string_view(v).substr(0, x), "--resize", 1, 65536));
            r.image.resize_h =
                static_cast<int>(parse_int(std::string_view(v).substr(x + 1), "--resize", 1, 65536));
        } else if (!a.empty() && a[0] == '-') {
            bad_usage("unknown option '" + std::string(a) + "'");
        } else if (r.model.empty()) {
            r.model = std::string(a);
        } else {
            bad_usage("more than one model given ('" + r.model.string() + "', '" + std::string(a) + "')");
        }
    }
    if (!r.model.empty() && r.out_dir.empty()) bad_usage("--output-dir is required");
    return r;
}

} // namespace vkml::tool
