#include "vkml/gpu/half.hpp"

#include <bit>
#include <cassert>

namespace vkml::gpu {

uint16_t float_to_half(float value) {
    const uint32_t f = std::bit_cast<uint32_t>(value);
    const uint32_t sign = (f >> 16) & 0x8000u;
    const uint32_t abs = f & 0x7fffffffu;
    if (abs >= 0x7f800000u) { // inf or NaN: keep NaN a (quiet) NaN
        return static_cast<uint16_t>(sign | 0x7c00u |
                                     (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // rounds to >= 65520: inf
    if (abs < 0x38800000u) {                                              // below 2^-14: subnormal half
        if (abs < 0x33000000u) return static_cast<uint16_t>(sign);        // below half the smallest subnormal
        const uint32_t exp = abs >> 23;
        const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - exp; // 14..24 bits shifted away
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
        return static_cast<uint16_t>(sign | h);
    }
    // normal: rebias exponent, round mantissa to 10 bits (a carry into the exponent is correct)
    uint32_t h = ((abs - 0x38000000u) >> 13);
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t bits) {
    const uint32_t sign = (uint32_t(bits) & 0x8000u) << 16;
    const uint32_t exp = (bits >> 10) & 0x1fu;
    uint32_t mant = bits & 0x3ffu;
    uint32_t f;
    if (exp == 0) {
        if (mant == 0) {
            f = sign;
        } else { // subnormal: normalise
            int e = -1;
            do {
                mant <<= 1;
                ++e;
            } while ((mant & 0x400u) == 0);
            f = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        f = sign | 0x7f800000u | (mant << 13);
    } else {
        f = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    return std::bit_cast<float>(f);
}

void floats_to_halves(std::span<const float> in, std::span<uint16_t> out) {
    assert(in.size() == out.size());
    for (size_t i = 0; i < in.size(); ++i) out[i] = float_to_half(in[i]);
}

void halves_to_floats(std::span<const uint16_t> in, std::span<float> out) {
    assert(in.size() == out.size());
    for (size_t i = 0; i < in.size(); ++i) out[i] = half_to_float(in[i]);
}

} // namespace vkml::gpu
