#version 450
// YuvToRgb: one invocation per output pixel. The frame is read as 32-bit words and the samples
// picked out of them, so u8 planes need no 8-bit storage feature and any offset/stride works.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "color/color.glsl"

VKML_LOCAL_SIZE;

layout(constant_id = 6) const uint NEAREST = 0; // chroma filter: 1 nearest, 0 bilinear

layout(std430, set = 0, binding = 0) readonly buffer Frame { uint frame[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Rgb { sfloat rgb[]; };

layout(push_constant) uniform Push {
    uint width, height;
    uint off0, stride0, off1, stride1, off2, stride2; // bytes
    uint chroma_w, chroma_h;
    float site_x, site_y; // luma position of chroma sample 0 (0 co-sited, 0.5 between)
    float y_off, y_scale, c_off, c_scale; // code -> normalized: (code - off) * scale
    float m_rcr, m_gcb, m_gcr, m_bcb;     // R = Y + m_rcr Cr, G = Y - m_gcb Cb - m_gcr Cr, B = Y + m_bcb Cb
} pc;

uint read8(uint addr) { return (frame[addr >> 2] >> ((addr & 3u) * 8u)) & 0xffu; }

// A sample of a plane, as its code value (0 .. 2^BITS - 1).
float sample_at(uint off, uint stride, uint col, uint row) {
    const uint addr = off + row * stride + col * BYTES;
    if (BYTES == 1u) return float(read8(addr));
    const uint v = (frame[addr >> 2] >> ((addr & 2u) * 8u)) & 0xffffu;
    return float((v >> SHIFT) & MAX_CODE);
}

// Chroma sample (cx, cy): Cb (comp 0) and Cr (comp 1) codes.
vec2 chroma_at(uint cx, uint cy) {
    if (KIND == KIND_SEMI) return vec2(sample_at(pc.off1, pc.stride1, 2u * cx, cy), sample_at(pc.off1, pc.stride1, 2u * cx + 1u, cy));
    return vec2(sample_at(pc.off1, pc.stride1, cx, cy), sample_at(pc.off2, pc.stride2, cx, cy));
}

void main() {
    const uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= pc.width || y >= pc.height) return;
    vec3 c;
    if (PACKED) {
        const uint addr = pc.off0 + y * pc.stride0 + x * PIXEL_BYTES;
        c = vec3(read8(addr), read8(addr + 1u), read8(addr + 2u)) / 255.0;
        if (KIND == KIND_BGRA) c = c.bgr;
    } else if (KIND == KIND_GBRP) {
        c = vec3(sample_at(pc.off2, pc.stride2, x, y), sample_at(pc.off0, pc.stride0, x, y),
                 sample_at(pc.off1, pc.stride1, x, y)) / float(MAX_CODE);
    } else {
        const float luma = (sample_at(pc.off0, pc.stride0, x, y) - pc.y_off) * pc.y_scale;
        vec2 uv;
        if (NEAREST != 0u || (SUBX == 0u && SUBY == 0u)) {
            uv = chroma_at(SUBX != 0u ? x >> 1 : x, SUBY != 0u ? y >> 1 : y);
        } else {
            // Position of this pixel in chroma-sample coordinates, clamped to the plane.
            const float fx = SUBX != 0u ? (float(x) - pc.site_x) * 0.5 : float(x);
            const float fy = SUBY != 0u ? (float(y) - pc.site_y) * 0.5 : float(y);
            const float bx = floor(fx), by = floor(fy);
            const float wx = fx - bx, wy = fy - by;
            const uint x0 = uint(clamp(int(bx), 0, int(pc.chroma_w) - 1));
            const uint x1 = uint(clamp(int(bx) + 1, 0, int(pc.chroma_w) - 1));
            const uint y0 = uint(clamp(int(by), 0, int(pc.chroma_h) - 1));
            const uint y1 = uint(clamp(int(by) + 1, 0, int(pc.chroma_h) - 1));
            const vec2 top = mix(chroma_at(x0, y0), chroma_at(x1, y0), wx);
            const vec2 bottom = mix(chroma_at(x0, y1), chroma_at(x1, y1), wx);
            uv = mix(top, bottom, wy);
        }
        const float cb = (uv.x - pc.c_off) * pc.c_scale, cr = (uv.y - pc.c_off) * pc.c_scale;
        c = vec3(luma + pc.m_rcr * cr, luma - pc.m_gcb * cb - pc.m_gcr * cr, luma + pc.m_bcb * cb);
    }
    c = clamp(c, 0.0, 1.0);
    const uint plane = pc.width * pc.height, i = y * pc.width + x;
    rgb[i] = sfloat(c.r);
    rgb[plane + i] = sfloat(c.g);
    rgb[2u * plane + i] = sfloat(c.b);
}
