// The persistent pipeline cache: written on shutdown, reused by the next process, and a corrupt,
// truncated or foreign file is ignored with a warning, never a crash.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "gpu_test.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::test {
namespace {

namespace fs = std::filesystem;
using gpu::ShaderId;

class PipelineCacheTest : public GpuTest {
protected:
    void SetUp() override {
        GpuTest::SetUp();
        // A parameterized test's name ("Case/0") would make a nested folder, and TearDown would
        // remove only its last part: one flat folder per test.
        std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
        std::replace(name.begin(), name.end(), '/', '_');
        dir_ = fs::temp_directory_path() /
               ("vkml-cache-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" + name);
        fs::remove_all(dir_);
    }
    void TearDown() override {
        fs::remove_all(dir_);
        GpuTest::TearDown();
    }
    std::unique_ptr<gpu::Device> make(std::vector<std::string>* warnings = nullptr) {
        auto desc = device_desc(warnings);
        desc.cache_dir = dir_.string();
        return gpu::Device::create(desc);
    }
    // Builds two pipelines and checks one of them computes correctly.
    static void use_pipelines(gpu::Device& device) {
        const gpu::Pipeline& fill =
            device.pipeline({.shader = ShaderId::fill_f32, .bindings = 1, .push_constant_bytes = 8});
        device.pipeline(
            {.shader = ShaderId::axpy_f32, .bindings = 2, .push_constant_bytes = 8, .specialization = {64}});
        gpu::Tensor t(device, {100}, gpu::DType::f32);
        struct {
            uint32_t n;
            float v;
        } push{100, 2.5f};
        device.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
            const gpu::BufferRange r[] = {t.range()};
            cmd.dispatch(fill, r, push, cmd.groups_for(fill, 100));
        });
        const auto out = gpu::download_floats(device, t);
        EXPECT_EQ(std::count(out.begin(), out.end(), 2.5f), 100);
    }
    fs::path cache_file() const {
        for (const auto& e : fs::directory_iterator(dir_))
            if (e.path().extension() == ".vkpc") return e.path();
        return {};
    }
    fs::path dir_;
};

TEST_F(PipelineCacheTest, SecondProcessLoadsWhatTheFirstSaved) {
    {
        auto d = make();
        EXPECT_EQ(d->pipelines().stats().loaded_bytes, 0u);
        use_pipelines(*d);
        EXPECT_EQ(d->pipelines().stats().pipelines, 2u);
    }
    const fs::path file = cache_file();
    ASSERT_FALSE(file.empty()) << "no cache file written under " << dir_;
    EXPECT_GT(fs::file_size(file), 100u);
    std::vector<std::string> warnings;
    auto d = make(&warnings);
    const auto stats = d->pipelines().stats();
    EXPECT_FALSE(stats.file_rejected);
    EXPECT_EQ(stats.file, file);
    EXPECT_GT(stats.loaded_bytes, 0u);
    EXPECT_TRUE(warnings.empty());
    use_pipelines(*d);
}

TEST_F(PipelineCacheTest, InMemoryLookupReusesPipelines) {
    auto d = make();
    const gpu::ComputePipelineDesc desc{
        .shader = ShaderId::fill_f32, .bindings = 1, .push_constant_bytes = 8};
    const gpu::Pipeline& a = d->pipeline(desc);
    const gpu::Pipeline& b = d->pipeline(desc);
    EXPECT_EQ(&a, &b);
    EXPECT_EQ(d->pipelines().stats().lookups_hit, 1u);
    auto other = desc;
    other.workgroup = {128, 1, 1};
    EXPECT_NE(&d->pipeline(other), &a) << "a different workgroup size is a different pipeline";
    other = desc;
    other.specialization = {5};
    EXPECT_NE(&d->pipeline(other), &a) << "different specialization constants are a different pipeline";
    EXPECT_EQ(d->pipelines().stats().pipelines, 3u);
}

TEST_F(PipelineCacheTest, BatchCompilesOnWorkersAndPipelinesWaitForThem) {
    auto d = make();
    gpu::PipelineCache& cache = d->pipelines();
    std::vector<const gpu::Pipeline*> made;
    {
        gpu::PipelineBatch batch(cache);
        // Eight distinct pipelines (specialization constants) and a repeat of the first, then one
        // used before finish(): recording it waits for its worker.
        for (uint32_t i = 0; i < 8; ++i)
            made.push_back(&d->pipeline(
                {.shader = ShaderId::axpy_f32, .bindings = 2, .push_constant_bytes = 8, .specialization = {64 + i}}));
        EXPECT_EQ(&d->pipeline({.shader = ShaderId::axpy_f32,
                                .bindings = 2,
                                .push_constant_bytes = 8,
                                .specialization = {64}}),
                  made[0]);
        use_pipelines(*d);
        batch.finish();
        EXPECT_EQ(cache.stats().pipelines, 9u) << "8 axpy variants and fill (use_pipelines' axpy is the first)";
    }
    for (const gpu::Pipeline* p : made) EXPECT_NE(p->vk(), VkPipeline(VK_NULL_HANDLE));
    // Outside a batch pipelines compile in get() as before.
    const gpu::Pipeline& later =
        d->pipeline({.shader = ShaderId::axpy_f32, .bindings = 2, .push_constant_bytes = 8, .specialization = {7}});
    EXPECT_NE(later.vk(), VkPipeline(VK_NULL_HANDLE));
    EXPECT_EQ(cache.stats().pipelines, 10u);
}

// Damages the saved file in one way, then checks the next device ignores it with a warning
// naming the reason and the file, still works, and writes a good file again.
class DamagedCache : public PipelineCacheTest,
                     public ::testing::WithParamInterface<std::pair<const char*, const char*>> {};

TEST_P(DamagedCache, IsIgnoredWithAWarningAndReplaced) {
    const auto [how, reason] = GetParam();
    {
        auto d = make();
        use_pipelines(*d);
    }
    const fs::path file = cache_file();
    ASSERT_FALSE(file.empty());
    const std::string what = how;
    {
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (what == "flip") {
            // Past vkml's 88-byte header, inside the driver's data (which may be only its own header).
            ASSERT_GT(bytes.size(), 88u);
            std::mt19937 rng(3);
            for (int i = 0; i < 4; ++i) bytes[88 + rng() % (bytes.size() - 88)] ^= char(1 << i);
        } else if (what == "truncate") {
            bytes.resize(bytes.size() - 8);
        } else if (what == "header") {
            bytes.resize(20);
        } else if (what == "foreign") {
            bytes[16] ^= 0x01; // the device id field of our header
        } else if (what == "garbage") {
            std::mt19937 rng(4);
            for (char& c : bytes) c = char(rng());
        } else if (what == "empty") {
            bytes.clear();
        }
        f.close();
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out << bytes;
    }
    std::vector<std::string> warnings;
    {
        auto d = make(&warnings);
        EXPECT_TRUE(d->pipelines().stats().file_rejected);
        EXPECT_EQ(d->pipelines().stats().loaded_bytes, 0u);
        ASSERT_EQ(warnings.size(), 1u);
        EXPECT_NE(warnings[0].find(reason), std::string::npos) << warnings[0];
        EXPECT_NE(warnings[0].find(file.string()), std::string::npos) << "names the file: " << warnings[0];
        use_pipelines(*d);
    }
    warnings.clear();
    auto d = make(&warnings);
    EXPECT_FALSE(d->pipelines().stats().file_rejected)
        << "the good file written at shutdown replaced the damaged one";
    EXPECT_GT(d->pipelines().stats().loaded_bytes, 0u);
    EXPECT_TRUE(warnings.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Ways, DamagedCache,
    ::testing::Values(std::make_pair("flip", "checksum"), std::make_pair("truncate", "size"),
                      std::make_pair("header", "shorter"), std::make_pair("foreign", "another device"),
                      std::make_pair("garbage", "not a vkml"), std::make_pair("empty", "shorter")),
    [](const auto& p) { return std::string(p.param.first); });

TEST_F(PipelineCacheTest, DashDisablesThePersistentCache) {
    auto desc = device_desc();
    desc.cache_dir = "-";
    {
        auto d = gpu::Device::create(desc);
        use_pipelines(*d);
        EXPECT_TRUE(d->pipelines().stats().file.empty());
    }
    EXPECT_FALSE(fs::exists(dir_));
}

// VK_KHR_pipeline_executable_properties, for tuning kernels (registers, spills): captured only
// when asked for, and then for every pipeline, also one that the persistent cache already held.
TEST_F(PipelineCacheTest, CompilerStatisticsWhenAskedFor) {
    {
        auto plain = make();
        const gpu::Pipeline& fill =
            plain->pipeline({.shader = ShaderId::fill_f32, .bindings = 1, .push_constant_bytes = 8});
        EXPECT_FALSE(plain->caps().pipeline_statistics);
        EXPECT_TRUE(fill.statistics().empty());
    } // saved to the persistent cache
    auto desc = device_desc();
    desc.cache_dir = dir_.string();
    desc.pipeline_statistics = true;
    auto d = gpu::Device::create(desc);
    if (!d->caps().pipeline_statistics) GTEST_SKIP() << d->caps().device_name << " has no VK_KHR_pipeline_executable_properties";
    use_pipelines(*d); // still computes correctly
    const gpu::Pipeline& fill = d->pipeline({.shader = ShaderId::fill_f32, .bindings = 1, .push_constant_bytes = 8});
    ASSERT_FALSE(fill.statistics().empty());
    for (const auto& st : fill.statistics()) {
        EXPECT_FALSE(st.executable.empty());
        EXPECT_FALSE(st.name.empty());
        EXPECT_GE(st.value, 0) << st.name;
    }
}

TEST(PipelineCacheDir, FollowsEnvironment) {
    const char* old_vkml = std::getenv("VKML_CACHE_DIR");
    const std::string saved = old_vkml ? old_vkml : "";
    ::setenv("VKML_CACHE_DIR", "/tmp/vkml-x", 1);
    EXPECT_EQ(gpu::default_cache_dir(), fs::path("/tmp/vkml-x"));
    ::unsetenv("VKML_CACHE_DIR");
    ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    EXPECT_EQ(gpu::default_cache_dir(), fs::path("/tmp/xdg/vkml"));
    ::unsetenv("XDG_CACHE_HOME");
    const char* old_home = std::getenv("HOME");
    const std::string home = old_home ? old_home : "";
    ::setenv("HOME", "/home/someone", 1);
    EXPECT_EQ(gpu::default_cache_dir(), fs::path("/home/someone/.cache/vkml"));
    if (old_home) ::setenv("HOME", home.c_str(), 1);
    if (old_vkml) ::setenv("VKML_CACHE_DIR", saved.c_str(), 1);
}

} // namespace
} // namespace vkml::test
