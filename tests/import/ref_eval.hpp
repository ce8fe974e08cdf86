#pragma once
// A naive evaluator for the few operators the importer tests need to check numerically that a
// translated graph computes what the source format means (weight layouts, channel orders). NCHW,
// float, batch 1, no attention to speed. Not shared with any runtime code.
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkml/graph/graph.hpp"

namespace vkml::test {

struct Image { // [C, H, W]
    int64_t c = 0, h = 0, w = 0;
    std::vector<float> v;
    float& at(int64_t ci, int64_t y, int64_t x) { return v[static_cast<size_t>((ci * h + y) * w + x)]; }
    float get(int64_t ci, int64_t y, int64_t x) const {
        if (y < 0 || x < 0 || y >= h || x >= w) return 0.f; // zero padding
        return v[static_cast<size_t>((ci * h + y) * w + x)];
    }
    static Image zeros(int64_t c, int64_t h, int64_t w) {
        return {c, h, w, std::vector<float>(static_cast<size_t>(c * h * w))};
    }
};

// Bilinear resize by 2 with half-pixel centres and edge clamping (ONNX Resize linear half_pixel).
inline Image upscale2_linear(const Image& in) {
    Image out = Image::zeros(in.c, in.h * 2, in.w * 2);
    auto coord = [](int64_t o, int64_t n, int64_t& i0, int64_t& i1, float& f) {
        float s = (static_cast<float>(o) + 0.5f) / 2.f - 0.5f;
        s = std::max(0.f, std::min(s, static_cast<float>(n - 1)));
        i0 = static_cast<int64_t>(std::floor(s));
        i1 = std::min(i0 + 1, n - 1);
        f = s - static_cast<float>(i0);
    };
    for (int64_t c = 0; c < in.c; ++c)
        for (int64_t y = 0; y < out.h; ++y)
            for (int64_t x = 0; x < out.w; ++x) {
                int64_t y0, y1, x0, x1;
                float fy, fx;
                coord(y, in.h, y0, y1, fy);
                coord(x, in.w, x0, x1, fx);
                const float top = in.get(c, y0, x0) * (1 - fx) + in.get(c, y0, x1) * fx;
                const float bot = in.get(c, y1, x0) * (1 - fx) + in.get(c, y1, x1) * fx;
                out.at(c, y, x) = top * (1 - fy) + bot * fy;
            }
    return out;
}

// Evaluates `g` on one input; supports Conv (stride 1, group 1), Relu, Neg, Concat (axis 1),
// DepthToSpace, Resize (x2 linear half_pixel; nearest by whole scales), Add (with channel
// broadcast), Slice (axis 1), Mul.
inline Image evaluate(const graph::Graph& g, const Image& input) {
    using namespace graph;
    std::map<ValueId, Image> vals;
    vals[g.inputs().at(0)] = input;
    auto in = [&](const Node& n, size_t i) -> const Image& { return vals.at(n.inputs.at(i)); };
    auto data = [&](const Node& n, size_t i) { return g.value(n.inputs.at(i)).data->to_floats(); };
    for (const Node& n : g.nodes()) {
        Image out;
        if (n.op_type == "Conv") {
            const Image& x = in(n, 0);
            const auto& wd = g.value(n.inputs[1]).data->dims();
            const auto w = data(n, 1);
            const auto b =
                n.inputs.size() > 2 ? data(n, 2) : std::vector<float>(static_cast<size_t>(wd[0]), 0.f);
            const auto pads = n.get_ints("pads", {0, 0, 0, 0});
            const int64_t kh = wd[2], kw = wd[3];
            out = Image::zeros(wd[0], x.h + pads[0] + pads[2] - kh + 1, x.w + pads[1] + pads[3] - kw + 1);
            for (int64_t o = 0; o < wd[0]; ++o)
                for (int64_t y = 0; y < out.h; ++y)
                    for (int64_t xx = 0; xx < out.w; ++xx) {
                        double acc = b[static_cast<size_t>(o)];
                        for (int64_t c = 0; c < wd[1]; ++c)
                            for (int64_t ky = 0; ky < kh; ++ky)
                                for (int64_t kx = 0; kx < kw; ++kx)
                                    acc += w[static_cast<size_t>(((o * wd[1] + c) * kh + ky) * kw + kx)] *
                                           x.get(c, y + ky - pads[0], xx + kx - pads[1]);
                        out.at(o, y, xx) = static_cast<float>(acc);
                    }
        } else if (n.op_type == "Relu" || n.op_type == "Neg") {
            out = in(n, 0);
            for (float& f : out.v) f = n.op_type == "Relu" ? std::max(f, 0.f) : -f;
        } else if (n.op_type == "Concat") {
            out = in(n, 0);
            for (size_t i = 1; i < n.inputs.size(); ++i) {
                out.v.insert(out.v.end(), in(n, i).v.begin(), in(n, i).v.end());
                out.c += in(n, i).c;
            }
        } else if (n.op_type == "DepthToSpace") {
            const Image& x = in(n, 0);
            const int64_t bs = n.get_int("blocksize", 0), oc = x.c / (bs * bs);
            const bool crd = n.get_string("mode", "DCR") == "CRD";
            out = Image::zeros(oc, x.h * bs, x.w * bs);
            for (int64_t c = 0; c < oc; ++c)
                for (int64_t y = 0; y < out.h; ++y)
                    for (int64_t xx = 0; xx < out.w; ++xx) {
                        const int64_t a = y % bs, bb = xx % bs;
                        const int64_t src = crd ? c * bs * bs + a * bs + bb : (a * bs + bb) * oc + c;
                        out.at(c, y, xx) = x.get(src, y / bs, xx / bs);
                    }
        } else if (n.op_type == "Resize" && n.get_string("mode", "nearest") == "linear") {
            out = upscale2_linear(in(n, 0)); // the only linear resize the tests need
        } else if (n.op_type == "Resize") {  // nearest, asymmetric, floor: whole-number scales repeat pixels
            const Image& x = in(n, 0);
            const auto scales = data(n, 2);
            const auto sy = static_cast<int64_t>(scales.at(2)), sx = static_cast<int64_t>(scales.at(3));
            out = Image::zeros(x.c, x.h * sy, x.w * sx);
            for (int64_t c = 0; c < x.c; ++c)
                for (int64_t y = 0; y < out.h; ++y)
                    for (int64_t xx = 0; xx < out.w; ++xx) out.at(c, y, xx) = x.get(c, y / sy, xx / sx);
        } else if (n.op_type == "Add" || n.op_type == "Mul") {
            const Image& a = in(n, 0);
            const bool b_const = g.value(n.inputs[1]).is_constant();
            const Image b = b_const ? Image{1, 1, 1, data(n, 1)} : in(n, 1);
            out = a;
            for (int64_t c = 0; c < a.c; ++c)
                for (int64_t y = 0; y < a.h; ++y)
                    for (int64_t x = 0; x < a.w; ++x) {
                        const float bv = b_const ? b.v[0] : b.get(b.c == 1 ? 0 : c, y, x);
                        out.at(c, y, x) = n.op_type == "Add" ? a.get(c, y, x) + bv : a.get(c, y, x) * bv;
                    }
        } else if (n.op_type == "Slice") {
            const Image& x = in(n, 0);
            const int64_t s = g.value(n.inputs[1]).data->to_int64s()[0],
                          e = g.value(n.inputs[2]).data->to_int64s()[0];
            out = Image::zeros(e - s, x.h, x.w);
            out.v.assign(x.v.begin() + s * x.h * x.w, x.v.begin() + e * x.h * x.w);
        } else {
            throw std::runtime_error("ref_eval: no reference for " + n.op_type);
        }
        vals[n.outputs.at(0)] = std::move(out);
    }
    return vals.at(g.outputs().at(0));
}

} // namespace vkml::test
