// `vkml upscale`'s option parser (tools/vkml/upscale_args.cpp), without a device: every option lands
// where upscale_main reads it, and bad usage is an error naming the option.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "upscale_args.hpp"
#include "vkml/error.hpp"

using namespace vkml;
using vkml::tool::parse_upscale_args;

namespace {

tool::UpscaleArgs parse(std::vector<std::string_view> args) {
    return parse_upscale_args(args);
}

std::string error_of(std::vector<std::string_view> args) {
    try {
        (void)parse(args);
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
        return e.what();
    }
    return "";
}

} // namespace

TEST(UpscaleArgs, ParsesEveryOption) {
    const auto a = parse({"in.mkv",
                          "-o",
                          "out.mkv",
                          "-m",
                          "esrgan-medium",
                          "--scale",
                          "4",
                          "--input-range",
                          "255",
                          "--fp32",
                          "--tile",
                          "128",
                          "-c",
                          "libx265",
                          "--crf",
                          "20",
                          "--preset",
                          "slow",
                          "--pix-fmt",
                          "yuv420p10le",
                          "-e",
                          "tune=grain",
                          "-e",
                          "x265-params=a=b",
                          "-j",
                          "1:3:2",
                          "--frames",
                          "7",
                          "--tolerate-errors",
                          "-q",
                          "--no-partial"});
    EXPECT_FALSE(a.help);
    EXPECT_EQ(a.input, "in.mkv");
    EXPECT_EQ(a.output, "out.mkv");
    EXPECT_EQ(a.model.name, "esrgan-medium");
    EXPECT_EQ(a.model.scale, 4);
    EXPECT_EQ(a.model.input_range, 255.f);
    EXPECT_TRUE(a.model.fp32);
    EXPECT_EQ(a.desc.tile, 128);
    EXPECT_EQ(a.model.tile, 128);
    EXPECT_EQ(a.desc.codec, "libx265");
    EXPECT_EQ(a.desc.crf, 20);
    EXPECT_EQ(a.desc.preset, "slow");
    EXPECT_EQ(a.desc.pix_fmt, "yuv420p10le");
    ASSERT_EQ(a.desc.encoder_options.size(), 2u);
    EXPECT_EQ(a.desc.encoder_options[1].first, "x265-params");
    EXPECT_EQ(a.desc.encoder_options[1].second, "a=b");
    EXPECT_EQ(a.desc.threads.load, 1);
    EXPECT_EQ(a.desc.threads.proc, 3);
    EXPECT_EQ(a.desc.threads.save, 2);
    EXPECT_EQ(a.desc.max_frames, 7);
    EXPECT_TRUE(a.desc.tolerate_errors);
    EXPECT_TRUE(a.desc.quiet);
    EXPECT_TRUE(a.desc.no_partial);
    EXPECT_FALSE(a.desc.benchmark);
    EXPECT_EQ(a.desc.log_name, "vkml upscale");

    const auto d = parse({});
    EXPECT_TRUE(d.input.empty());
    EXPECT_TRUE(d.model.name.empty());
    EXPECT_EQ(d.model.scale, 0);
    EXPECT_TRUE(parse({"--benchmark", "-"}).desc.benchmark);
    EXPECT_EQ(parse({"-"}).input, "-");
    EXPECT_TRUE(parse({"x.mp4", "--help", "--bogus"}).help);
}

TEST(UpscaleArgs, BadUsageIsAnErrorNamingTheOption) {
    EXPECT_NE(error_of({"--scale", "17"}).find("--scale: '17' is not a number in 1..16"), std::string::npos);
    EXPECT_NE(error_of({"--scale", "99999999999999999999"}).find("--scale"), std::string::npos);
    EXPECT_NE(error_of({"--frames", "1e21"}).find("--frames: '1e21'"), std::string::npos);
    EXPECT_NE(error_of({"--frames", "0"}).find("--frames"), std::string::npos);
    EXPECT_NE(error_of({"--tile", "-1"}).find("--tile"), std::string::npos);
    EXPECT_NE(error_of({"--crf", ""}).find("--crf: ''"), std::string::npos);
    EXPECT_NE(error_of({"--input-range", "2"}).find("--input-range: 1 or 255, not '2'"), std::string::npos);
    EXPECT_NE(error_of({"-e", "=x"}).find("-e takes KEY=VALUE, not '=x'"), std::string::npos);
    EXPECT_NE(error_of({"-e", "novalue"}).find("-e takes KEY=VALUE"), std::string::npos);
    EXPECT_NE(error_of({"-j", "1:2"}).find("--threads '1:2'"), std::string::npos);
    EXPECT_NE(error_of({"-j", "1:2:999"}).find("'999' is not a thread count"), std::string::npos);
    EXPECT_NE(error_of({"-o"}).find("-o needs a value"), std::string::npos);
    EXPECT_NE(error_of({"--frobnicate"}).find("unknown option '--frobnicate'"), std::string::npos);
    EXPECT_NE(error_of({"a.mp4", "b.mp4"}).find("more than one input ('a.mp4', 'b.mp4')"), std::string::npos);
    EXPECT_NE(error_of({"--scale", "0"}).find("(vkml upscale --help)"), std::string::npos);
}
