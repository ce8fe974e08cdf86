// Halves in 32-bit words, as the tensor-core tile (conv/coopmat_tile.glsl) and its loaders and
// stores in conv/gemm.comp and conv/igemm.comp move them: eight per 16-byte unit, element e in
// word e / 2, the low half first. Needs the float16 and int16 arithmetic extensions.
#ifndef VKML_CONV_HALVES_GLSL
#define VKML_CONV_HALVES_GLSL

uint half_bits(sfloat v) { return uint(float16BitsToUint16(v)); }

uvec4 pack8(uint h[8]) {
    return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

// Half e of a unit, as bits and as a value.
uint half_of(uvec4 v, uint e) { return (v[e / 2] >> (16 * (e % 2))) & 0xffffu; }

float unpack_half(uvec4 u, uint e) { return float(uint16BitsToFloat16(uint16_t(half_of(u, e)))); }

// Column q of an 8 x 8 block of halves whose row j is unit j: half q of every unit, in order (the
// staged-window kernel, conv/halo.comp, reads 8 channels x 8 pixels of a row and stores 8 pixels
// x 8 channels).
uvec4 column8(uvec4 block[8], uint q) {
    uvec4 v;
    [[unroll]] for (uint word = 0; word < 4; ++word)
        v[word] = half_of(block[2 * word], q) | (half_of(block[2 * word + 1], q) << 16);
    return v;
}

// Halves s .. s + 7 of the 16 in lo, hi. s is the same for a whole slice of an invocation.
uvec4 shift_halves(uvec4 lo, uvec4 hi, uint s) {
    switch (s) {
    case 0: return lo;
    case 1: return uvec4((lo.x >> 16) | (lo.y << 16), (lo.y >> 16) | (lo.z << 16), (lo.z >> 16) | (lo.w << 16), (lo.w >> 16) | (hi.x << 16));
    case 2: return uvec4(lo.y, lo.z, lo.w, hi.x);
    case 3: return uvec4((lo.y >> 16) | (lo.z << 16), (lo.z >> 16) | (lo.w << 16), (lo.w >> 16) | (hi.x << 16), (hi.x >> 16) | (hi.y << 16));
    case 4: return uvec4(lo.z, lo.w, hi.x, hi.y);
    case 5: return uvec4((lo.z >> 16) | (lo.w << 16), (lo.w >> 16) | (hi.x << 16), (hi.x >> 16) | (hi.y << 16), (hi.y >> 16) | (hi.z << 16));
    case 6: return uvec4(lo.w, hi.x, hi.y, hi.z);
    default: return uvec4((lo.w >> 16) | (hi.x << 16), (hi.x >> 16) | (hi.y << 16), (hi.y >> 16) | (hi.z << 16), (hi.z >> 16) | (hi.w << 16));
    }
}

#endif
