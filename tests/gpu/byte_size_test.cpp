#include "gpu/internal.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

using vkml::gpu::detail::parse_byte_size;

namespace {
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;
} // namespace

TEST(ByteSize, PlainNumbers) {
    EXPECT_EQ(parse_byte_size("123"), 123u);
    EXPECT_EQ(parse_byte_size("1"), 1u);
    EXPECT_EQ(parse_byte_size("0"), 0u);
    EXPECT_EQ(parse_byte_size("4294967296"), 4294967296u); // past 32 bits
}

TEST(ByteSize, Suffixes) {
    EXPECT_EQ(parse_byte_size("64K"), 64 * kKiB);
    EXPECT_EQ(parse_byte_size("64k"), 64 * kKiB);
    EXPECT_EQ(parse_byte_size("512M"), 512 * kMiB);
    EXPECT_EQ(parse_byte_size("512m"), 512 * kMiB);
    EXPECT_EQ(parse_byte_size("2G"), 2 * kGiB);
    EXPECT_EQ(parse_byte_size("2g"), 2 * kGiB);
    EXPECT_EQ(parse_byte_size("24G"), 24 * kGiB);
    EXPECT_EQ(parse_byte_size("1K"), kKiB);
    EXPECT_EQ(parse_byte_size("0G"), 0u);
}

TEST(ByteSize, Fractions) {
    EXPECT_EQ(parse_byte_size("1.5G"), kGiB + kGiB / 2);
    EXPECT_EQ(parse_byte_size("0.5K"), 512u);
    EXPECT_EQ(parse_byte_size("2.25M"), 2 * kMiB + kMiB / 4);
}

TEST(ByteSize, MalformedIsZero) {
    for (const char* text : {"", "abc", "12X", "-5", "-5M", "K", "G12", ".", "x64K", "12 M", "12T", "12%"})
        EXPECT_EQ(parse_byte_size(text), 0u) << '"' << text << '"';
}

// Known bug (parse_byte_size in ml/gpu/capabilities.cpp): only the first character after the
// number is looked at, so trailing junk after a suffix is accepted ("64Kjunk" gives 65536, "12KB"
// 12288), and strtod's "nan", "inf" and out-of-range values are cast to uint64_t, which is undefined
// behaviour (in the RelWithDebInfo build "nan" gives 2^63; "inf" and "1e30" happen to give 0).
// Enable once fixed.
TEST(ByteSize, RejectsTrailingJunkAndNonFiniteValues) {
    for (const char* text : {"64Kjunk", "2G2", "12KB", "1MM", "nan", "inf", "-inf", "1e30", "1e30G"})
        EXPECT_EQ(parse_byte_size(text), 0u) << '"' << text << '"';
}
