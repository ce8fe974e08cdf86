#version 450
// The samples' scene materials: procedural textures as functions of the texture coordinate, each
// filtered over the pixel's footprint (the screen-space derivatives of uv) by a 4x4 grid of points
// over +-0.75 pixel with tent weights, about the filter of a trilinear mip-mapped lookup, so that
// minified detail is band-limited as a renderer's textures are: a sparser box (3x3 over +-1/3
// pixel) left sub-pixel glyph strokes aliased, noise no upscaler can predict, which made a
// renderer-realistic comparison of upscalers against the native render favour plain blur. Lambert
// lighting from a sun and a sky/ground hemisphere. Foliage is alpha-tested: through alpha to
// coverage under MSAA, by discarding below one half without.
layout(location = 0) in vec3 world_normal;
layout(location = 1) in vec2 uv;
layout(location = 2) flat in vec3 material; // material, MSAA samples, seed
layout(location = 3) in vec3 world_pos;
layout(location = 0) out vec4 out_color;

const int M_GROUND = 0, M_PAPER = 1, M_SIGN = 2, M_BRICK = 3, M_LEAF = 4, M_METAL = 5, M_POSTER = 6;

uint hash(uvec3 v) {
    v = v * 1664525u + 1013904223u;
    v.x += v.y * v.z;
    v.y += v.z * v.x;
    v.z += v.x * v.y;
    v ^= v >> 16u;
    v.x += v.y * v.z;
    v.y += v.z * v.x;
    v.z += v.x * v.y;
    return v.x ^ v.y ^ v.z;
}

float seg(vec2 p, vec2 a, vec2 b, float w) {
    const vec2 pa = p - a, ba = b - a;
    const float h = clamp(dot(pa, ba) / dot(ba, ba), 0.0, 1.0);
    return length(pa - ba * h) < w ? 1.0 : 0.0;
}

// Letter-like glyphs from ten strokes (the three bars, four half-verticals, a centre stem, two
// diagonals); 16 masks that read as capitals (A C E F H L T U O P N Z X Y S I).
const uint letters[16] = uint[](0x7Bu, 0x1Du, 0x1Fu, 0x1Bu, 0x7Au, 0x1Cu, 0x81u, 0x7Cu, 0x7Du, 0x3Bu, 0x278u,
                                0x105u, 0x300u, 0xAAu, 0x4Fu, 0x85u);
float glyph(vec2 p, uint id, float w) {
    const uint m = letters[id & 15u];
    float ink = 0.0;
    if ((m & 1u) != 0u) ink = max(ink, seg(p, vec2(0.2, 0.85), vec2(0.8, 0.85), w));
    if ((m & 2u) != 0u) ink = max(ink, seg(p, vec2(0.2, 0.5), vec2(0.8, 0.5), w));
    if ((m & 4u) != 0u) ink = max(ink, seg(p, vec2(0.2, 0.15), vec2(0.8, 0.15), w));
    if ((m & 8u) != 0u) ink = max(ink, seg(p, vec2(0.2, 0.5), vec2(0.2, 0.85), w));
    if ((m & 16u) != 0u) ink = max(ink, seg(p, vec2(0.2, 0.15), vec2(0.2, 0.5), w));
    if ((m & 32u) != 0u) ink = max(ink, seg(p, vec2(0.8, 0.5), vec2(0.8, 0.85), w));
    if ((m & 64u) != 0u) ink = max(ink, seg(p, vec2(0.8, 0.15), vec2(0.8, 0.5), w));
    if ((m & 128u) != 0u) ink = max(ink, seg(p, vec2(0.5, 0.15), vec2(0.5, 0.85), w));
    if ((m & 256u) != 0u) ink = max(ink, seg(p, vec2(0.2, 0.15), vec2(0.8, 0.85), w));
    if ((m & 512u) != 0u) ink = max(ink, seg(p, vec2(0.2, 0.85), vec2(0.8, 0.15), w));
    return ink;
}

// Lines of text: `cols` x `rows` character cells over t in [0, 1]^2, words of 2-7 letters.
float text(vec2 t, float cols, float rows, uint seed, float w) {
    if (any(lessThan(t, vec2(0.0))) || any(greaterThanEqual(t, vec2(1.0)))) return 0.0;
    const vec2 c = t * vec2(cols, rows);
    const uvec2 cell = uvec2(floor(c));
    vec2 p = fract(c);
    p.y = 1.0 - p.y;
    p = (p - 0.5) * vec2(1.0, 1.35) + 0.5; // line spacing: glyphs fill the middle of the row
    const uint h = hash(uvec3(cell, seed));
    // Spaces: about one cell in six, never two in a row, and a ragged right margin per line.
    const uint line_len = uint(cols) - (hash(uvec3(0u, cell.y, seed + 7u)) % max(1u, uint(cols) / 4u));
    if (cell.x >= line_len) return 0.0;
    if (h % 6u == 0u && cell.x > 0u && hash(uvec3(cell.x - 1u, cell.y, seed)) % 6u != 0u) return 0.0;
    return glyph(p, h >> 8u, w);
}

vec4 ground(vec2 t) {
    // Metre tiles in a checkerboard, each with a one-centimetre grout line, and every third tile
    // a finer 8x8 checkerboard.
    const vec2 cell = floor(t), f = fract(t);
    const bool odd = mod(cell.x + cell.y, 2.0) == 1.0;
    vec3 c = odd ? vec3(0.72, 0.70, 0.66) : vec3(0.30, 0.32, 0.36);
    if (mod(cell.x * 7.0 + cell.y * 3.0, 3.0) == 0.0) {
        const vec2 g = floor(f * 8.0);
        c = mod(g.x + g.y, 2.0) == 0.0 ? vec3(0.85, 0.15, 0.12) : vec3(0.95, 0.92, 0.85);
    }
    if (min(f.x, f.y) < 0.02) c = vec3(0.05);
    return vec4(c, 1.0);
}

vec4 paper(vec2 t, uint seed) {
    // A newspaper page: a red headline, two columns of body text, rules between them.
    vec3 c = vec3(0.93, 0.91, 0.84);
    float ink = text((t - vec2(0.05, 0.05)) / vec2(0.9, 0.12), 12.0, 1.0, seed, 0.09);
    if (ink > 0.0) return vec4(0.75, 0.05, 0.05, 1.0);
    if (abs(t.y - 0.2) < 0.004 && t.x > 0.05 && t.x < 0.95) return vec4(0.1, 0.1, 0.1, 1.0);
    if (abs(t.x - 0.5) < 0.003 && t.y > 0.22 && t.y < 0.95) return vec4(0.1, 0.1, 0.1, 1.0);
    ink = max(text((t - vec2(0.05, 0.23)) / vec2(0.42, 0.72), 22.0, 20.0, seed + 1u, 0.1),
              text((t - vec2(0.53, 0.23)) / vec2(0.42, 0.72), 22.0, 20.0, seed + 2u, 0.1));
    return vec4(mix(c, vec3(0.08), ink), 1.0);
}

vec4 sign_face(vec2 t, uint seed) {
    // White capitals on blue, a double white border, and a barcode of thin stripes.
    vec3 c = vec3(0.05, 0.18, 0.55);
    const vec2 e = min(t, 1.0 - t);
    const float m = min(e.x, e.y);
    if ((m > 0.02 && m < 0.035) || (m > 0.05 && m < 0.058)) c = vec3(1.0);
    const float ink = text((t - vec2(0.1, 0.15)) / vec2(0.8, 0.45), 8.0, 2.0, seed, 0.1);
    c = mix(c, vec3(1.0, 0.95, 0.3), ink);
    if (t.y > 0.68 && t.y < 0.88 && t.x > 0.1 && t.x < 0.9) {
        const uint bar = hash(uvec3(uint(t.x * 120.0), seed, 5u));
        c = (bar & 1u) != 0u ? vec3(0.0) : vec3(1.0);
    }
    return vec4(c, 1.0);
}

vec4 brick(vec2 t, uint seed) {
    // Running-bond bricks with mortar, and a stencilled label on each face.
    vec2 b = t * vec2(4.0, 8.0);
    b.x += mod(floor(b.y), 2.0) * 0.5;
    const vec2 f = fract(b), cell = floor(b);
    const float shade = 0.8 + 0.2 * float(hash(uvec3(uvec2(cell + 64.0), seed)) % 100u) / 100.0;
    vec3 c = vec3(0.62, 0.25, 0.16) * shade;
    if (f.x < 0.06 || f.y < 0.1) c = vec3(0.78, 0.76, 0.7);
    const float ink = text((t - vec2(0.2, 0.4)) / vec2(0.6, 0.2), 4.0, 1.0, seed + 3u, 0.11);
    return vec4(mix(c, vec3(0.02), ink), 1.0);
}

vec4 leaf(vec2 t, uint seed) {
    // A spray of pointed leaves on a stem; alpha is 0 outside them (alpha-tested).
    vec2 p = t * 2.0 - 1.0; // -1..1, y up after the flip below
    p.y = -p.y;
    float a = 0.0;
    vec3 c = vec3(0.1, 0.4, 0.12);
    if (abs(p.x) < 0.025 && p.y < 0.9) a = 1.0, c = vec3(0.25, 0.2, 0.1);
    for (int i = 0; i < 7; ++i) {
        const float y0 = -0.8 + 0.25 * float(i);
        const float side = (i % 2 == 0) ? 1.0 : -1.0;
        const vec2 base = vec2(0.0, y0);
        const vec2 dir = normalize(vec2(side, 0.7));
        const vec2 q = p - base;
        const float along = dot(q, dir), across = dot(q, vec2(-dir.y, dir.x));
        const float len = 0.55 - 0.04 * float(i);
        if (along > 0.0 && along < len) {
            const float width = 0.16 * sin(3.14159 * along / len);
            if (abs(across) < width) {
                a = 1.0;
                const float tone = float(hash(uvec3(uint(i), seed, 9u)) % 100u) / 400.0;
                c = vec3(0.12 + tone, 0.45 + tone, 0.1);
                if (abs(across) < 0.012) c *= 0.6; // the midrib
            }
        }
    }
    return vec4(c, a);
}

vec4 metal(vec2 t) {
    // Galvanized steel with thin dark bands.
    const float band = fract(t.y * 10.0);
    return vec4(band < 0.08 ? vec3(0.15) : vec3(0.62, 0.64, 0.66), 1.0);
}

vec4 poster(vec2 t, uint seed) {
    // A concentric-ring and spoke test chart: frequency rises toward the centre.
    const vec2 p = t * 2.0 - 1.0;
    const float r = length(p);
    if (r > 0.95) return vec4(0.95, 0.95, 0.95, 1.0);
    const float ang = atan(p.y, p.x);
    const float spokes = step(0.0, sin(ang * 36.0));
    const float rings = step(0.0, sin(r * 60.0));
    const float v = r < 0.5 ? spokes : rings;
    const vec3 tint = (seed & 1u) != 0u ? vec3(0.1, 0.1, 0.1) : vec3(0.05, 0.2, 0.45);
    return vec4(mix(vec3(0.97), tint, v), 1.0);
}

vec4 shade(vec2 t, int m, uint seed) {
    switch (m) {
    case M_GROUND: return ground(t);
    case M_PAPER: return paper(t, seed);
    case M_SIGN: return sign_face(t, seed);
    case M_BRICK: return brick(t, seed);
    case M_LEAF: return leaf(t, seed);
    case M_METAL: return metal(t);
    default: return poster(t, seed);
    }
}

void main() {
    const int m = int(material.x + 0.5);
    const uint seed = uint(material.z + 0.5);
    const vec2 dx = dFdx(uv), dy = dFdy(uv);
    vec4 acc = vec4(0.0);
    float wsum = 0.0;
    for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) {
            const vec2 o = (vec2(i, j) - 1.5) / 2.0; // -0.75 .. 0.75
            const float w = (1.0 - abs(o.x)) * (1.0 - abs(o.y));
            acc += w * shade(uv + dx * o.x + dy * o.y, m, seed);
            wsum += w;
        }
    vec4 albedo = acc / wsum;
    float alpha = 1.0;
    if (m == M_LEAF) {
        const bool msaa = material.y > 1.5;
        if (albedo.a < (msaa ? 0.02 : 0.5)) discard;
        albedo.rgb /= albedo.a; // the leaf colour without the transparent samples' black
        if (msaa) alpha = albedo.a;
    }
    vec3 n = normalize(world_normal);
    if (!gl_FrontFacing) n = -n;
    const vec3 sun = normalize(vec3(0.45, 0.8, 0.35));
    const float diffuse = max(dot(n, sun), 0.0);
    const vec3 ambient = mix(vec3(0.28, 0.25, 0.22), vec3(0.35, 0.42, 0.55), n.y * 0.5 + 0.5);
    vec3 c = albedo.rgb * (ambient + diffuse * vec3(1.0, 0.95, 0.85));
    // Distance haze toward the sky colour, so the far ground's detail fades rather than shimmers.
    const float dist = length(world_pos - vec3(0.0, 2.0, 7.0));
    c = mix(c, vec3(0.62, 0.74, 0.9), clamp((dist - 14.0) / 30.0, 0.0, 0.7));
    out_color = vec4(clamp(c, 0.0, 1.0), alpha);
}
