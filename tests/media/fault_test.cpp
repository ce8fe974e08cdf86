// Faults injected into `vkml upscale` (issue 14, "Fault tests"): the N-th device memory allocation
// fails (MemoryAllocator::inject_failure in-process, VKML_FAULT_ALLOC=N through the tool), for
// every allocation the upscaler makes: the sessions and tiles it prepares, the colour conversion's
// buffers, and those it makes while frames are in flight. Each run ends with the right output (a
// failure while the tiles are planned retiles) or a clean OutOfDeviceMemory error; a failed run
// leaves no output and no temporary file, gives every device allocation back, frees nothing the
// GPU still uses (the validation layer reports that), and the device works afterwards.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gpu_test.hpp"
#include "media_util.hpp"
#include "upscale_model.hpp"
#include "vkml/gpu/allocator.hpp"
#include "vkml/media/testclip.hpp"
#include "vkml/media/transcode.hpp"

using namespace vkml;
using namespace vkml::test;
namespace fs = std::filesystem;

namespace {

class UpscaleFaults : public GpuTest {
protected:
    void TearDown() override {
        dev().allocator().inject_failure(0);
        GpuTest::TearDown();
    }
    uint64_t live_allocations() {
        dev().wait_idle();
        return dev().allocator().stats().allocations;
    }
};

#define REQUIRE_MODEL(path)                                                                                  \
    do {                                                                                                     \
        if (!fs::exists(path)) {                                                                             \
            if (std::getenv("CI")) FAIL() << (path) << " missing: run tools/fetch-models";                   \
            GTEST_SKIP() << (path) << " missing: run tools/fetch-models (or set VKML_MODELS)";               \
        }                                                                                                    \
    } while (0)

} // namespace

TEST_F(UpscaleFaults, EveryAllocationOfAnUpscaleFailsCleanlyOrRetiles) {
    REQUIRE_MODEL(model_cache() / "websr/weights/anime4k/cnn-2x-s-rl.json");
    const fs::path dir = scratch_dir("upscale-faults");
    media::TestClipDesc clip;
    clip.path = dir / "in.mkv";
    clip.size = {40, 24};
    clip.frames = 3;
    clip.codec = "ffv1";
    clip.pix_fmt = "yuv444p";
    media::write_test_clip(clip);
    gpu::MemoryAllocator& allocator = dev().allocator();
    const uint64_t baseline = live_allocations();
    // --tile 16: several tiles a frame, so a failure while planning them can retile.
    auto upscale = [&](const fs::path& out) {
        tool::ModelProcessor p({.name = "anime4k-s"});
        media::TranscodeDesc t{.input = clip.path, .output = out, .tile = 16};
        t.quiet = true;
        t.device = &dev();
        return media::transcode(t, p);
    };
    uint64_t total = 0;
    {
        const uint64_t before = allocator.requests();
        EXPECT_EQ(upscale(dir / "want.mkv").frames, 3);
        total = allocator.requests() - before;
    }
    const DecodedClip want = decode_clip(dir / "want.mkv");
    ASSERT_EQ(want.rgb.size(), 3u);
    EXPECT_EQ(live_allocations(), baseline);
    int right = 0, errors = 0;
    for (const bool sticky : {false, true}) {
        for (uint64_t n = 1; n <= total + 1; ++n) {
            SCOPED_TRACE("allocation " + std::to_string(n) + (sticky ? "+" : "") + " of " +
                         std::to_string(total) + " fails");
            const fs::path out = dir / "out.mkv";
            allocator.inject_failure(n, sticky);
            try {
                const media::TranscodeStats st = upscale(out);
                EXPECT_EQ(st.frames, 3);
                const DecodedClip got = decode_clip(out);
                ASSERT_EQ(got.rgb.size(), 3u);
                for (size_t i = 0; i < 3; ++i) EXPECT_LE(diff(got.rgb[i], want.rgb[i]).max, 2) << "frame " << i;
                ++right;
                fs::remove(out);
            } catch (const Error& e) {
                EXPECT_EQ(e.code(), ErrorCode::OutOfDeviceMemory) << e.what();
                EXPECT_NE(std::string(e.what()).find("VKML_FAULT_ALLOC"), std::string::npos) << e.what();
                ++errors;
            }
            allocator.inject_failure(0);
            EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"in.mkv", "want.mkv"}))
                << "no output, no temporary file";
            EXPECT_EQ(live_allocations(), baseline) << "device allocations leaked";
        }
    }
    std::printf("fault injection: %llu allocations in an upscale of 3 frames; each failed once and from there "
                "on: %d right outputs, %d clean errors\n",
                static_cast<unsigned long long>(total), right, errors);
    EXPECT_GT(errors, 0);
    EXPECT_GT(right, 2); // n = total + 1 twice, and the retiles
    fs::remove_all(dir);
}

// Through the tool: VKML_FAULT_ALLOC=N+ (every allocation from the N-th on fails) is an error of one
// line, exit 1, no output, for an image and a video; a mistyped value is an error naming it.
TEST_F(UpscaleFaults, TheToolReportsInjectedFaultsAndLeavesNothing) {
    REQUIRE_MODEL(model_cache() / "websr/weights/anime4k/cnn-2x-s-rl.json");
    const fs::path dir = scratch_dir("upscale-faults-tool");
    media::TestClipDesc clip;
    clip.path = dir / "in.mp4";
    clip.size = {40, 24};
    clip.frames = 3;
    media::write_test_clip(clip);
    int status = 0;
    for (const std::string n : {"1+", "6+", "12+"}) {
        ::setenv("VKML_FAULT_ALLOC", n.c_str(), 1);
        const std::string log = run_tool("upscale " + clip.path.string() + " -o " + (dir / "out.mp4").string() +
                                             " -m anime4k-s -q --tile 16",
                                         status);
        ::unsetenv("VKML_FAULT_ALLOC");
        EXPECT_EQ(status, 1) << n << ": " << log;
        EXPECT_NE(log.find("out of device memory"), std::string::npos) << n << ": " << log;
        EXPECT_NE(log.find("--tile"), std::string::npos) << "the hint: " << log;
        EXPECT_NE(log.find("refused by fault injection (VKML_FAULT_ALLOC)"), std::string::npos) << log;
        EXPECT_EQ(list_dir(dir), std::vector<std::string>{"in.mp4"}) << n;
    }
    ::setenv("VKML_FAULT_ALLOC", "lots", 1);
    const std::string log = run_tool("upscale " + clip.path.string() + " -o " + (dir / "out.mp4").string() + " -q",
                                     status);
    ::unsetenv("VKML_FAULT_ALLOC");
    EXPECT_EQ(status, 1) << log;
    EXPECT_NE(log.find("VKML_FAULT_ALLOC='lots' is not an allocation number"), std::string::npos) << log;
    EXPECT_EQ(list_dir(dir), std::vector<std::string>{"in.mp4"});
    fs::remove_all(dir);
}
