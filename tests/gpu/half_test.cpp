#include "vkml/gpu/half.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

using vkml::gpu::float_to_half;
using vkml::gpu::floats_to_halves;
using vkml::gpu::half_to_float;
using vkml::gpu::halves_to_floats;

namespace {

bool half_is_nan(uint16_t h) {
    return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}

std::string hex(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}

// The value a finite half encodes, from its fields by arithmetic rather than by moving bits.
double reference_half_value(uint16_t h) {
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    const double magnitude = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
    return (h & 0x8000u) ? -magnitude : magnitude;
}

// Rounds a finite float to half in double arithmetic: the two representable neighbours one quantum
// apart, the nearer one wins, ties go to the even multiple of the quantum.
uint16_t reference_float_to_half(float f) {
    const uint16_t sign = std::signbit(f) ? 0x8000u : 0u;
    const double x = std::fabs(static_cast<double>(f)); // exact
    if (x == 0) return sign;
    int e2 = 0;
    std::frexp(x, &e2);                                  // x = m * 2^e2, m in [0.5, 1)
    const int binade = std::max(e2 - 1, -14);            // subnormals share the quantum of 2^-14
    const double quantum = std::ldexp(1.0, binade - 10); // 11 significant bits
    const double k = std::floor(x / quantum);            // exact: power-of-two division
    const double lo = k * quantum;
    const double hi = lo + quantum;
    double r = 0;
    if (x - lo < hi - x)
        r = lo;
    else if (x - lo > hi - x)
        r = hi;
    else
        r = std::fmod(k, 2.0) == 0 ? lo : hi;
    if (r > 65504.0) return static_cast<uint16_t>(sign | 0x7c00u);
    if (r == 0) return sign;
    if (r < std::ldexp(1.0, -14))
        return static_cast<uint16_t>(sign | static_cast<uint16_t>(r / std::ldexp(1.0, -24)));
    const int e = std::ilogb(r);
    const double mant = (r / std::ldexp(1.0, e) - 1.0) * 1024.0;
    return static_cast<uint16_t>(sign | ((e + 15) << 10) | static_cast<uint16_t>(mant));
}

// Checks one float against the reference; returns false (after reporting) on a mismatch so that
// the callers can stop after a few failures instead of printing millions of lines.
bool matches_reference(float f) {
    const uint16_t got = float_to_half(f);
    const uint16_t want = reference_float_to_half(f);
    if (got == want) return true;
    ADD_FAILURE() << "float_to_half(" << f << " = " << hex(std::bit_cast<uint32_t>(f)) << ") = " << hex(got)
                  << ", expected " << hex(want);
    return false;
}

float float_from_bits(uint32_t bits) {
    return std::bit_cast<float>(bits);
}

} // namespace

TEST(Half, ReferenceAgreesWithKnownValues) {
    // The reference itself must be right for the oracle tests below to mean anything.
    EXPECT_EQ(reference_float_to_half(1.0f), 0x3c00u);
    EXPECT_EQ(reference_float_to_half(65504.0f), 0x7bffu);
    EXPECT_EQ(reference_float_to_half(65520.0f), 0x7c00u);
    EXPECT_EQ(reference_float_to_half(65519.99f), 0x7bffu);
    EXPECT_EQ(reference_float_to_half(std::ldexp(1.0f, -24)), 0x0001u);
    EXPECT_EQ(reference_float_to_half(std::ldexp(1.0f, -25)), 0x0000u);
    EXPECT_EQ(reference_float_to_half(std::ldexp(3.0f, -25)), 0x0002u);
    EXPECT_EQ(reference_float_to_half(-2.0f), 0xc000u);
    EXPECT_EQ(reference_float_to_half(0.1f), 0x2e66u);
    EXPECT_EQ(reference_float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00u); // tie, even below
    EXPECT_EQ(reference_float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02u); // tie, even above
    EXPECT_EQ(reference_half_value(0x3555), 0.333251953125);
    EXPECT_EQ(reference_half_value(0x83ff), -std::ldexp(1023.0, -24));
}

TEST(Half, KnownValues) {
    EXPECT_EQ(float_to_half(0.0f), 0x0000u);
    EXPECT_EQ(float_to_half(-0.0f), 0x8000u);
    EXPECT_EQ(float_to_half(1.0f), 0x3c00u);
    EXPECT_EQ(float_to_half(-1.0f), 0xbc00u);
    EXPECT_EQ(float_to_half(2.0f), 0x4000u);
    EXPECT_EQ(float_to_half(0.5f), 0x3800u);
    EXPECT_EQ(float_to_half(0.1f), 0x2e66u);
    EXPECT_EQ(float_to_half(65504.0f), 0x7bffu);
    EXPECT_EQ(float_to_half(-65504.0f), 0xfbffu);
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400u); // smallest normal
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001u); // smallest subnormal
    EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -24)), 0x8001u);
    EXPECT_EQ(float_to_half(std::ldexp(1023.0f, -24)), 0x03ffu); // largest subnormal
    EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00u);
    EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00u);
    EXPECT_EQ(float_to_half(std::numeric_limits<float>::max()), 0x7c00u);
    EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000u);
    EXPECT_EQ(float_to_half(-std::numeric_limits<float>::denorm_min()), 0x8000u);

    EXPECT_EQ(half_to_float(0x3c00), 1.0f);
    EXPECT_EQ(half_to_float(0xc000), -2.0f);
    EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
    EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));
    EXPECT_EQ(half_to_float(0x7c00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(half_to_float(0xfc00), -std::numeric_limits<float>::infinity());
    EXPECT_EQ(std::bit_cast<uint32_t>(half_to_float(0x8000)), 0x80000000u);
    EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
}

TEST(Half, OverflowAndUnderflowThresholds) {
    // [65504, 65520) rounds down to the largest half; 65520 is a tie that goes to the even
    // "65536", which is infinity.
    EXPECT_EQ(float_to_half(std::nextafter(65520.0f, 0.0f)), 0x7bffu);
    EXPECT_EQ(float_to_half(65520.0f), 0x7c00u);
    EXPECT_EQ(float_to_half(-65520.0f), 0xfc00u);
    EXPECT_EQ(float_to_half(65536.0f), 0x7c00u);
    EXPECT_EQ(float_to_half(1e10f), 0x7c00u);
    // Half the smallest subnormal is a tie that goes to the even zero; anything above it is 2^-24.
    const float half_min = std::ldexp(1.0f, -25);
    EXPECT_EQ(float_to_half(half_min), 0x0000u);
    EXPECT_EQ(float_to_half(-half_min), 0x8000u);
    EXPECT_EQ(float_to_half(std::nextafter(half_min, 1.0f)), 0x0001u);
    EXPECT_EQ(float_to_half(std::nextafter(half_min, 0.0f)), 0x0000u);
    EXPECT_EQ(float_to_half(1e-30f), 0x0000u);
    EXPECT_EQ(float_to_half(-1e-30f), 0x8000u);
    // Rounding up out of the subnormals gives the smallest normal; out of a binade, the next one.
    EXPECT_EQ(float_to_half(std::ldexp(2047.0f, -25)), 0x0400u);
    EXPECT_EQ(float_to_half(std::ldexp(4095.0f, -11)), 0x4000u); // 2 - 2^-11: tie, up to even 2
    EXPECT_EQ(float_to_half(std::ldexp(4095.0f, -12)), 0x3c00u); // 1 - 2^-12: tie, up to even 1
    EXPECT_EQ(float_to_half(std::ldexp(4093.0f, -12)), 0x3bfeu); // 1 - 3*2^-12: tie, down to even
}

TEST(Half, NanStaysNanWithSign) {
    const uint32_t nans[] = {0x7fc00000u, 0x7f800001u, 0x7fbfffffu, 0x7fffffffu, 0x7f802000u, 0x7fc00001u};
    for (uint32_t bits : nans) {
        for (uint32_t sign : {0u, 0x80000000u}) {
            const uint16_t h = float_to_half(float_from_bits(bits | sign));
            EXPECT_TRUE(half_is_nan(h)) << hex(bits | sign) << " -> " << hex(h);
            EXPECT_EQ(h & 0x8000u, sign >> 16) << hex(bits | sign);
        }
    }
}

TEST(Half, EveryHalfRoundTripsExactly) {
    for (uint32_t i = 0; i < 0x10000u; ++i) {
        const auto h = static_cast<uint16_t>(i);
        const float f = half_to_float(h);
        const uint16_t back = float_to_half(f);
        if (half_is_nan(h)) {
            ASSERT_TRUE(std::isnan(f)) << hex(h);
            ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << hex(h);
            ASSERT_TRUE(half_is_nan(back)) << hex(h) << " -> " << hex(back);
            ASSERT_EQ(back & 0x8000u, h & 0x8000u) << hex(h);
            continue;
        }
        ASSERT_EQ(back, h) << hex(h) << " -> " << f << " -> " << hex(back);
        if ((h & 0x7fffu) == 0x7c00u) {
            ASSERT_TRUE(std::isinf(f)) << hex(h);
            ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << hex(h);
        } else {
            ASSERT_EQ(static_cast<double>(f), reference_half_value(h)) << hex(h);
            ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << hex(h); // -0 included
        }
    }
}

TEST(Half, PositiveHalvesIncreaseStrictly) {
    float previous = half_to_float(0);
    for (uint16_t h = 1; h <= 0x7c00u; ++h) {
        const float f = half_to_float(h);
        ASSERT_LT(previous, f) << hex(h);
        previous = f;
    }
}

TEST(Half, MatchesReferenceOnRandomFloats) {
    std::mt19937 rng(20240611u);
    // Exponent ranges (biased float exponents) covering tiny (→ ±0), subnormal, normal and
    // overflowing results, and float subnormals.
    struct Range {
        uint32_t lo, hi;
    };
    const Range ranges[] = {{0, 0}, {1, 101}, {101, 113}, {112, 143}, {142, 150}, {150, 254}};
    int failures = 0;
    for (const Range& r : ranges) {
        std::uniform_int_distribution<uint32_t> exp(r.lo, r.hi);
        std::uniform_int_distribution<uint32_t> mant(0, 0x7fffffu);
        for (int i = 0; i < 500000 && failures < 10; ++i) {
            const uint32_t sign = (rng() & 1u) << 31;
            const float f = float_from_bits(sign | (exp(rng) << 23) | mant(rng));
            if (!matches_reference(f)) ++failures;
        }
    }
    // Uniform bit patterns over every finite float.
    for (int i = 0; i < 1000000 && failures < 10; ++i) {
        const float f = float_from_bits(static_cast<uint32_t>(rng()));
        if (std::isfinite(f) && !matches_reference(f)) ++failures;
    }
    EXPECT_EQ(failures, 0);
}

TEST(Half, MatchesReferenceAtTiesAndTheirNeighbours) {
    // Midpoints between consecutive finite halves (including 65504..65536) are exact floats; so
    // are the floats one step either side of them, where rounding must go the other way.
    int failures = 0;
    int ties = 0;
    for (uint32_t h = 0; h < 0x7c00u && failures < 10; ++h) {
        const double lo = reference_half_value(static_cast<uint16_t>(h));
        const double hi = h == 0x7bffu ? 65536.0 : reference_half_value(static_cast<uint16_t>(h + 1));
        const auto mid = static_cast<float>((lo + hi) / 2);
        ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
        for (float sign : {1.0f, -1.0f}) {
            const float f = sign * mid;
            ++ties;
            if (!matches_reference(f)) ++failures;
            // The tie itself goes to the even neighbour.
            const uint16_t even = (h & 1u) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
            const uint16_t want = static_cast<uint16_t>((sign < 0 ? 0x8000u : 0u) | even);
            if (float_to_half(f) != want) {
                ADD_FAILURE() << "tie " << f << " -> " << hex(float_to_half(f)) << ", expected " << hex(want);
                ++failures;
            }
            if (!matches_reference(std::nextafter(f, 0.0f))) ++failures;
            if (!matches_reference(std::nextafter(f, sign * 1e30f))) ++failures;
        }
    }
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(ties, 2 * 0x7c00);
}

TEST(Half, SpanConversionsMatchScalar) {
    std::mt19937 rng(7u);
    std::vector<float> floats(4099);
    for (float& f : floats) f = float_from_bits(static_cast<uint32_t>(rng()) & 0xbfffffffu); // finite
    floats[0] = 0.1f;
    floats[1] = -65520.0f;
    std::vector<uint16_t> halves(floats.size(), 0xdeadu);
    floats_to_halves(floats, halves);
    for (size_t i = 0; i < floats.size(); ++i) ASSERT_EQ(halves[i], float_to_half(floats[i])) << i;
    EXPECT_EQ(halves[0], 0x2e66u);
    EXPECT_EQ(halves[1], 0xfc00u);

    std::vector<uint16_t> all(0x10000);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    std::vector<float> back(all.size(), -1.0f);
    halves_to_floats(all, back);
    for (size_t i = 0; i < all.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(half_to_float(all[i]))) << i;

    // Sub-spans convert only their own elements.
    std::vector<uint16_t> part(8, 0x1234u);
    const float in[] = {1.0f, 2.0f, 0.5f};
    floats_to_halves(std::span<const float>(in), std::span<uint16_t>(part).subspan(2, 3));
    EXPECT_EQ(part, (std::vector<uint16_t>{0x1234, 0x1234, 0x3c00, 0x4000, 0x3800, 0x1234, 0x1234, 0x1234}));

    // Empty spans are fine.
    floats_to_halves({}, {});
    halves_to_floats({}, {});
}
