// Halves in 32-bit words, as the tensor-core tile (conv/coopmat_tile.glsl) and its loaders and
// stores in conv/gemm.comp and conv/igemm.comp move them: eight per 16-byte unit, element e in
// word e / 2, the low half first. Needs the float16 and int16 arithmetic extensions.
#ifndef VKML_CONV_HALVES_GLSL
#define VKML_CONV_HALVES_GLSL

uint half_bits(sfloat v) { return uint(float16BitsToUint16(v)); }

uvec4 pack8(uint h[8]) {
    return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

float unpack_half(uvec4 u, uint e) {
    return float(uint16BitsToFloat16(uint16_t((u[e / 2] >> (16 * (e % 2))) & 0xffffu)));
}

#endif
