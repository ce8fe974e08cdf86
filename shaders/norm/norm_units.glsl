// X's views and the moments of a chunk of a group, shared by moments.comp and normalize.comp.
// Include it after the shader's spec_vec declaration: units of spec_vec elements (8: f16 only,
// loaded as one 16-byte uvec4 of packed halves; 4: one vector, 16 bytes in f32; 1: one element).
#ifndef VKML_NORM_UNITS_GLSL
#define VKML_NORM_UNITS_GLSL

layout(std430, set = 0, binding = 0) readonly buffer X { sfloat data[]; } x;
layout(std430, set = 0, binding = 0) readonly buffer X4 { sfloat4 data[]; } x4;
layout(std430, set = 0, binding = 0) readonly buffer X16 { uvec4 data[]; } x16;

// Unit u of X as two vec4 (hi: elements 4..7 of an 8-element unit, else 0).
void load_x_unit(uint u, out vec4 lo, out vec4 hi) {
    hi = vec4(0.0);
    if (spec_vec == 8) {
        const uvec4 w = x16.data[u];
        lo = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
        hi = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
    } else {
        lo = vec4(x4.data[u]);
    }
}

// Moments of elements [begin, end) of the group starting at element base (begin, end and base
// whole units where spec_vec > 1), relative to `shift`, reduced over the workgroup. Each
// invocation loads four units (workgroup-strided) before using any: four loads in flight.
Moments chunk_moments(uint base, uint begin, uint end, float shift) {
    Moments m = Moments(0.0, 0.0, 0.0);
    const uint wg = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
    if (spec_vec > 1) {
        const uint b = base / spec_vec, last = end / spec_vec;
        uint i = begin / spec_vec + lid;
        for (; i + 3 * wg < last; i += 4 * wg) {
            vec4 lo[4], hi[4];
            for (uint k = 0; k < 4; ++k) load_x_unit(b + i + k * wg, lo[k], hi[k]);
            if (spec_vec == 8) {
                moments_add16(m, lo[0] - shift, hi[0] - shift, lo[1] - shift, hi[1] - shift);
                moments_add16(m, lo[2] - shift, hi[2] - shift, lo[3] - shift, hi[3] - shift);
            } else {
                moments_add16(m, lo[0] - shift, lo[1] - shift, lo[2] - shift, lo[3] - shift);
            }
        }
        for (; i < last; i += wg) {
            vec4 lo, hi;
            load_x_unit(b + i, lo, hi);
            if (spec_vec == 8)
                moments_add8(m, lo - shift, hi - shift);
            else
                moments_add4(m, lo - shift);
        }
    } else {
        for (uint i = begin + lid; i < end; i += wg) moments_add(m, float(x.data[base + i]) - shift);
    }
    return moments_reduce(m);
}

#endif
