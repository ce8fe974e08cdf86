// Shared by image_to_tensor.comp and letterbox_image.comp: an sRGB image's stored bytes from the
// linear values the hardware's decode gives (re-encoded, then rounded to the nearest 1/255, which
// is exact while the decode errs by less than half a step).
#ifndef VKML_DETECT_SRGB_BYTES_GLSL
#define VKML_DETECT_SRGB_BYTES_GLSL

float srgb_encode(float l) {
    return l <= 0.0031308 ? l * 12.92 : 1.055 * pow(l, 1.0 / 2.4) - 0.055;
}

vec3 srgb_stored(vec3 linear) {
    return round(vec3(srgb_encode(linear.r), srgb_encode(linear.g), srgb_encode(linear.b)) * 255.0) / 255.0;
}

#endif
