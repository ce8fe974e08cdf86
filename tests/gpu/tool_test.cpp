// `vkml info --json` run as a user would, its output parsed strictly and compared with what the
// library reports; the benchmarks' --json files parsed the same way.
#include <cstdio>
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

std::string run_tool(const std::string& args, int& status) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((std::string(VKML_TOOL_PATH) + " " + args).c_str(), "r"),
                                               pclose);
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

} // namespace
} // namespace vkml::test
