// Resize's coordinate transformation (ONNX opset 19) for one axis: the input coordinate that
// output coordinate x samples. The scale is num / den (the float scale over 1, or for sizes the
// exact ratio out / in); r0, r1 are the axis' roi.
//
// The coordinate is kept as c = n / d + o (d > 0) and never divided out for a decision: Vulkan
// allows OpFDiv 2.5 ULP, so half_pixel's (3 + 0.5) / 1.75 - 0.5 may come out as 1.4999999 or
// 1.5000001 instead of the exact tie 1.5 (nearest then picks the wrong pixel), and a compiler may
// contract a product and a sum into one fused multiply-add that rounds differently. n, d and o
// come from additions and multiplications of integers, halves, the scale and the roi, which Vulkan
// rounds correctly, i.e. exactly when the true value is representable; `precise` (NoContraction)
// keeps each a separate, correctly rounded operation. Comparisons c >= t become n >= (t - o) * d:
// exact for the small integer and dyadic values Resize sees, and otherwise wrong only where c is
// within fp32 rounding of t.
//
// half_pixel_symmetric is the spec's
//     offset + (x + 0.5) / scale - 0.5,  offset = in / 2 * (1 - out / (in * scale))
// rearranged to (x + 0.5 - out / 2) / scale + (in - 1) / 2, which has no rounded offset.
#ifndef VKML_LAYOUT_RESIZE_COORD_GLSL
#define VKML_LAYOUT_RESIZE_COORD_GLSL

#define CTM_HALF_PIXEL 0
#define CTM_HALF_PIXEL_SYMMETRIC 1
#define CTM_PYTORCH_HALF_PIXEL 2
#define CTM_ALIGN_CORNERS 3
#define CTM_ASYMMETRIC 4
#define CTM_TF_CROP_AND_RESIZE 5
#define CTM_TF_HALF_PIXEL_FOR_NN 6

// c = n / d + o with d > 0.
struct ResizeCoord {
    float n;
    float d;
    float o;
};

ResizeCoord resize_coord(uint ctm, float x, float in_len, float out_len, float num, float den, float r0,
                         float r1) {
    precise float n = 0.0, d = 1.0, o = 0.0; // pytorch_half_pixel / align_corners to 1 sample: 0
    if (ctm == CTM_HALF_PIXEL || (ctm == CTM_PYTORCH_HALF_PIXEL && out_len > 1.0)) {
        n = (x + 0.5) * den;
        d = num;
        o = -0.5;
    } else if (ctm == CTM_HALF_PIXEL_SYMMETRIC) {
        n = (x + 0.5 - 0.5 * out_len) * den;
        d = num;
        o = 0.5 * (in_len - 1.0);
    } else if (ctm == CTM_ALIGN_CORNERS && out_len > 1.0) {
        // x (in - 1) / (resized - 1) with the resized length in * num / den: the output length for
        // sizes (num / den = out / in), the unrounded in * scale for scales, as ONNX's reference
        // computes it (a 0.6 downscale of 4 samples divides by 1.4, not by 1).
        n = x * (in_len - 1.0) * den;
        d = in_len * num - den;
    } else if (ctm == CTM_TF_HALF_PIXEL_FOR_NN) {
        n = (x + 0.5) * den;
        d = num;
    } else if (ctm == CTM_ASYMMETRIC) {
        n = x * den;
        d = num;
    } else if (ctm == CTM_TF_CROP_AND_RESIZE) {
        if (out_len > 1.0) {
            n = x * (r1 - r0) * (in_len - 1.0);
            d = out_len - 1.0;
            o = r0 * (in_len - 1.0);
        } else {
            o = 0.5 * (r0 + r1) * (in_len - 1.0);
        }
    }
    return ResizeCoord(n, d, o);
}

// The coordinate's value, to a few ULP: for interpolation weights and first guesses only.
float resize_value(ResizeCoord c) {
    precise float v = c.n / c.d + c.o;
    return v;
}

// c >= t and c <= t, exactly (see the top).
bool resize_ge(ResizeCoord c, float t) {
    precise float rhs = (t - c.o) * c.d;
    return c.n >= rhs;
}
bool resize_le(ResizeCoord c, float t) {
    precise float rhs = (t - c.o) * c.d;
    return c.n <= rhs;
}

// The greatest integer k with c >= k + off, from a guess v of c (a few ULP off at most).
int resize_greatest_ge(ResizeCoord c, float v, float off) {
    int k = int(floor(v - off));
    for (int i = 0; i < 2 && !resize_ge(c, float(k) + off); ++i) --k;
    for (int i = 0; i < 2 && resize_ge(c, float(k + 1) + off); ++i) ++k;
    return k;
}

// The least integer k with c <= k + off.
int resize_least_le(ResizeCoord c, float v, float off) {
    int k = int(ceil(v - off));
    for (int i = 0; i < 2 && !resize_le(c, float(k) + off); ++i) ++k;
    for (int i = 0; i < 2 && resize_le(c, float(k - 1) + off); ++i) --k;
    return k;
}

// tf_crop_and_resize samples outside [0, in_len - 1] take the extrapolation value.
bool resize_outside(uint ctm, ResizeCoord c, float in_len) {
    return ctm == CTM_TF_CROP_AND_RESIZE && (!resize_ge(c, 0.0) || !resize_le(c, in_len - 1.0));
}

#endif
