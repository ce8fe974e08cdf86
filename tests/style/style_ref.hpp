#pragma once
// A double-precision CPU evaluator for fast-neural-style graphs (the ONNX model zoo's layout):
// Pad (reflect / edge / constant, opset-2 attributes), Conv (any stride, group 1), Instance-
// Normalization, Relu, Add, Mul, and Upsample / Resize nearest by whole scales. Batch 1, NCHW.
// Written from the ONNX operator definitions for the style tests; shares nothing with the runtime.
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkml/graph/graph.hpp"

namespace vkml::test::style_ref {

struct Planes { // [C, H, W]
    int64_t c = 0, h = 0, w = 0;
    std::vector<double> v;
    Planes() = default;
    Planes(int64_t c_, int64_t h_, int64_t w_) : c(c_), h(h_), w(w_), v(size_t(c_ * h_ * w_)) {}
    double& at(int64_t ci, int64_t y, int64_t x) { return v[size_t((ci * h + y) * w + x)]; }
    double at(int64_t ci, int64_t y, int64_t x) const { return v[size_t((ci * h + y) * w + x)]; }
};

// ONNX Pad modes on H and W: reflect mirrors without repeating the edge, edge repeats it.
inline Planes pad(const Planes& x, int64_t top, int64_t left, int64_t bottom, int64_t right,
                  const std::string& mode, double value = 0) {
    Planes out(x.c, x.h + top + bottom, x.w + left + right);
    auto index = [&](int64_t i, int64_t n) -> int64_t {
        if (mode == "edge") return std::clamp<int64_t>(i, 0, n - 1);
        if (n == 1) return 0;
        const int64_t period = 2 * (n - 1); // reflect, also for pads longer than the axis
        i = ((i % period) + period) % period;
        return i < n ? i : period - i;
    };
    for (int64_t c = 0; c < x.c; ++c)
        for (int64_t y = 0; y < out.h; ++y)
            for (int64_t xx = 0; xx < out.w; ++xx) {
                const int64_t sy = y - top, sx = xx - left;
                if (mode == "constant")
                    out.at(c, y, xx) = sy >= 0 && sy < x.h && sx >= 0 && sx < x.w ? x.at(c, sy, sx) : value;
                else
                    out.at(c, y, xx) = x.at(c, index(sy, x.h), index(sx, x.w));
            }
    return out;
}

// weight [O, I, KH, KW]; zero padding `pads` (top, left, bottom, right); stride (sy, sx).
inline Planes conv(const Planes& x, const std::vector<float>& weight, int64_t out_c, int64_t kh, int64_t kw,
                   const std::vector<float>& bias, int64_t sy, int64_t sx,
                   std::vector<int64_t> pads = {0, 0, 0, 0}) {
    const Planes p =
        pads == std::vector<int64_t>{0, 0, 0, 0} ? x : pad(x, pads[0], pads[1], pads[2], pads[3], "constant");
    const int64_t oh = (p.h - kh) / sy + 1, ow = (p.w - kw) / sx + 1;
    Planes out(out_c, oh, ow);
    for (int64_t o = 0; o < out_c; ++o)
        for (int64_t y = 0; y < oh; ++y)
            for (int64_t xx = 0; xx < ow; ++xx) {
                double acc = bias.empty() ? 0.0 : bias[size_t(o)];
                for (int64_t i = 0; i < x.c; ++i)
                    for (int64_t ky = 0; ky < kh; ++ky)
                        for (int64_t kx = 0; kx < kw; ++kx)
                            acc += double(weight[size_t(((o * x.c + i) * kh + ky) * kw + kx)]) *
                                   p.at(i, y * sy + ky, xx * sx + kx);
                out.at(o, y, xx) = acc;
            }
    return out;
}

inline Planes instance_norm(const Planes& x, const std::vector<float>& scale, const std::vector<float>& bias,
                            double epsilon) {
    Planes out(x.c, x.h, x.w);
    const double n = double(x.h * x.w);
    for (int64_t c = 0; c < x.c; ++c) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < x.h * x.w; ++i) mean += x.v[size_t(c * x.h * x.w + i)];
        mean /= n;
        for (int64_t i = 0; i < x.h * x.w; ++i) {
            const double d = x.v[size_t(c * x.h * x.w + i)] - mean;
            var += d * d;
        }
        var /= n;
        const double k = double(scale[size_t(c)]) / std::sqrt(var + epsilon);
        for (int64_t i = 0; i < x.h * x.w; ++i)
            out.v[size_t(c * x.h * x.w + i)] =
                (x.v[size_t(c * x.h * x.w + i)] - mean) * k + double(bias[size_t(c)]);
    }
    return out;
}

inline Planes upsample_nearest(const Planes& x, int64_t fy, int64_t fx) {
    Planes out(x.c, x.h * fy, x.w * fx);
    for (int64_t c = 0; c < x.c; ++c)
        for (int64_t y = 0; y < out.h; ++y)
            for (int64_t xx = 0; xx < out.w; ++xx) out.at(c, y, xx) = x.at(c, y / fy, xx / fx);
    return out;
}

// Evaluates the model's graph (the graph input is `input`) and returns its single output.
inline Planes evaluate(const graph::Graph& g, const Planes& input) {
    using graph::ValueId;
    std::map<ValueId, Planes> vals;
    vals[g.inputs().at(0)] = input;
    auto in = [&](const graph::Node& n, size_t i) -> const Planes& {
        auto it = vals.find(n.inputs.at(i));
        if (it == vals.end())
            throw std::runtime_error(n.name + ": input " + std::to_string(i) + " not computed");
        return it->second;
    };
    auto data = [&](const graph::Node& n, size_t i) { return g.value(n.inputs.at(i)).data->to_floats(); };
    auto is_const = [&](const graph::Node& n, size_t i) {
        return i < n.inputs.size() && n.inputs[i] != graph::no_value && g.value(n.inputs[i]).is_constant();
    };
    for (size_t idx : g.topological_order()) {
        const graph::Node& n = g.nodes()[idx];
        const std::string& op = n.op_type;
        Planes out;
        if (op == "Pad") {
            std::vector<int64_t> p = n.get_ints("pads");
            if (p.empty()) p = g.value(n.inputs.at(1)).data->to_int64s(); // opset 11: pads as an input
            if (p.size() != 8 || p[0] || p[1] || p[4] || p[5])
                throw std::runtime_error(n.name + ": pads not on H, W");
            out = pad(in(n, 0), p[2], p[3], p[6], p[7], n.get_string("mode", "constant"),
                      n.get_float("value", 0.f));
        } else if (op == "Conv") {
            const auto& wv = g.value(n.inputs.at(1));
            const auto ws = *wv.shape->sizes();
            const auto strides = n.get_ints("strides");
            auto pads = n.get_ints("pads");
            if (pads.empty()) pads = {0, 0, 0, 0};
            if (n.get_int("group", 1) != 1) throw std::runtime_error(n.name + ": grouped conv");
            out = conv(in(n, 0), data(n, 1), ws[0], ws[2], ws[3],
                       is_const(n, 2) ? data(n, 2) : std::vector<float>{}, strides.empty() ? 1 : strides[0],
                       strides.empty() ? 1 : strides[1], {pads[0], pads[1], pads[2], pads[3]});
        } else if (op == "InstanceNormalization") {
            out = instance_norm(in(n, 0), data(n, 1), data(n, 2), n.get_float("epsilon", 1e-5f));
        } else if (op == "Relu") {
            out = in(n, 0);
            for (double& v : out.v) v = std::max(v, 0.0);
        } else if (op == "Add" || op == "Mul") {
            out = in(n, 0);
            if (is_const(n, 1)) {
                const auto k = data(n, 1);
                if (k.size() != 1) throw std::runtime_error(n.name + ": only scalar constants");
                for (double& v : out.v) v = op == "Add" ? v + k[0] : v * k[0];
            } else {
                const Planes& b = in(n, 1);
                for (size_t i = 0; i < out.v.size(); ++i)
                    out.v[i] = op == "Add" ? out.v[i] + b.v[i] : out.v[i] * b.v[i];
            }
        } else if (op == "Upsample" || op == "Resize") {
            std::vector<float> s = n.get_floats("scales");
            if (s.empty()) s = data(n, op == "Resize" && n.inputs.size() > 2 ? 2 : 1);
            if (s.size() != 4 || s[0] != 1 || s[1] != 1) throw std::runtime_error(n.name + ": scales");
            out = upsample_nearest(in(n, 0), int64_t(s[2]), int64_t(s[3]));
        } else if (op == "Constant" || op == "Identity") {
            if (op == "Identity") out = in(n, 0);
        } else {
            throw std::runtime_error("style_ref: unsupported op " + op + " (" + n.name + ")");
        }
        vals[n.outputs.at(0)] = std::move(out);
    }
    return vals.at(g.outputs().at(0));
}

} // namespace vkml::test::style_ref
