#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "layout/resize_coord.glsl"
// Resize, mode linear, upsampling the last two dimensions by whole factors (KH, KW in 1, 2, 4):
// the input is [PLANES, IH, IW], the output [PLANES, IH * KH, IW * KW]. Each invocation writes RUN
// (4 or 8) consecutive outputs of one output row with vector stores; the row's two taps are worked
// out once (exactly, as resize_interp.comp does).
//   PERIODIC (half_pixel, half_pixel_symmetric, pytorch_half_pixel, asymmetric): output column
//     KW * m + ph samples m + s(ph) with s fixed per phase, so the run's RUN / KW + 2 input
//     columns are loaded once per tap row (the middle ones as one vector where rows allow) and
//     every output's two taps and weights are constants of the unrolled loop.
//   otherwise (align_corners): each output's column taps as resize_interp.comp works them out.
// The C++ side (ml/ops/layout_resize.cpp) picks this kernel where OW is a multiple of RUN and the
// output starts on 16 bytes; resize_interp.comp serves every other case.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint COUNT = 1; // invocations: PLANES * OH * OW / RUN
layout(constant_id = 1) const uint CTM = 0;
layout(constant_id = 2) const uint IH = 1;
layout(constant_id = 3) const uint IW = 1;
layout(constant_id = 4) const uint KH = 1;
layout(constant_id = 5) const uint KW = 1;
layout(constant_id = 6) const float NUM_H = 1.0;
layout(constant_id = 7) const float DEN_H = 1.0;
layout(constant_id = 8) const float NUM_W = 1.0;
layout(constant_id = 9) const float DEN_W = 1.0;
layout(constant_id = 10) const uint RUN = 8;
layout(constant_id = 11) const bool PERIODIC = true;
// Load the run's middle input columns as one vector (RUN / KW a multiple of 4, IW of 4).
layout(constant_id = 12) const bool VEC_IN = false;
const uint OH = IH * KH, OW = IW * KW;
#define MAX_COLS 10 // RUN / KW + 2 with RUN <= 8

layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 0) readonly buffer Src4 { sfloat4 data[]; } src4;
layout(std430, set = 0, binding = 1) writeonly buffer Dst4 { sfloat4 data[]; } dst4;

// Linear taps of one axis: first index (unclamped) and the second tap's weight.
void linear_taps(ResizeCoord c, uint len, out int first, out float t) {
    float v = clamp(resize_value(c), -4.0, float(len) + 4.0);
    first = resize_greatest_ge(c, v, 0.0);
    t = clamp(v - float(first), 0.0, 1.0);
}

float at(uint row, int x) {
    return float(src.data[row + uint(clamp(x, 0, int(IW) - 1))]);
}

void main() {
    const uint g = vkml_linear_id();
    if (g >= COUNT) return;
    const uint runs = OW / RUN;
    const uint jr = g % runs, t = g / runs;
    const uint oy = t % OH, plane = t / OH;
    const uint ox0 = jr * RUN;

    int y0;
    float wy;
    linear_taps(resize_coord(CTM, float(oy), float(IH), float(OH), NUM_H, DEN_H, 0.0, 1.0), IH, y0, wy);
    const uint base = plane * IH * IW;
    const uint row0 = base + uint(clamp(y0, 0, int(IH) - 1)) * IW;
    const uint row1 = base + uint(clamp(y0 + 1, 0, int(IH) - 1)) * IW;

    float o[8];
    if (PERIODIC) {
        const uint per = RUN / KW; // input columns the run covers
        const int m0 = int(ox0 / KW);
        // cols[i] is input column m0 - 1 + i (clamped), blended over the two tap rows.
        float cols[MAX_COLS];
        if (VEC_IN) {
            [[unroll]] for (uint v = 0; v < 2; ++v) {
                if (v * 4 >= per) break;
                const vec4 a = vec4(src4.data[(row0 + uint(m0)) / 4 + v]);
                const vec4 b = vec4(src4.data[(row1 + uint(m0)) / 4 + v]);
                const vec4 blend = a + wy * (b - a);
                [[unroll]] for (uint e = 0; e < 4; ++e) cols[1 + 4 * v + e] = blend[e];
            }
        } else {
            [[unroll]] for (uint i = 1; i < MAX_COLS - 1; ++i) {
                if (i > per) break;
                const float a = at(row0, m0 - 1 + int(i)), b = at(row1, m0 - 1 + int(i));
                cols[i] = a + wy * (b - a);
            }
        }
        {
            const float a = at(row0, m0 - 1), b = at(row1, m0 - 1);
            cols[0] = a + wy * (b - a);
            const float c = at(row0, m0 + int(per)), d = at(row1, m0 + int(per));
            cols[per + 1] = c + wy * (d - c);
        }
        [[unroll]] for (uint p = 0; p < 8; ++p) {
            if (p >= RUN) break;
            const uint q = p / KW, ph = p % KW;
            int left = int(q);
            float s;
            if (CTM == CTM_ASYMMETRIC) {
                s = float(ph) / float(KW);
            } else {
                s = (float(ph) + 0.5) / float(KW) - 0.5;
                if (s < 0.0) {
                    left -= 1;
                    s += 1.0;
                }
            }
            const float a = cols[left + 1], b = cols[left + 2];
            o[p] = a + s * (b - a);
        }
    } else {
        [[unroll]] for (uint p = 0; p < 8; ++p) {
            if (p >= RUN) break;
            int x0;
            float wx;
            linear_taps(resize_coord(CTM, float(ox0 + p), float(IW), float(OW), NUM_W, DEN_W, 0.0, 1.0), IW, x0,
                        wx);
            const float a0 = at(row0, x0), a1 = at(row0, x0 + 1);
            const float b0 = at(row1, x0), b1 = at(row1, x0 + 1);
            const float a = a0 + wx * (a1 - a0), b = b0 + wx * (b1 - b0);
            o[p] = a + wy * (b - a);
        }
    }
    const uint out4 = (t * OW + ox0) / 4;
    dst4.data[out4] = sfloat4(vec4(o[0], o[1], o[2], o[3]));
    if (RUN == 8) dst4.data[out4 + 1] = sfloat4(vec4(o[4], o[5], o[6], o[7]));
}
