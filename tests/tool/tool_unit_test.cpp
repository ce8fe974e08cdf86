// The command line's device-free parts: `vkml run` and `vkml detect` option parsing, .npy files
// and image files, including every input the fuzzers found crashing (tests/fuzz/regressions).
#include <gtest/gtest.h>

#include <stb_image_write.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "detect_app.hpp"
#include "image_file.hpp"
#include "npy.hpp"
#include "run_args.hpp"
#include "vkml/error.hpp"

using namespace vkml;

namespace {

std::string read(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::filesystem::path regression(const std::string& harness, const std::string& name) {
    return std::filesystem::path(VKML_FUZZ_DIR) / "regressions" / harness / name;
}

// The error `f` throws (vkml::Error only), or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

tool::RunArgs run_args(std::vector<std::string_view> args) {
    return tool::parse_run_args(args);
}

std::string png(int w, int h) {
    std::vector<uint8_t> px(size_t(w) * h * 3);
    for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i * 7);
    std::string out;
    stbi_write_png_to_func(
        [](void* ctx, void* data, int size) {
            static_cast<std::string*>(ctx)->append(static_cast<char*>(data), size);
        },
        &out, w, h, 3, px.data(), w * 3);
    return out;
}

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

} // namespace

TEST(RunArgs, ParsesEveryOption) {
    const auto r = run_args({"m.onnx",      "-i",
                             "x=in.npy",    "--input",
                             "b.png",       "-o",
                             "out",         "--fp32",
                             "--precision", "Softmax=f32",
                             "--free-dim",  "height=64",
                             "--mean",      "1,2,3",
                             "--std",       "0.5",
                             "--scale",     "255",
                             "--layout",    "NHWC",
                             "--resize",    "32x16",
                             "--no-fuse",   "--profile",
                             "--describe",  "--free-dim-denotation",
                             "DATA_BATCH=2"});
    EXPECT_EQ(r.model, "m.onnx");
    EXPECT_EQ(r.out_dir, "out");
    ASSERT_EQ(r.inputs.size(), 2u);
    EXPECT_EQ(r.inputs[0].first, "x");
    EXPECT_EQ(r.inputs[1].first, "");
    EXPECT_TRUE(r.session.fp32);
    EXPECT_FALSE(r.session.fuse);
    EXPECT_EQ(r.session.free_dims.at("height"), 64);
    EXPECT_EQ(r.session.free_dim_denotations.at("DATA_BATCH"), 2);
    EXPECT_EQ(r.image.mean, (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(r.image.scale, 255.f);
    EXPECT_TRUE(r.image.nhwc);
    EXPECT_EQ(r.image.resize_w, 32);
    EXPECT_EQ(r.image.resize_h, 16);
    EXPECT_TRUE(r.profile && r.describe);
    EXPECT_TRUE(run_args({"--help"}).help);
    EXPECT_TRUE(run_args({}).model.empty()); // the caller prints the usage
}

// --precision auto|f16|fp32 picks the float storage (auto by default: f16 with the guard); the
// KEY=f32|f16 form still sets one node or op type, next to a mode.
TEST(RunArgs, PrecisionModes) {
    const auto d = run_args({"m.onnx", "-o", "d"});
    EXPECT_TRUE(d.session.f16_guard);
    EXPECT_FALSE(d.session.fp32);
    const auto f16 = run_args({"m.onnx", "-o", "d", "--precision", "f16"});
    EXPECT_FALSE(f16.session.f16_guard || f16.session.fp32);
    for (std::string_view v : {"fp32", "f32"}) {
        const auto f32 = run_args({"m.onnx", "-o", "d", "--precision", v});
        EXPECT_TRUE(f32.session.fp32 && !f32.session.f16_guard) << v;
    }
    const auto mixed = run_args({"m.onnx", "-o", "d", "--precision", "f16", "--precision", "auto",
                                 "--precision", "Softmax=f32", "--precision", "conv1=f16"});
    EXPECT_TRUE(mixed.session.f16_guard);
    EXPECT_EQ(mixed.session.precision.at("Softmax"), Precision::F32);
    EXPECT_EQ(mixed.session.precision.at("conv1"), Precision::F16);
    EXPECT_NE(error_of([] {
                  (void)run_args({"m.onnx", "-o", "d", "--precision", "fast"});
              }).find("auto, f16, fp32 or KEY=f32|f16, not 'fast'"),
              std::string::npos);
}

TEST(RunArgs, BadUsageIsAnErrorNamingTheOption) {
    auto bad = [](std::vector<std::string_view> a) { return error_of([&] { (void)run_args(a); }); };
    EXPECT_NE(bad({"m.onnx"}).find("--output-dir is required"), std::string::npos);
    EXPECT_NE(bad({"m.onnx", "-o", "d", "--mean", "1,2"}).find("1 or 3 values"), std::string::npos);
    EXPECT_NE(bad({"m.onnx", "-o", "d", "--frob"}).find("unknown option '--frob'"), std::string::npos);
    EXPECT_NE(bad({"m.onnx", "-o"}).find("-o needs a value"), std::string::npos);
    // Sizes are range-checked before they become ints (a 2^32 + 1 wide resize was 1 pixel wide).
    EXPECT_NE(bad({"m.onnx", "-o", "d", "--resize", "4294967297x1"}).find("1..65536"), std::string::npos);
    EXPECT_NE(bad({"m.onnx", "-o", "d", "--free-dim", "h=0"}).find("h: 0 is not in"), std::string::npos);
    EXPECT_NE(
        bad({"m.onnx", "-o", "d", "--free-dim-denotation", "DATA_BATCH=0"}).find("DATA_BATCH: 0 is not in"),
        std::string::npos);
    EXPECT_NE(bad({"m.onnx", "-o", "d", "--free-dim", "h=99999999999999999999"}).find("not an integer"),
              std::string::npos);
}

TEST(DetectArgs, HugeFrameCountIsAnError) {
    // --frames 1e21 reached a float -> int64 conversion outside int64's range (found by
    // tests/fuzz/cli_fuzz.cpp; UBSan: undefined behaviour).
    const std::vector<std::string_view> args = {"in.mp4", "--frames", "999999999999999999999"};
    EXPECT_NE(error_of([&] { (void)detect_app::parse_args(args, "vkml detect"); }).find("--frames"),
              std::string::npos);
    const std::vector<std::string_view> ok = {"in.mp4", "--frames", "12"};
    EXPECT_EQ(detect_app::parse_args(ok, "vkml detect")->max_frames, 12);
}

TEST(Npy, RoundTripsAndReadsEmptyArrays) {
    const graph::TensorData t = graph::TensorData::from_floats({2, 0, 3}, {});
    EXPECT_EQ(tool::parse_npy(tool::format_npy(t), "empty.npy"), t);
    // An empty array copied with memcpy from a null pointer (found by tests/fuzz/npy_fuzz.cpp;
    // UBSan: undefined behaviour): the fuzzer's input, and a well-formed empty bool array.
    const std::string crash = read(regression("npy", "empty_array_memcpy_null.npy"));
    ASSERT_FALSE(crash.empty());
    (void)error_of([&] { (void)tool::parse_npy(crash, "crash.npy"); });
    std::string empty_b1 = "\x93NUMPY\x01";
    empty_b1 += '\0';
    const std::string header = "{'descr': '|b1', 'fortran_order': False, 'shape': (6, 0), }          \n";
    empty_b1 += char(header.size());
    empty_b1 += '\0';
    empty_b1 += header;
    const graph::TensorData e = tool::parse_npy(empty_b1, "e.npy");
    EXPECT_EQ(e.dims(), (std::vector<int64_t>{6, 0}));
    EXPECT_EQ(e.elements(), 0);
}

TEST(ImageFile, DecodesPngAndConvertsToATensor) {
    const tool::RgbImage img = tool::decode_rgb_image(bytes_of(png(5, 3)), "in.png");
    EXPECT_EQ(img.width, 5);
    EXPECT_EQ(img.height, 3);
    EXPECT_EQ(img.pixels.size(), 45u);
    tool::ImageOptions o;
    const auto t = tool::image_tensor(img, o, {0, 0}, graph::DType::f32, "in.png");
    EXPECT_EQ(t.dims(), (std::vector<int64_t>{1, 3, 3, 5}));
    EXPECT_FLOAT_EQ(t.to_floats()[1], 21.f / 255.f); // red of pixel 1: byte 3 of the ramp, 3 * 7
    o.nhwc = true;
    const auto r = tool::image_tensor(img, o, {7, 4}, graph::DType::f16, "in.png");
    EXPECT_EQ(r.dims(), (std::vector<int64_t>{1, 4, 7, 3}));
    EXPECT_EQ(r.dtype(), graph::DType::f16);
    EXPECT_NE(error_of([&] {
                  (void)tool::image_tensor(img, o, {0, 0}, graph::DType::i64, "in.png");
              }).find("images feed float inputs only"),
              std::string::npos);
}

TEST(ImageFile, HugeOrForeignImagesAreRefusedBeforeDecoding) {
    // A PNG header claiming 100000 x 100000 pixels: refused from the header, nothing allocated.
    std::string big = png(1, 1);
    auto put32 = [&](size_t at, uint32_t v) {
        for (int k = 0; k < 4; ++k) big[at + k] = char(v >> (24 - 8 * k));
    };
    put32(16, 100000);
    put32(20, 100000);
    const std::string m = error_of([&] { (void)tool::decode_rgb_image(bytes_of(big), "big.png"); });
    EXPECT_NE(m.find("'big.png'"), std::string::npos) << m;
    // Either refused by size or by the (now wrong) header checksum: never decoded.
    EXPECT_NE(m, "");
    // The size check itself, with a small cap.
    EXPECT_NE(error_of([&] {
                  (void)tool::decode_rgb_image(bytes_of(png(64, 64)), "p.png", 1000);
              }).find("more than the 1000 pixels"),
              std::string::npos);
    // A truncated 16-bit PGM made Debian's stb_image read past its buffer (found by
    // tests/fuzz/image_fuzz.cpp); only PNG, JPEG, BMP and TGA reach stb.
    const std::string pgm = read(regression("image", "truncated_16bit_pgm.pgm"));
    ASSERT_FALSE(pgm.empty());
    EXPECT_NE(
        error_of([&] { (void)tool::decode_rgb_image(bytes_of(pgm), "crash.pgm"); }).find("is a PGM image"),
        std::string::npos);
    EXPECT_NE(error_of([&] {
                  (void)tool::decode_rgb_image(bytes_of(std::string("GIF89a....")), "a.gif");
              }).find("GIF"),
              std::string::npos);
    EXPECT_NE(error_of([&] { (void)tool::decode_rgb_image({}, "empty.png"); }).find("cannot read the image"),
              std::string::npos);
}
