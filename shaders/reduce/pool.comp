#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce/util.glsl"
// 2-D pooling of an NCHW input, one invocation per output element. The kernel size is a
// specialization constant so the window loops are unrolled; the host resolves auto_pad and
// ceil_mode into begin pads and output sizes. A tap at padded position (h, w) reads the input
// when 0 <= h < H and 0 <= w < W; padding taps (h < H + pad_bottom, w < W + pad_right) count in
// AveragePool's divisor only with count_include_pad; taps past the padding (ceil_mode) never do.
// POOL_INDICES=1 also writes MaxPool's Indices output (i64 as (index, 0) word pairs).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint KIND = 0; // 0 max, 1 average, 2 Lp
layout(constant_id = 1) const int KH = 1;
layout(constant_id = 2) const int KW = 1;
layout(constant_id = 3) const uint COUNT_INCLUDE_PAD = 0;
layout(constant_id = 4) const uint STORAGE_ORDER = 0; // Indices: 0 row-major, 1 column-major planes

layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Out { sfloat data[]; } dst;
#if POOL_INDICES
layout(std430, set = 0, binding = 2) writeonly buffer Indices { uint data[]; } indices;
#endif
layout(push_constant) uniform Params {
    uint total; // N * C * OH * OW
    uint h, w, oh, ow;
    int stride_h, stride_w, pad_top, pad_left, dil_h, dil_w;
    int padded_h, padded_w; // H + pad_bottom, W + pad_right
    float p;
} pc;

void main() {
    const uint o = vkml_linear_id();
    if (o >= pc.total) return;
    const uint ox = o % pc.ow;
    const uint t = o / pc.ow;
    const uint oy = t % pc.oh;
    const uint nc = t / pc.oh;
    const int y0 = int(oy) * pc.stride_h - pc.pad_top;
    const int x0 = int(ox) * pc.stride_w - pc.pad_left;
    const int H = int(pc.h), W = int(pc.w);
    const uint plane = nc * pc.h * pc.w;

    float acc = KIND == 0 ? -reduce_inf() : 0.0;
    uint best = 0;
    uint count = 0;
    for (int ky = 0; ky < KH; ++ky) {
        const int y = y0 + ky * pc.dil_h;
        const bool y_in = y >= 0 && y < H;
        for (int kx = 0; kx < KW; ++kx) {
            const int x = x0 + kx * pc.dil_w;
            const bool x_in = x >= 0 && x < W;
            if (y_in && x_in) {
                const float v = float(src.data[plane + uint(y * W + x)]);
                if (KIND == 0) {
                    if (v > acc) { // strict: the first maximum in window order wins
                        acc = v;
                        best = STORAGE_ORDER == 0 ? plane + uint(y * W + x) : plane + uint(x * H + y);
                    }
                } else if (KIND == 1) {
                    acc += v;
                } else {
                    const float a = abs(v);
                    acc += pc.p == 2.0 ? a * a : (pc.p == 1.0 ? a : pow(a, pc.p));
                }
            }
            if (COUNT_INCLUDE_PAD != 0 ? (y < pc.padded_h && x < pc.padded_w) : (y_in && x_in)) ++count;
        }
    }
    float result = acc;
    if (KIND == 1)
        result = acc / float(count);
    else if (KIND == 2)
        result = pc.p == 2.0 ? sqrt(acc) : (pc.p == 1.0 ? acc : pow(acc, 1.0 / pc.p));
    dst.data[o] = sfloat(result);
#if POOL_INDICES
    indices.data[2 * o] = best;
    indices.data[2 * o + 1] = 0u;
#endif
}
