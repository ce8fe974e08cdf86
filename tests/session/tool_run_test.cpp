// `vkml run` as a user runs it (the built binary), and its .npy reader/writer on its own:
// round trips, files as numpy writes them, and malformed files rejected with the file's name.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <unistd.h>

#include "npy.hpp"
#include "session/session_util.hpp"
#include "vkml/import/model.hpp"

using namespace vkml;
using namespace vkml::test;
namespace fs = std::filesystem;

#ifndef VKML_TOOL_PATH
#error "VKML_TOOL_PATH must name the vkml binary"
#endif

namespace {

std::string npy_header(const std::string& dict, char major = 1) {
    std::string h = dict;
    const size_t pre = major == 1 ? 10 : 12;
    const size_t total = (pre + h.size() + 1 + 63) / 64 * 64;
    h.append(total - pre - h.size() - 1, ' ');
    h += '\n';
    std::string out = "\x93NUMPY";
    out += major;
    out += '\0';
    const size_t n = h.size();
    out += static_cast<char>(n & 0xff);
    out += static_cast<char>((n >> 8) & 0xff);
    if (major != 1) out += std::string(2, '\0');
    return out + h;
}

template <class T>
std::string raw(const std::vector<T>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string error_of(const std::string& bytes) {
    try {
        (void)tool::parse_npy(bytes, "data.npy");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

fs::path scratch(const std::string& name) {
    const fs::path d =
        fs::temp_directory_path() / ("vkml-session-test-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

std::string run_tool(const std::string& args, int& status) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(
        popen((std::string(VKML_TOOL_PATH) + " run " + args + " 2>&1").c_str(), "r"), pclose);
    if (!pipe) {
        status = -1;
        return "popen failed";
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe.get())) > 0) out.append(buf, n);
    status = pclose(pipe.release());
    return out;
}

} // namespace

TEST(Npy, RoundTripsEveryDtype) {
    const std::vector<TensorData> cases = {
        TensorData::from_floats({2, 3}, std::vector<float>{1, -2, 3.5f, 0, 1e-8f, -1e8f}),
        TensorData::from_halves({3}, std::vector<uint16_t>{0x3c00, 0xc000, 0x7c00}),
        TensorData::from_int32s({1, 2, 2}, std::vector<int32_t>{-7, 0, 7, 2147483647}),
        TensorData::from_int64s({}, std::vector<int64_t>{-5}),
        TensorData(DType::u8, {4}, {std::byte{0}, std::byte{1}, std::byte{200}, std::byte{255}}),
        TensorData(DType::boolean, {2}, {std::byte{1}, std::byte{0}}),
        TensorData::from_floats({0, 3}, std::vector<float>{})};
    for (const TensorData& t : cases) {
        const std::string bytes = tool::format_npy(t);
        EXPECT_EQ(bytes.find('\n') + 1, bytes.size() - t.byte_size()); // header ends at the data
        EXPECT_EQ((bytes.size() - t.byte_size()) % 64, 0u);
        EXPECT_EQ(tool::parse_npy(bytes, "t.npy"), t) << graph::describe(t);
    }
    EXPECT_NE(tool::format_npy(cases[0]).find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
              std::string::npos);
    EXPECT_NE(tool::format_npy(cases[1]).find("'shape': (3,)"), std::string::npos);
    EXPECT_NE(tool::format_npy(cases[3]).find("'shape': ()"), std::string::npos);
}

TEST(Npy, ReadsWhatNumpyWrites) {
    // float64 becomes f32; int16 is sign-extended into i32; version 2.0 headers; "=" byte order.
    const std::vector<double> d = {0.5, -1.25, 3};
    EXPECT_EQ(
        tool::parse_npy(npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }") + raw(d), "d")
            .to_floats(),
        (std::vector<float>{0.5f, -1.25f, 3.f}));
    const std::vector<int16_t> s = {-2, 300};
    const TensorData i = tool::parse_npy(
        npy_header("{'descr': '<i2', 'fortran_order': False, 'shape': (1, 2), }", 2) + raw(s), "s");
    EXPECT_EQ(i.dtype(), DType::i32);
    EXPECT_EQ(i.to_int64s(), (std::vector<int64_t>{-2, 300}));
    const std::vector<float> f = {1, 2};
    EXPECT_EQ(tool::parse_npy(
                  npy_header("{\"descr\": \"=f4\", \"shape\": (2,), \"fortran_order\": False}") + raw(f), "f")
                  .dims(),
              (std::vector<int64_t>{2}));
}

TEST(Npy, MalformedFilesAreRejectedWithTheirName) {
    const std::vector<float> f = {1, 2, 3, 4};
    const std::string good =
        npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }") + raw(f);
    ASSERT_EQ(error_of(good), "");
    struct Bad {
        std::string bytes;
        const char* needle;
    };
    const Bad cases[] = {
        {"GIF89a" + good.substr(6), "no \\x93NUMPY magic"},
        {npy_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }") + raw(f), "big-endian"},
        {npy_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }") + raw(f), "Fortran-order"},
        {npy_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 2), }") + raw(f),
         "unsupported .npy dtype"},
        {npy_header("{'descr': 'O', 'fortran_order': False, 'shape': (2,), }") + raw(f),
         "unsupported .npy dtype"},
        {npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") + raw(f),
         "truncated .npy data"},
        {good + "xx", "bytes after its data"},
        {npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 2), }") + raw(f),
         "negative dimension"},
        {npy_header("{'descr': '<f4', 'fortran_order': False}") + raw(f),
         "needs descr, fortran_order and shape"},
        {npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'x': 1}") + raw(f),
         "unknown key"},
        {npy_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 2), }") + raw(f), "True or False"},
        {std::string("\x93NUMPY\x07\x00", 8) + good.substr(8), "version 7"},
    };
    for (const Bad& b : cases) {
        const std::string m = error_of(b.bytes);
        EXPECT_NE(m.find("data.npy"), std::string::npos) << b.needle << ": " << m;
        EXPECT_NE(m.find(b.needle), std::string::npos) << m;
    }
    // Every truncation: an error naming the file, never a crash or a foreign exception.
    for (size_t n = 0; n < good.size(); ++n) {
        const std::string m = error_of(good.substr(0, n));
        ASSERT_NE(m.find("data.npy"), std::string::npos) << "cut at " << n;
    }
    // Flipped bytes in the header: accepted or a named error.
    for (size_t k = 0; k < 64; ++k) {
        std::string bad = good;
        bad[k] = static_cast<char>(bad[k] ^ 0x5a);
        const std::string m = error_of(bad);
        if (!m.empty()) {
            ASSERT_NE(m.find("data.npy"), std::string::npos) << k << ": " << m;
        }
    }
}

// The tool and the fixtures are found by the paths this build compiled in; a test binary copied to
// another machine (e.g. to run on a real GPU) skips rather than failing on a missing path.
class ToolRun : public GpuTest {
protected:
    void SetUp() override {
        GpuTest::SetUp();
        if (!fs::exists(VKML_TOOL_PATH) || !fs::exists(fs::path(VKML_FIXTURE_DIR) / "conv_relu.onnx"))
            GTEST_SKIP() << "the vkml tool or tests/fixtures is not at its build-time path here";
    }
};

// A small ONNX model from .npy to .npy, checked against the Session's own result.
TEST_F(ToolRun, NpyInAndOutMatchesTheSession) {
    const fs::path model = fs::path(VKML_FIXTURE_DIR) / "conv_relu.onnx";
    const fs::path dir = scratch("run-npy");
    const graph::Graph g = import::load_model(model);
    const std::string in = g.value(g.inputs()[0]).name;
    const TensorData x = rand_tensor({1, 3, 5, 4}, 9);
    tool::write_npy(dir / "x.npy", x);
    int status = 0;
    const std::string out = run_tool(model.string() + " --input " + in + "=" + (dir / "x.npy").string() +
                                         " --output-dir " + (dir / "out").string() + " --fp32 --profile",
                                     status);
    ASSERT_EQ(status, 0) << out;
    EXPECT_NE(out.find("by op type"), std::string::npos) << out;
    EXPECT_TRUE(fs::exists(dir / "out/profile.json"));
    Session s(dev(), g, {.fp32 = true, .input_shapes = {{in, x.dims()}}});
    const auto want = s.run(std::vector<TensorData>{x});
    for (size_t j = 0; j < want.size(); ++j) {
        const fs::path file = dir / "out" / (s.outputs()[j].name + ".npy");
        ASSERT_TRUE(fs::exists(file)) << file << "\n" << out;
        EXPECT_EQ(tool::read_npy(file), want[j]) << s.outputs()[j].name;
    }
    fs::remove_all(dir);
}

// `vkml run --precision auto` (the default) on a model whose activations f16 flushes to zero: plain
// f16 answers zeros, auto reports the nodes it kept in f32 and answers right, as fp32 does.
TEST_F(ToolRun, PrecisionAutoKeepsTinyActivationsInF32) {
    if (!dev().caps().storage16) GTEST_SKIP() << "no 16-bit storage: f16 mode is f32 here";
    const fs::path model = fs::path(VKML_FIXTURE_DIR) / "tiny_activations.onnx";
    const fs::path dir = scratch("run-guard");
    auto v = random_floats(105, 71, -1.f, 1.f);
    for (float& x : v) x = std::copysign(0.5f + 0.5f * std::fabs(x), x); // |x| in [0.5, 1]
    const TensorData x = TensorData::from_floats({1, 3, 7, 5}, v);
    tool::write_npy(dir / "x.npy", x);
    auto run = [&](const std::string& precision, int& status) {
        return run_tool(model.string() + " --input " + (dir / "x.npy").string() + " --output-dir " +
                            (dir / "out").string() + precision,
                        status);
    };
    int status = 0;
    std::string out = run(" --precision f16", status);
    ASSERT_EQ(status, 0) << out;
    EXPECT_EQ(out.find("kept in f32"), std::string::npos) << out;
    for (float y : tool::read_npy(dir / "out/y.npy").to_floats()) ASSERT_EQ(y, 0.f) << out;
    for (const std::string mode : {"", " --precision auto", " --precision fp32"}) {
        out = run(mode, status);
        ASSERT_EQ(status, 0) << out;
        if (mode.find("fp32") == std::string::npos) {
            EXPECT_NE(out.find("f16 guard: kept in f32: "), std::string::npos) << out;
            EXPECT_NE(out.find("shrink2 (underflow)"), std::string::npos) << out;
            EXPECT_NE(out.find("grow1 (neighbour of shrink2)"), std::string::npos) << out;
        } else {
            EXPECT_EQ(out.find("kept in f32"), std::string::npos) << out;
        }
        EXPECT_LT(max_rel_diff(tool::read_npy(dir / "out/y.npy"), x), 3e-3) << mode << "\n" << out;
    }
    fs::remove_all(dir);
}

TEST_F(ToolRun, ErrorsNameTheProblem) {
    const fs::path model = fs::path(VKML_FIXTURE_DIR) / "conv_relu.onnx";
    const fs::path dir = scratch("run-errors");
    std::ofstream(dir / "bad.npy") << "not numpy";
    int status = 0;
    std::string out = run_tool(
        model.string() + " --input " + (dir / "bad.npy").string() + " --output-dir " + dir.string(), status);
    EXPECT_NE(status, 0);
    EXPECT_NE(out.find("bad.npy"), std::string::npos) << out;
    tool::write_npy(dir / "x.npy", rand_tensor({1, 3, 4, 4}, 1));
    out = run_tool(model.string() + " --input nope=" + (dir / "x.npy").string() + " --output-dir " +
                       dir.string(),
                   status);
    EXPECT_NE(status, 0);
    EXPECT_NE(out.find("no input 'nope'"), std::string::npos) << out;
    out = run_tool(model.string() + " --input " + (dir / "x.npy").string(), status);
    EXPECT_NE(status, 0);
    EXPECT_NE(out.find("--output-dir"), std::string::npos) << out;
    out = run_tool(model.string() + " --frobnicate", status);
    EXPECT_NE(status, 0);
    EXPECT_NE(out.find("unknown option"), std::string::npos) << out;
    fs::remove_all(dir);
}

// An image model from PNG to PNG: esrgan-slim on its fixture, shrunk to keep lavapipe quick.
TEST_F(ToolRun, ImageInImageOut) {
    const fs::path root = model_cache() / "esrgan-slim";
    VKML_REQUIRE_FILE(root / "assets/fixture.png", "run tools/fetch-models (or set VKML_MODELS)");
    const fs::path dir = scratch("run-png");
    int status = 0;
    const std::string out = run_tool((root / "models/x2/model.json").string() + " --input " +
                                         (root / "assets/fixture.png").string() +
                                         " --scale 255 --resize 24x20 --output-dir " + dir.string(),
                                     status);
    ASSERT_EQ(status, 0) << out;
    ASSERT_TRUE(fs::exists(dir / "SR.png")) << out;
    const TensorData sr = tool::read_npy(dir / "SR.npy");
    EXPECT_EQ(sr.dims(), (std::vector<int64_t>{1, 3, 40, 48}));
    // The PNG is the output undone by --scale: about the same as the input's colours.
    std::ifstream png(dir / "SR.png", std::ios::binary);
    char sig[8] = {};
    png.read(sig, 8);
    EXPECT_EQ(std::memcmp(sig, "\x89PNG", 4), 0);
    fs::remove_all(dir);
}
