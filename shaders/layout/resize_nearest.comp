#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "layout/resize_coord.glsl"
// Resize, mode nearest, over any of up to 6 dimensions (shapes padded with leading 1s). Every
// shape and attribute is a specialization constant: a pipeline per Resize, no index arithmetic
// left for unresized dimensions (RESIZED_d false).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint COUNT = 1;
layout(constant_id = 1) const uint CTM = 0;
layout(constant_id = 2) const uint NEAREST = 0; // round_prefer_floor, round_prefer_ceil, floor, ceil

#define DIM_CONSTANTS(d, id)                                                                      \
    layout(constant_id = id + 0) const uint IN##d = 1;                                          \
    layout(constant_id = id + 1) const uint OUT##d = 1;                                         \
    layout(constant_id = id + 2) const float NUM##d = 1.0;                                      \
    layout(constant_id = id + 3) const float DEN##d = 1.0;                                      \
    layout(constant_id = id + 4) const float ROI0_##d = 0.0;                                    \
    layout(constant_id = id + 5) const float ROI1_##d = 1.0;                                    \
    layout(constant_id = id + 6) const bool RESIZED##d = false;
DIM_CONSTANTS(0, 3)
DIM_CONSTANTS(1, 10)
DIM_CONSTANTS(2, 17)
DIM_CONSTANTS(3, 24)
DIM_CONSTANTS(4, 31)
DIM_CONSTANTS(5, 38)

layout(std430, set = 0, binding = 0) readonly buffer Src { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { sfloat data[]; } dst;
// A push constant, not a specialization constant: converting a constant to float16 is no
// valid specialization-constant operation.
layout(push_constant) uniform Params { float extrapolation; } p;

// ONNX's nearest rounding of a source coordinate, decided exactly (resize_coord.glsl), then
// clamped into the input (edge padding). The guess is clamped first so that a far-off coordinate
// (tf_crop_and_resize's roi may reach anywhere) converts to int safely: beyond [-2, in_len + 1]
// every mode clamps to the same edge anyway.
uint nearest(ResizeCoord c, uint in_len) {
    float v = clamp(resize_value(c), -2.0, float(in_len) + 1.0);
    int n;
    if (NEAREST == 0) n = resize_least_le(c, v, 0.5);         // round_prefer_floor: c <= n + 0.5
    else if (NEAREST == 1) n = resize_greatest_ge(c, v, -0.5); // round_prefer_ceil: c >= n - 0.5
    else if (NEAREST == 2) n = resize_greatest_ge(c, v, 0.0);  // floor
    else n = resize_least_le(c, v, 0.0);                       // ceil
    return uint(clamp(n, 0, int(in_len) - 1));
}

bool outside = false;

#define MAP_DIM(d)                                                                                \
    uint o##d = rem % OUT##d;                                                                    \
    rem /= OUT##d;                                                                               \
    uint i##d = o##d;                                                                            \
    if (RESIZED##d) {                                                                            \
        ResizeCoord c = resize_coord(CTM, float(o##d), float(IN##d), float(OUT##d), NUM##d, DEN##d, \
                                     ROI0_##d, ROI1_##d);                                        \
        outside = outside || resize_outside(CTM, c, float(IN##d));                              \
        i##d = nearest(c, IN##d);                                                               \
    }

void main() {
    uint i = vkml_linear_id();
    if (i >= COUNT) return;
    uint rem = i;
    MAP_DIM(5)
    MAP_DIM(4)
    MAP_DIM(3)
    MAP_DIM(2)
    MAP_DIM(1)
    MAP_DIM(0)
    if (outside) {
        dst.data[i] = sfloat(p.extrapolation);
        return;
    }
    uint src_idx = ((((i0 * IN1 + i1) * IN2 + i2) * IN3 + i3) * IN4 + i4) * IN5 + i5;
    dst.data[i] = src.data[src_idx];
}
