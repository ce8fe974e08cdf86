#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// RoiAlign (ml/ops/layout_roi_align.cpp), as ONNX's reference and ONNX Runtime compute it: output
// (r, c, ph, pw) is the average (or, max mode, the largest weighted corner) of a grid of bilinear
// samples in bin (ph, pw) of roi r. Samples beyond [-1, H] x [-1, W] count as 0; coordinates below
// 0 are taken as 0 and the last row/column clamps.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 1) readonly buffer Rois { stype data[]; } rois;
layout(std430, set = 0, binding = 2) readonly buffer Batch { int data[]; } batch;
layout(std430, set = 0, binding = 3) writeonly buffer Y { stype data[]; } y;
layout(push_constant) uniform Params {
    uint count; uint C; uint H; uint W; uint oh; uint ow; uint sampling; uint max_mode; uint N;
    float scale; float offset;
} p;

void main() {
    uint o = vkml_linear_id();
    if (o >= p.count) return;
    uint pw = o % p.ow, ph = (o / p.ow) % p.oh, c = (o / (p.ow * p.oh)) % p.C, r = o / (p.ow * p.oh * p.C);
    int n = batch.data[r];
    if (n < 0 || uint(n) >= p.N) {
        y.data[o] = stype_zero;
        return;
    }
    float x1 = float(rois.data[r * 4u]) * p.scale - p.offset, y1 = float(rois.data[r * 4u + 1u]) * p.scale - p.offset;
    float x2 = float(rois.data[r * 4u + 2u]) * p.scale - p.offset, y2 = float(rois.data[r * 4u + 3u]) * p.scale - p.offset;
    float rw = x2 - x1, rh = y2 - y1;
    if (p.offset == 0.0) { // output_half_pixel (opset 10): at least one pixel
        rw = max(rw, 1.0);
        rh = max(rh, 1.0);
    }
    float bh = rh / float(p.oh), bw = rw / float(p.ow);
    // Adaptive grids are capped at 1024 samples a side, so a huge (or NaN) roi from the data cannot
    // make an invocation loop for minutes.
    float ah = ceil(rh / float(p.oh)), aw = ceil(rw / float(p.ow));
    uint gh = p.sampling > 0u ? p.sampling : (ah >= 1.0 ? uint(min(ah, 1024.0)) : 1u);
    uint gw = p.sampling > 0u ? p.sampling : (aw >= 1.0 ? uint(min(aw, 1024.0)) : 1u);
    const uint plane = (uint(n) * p.C + c) * p.H * p.W;
    float acc = 0.0;
    bool first = true;
    for (uint iy = 0u; iy < gh; ++iy) {
        float yy = y1 + float(ph) * bh + (float(iy) + 0.5) * bh / float(gh);
        for (uint ix = 0u; ix < gw; ++ix) {
            float xx = x1 + float(pw) * bw + (float(ix) + 0.5) * bw / float(gw);
            float v = 0.0;
            if (!(yy < -1.0 || yy > float(p.H) || xx < -1.0 || xx > float(p.W))) {
                float sy = max(yy, 0.0), sx = max(xx, 0.0);
                uint y0 = uint(sy), x0 = uint(sx), y1i, x1i;
                if (y0 >= p.H - 1u) {
                    y0 = y1i = p.H - 1u;
                    sy = float(y0);
                } else {
                    y1i = y0 + 1u;
                }
                if (x0 >= p.W - 1u) {
                    x0 = x1i = p.W - 1u;
                    sx = float(x0);
                } else {
                    x1i = x0 + 1u;
                }
                float ly = sy - float(y0), lx = sx - float(x0), hy = 1.0 - ly, hx = 1.0 - lx;
                float v1 = hy * hx * float(x.data[plane + y0 * p.W + x0]);
                float v2 = hy * lx * float(x.data[plane + y0 * p.W + x1i]);
                float v3 = ly * hx * float(x.data[plane + y1i * p.W + x0]);
                float v4 = ly * lx * float(x.data[plane + y1i * p.W + x1i]);
                v = p.max_mode != 0u ? max(max(v1, v2), max(v3, v4)) : v1 + v2 + v3 + v4;
            }
            if (p.max_mode != 0u) {
                acc = first ? v : max(acc, v);
                first = false;
            } else {
                acc += v;
            }
        }
    }
    y.data[o] = stype(p.max_mode != 0u ? acc : acc / float(gh * gw));
}
