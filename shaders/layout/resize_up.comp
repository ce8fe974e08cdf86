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
//   PERIODIC (half_pixel, half_pixel_symmetric, pytorch_half_pixel, asymmetric): output index
//     K * m + ph samples m + s(ph) with s fixed per phase along both axes, so the strip's SH / KH
//     input bands need input rows m0 - 1 .. m0 + SH / KH, all loaded before any is used, each as
//     the run's RUN / KW + 2 input columns (the middle ones as vectors where rows allow); every
//     output's taps and weights are constants of the unrolled loops.
//   otherwise (align_corners): each output column's taps from the integer ratio AC_NUM / AC_DEN
//     (below), once per invocation; the run's WIN input columns of each of the CROWS input rows
//     the strip taps are all loaded first, each row interpolated along the run once, and every
//     output row blends the two its taps select. (Rows loaded as the walk down the input reached
//     them, two or three rounds of memory latency: x2 3ch 960x540 f16 took 9.7 us on an H200
//     against 7.6 us for half_pixel.)
// The C++ side (ml/ops/layout_resize.cpp) picks this kernel where OW is a multiple of RUN and the
// tensors start on 16 bytes; resize_interp.comp serves every other case.
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
// x * AC_NUM / AC_DEN (x * AC_NUM below 2^32; the C++ side takes this kernel only then): each tap
// an exact integer division by a constant, where resize_coord.glsl's float search costs a
// division and up to four comparisons (and is exact only while its products stay below 2^24).
layout(constant_id = 10) const uint AC_NUM_H = 0;
layout(constant_id = 11) const uint AC_DEN_H = 1;
layout(constant_id = 12) const uint AC_NUM_W = 0;
layout(constant_id = 13) const uint AC_DEN_W = 1;
const uint OH = IH * KH, OW = IW * KW;
const uint PER = RUN / KW; // input columns a run covers (PERIODIC)
#define MAX_RUN 8
#define MAX_COLS 10 // PER + 2
#define MAX_SH 4
#define MAX_ROWS 6 // SH / KH + 2

layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 0) readonly buffer Src2 { sfloat2 data[]; } src2;
layout(std430, set = 0, binding = 0) readonly buffer Src4 { sfloat4 data[]; } src4;
layout(std430, set = 0, binding = 1) writeonly buffer Dst16 { uvec4 data[]; } dst16;
layout(std430, set = 0, binding = 1) writeonly buffer Dst4 { sfloat4 data[]; } dst4;

// align_corners taps of consecutive output indices on an axis: x * AC_NUM / AC_DEN as the first
// tap and the remainder (the second tap's weight, times AC_DEN). One division for the first index
// of a run; each next index adds AC_NUM to the remainder, carrying at most one (AC_NUM <= AC_DEN:
// the factors are 1, 2 or 4), so a run's taps cost an add and a compare each. (A division a tap:
// x2 3ch 960x540 f16 took 9.9 us on an H200, against 7.4 us for half_pixel's constant taps.)
struct CornerTap {
    int first;
    uint rem;
};

CornerTap corner_tap(uint x, uint ac_num, uint ac_den) {
    const uint n = x * ac_num;
    return CornerTap(int(n / ac_den), n % ac_den);
}

CornerTap corner_next(CornerTap t, uint ac_num, uint ac_den) {
    t.rem += ac_num;
    if (t.rem >= ac_den) {
        t.rem -= ac_den;
        t.first += 1;
    }
    return t;
}

float corner_weight(CornerTap t, uint ac_den) {
    return float(t.rem) * (1.0 / float(ac_den));
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

// align_corners: the run's input columns x0[0] .. x0[0] + WIN - 1 (clamped) of every input row the
// strip needs. The taps are exact and rise by at most ceil((RUN - 1) / KW) over the run (the step
// of an upsampling by KW is at most 1 / KW), so WIN columns hold every column tap; likewise the
// strip's SH output rows tap at most CROWS consecutive input rows.
const uint WIN = (RUN + KW - 2) / KW + 2;
const uint CROWS = (SH + KH - 2) / KH + 2;

// Output column p's two taps from a row's window (d: the first tap's offset in it).
float along_window(float win[MAX_COLS], int d, float wx) {
    float a = win[0], b = win[1];
    [[unroll]] for (uint j = 1; j + 1 < MAX_COLS; ++j) {
        if (j + 1 >= WIN) break;
        if (d == int(j)) {
            a = win[j];
            b = win[j + 1];
        }
    }
    return a + wx * (b - a);
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

    if (PERIODIC) {
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
        // Along the rows: h[r][p] is output column ox0 + p of input row m0 - 1 + r.
        float h[MAX_ROWS][MAX_RUN];
        [[unroll]] for (uint r = 0; r < MAX_ROWS; ++r) {
            if (r >= bands + 2) break;
            [[unroll]] for (uint p = 0; p < MAX_RUN; ++p) {
                if (p >= RUN) break;
                int left;
                float s;
                phase_taps(p % KW, KW, left, s);
                const uint i = uint(int(p / KW) + left + 1);
                const float a = rows[r][i], b = rows[r][i + 1];
                h[r][p] = a + s * (b - a);
            }
        }
        // Across the rows: output row KH * m + ph blends rows m + left and m + left + 1.
        [[unroll]] for (uint q = 0; q < MAX_SH; ++q) {
            if (q >= SH) break;
            const uint band = q / KH, ph = q % KH;
            if (uint(m0) + band >= IH) break; // the last strip's missing bands
            int left;
            float s;
            phase_taps(ph, KH, left, s);
            const uint r = uint(int(band) + left + 1);
            [[unroll]] for (uint p = 0; p < MAX_RUN; ++p) {
                if (p >= RUN) break;
                o[p] = h[r][p] + s * (h[r + 1][p] - h[r][p]);
            }
            store_run(plane * OH + uint(m0) * KH + q, ox0, o);
        }
        return;
    }

    // Column taps, the same for every row.
    int x0[MAX_RUN];
    float wx[MAX_RUN];
    CornerTap tx = corner_tap(ox0, AC_NUM_W, AC_DEN_W);
    [[unroll]] for (uint p = 0; p < MAX_RUN; ++p) {
        if (p >= RUN) break;
        if (p > 0) tx = corner_next(tx, AC_NUM_W, AC_DEN_W);
        x0[p] = tx.first;
        wx[p] = corner_weight(tx, AC_DEN_W);
    }
    // Every input row the strip taps (y0 .. y0 + CROWS - 1, clamped), its window loaded before any
    // is used (one round of memory latency, as in the periodic path), then interpolated along the
    // row once: h[r][p] is output column ox0 + p of input row y0 + r.
    CornerTap ty = corner_tap(strip * SH, AC_NUM_H, AC_DEN_H);
    const int y0 = ty.first;
    float win[MAX_ROWS][MAX_COLS];
    [[unroll]] for (uint r = 0; r < MAX_ROWS; ++r) {
        if (r >= CROWS) break;
        const uint row = row_start(plane, y0 + int(r));
        [[unroll]] for (uint j = 0; j < MAX_COLS; ++j) {
            if (j >= WIN) break;
            win[r][j] = at(row, x0[0] + int(j));
        }
    }
    float h[MAX_ROWS][MAX_RUN];
    [[unroll]] for (uint r = 0; r < MAX_ROWS; ++r) {
        if (r >= CROWS) break;
        [[unroll]] for (uint p = 0; p < MAX_RUN; ++p) {
            if (p >= RUN) break;
            h[r][p] = along_window(win[r], x0[p] - x0[0], wx[p]);
        }
    }
    [[unroll]] for (uint q = 0; q < MAX_SH; ++q) {
        if (q >= SH) break;
        const uint oy = strip * SH + q;
        if (oy >= OH) break;
        if (q > 0) ty = corner_next(ty, AC_NUM_H, AC_DEN_H);
        const float wy = corner_weight(ty, AC_DEN_H);
        const int d = ty.first - y0; // 0 .. CROWS - 2
        [[unroll]] for (uint p = 0; p < MAX_RUN; ++p) {
            if (p >= RUN) break;
            float a = h[0][p], b = h[1][p];
            [[unroll]] for (uint r = 1; r + 1 < MAX_ROWS; ++r) {
                if (r + 1 >= CROWS) break;
                if (d == int(r)) {
                    a = h[r][p];
                    b = h[r + 1][p];
                }
            }
            o[p] = a + wy * (b - a);
        }
        store_run(plane * OH + oy, ox0, o);
    }
}
