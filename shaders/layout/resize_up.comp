#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "layout/resize_coord.glsl"
// Resize, mode linear, upsampling the last two dimensions by whole factors (KH, KW in 1, 2, 4):
// the input is [PLANES, IH, IW], the output [PLANES, IH * KH, IW * KW]. Each invocation writes a
// run of RUN consecutive outputs (16 bytes: 8 halves or 4 floats; 8 bytes for f16 rows of whole
// 4-runs) in each of SH consecutive output rows, one vector store per row; neighbouring
// invocations write neighbouring runs of the same rows (coalesced stores). The taps are exact (as
// resize_interp.comp works them out). Interpolation is separable: each input row the strip needs
// is loaded and interpolated along the row once, then output rows blend two such rows.
// Output index o = K m + ph (along either axis) has its first tap at input m - 1 or m, in every
// mode this kernel takes, so a strip's SH / KH input bands need input rows m0 - 1 .. m0 + SH / KH,
// and a run input columns c0 - 1 .. c0 + RUN / KW: all loaded before any is used, the middle
// columns as vectors where rows allow. Which of the two taps comes first (the "carry") and the
// second tap's weight:
//   PERIODIC (half_pixel, half_pixel_symmetric, pytorch_half_pixel, asymmetric): fixed per phase
//     ph, constants of the unrolled loops.
//   otherwise (align_corners): o (IN - 1) / (K IN - 1) lies in (o / K - 1, o / K], so its floor
//     is m - 1 or m; from the integer ratio AC_NUM / AC_DEN (below), a compare and a subtraction
//     an output column (row), no division.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint COUNT = 1; // invocations: PLANES * ceil(OH / SH) * OW / RUN
layout(constant_id = 1) const uint CTM = 0;
layout(constant_id = 2) const uint IH = 1;
layout(constant_id = 3) const uint IW = 1;
layout(constant_id = 4) const uint KH = 1;
layout(constant_id = 5) const uint KW = 1;
layout(constant_id = 6) const uint RUN = 8;
layout(constant_id = 7) const bool PERIODIC = true;
// Elements per vector load of the run's middle input columns (4 or 2; they divide RUN / KW and
// IW), or 0 for element loads.
layout(constant_id = 8) const uint VEC_IN = 0;
layout(constant_id = 9) const uint SH = 4; // output rows per invocation, a multiple of KH
// align_corners: the coordinate x (IN - 1) den / (IN num - den) as a reduced ratio of integers,
// x * AC_NUM / AC_DEN (x * AC_NUM below 2^32, AC_DEN below 2^31; the C++ side takes this kernel
// only then): corner_taps tells each tap exactly by integer arithmetic, where resize_coord.glsl's
// float search costs a division and up to four comparisons (and is exact only while its products
// stay below 2^24).
layout(constant_id = 10) const uint AC_NUM_H = 0;
layout(constant_id = 11) const uint AC_DEN_H = 1;
layout(constant_id = 12) const uint AC_NUM_W = 0;
layout(constant_id = 13) const uint AC_DEN_W = 1;
const uint OH = IH * KH, OW = IW * KW;
const uint PER = RUN / KW; // input columns a run covers
#define MAX_RUN 8
#define MAX_COLS 10 // PER + 2
#define MAX_SH 8  // (8 only where KH >= 2)
#define MAX_ROWS 6 // SH / KH + 2

layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 0) readonly buffer Src2 { sfloat2 data[]; } src2;
layout(std430, set = 0, binding = 0) readonly buffer Src4 { sfloat4 data[]; } src4;
layout(std430, set = 0, binding = 1) writeonly buffer Dst16 { uvec4 data[]; } dst16;
layout(std430, set = 0, binding = 1) writeonly buffer Dst4 { sfloat4 data[]; } dst4;

// align_corners: output o of an axis, m = o / K: whether its first tap is m (not m - 1) and the
// second tap's weight. o AC_NUM - (m - 1) AC_DEN lies in [0, 2 AC_DEN) (below 2^32: the C++ side
// keeps AC_DEN below 2^31), so the arithmetic modulo 2^32 is exact.
void corner_taps(uint o, uint m, uint ac_num, uint ac_den, out bool carry, out float w) {
    const uint d = o * ac_num + ac_den - m * ac_den;
    carry = d >= ac_den;
    w = float(carry ? d - ac_den : d) * (1.0 / float(ac_den));
}

float at(uint row, int x) {
    return float(src.data[row + uint(clamp(x, 0, int(IW) - 1))]);
}

// Offset of phase ph's first tap from its band, and the second tap's weight (PERIODIC).
void phase_taps(uint ph, uint k, out int left, out float s) {
    left = 0;
    if (CTM == CTM_ASYMMETRIC) {
        s = float(ph) / float(k);
    } else {
        s = (float(ph) + 0.5) / float(k) - 0.5;
        if (s < 0.0) {
            left = -1;
            s += 1.0;
        }
    }
}

uint row_start(uint plane, int y) {
    return (plane * IH + uint(clamp(y, 0, int(IH) - 1))) * IW;
}

// One run of output row out_row: 16 bytes (f32: RUN 4, one vec4; f16: RUN 8, packed into a uvec4)
// or 8 bytes (f16, RUN 4).
void store_run(uint out_row, uint ox0, float o[MAX_RUN]) {
    const uint at = out_row * OW + ox0;
#if VKML_FP16
    if (RUN == 8) {
        dst16.data[at / 8] = uvec4(packHalf2x16(vec2(o[0], o[1])), packHalf2x16(vec2(o[2], o[3])),
                                   packHalf2x16(vec2(o[4], o[5])), packHalf2x16(vec2(o[6], o[7])));
        return;
    }
#endif
    dst4.data[at / 4] = sfloat4(vec4(o[0], o[1], o[2], o[3]));
    if (RUN == 8) dst4.data[at / 4 + 1] = sfloat4(vec4(o[4], o[5], o[6], o[7]));
}

void main() {
    const uint g = vkml_linear_id();
    if (g >= COUNT) return;
    const uint runs = OW / RUN, strips = (OH + SH - 1) / SH;
    const uint jr = g % runs, t = g / runs;
    const uint strip = t % strips, plane = t / strips;
    const uint ox0 = jr * RUN;
    float o[MAX_RUN];

    const uint bands = SH / KH;
    const int m0 = int(strip * bands); // first input band of the strip
    const int c0 = int(ox0 / KW);      // first input column of the run
    // rows[r][i]: input row m0 - 1 + r, column c0 - 1 + i (both clamped). Every load first.
    float rows[MAX_ROWS][MAX_COLS];
    [[unroll]] for (uint r = 0; r < MAX_ROWS; ++r) {
        if (r >= bands + 2) break;
        const uint row = row_start(plane, m0 - 1 + int(r));
        if (VEC_IN != 0) {
            [[unroll]] for (uint v = 0; v < MAX_COLS - 2; v += VEC_IN) {
                if (v >= PER) break;
                if (VEC_IN == 4) {
                    const vec4 a = vec4(src4.data[(row + uint(c0)) / 4 + v / 4]);
                    [[unroll]] for (uint e = 0; e < 4; ++e) rows[r][1 + v + e] = a[e];
                } else {
                    const vec2 a = vec2(src2.data[(row + uint(c0)) / 2 + v / 2]);
                    rows[r][1 + v] = a.x;
                    rows[r][2 + v] = a.y;
                }
            }
        } else {
            [[unroll]] for (uint i = 1; i < MAX_COLS - 1; ++i) {
                if (i > PER) break;
                rows[r][i] = at(row, c0 - 1 + int(i));
            }
        }
        rows[r][0] = at(row, c0 - 1);
        rows[r][PER + 1] = at(row, c0 + int(PER));
    }
    // Column taps: output column ox0 + p starts at rows[.][p / KW] or, with carry, one further.
    bool cx[MAX_RUN];
    float wx[MAX_RUN];
    [[unroll]] for (uint p = 0; p < MAX_RUN; ++p) {
        if (p >= RUN) break;
        if (PERIODIC) {
            int left;
            phase_taps(p % KW, KW, left, wx[p]);
            cx[p] = left == 0;
        } else {
            corner_taps(ox0 + p, uint(c0) + p / KW, AC_NUM_W, AC_DEN_W, cx[p], wx[p]);
        }
    }
    // Along the rows: h[r][p] is output column ox0 + p of input row m0 - 1 + r.
    float h[MAX_ROWS][MAX_RUN];
    [[unroll]] for (uint r = 0; r < MAX_ROWS; ++r) {
        if (r >= bands + 2) break;
        [[unroll]] for (uint p = 0; p < MAX_RUN; ++p) {
            if (p >= RUN) break;
            // (index PER + 2 only where the carry is never set: the clamp keeps it in range)
            const uint i = p / KW;
            const float a = cx[p] ? rows[r][i + 1] : rows[r][i];
            const float b = cx[p] ? rows[r][min(i + 2, PER + 1)] : rows[r][i + 1];
            h[r][p] = a + wx[p] * (b - a);
        }
    }
    // Across the rows: output row KH * (m0 + band) + ph blends h[band] and h[band + 1], or with
    // carry h[band + 1] and h[band + 2].
    [[unroll]] for (uint q = 0; q < MAX_SH; ++q) {
        if (q >= SH) break;
        const uint band = q / KH;
        if (uint(m0) + band >= IH) break; // the last strip's missing bands
        bool cy;
        float wy;
        if (PERIODIC) {
            int left;
            phase_taps(q % KH, KH, left, wy);
            cy = left == 0;
        } else {
            corner_taps(uint(m0) * KH + q, uint(m0) + band, AC_NUM_H, AC_DEN_H, cy, wy);
        }
        [[unroll]] for (uint p = 0; p < MAX_RUN; ++p) {
            if (p >= RUN) break;
            const float a = cy ? h[band + 1][p] : h[band][p];
            const float b = cy ? h[min(band + 2, bands + 1)][p] : h[band + 1][p];
            o[p] = a + wy * (b - a);
        }
        store_run(plane * OH + uint(m0) * KH + q, ox0, o);
    }
}
