#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Pad: output element o reads, per dimension k (innermost first), the window coordinate
// c = o_k - pad_begin[k] of an input window of length win[k] (negative pads crop: the window
// start is folded into `base`). Outside the window, MODE decides: 0 constant (the value), 1
// reflect, 2 edge, 3 wrap, the last three repeating as numpy.pad does. WORDS storage words per
// element (2 for i64, moved by the i32 variant).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint WORDS = 1;
// Consecutive outputs along the innermost dimension per invocation (its length a multiple of it):
// the outer dimensions' coordinates are worked out once for them.
layout(constant_id = 2) const uint PER = 1;
layout(std430, set = 0, binding = 0) readonly buffer Src { stype data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Dst { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint count; // output elements
    uint rank;
    int base;   // input element of the window's origin
    uint value_lo, value_hi;
    uint out_dims[6];
    int strides[6];
    int win[6];
    int pad_begin[6];
} p;

// a mod m in [0, m) for m > 0. Vulkan makes OpSMod / OpSRem of a negative operand poison (a
// window coordinate before the pad is negative), so only non-negative values meet `%`: for a < 0,
// a mod m = m - 1 - ((-a - 1) mod m).
int positive_mod(int a, int m) {
    return a >= 0 ? int(uint(a) % uint(m)) : m - 1 - int(uint(-(a + 1)) % uint(m));
}

stype value_word(uint w) {
#if VKML_FP16
    return stype(uintBitsToFloat(p.value_lo));
#elif VKML_U8
    return stype(p.value_lo);
#else
    return stype(w == 0 ? p.value_lo : p.value_hi);
#endif
}

// The window coordinate c (of window length n) of an output position, per MODE.
int window_coord(int c, int n, inout bool inside) {
    if (c >= 0 && c < n) return c;
    if (MODE == 0) {
        inside = false;
    } else if (MODE == 1) {
        int period = 2 * (n - 1);
        c = period == 0 ? 0 : positive_mod(c, period);
        if (c >= n) c = period - c;
    } else if (MODE == 2) {
        c = clamp(c, 0, n - 1);
    } else {
        c = positive_mod(c, n);
    }
    return c;
}

void main() {
    const uint i0 = vkml_linear_id() * PER;
    if (i0 >= p.count) return;
    const uint d0 = p.out_dims[0];
    uint rem = i0 / d0;
    int off = p.base;
    bool outer_inside = true;
    for (uint k = 1; k < p.rank; ++k) {
        uint d = p.out_dims[k];
        off += window_coord(int(rem % d) - p.pad_begin[k], p.win[k], outer_inside) * p.strides[k];
        rem /= d;
    }
    for (uint e = 0; e < PER; ++e) {
        const uint i = i0 + e;
        bool inside = outer_inside;
        const int at = off + window_coord(int(i % d0) - p.pad_begin[0], p.win[0], inside) * p.strides[0];
        for (uint w = 0; w < WORDS; ++w) {
            if (inside)
                dst.data[i * WORDS + w] = src.data[uint(at) * WORDS + w];
            else
                dst.data[i * WORDS + w] = value_word(w);
        }
    }
}
