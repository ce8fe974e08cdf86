// `vkml info --json` run as a user would, its output parsed strictly and compared with what the
// library reports; the benchmarks' --json files parsed the same way.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include <unistd.h>

#include "gpu_test.hpp"
#include "json_check.hpp"

namespace vkml::test {
namespace {

// The tool's path is compiled in from the build tree; test binaries copied to another machine
// (a device runner) arrive without it, and there is nothing to run: skip, not fail (and not pass:
// the shell's "not found" would satisfy a test that only expects a failing status).
bool tool_present() {
    std::error_code ec;
    return std::filesystem::is_regular_file(VKML_TOOL_PATH, ec);
}

// `env` (e.g. "VKML_MEMORY_LIMIT=1M") is put before the command, for the shell.
std::string run_tool(const std::string& args, int& status, const std::string& env = "") {
    std::string out;
    const std::string command = (env.empty() ? "" : env + " ") + VKML_TOOL_PATH + " " + args;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
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

TEST_F(GpuTest, InfoJsonIsValidAndMatchesTheLibrary) {
    if (!tool_present())
        GTEST_SKIP() << "no vkml tool at " << VKML_TOOL_PATH << " (tests away from their build tree)";
    int status = 0;
    const std::string text = run_tool("info --json", status);
    ASSERT_EQ(status, 0) << text;
    const auto json = JsonParser::parse(text);
    ASSERT_TRUE(json.has_value()) << "not valid JSON:\n" << text;
    const Json* devices = json->find("devices");
    ASSERT_NE(devices, nullptr);
    const auto caps = gpu::Device::enumerate(device_desc());
    ASSERT_EQ(devices->items.size(), caps.size());
    for (size_t i = 0; i < caps.size(); ++i) {
        const Json& d = devices->items[i];
        ASSERT_NE(d.find("name"), nullptr);
        EXPECT_EQ(d.find("name")->string, caps[i].device_name);
        EXPECT_EQ(d.find("fp16_storage")->boolean, caps[i].storage16);
        EXPECT_EQ(d.find("subgroup_size")->number, double(caps[i].subgroup_size));
        ASSERT_NE(d.find("subgroup_arithmetic"), nullptr);
        EXPECT_EQ(d.find("subgroup_arithmetic")->boolean, caps[i].subgroup_arithmetic);
        EXPECT_EQ(d.find("memory_heaps")->items.size(), caps[i].memory_heaps.size());
        EXPECT_EQ(d.find("queue_families")->items.size(), caps[i].queue_families.size());
    }
}

// A scratch file path for one test's JSON output, removed first.
std::filesystem::path scratch_json(const std::string& name) {
    const auto p = std::filesystem::temp_directory_path() / ("vkml_tool_test_" + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove(p);
    return p;
}

std::optional<Json> read_json(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) return std::nullopt;
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return JsonParser::parse(text);
}

// `vkml bench model --json FILE`: the file parses and holds the time, the rate and the model's name
// (bench/run_peers.py reads it), and the text output is still printed.
TEST_F(GpuTest, BenchModelWritesJson) {
    if (!tool_present())
        GTEST_SKIP() << "no vkml tool at " << VKML_TOOL_PATH << " (tests away from their build tree)";
    const std::string model = std::string(VKML_FIXTURE_DIR) + "/conv_relu.onnx";
    const auto out = scratch_json("model.json");
    int status = 0;
    const std::string text = run_tool("bench model " + model + " --size 17x13 --runs 3 --json " + out.string() + " 2>&1", status);
    ASSERT_EQ(status, 0) << text;
    EXPECT_NE(text.find("GPU time:"), std::string::npos) << text;
    const auto json = read_json(out);
    ASSERT_TRUE(json.has_value()) << "missing or not valid JSON: " << out;
    ASSERT_NE(json->find("model"), nullptr);
    EXPECT_EQ(json->find("model")->string, model);
    ASSERT_NE(json->find("name"), nullptr);
    EXPECT_EQ(json->find("name")->kind, Json::Kind::String);
    ASSERT_NE(json->find("median_ms"), nullptr);
    EXPECT_GT(json->find("median_ms")->number, 0.0);
    EXPECT_LE(json->find("min_ms")->number, json->find("median_ms")->number);
    EXPECT_GE(json->find("max_ms")->number, json->find("median_ms")->number);
    ASSERT_NE(json->find("tflops"), nullptr);
    EXPECT_GT(json->find("tflops")->number, 0.0); // the conv counts
    EXPECT_GT(json->find("flops")->number, 0.0);
    EXPECT_EQ(json->find("runs")->number, 3.0);
    const Json* shape = json->find("shape");
    ASSERT_NE(shape, nullptr);
    ASSERT_EQ(shape->items.size(), 4u);
    EXPECT_EQ(shape->items[1].number, 3.0);
    EXPECT_EQ(shape->items[2].number, 13.0);
    EXPECT_EQ(shape->items[3].number, 17.0);
    std::filesystem::remove(out);
}

// `vkml bench ops --json FILE`: one entry per measured case and dtype, names as printed.
TEST_F(GpuTest, BenchOpsWritesJson) {
    if (!tool_present())
        GTEST_SKIP() << "no vkml tool at " << VKML_TOOL_PATH << " (tests away from their build tree)";
    const auto out = scratch_json("ops.json");
    int status = 0;
    const std::string text =
        run_tool("bench ops --runs 2 --filter 'Conv 3x3 16->16 @' --json " + out.string() + " 2>&1", status);
    ASSERT_EQ(status, 0) << text;
    const auto json = read_json(out);
    ASSERT_TRUE(json.has_value()) << "missing or not valid JSON: " << out;
    ASSERT_NE(json->find("bandwidth_gbs"), nullptr);
    EXPECT_GT(json->find("bandwidth_gbs")->number, 0.0);
    const Json* cases = json->find("cases");
    ASSERT_NE(cases, nullptr);
    ASSERT_FALSE(cases->items.empty());
    for (const Json& c : cases->items) {
        ASSERT_NE(c.find("name"), nullptr);
        EXPECT_EQ(c.find("name")->string, "Conv 3x3 16->16 @ 32x32");
        EXPECT_TRUE(c.find("dtype")->string == "f32" || c.find("dtype")->string == "f16");
        if (c.find("skipped")) continue;
        EXPECT_GT(c.find("median_us")->number, 0.0);
        EXPECT_GT(c.find("gflops")->number, 0.0);
        EXPECT_NE(text.find(c.find("name")->string), std::string::npos) << "the text table lists it too";
    }
    std::filesystem::remove(out);
}

TEST_F(GpuTest, BenchJsonToAnUnwritablePathFails) {
    if (!tool_present())
        GTEST_SKIP() << "no vkml tool at " << VKML_TOOL_PATH << " (tests away from their build tree)";
    int status = 0;
    const std::string text = run_tool("bench model " + std::string(VKML_FIXTURE_DIR) +
                                          "/conv_relu.onnx --size 8x8 --runs 1 --json /nonexistent-dir/x.json 2>&1",
                                      status);
    EXPECT_NE(status, 0) << text;
    EXPECT_NE(text.find("/nonexistent-dir/x.json"), std::string::npos) << text;
}

TEST_F(GpuTest, ToolRejectsUnknownOptionsWithUsage) {
    if (!tool_present())
        GTEST_SKIP() << "no vkml tool at " << VKML_TOOL_PATH << " (tests away from their build tree)";
    int status = 0;
    run_tool("info --frobnicate 2>&1", status);
    EXPECT_NE(status, 0);
}

// Issue 14, item 8: running out of device memory ends in an error that says what to try: smaller
// tiles or a smaller model for `vkml upscale`, a smaller input for `vkml run`. VKML_MEMORY_LIMIT
// makes the device small.
TEST_F(GpuTest, OutOfMemorySuggestsWhatToTry) {
    if (!tool_present())
        GTEST_SKIP() << "no vkml tool at " << VKML_TOOL_PATH << " (tests away from their build tree)";
    const auto dir = std::filesystem::temp_directory_path() / ("vkml_oom_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    // A 1x3x512x512 f32 input (3 MiB) for conv_relu.onnx, under a 1 MiB limit.
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 512, 512), }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    {
        std::ofstream f(dir / "x.npy", std::ios::binary);
        f << "\x93NUMPY\x01" << '\0' << char(header.size() & 0xff) << char(header.size() >> 8) << header;
        const std::string zeros(size_t(3) * 512 * 512 * 4, '\0');
        f.write(zeros.data(), std::streamsize(zeros.size()));
    }
    int status = 0;
    const std::string run = run_tool("run " + std::string(VKML_FIXTURE_DIR) + "/conv_relu.onnx --fp32 -i " +
                                         (dir / "x.npy").string() + " -o " + (dir / "out").string() + " 2>&1",
                                     status);
    EXPECT_EQ(status, 0) << "the same run without a limit fails:\n" << run;
    const std::string small =
        run_tool("run " + std::string(VKML_FIXTURE_DIR) + "/conv_relu.onnx --fp32 -i " +
                     (dir / "x.npy").string() + " -o " + (dir / "out").string() + " 2>&1",
                 status, "VKML_MEMORY_LIMIT=1M");
    EXPECT_NE(status, 0) << small;
    EXPECT_NE(small.find("out of device memory"), std::string::npos) << small;
    EXPECT_NE(small.find("--resize"), std::string::npos) << small;
    EXPECT_NE(small.find("vkml upscale --tile"), std::string::npos) << small;
    EXPECT_NE(small.find("raise VKML_MEMORY_LIMIT (now 1M)"), std::string::npos) << small;
    // vkml upscale on darknet's photo (installed with the test dependencies) with a model from the
    // cache, when both are there.
    const char* models = std::getenv("VKML_MODELS");
    const std::string cache =
        models && *models
            ? models
            : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/vkml/models";
    if (std::filesystem::exists("/usr/share/darknet/data/dog.jpg") &&
        std::filesystem::exists(cache + "/websr")) {
        const std::string up = run_tool("upscale /usr/share/darknet/data/dog.jpg -m anime4k-s -q -o " +
                                            (dir / "dog_x2.jpg").string() + " 2>&1",
                                        status, "VKML_MEMORY_LIMIT=1M");
        EXPECT_NE(status, 0) << up;
        EXPECT_NE(up.find("--tile"), std::string::npos) << up;
        EXPECT_NE(up.find("a smaller model"), std::string::npos) << up;
        EXPECT_FALSE(std::filesystem::exists(dir / "dog_x2.jpg"));
    }
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace vkml::test
