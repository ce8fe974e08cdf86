#version 450
// RgbToYuv: one invocation per 32-bit word of the output frame, over all planes, so no two
// invocations write the same word (the planes are u8 or u16 and need no 8-bit storage).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "color/color.glsl"

VKML_LOCAL_SIZE;

layout(std430, set = 0, binding = 0) readonly buffer Rgb { sfloat rgb[]; };
layout(std430, set = 0, binding = 1) buffer Frame { uint frame[]; };

layout(push_constant) uniform Push {
    uint width, height;
    uint off0, stride0, off1, stride1, off2, stride2; // words
    uint row_words0, row_words1, row_words2;         // words written per row
    uint end0, end1;                                  // cumulative words of planes 0 and 0+1
    uint chroma_w, chroma_h;
    float y_off, y_mul, c_off, c_mul; // normalized -> code: value * mul + off
    float ky_r, ky_g, ky_b;           // Y  = ky . rgb
    float kb_r, kb_g, kb_b;           // Cb = kb . rgb
    float kr_r, kr_g, kr_b;           // Cr = kr . rgb
} pc;

vec3 pixel(uint x, uint y) {
    const uint plane = pc.width * pc.height, i = y * pc.width + x;
    return clamp(vec3(float(rgb[i]), float(rgb[plane + i]), float(rgb[2u * plane + i])), 0.0, 1.0);
}

// Round half up (as the reference), not round(), whose ties are implementation-defined.
uint to_code(float v) { return uint(clamp(floor(v + 0.5), 0.0, float(MAX_CODE))); }

// Mean RGB over chroma sample (cx, cy)'s block, clipped to the image.
vec3 block_mean(uint cx, uint cy) {
    const uint x0 = SUBX != 0u ? 2u * cx : cx, y0 = SUBY != 0u ? 2u * cy : cy;
    const uint x1 = min(SUBX != 0u ? x0 + 1u : x0, pc.width - 1u);
    const uint y1 = min(SUBY != 0u ? y0 + 1u : y0, pc.height - 1u);
    vec3 s = vec3(0.0);
    for (uint yy = y0; yy <= y1; ++yy)
        for (uint xx = x0; xx <= x1; ++xx) s += pixel(xx, yy);
    return s / float((x1 - x0 + 1u) * (y1 - y0 + 1u));
}

uint chroma_code(vec3 c, uint comp) {
    const float v = comp == 0u ? dot(vec3(pc.kb_r, pc.kb_g, pc.kb_b), c) : dot(vec3(pc.kr_r, pc.kr_g, pc.kr_b), c);
    return to_code(v * pc.c_mul + pc.c_off);
}

// The value of element `e` (sample or byte) of row `row` of plane `p`; 0 past the row's end.
uint element(uint p, uint e, uint row) {
    if (PACKED) {
        const uint px = e / PIXEL_BYTES, ch = e % PIXEL_BYTES;
        if (px >= pc.width) return 0u;
        if (ch == 3u) return 255u;
        const vec3 c = pixel(px, row);
        const uint k = KIND == KIND_BGRA ? 2u - ch : ch;
        return uint(floor(c[k] * 255.0 + 0.5));
    }
    if (KIND == KIND_GBRP) {
        if (e >= pc.width) return 0u;
        const vec3 c = pixel(e, row);
        return to_code((p == 0u ? c.g : (p == 1u ? c.b : c.r)) * float(MAX_CODE));
    }
    if (p == 0u) {
        if (e >= pc.width) return 0u;
        return to_code(dot(vec3(pc.ky_r, pc.ky_g, pc.ky_b), pixel(e, row)) * pc.y_mul + pc.y_off);
    }
    if (KIND == KIND_SEMI) {
        if (e / 2u >= pc.chroma_w) return 0u;
        return chroma_code(block_mean(e / 2u, row), e % 2u);
    }
    if (e >= pc.chroma_w) return 0u;
    return chroma_code(block_mean(e, row), p - 1u);
}

void main() {
    uint t = uint(vkml_linear_id());
    uint p = 0u, off = pc.off0, stride = pc.stride0, row_words = pc.row_words0;
    if (t >= pc.end1) {
        p = 2u; t -= pc.end1; off = pc.off2; stride = pc.stride2; row_words = pc.row_words2;
    } else if (t >= pc.end0) {
        p = 1u; t -= pc.end0; off = pc.off1; stride = pc.stride1; row_words = pc.row_words1;
    }
    if (row_words == 0u) return;
    const uint row = t / row_words, w = t % row_words;
    const uint rows = (p == 0u || SUBY == 0u) ? pc.height : pc.chroma_h;
    if (row >= rows) return;
    uint word = 0u;
    if (BYTES == 1u) {
        for (uint k = 0u; k < 4u; ++k) word |= element(p, 4u * w + k, row) << (8u * k);
    } else {
        for (uint k = 0u; k < 2u; ++k) word |= (element(p, 2u * w + k, row) << SHIFT) << (16u * k);
    }
    frame[off + row * stride + w] = word;
}
