// `vkml info --json` run as a user would, its output parsed strictly and compared with what the
// library reports.
#include <cstdio>
#include <filesystem>
#include <memory>

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

TEST_F(GpuTest, ToolRejectsUnknownOptionsWithUsage) {
    if (!tool_present())
        GTEST_SKIP() << "no vkml tool at " << VKML_TOOL_PATH << " (tests away from their build tree)";
    int status = 0;
    run_tool("info --frobnicate 2>&1", status);
    EXPECT_NE(status, 0);
}

} // namespace
} // namespace vkml::test
