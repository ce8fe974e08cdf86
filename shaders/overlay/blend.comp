#version 450
// passes::Overlay: blends the frame's items into the target image. The CPU bins the items into
// 16x16-pixel tiles and lists only the touched tiles, so one workgroup covers one tile and loops
// over that tile's items in queue order (each over the previous ones), exactly as the CPU drawing
// of text.cpp does pixel by pixel. RGBA8 blends in 8-bit integers with the CPU's rounding, so the
// result is bit-identical; RGBA16F blends in float.
layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

#if OVERLAY_RGBA16F
layout(set = 0, binding = 0, rgba16f) uniform image2D target;
#else
layout(set = 0, binding = 0, rgba8) uniform image2D target;
#endif
// Glyph rows (text.hpp's font_row): 12 words per glyph, bit c = column c.
layout(std430, set = 0, binding = 1) readonly buffer Font { uint rows[]; } font;
// The frame's data (overlay.cpp, FrameData): items, packed glyph indices, tiles, per-tile lists.
layout(std430, set = 0, binding = 2) readonly buffer Data { uint words[]; } data;

layout(push_constant) uniform Params {
    int width;
    int height;
    uint groups_x;   // workgroups per row of the dispatch (the tile list is folded into y)
    uint tile_count; // touched tiles
    uint items;      // word offset of the items, 12 words each
    uint chars;      // word offset of the glyph indices, 4 per word
    uint tiles;      // word offset of the tiles: (x | y << 16, list start) pairs, plus one sentinel
    uint pad;
} p;

const uint KIND_FILL = 0u, KIND_RECT = 1u, KIND_TEXT = 2u;
const int CELL_W = 6, CELL_H = 12;

bool inside(ivec2 q, int x0, int y0, int x1, int y1) {
    return q.x >= x0 && q.x < x1 && q.y >= y0 && q.y < y1;
}

// Item layout (12 words): clipped box x0 y0 x1 y1; rect: inner box x0 y0 x1 y1, text: origin x,
// origin y, scale, first glyph index; colour r | g << 8 | b << 16 | a << 24; kind; 2 unused.
bool covers(uint base, ivec2 q) {
    const uint kind = data.words[base + 9u];
    // The box test is done by the caller; here only what is inside the box matters.
    if (kind == KIND_FILL) return true;
    const int a = int(data.words[base + 4u]), b = int(data.words[base + 5u]);
    if (kind == KIND_RECT) return !inside(q, a, b, int(data.words[base + 6u]), int(data.words[base + 7u]));
    // Text: unsigned differences are exact for any int origin left of / above the pixel.
    const uint scale = data.words[base + 6u];
    const uint lx = (uint(q.x) - uint(a)) / scale, ly = (uint(q.y) - uint(b)) / scale;
    const uint index = data.words[base + 7u] + lx / uint(CELL_W);
    const uint glyph = (data.words[p.chars + (index >> 2u)] >> ((index & 3u) * 8u)) & 0xffu;
    return ((font.rows[glyph * uint(CELL_H) + ly] >> (lx % uint(CELL_W))) & 1u) != 0u;
}

void main() {
    const uint tile = gl_WorkGroupID.x + gl_WorkGroupID.y * p.groups_x;
    if (tile >= p.tile_count) return;
    const uint xy = data.words[p.tiles + 2u * tile];
    const uint begin = data.words[p.tiles + 2u * tile + 1u], end = data.words[p.tiles + 2u * tile + 3u];
    const ivec2 q = ivec2((xy & 0xffffu) * 16u + gl_LocalInvocationID.x, (xy >> 16u) * 16u + gl_LocalInvocationID.y);
    if (q.x >= p.width || q.y >= p.height) return;

    vec4 v = imageLoad(target, q);
#if !OVERLAY_RGBA16F
    uvec4 d = uvec4(round(clamp(v, 0.0, 1.0) * 255.0));
#endif
    bool changed = false;
    for (uint i = begin; i < end; ++i) {
        const uint base = p.items + 12u * data.words[i];
        if (!inside(q, int(data.words[base]), int(data.words[base + 1u]), int(data.words[base + 2u]),
                    int(data.words[base + 3u])) || !covers(base, q))
            continue;
        const uint c = data.words[base + 8u];
        const uint a = c >> 24u;
        const uvec4 s = uvec4(c & 0xffu, (c >> 8u) & 0xffu, (c >> 16u) & 0xffu, 255u);
#if OVERLAY_RGBA16F
        v = mix(v, vec4(s) / 255.0, float(a) / 255.0);
#else
        d = (s * a + d * (255u - a) + 127u) / 255u;
#endif
        changed = true;
    }
    if (!changed) return;
#if OVERLAY_RGBA16F
    imageStore(target, q, v);
#else
    imageStore(target, q, vec4(d) / 255.0);
#endif
}
