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

// Unit u of X as loaded: 8 packed halves (spec_vec 8) or the fp32 bits of a 4-vector (one register
// slot, uvec4, either way: f16 units stay packed until used).
uvec4 load_x_raw(uint u) {
    if (spec_vec == 8) return x16.data[u];
    return floatBitsToUint(vec4(x4.data[u]));
}

void raw_values(uvec4 r, out vec4 lo, out vec4 hi) {
    if (spec_vec == 8) {
        lo = vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y));
        hi = vec4(unpackHalf2x16(r.z), unpackHalf2x16(r.w));
    } else {
        lo = uintBitsToFloat(r);
        hi = vec4(0.0);
    }
}

// Units an invocation holds in registers at once, one uvec4 slot each as loaded (the moments' steps
// below; normalize.comp's held chunks).
#define NORM_MAX_CACHED 8

// How many of the units u0, u0 + wg, u0 + 2 wg, ... (at most `cap`) lie below `last`.
uint units_below(uint u0, uint last, uint cap) {
    const uint wg = gl_WorkGroupSize.x;
    return u0 >= last ? 0u : min(cap, (last - u0 + wg - 1) / wg);
}

// The exact moments, relative to `shift`, of the first `count` units of r (as loaded): their mean,
// then a second pass over the registers for the squared deviations from it.
Moments held_moments(uvec4 r[NORM_MAX_CACHED], uint count, float shift) {
    float n = 0.0, sum = 0.0;
    [[unroll]] for (uint k = 0; k < NORM_MAX_CACHED; ++k) {
        if (k >= count) break;
        vec4 lo, hi;
        raw_values(r[k], lo, hi);
        n += float(spec_vec);
        sum += dot(lo - shift, vec4(1.0)) + (spec_vec == 8 ? dot(hi - shift, vec4(1.0)) : 0.0);
    }
    const float mean = n > 0.0 ? sum / n : 0.0;
    float m2 = 0.0;
    [[unroll]] for (uint k = 0; k < NORM_MAX_CACHED; ++k) {
        if (k >= count) break;
        vec4 lo, hi;
        raw_values(r[k], lo, hi);
        const vec4 d = (lo - shift) - mean;
        m2 += dot(d, d);
        if (spec_vec == 8) {
            const vec4 e = (hi - shift) - mean;
            m2 += dot(e, e);
        }
    }
    return Moments(n, mean, m2);
}

// Moments of elements [begin, end) of the group starting at element base (begin, end and base
// whole units where spec_vec > 1), relative to `shift`, reduced over the workgroup. Each
// invocation loads NORM_MAX_CACHED (eight) units a step (workgroup-strided, kept as loaded: 32
// registers) before using any, so eight loads are in flight, then takes the step's moments
// exactly (held_moments) and merges them once. (Four units a step, merged by sixteen values:
// InstanceNorm 64ch @ 480x270 f16 spent 11.3 of its 15.6 us on the moments on an H200, two or
// three dependent rounds of loads an invocation.)
Moments chunk_moments(uint base, uint begin, uint end, float shift) {
    Moments m = Moments(0.0, 0.0, 0.0);
    const uint wg = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
    if (spec_vec > 1) {
        const uint b = base / spec_vec, last = end / spec_vec;
        for (uint i = begin / spec_vec + lid; i < last; i += NORM_MAX_CACHED * wg) {
            const uint count = units_below(i, last, NORM_MAX_CACHED);
            uvec4 r[NORM_MAX_CACHED];
            [[unroll]] for (uint k = 0; k < NORM_MAX_CACHED; ++k) {
                r[k] = uvec4(0);
                if (k < count) r[k] = load_x_raw(b + i + k * wg);
            }
            m = moments_merge(m, held_moments(r, count, shift));
        }
    } else {
        for (uint i = begin + lid; i < end; i += wg) moments_add(m, float(x.data[base + i]) - shift);
    }
    return moments_reduce(m);
}

#endif
