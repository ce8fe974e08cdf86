// Resize's coordinate transformation (ONNX opset 19) for one axis: the input coordinate that
// output coordinate x samples. The scale is num / den (the float scale over 1, or for sizes the
// exact ratio out / in), so that an exact tie such as x_original = 1.5 stays exact in fp32; r0, r1
// are the axis' roi.
//
// half_pixel_symmetric is the spec's
//     offset + (x + 0.5) / scale - 0.5,  offset = in / 2 * (1 - out / (in * scale))
// rearranged to (x + 0.5 - out / 2) / scale + (in - 1) / 2, which rounds once instead of letting
// the offset's rounding turn an exact 0 into a tiny positive or negative coordinate.
#ifndef VKML_LAYOUT_RESIZE_COORD_GLSL
#define VKML_LAYOUT_RESIZE_COORD_GLSL

#define CTM_HALF_PIXEL 0
#define CTM_HALF_PIXEL_SYMMETRIC 1
#define CTM_PYTORCH_HALF_PIXEL 2
#define CTM_ALIGN_CORNERS 3
#define CTM_ASYMMETRIC 4
#define CTM_TF_CROP_AND_RESIZE 5

float resize_coord(uint ctm, float x, float in_len, float out_len, float num, float den, float r0, float r1) {
    if (ctm == CTM_HALF_PIXEL) return (x + 0.5) * den / num - 0.5;
    if (ctm == CTM_HALF_PIXEL_SYMMETRIC) return (x + 0.5 - 0.5 * out_len) * den / num + 0.5 * (in_len - 1.0);
    if (ctm == CTM_PYTORCH_HALF_PIXEL) return out_len > 1.0 ? (x + 0.5) * den / num - 0.5 : 0.0;
    if (ctm == CTM_ALIGN_CORNERS) return out_len > 1.0 ? x * (in_len - 1.0) / (out_len - 1.0) : 0.0;
    if (ctm == CTM_ASYMMETRIC) return x * den / num;
    return out_len > 1.0 ? r0 * (in_len - 1.0) + x * (r1 - r0) * (in_len - 1.0) / (out_len - 1.0)
                         : 0.5 * (r0 + r1) * (in_len - 1.0);
}

// tf_crop_and_resize samples outside [0, in_len - 1] take the extrapolation value.
bool resize_outside(uint ctm, float c, float in_len) {
    return ctm == CTM_TF_CROP_AND_RESIZE && (c < 0.0 || c > in_len - 1.0);
}

#endif
