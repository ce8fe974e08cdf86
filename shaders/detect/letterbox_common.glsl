// Shared by letterbox.comp and letterbox_image.comp: where output pixel (x, y) samples the
// source. The including kernel declares SW, SH (source size), LEFT, TOP, CW, CH (the content
// rectangle) first.
#ifndef VKML_DETECT_LETTERBOX_COMMON_GLSL
#define VKML_DETECT_LETTERBOX_COMMON_GLSL

// False outside the content rectangle (padding). Inside, the bilinear taps (x0, y0, x1, y1) and
// weights (fx, fy) of OpenCV's INTER_LINEAR: half-pixel centres, edges clamped, the exact size
// ratio.
bool letterbox_taps(uint x, uint y, out uvec4 taps, out vec2 f) {
    taps = uvec4(0u);
    f = vec2(0.0);
    if (x < LEFT || x >= LEFT + CW || y < TOP || y >= TOP + CH) return false;
    float u = (float(x - LEFT) + 0.5) * (float(SW) / float(CW)) - 0.5;
    float w = (float(y - TOP) + 0.5) * (float(SH) / float(CH)) - 0.5;
    u = clamp(u, 0.0, float(SW - 1u));
    w = clamp(w, 0.0, float(SH - 1u));
    uint x0 = uint(u), y0 = uint(w);
    taps = uvec4(x0, y0, min(x0 + 1u, SW - 1u), min(y0 + 1u, SH - 1u));
    f = vec2(u - float(x0), w - float(y0));
    return true;
}

#endif
