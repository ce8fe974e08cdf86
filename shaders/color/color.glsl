// Shared by the colour conversion kernels: the frame layout, given as specialization constants
// by ml/ops/color.cpp so the per-format branches fold away at pipeline creation.
#ifndef VKML_COLOR_GLSL
#define VKML_COLOR_GLSL

#define KIND_PLANAR 0u
#define KIND_SEMI 1u
#define KIND_RGB24 2u
#define KIND_RGBA 3u
#define KIND_BGRA 4u
#define KIND_GBRP 5u // planar RGB: planes G, B, R (FFmpeg's gbrp*), full range, no matrix

layout(constant_id = 0) const uint KIND = 0;  // KIND_*
layout(constant_id = 1) const uint BYTES = 1; // bytes per sample: 1 or 2
layout(constant_id = 2) const uint SHIFT = 0; // 16-bit formats: the value sits `SHIFT` bits up (P010)
layout(constant_id = 3) const uint BITS = 8;  // significant bits
layout(constant_id = 4) const uint SUBX = 1;  // chroma halved in x
layout(constant_id = 5) const uint SUBY = 1;  // chroma halved in y

const bool PACKED = KIND >= KIND_RGB24 && KIND <= KIND_BGRA;
const uint PIXEL_BYTES = KIND == KIND_RGB24 ? 3u : 4u;
const uint MAX_CODE = (1u << BITS) - 1u;

#endif
