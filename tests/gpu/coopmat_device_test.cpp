// The cooperative-matrix extension a real device enables (VKML_COOPMAT=nv|khr|off,
// VKML_DISABLE_COOPMAT=1). Lavapipe offers neither extension, so there these tests cover the choice
// and its messages; on a GPU the shared device follows the environment, so the same ConvTest and
// MatMul tests run the tensor-core shaders' KHR twins under VKML_COOPMAT=khr (bench/device/gpu_suite.sh).
#include <cstdlib>
#include <optional>
#include <string>

#include "gpu/internal.hpp"
#include "gpu_test.hpp"

namespace vkml::test {
namespace {

class EnvGuard {
public:
    EnvGuard(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        ::setenv(name, value, 1);
    }
    ~EnvGuard() {
        if (old_) ::setenv(name_, old_->c_str(), 1);
        else ::unsetenv(name_);
    }
    EnvGuard(const EnvGuard&) = delete;
    EnvGuard& operator=(const EnvGuard&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

using CoopmatDevice = GpuTest;

TEST_F(CoopmatDevice, CapabilitiesFollowTheEnvironment) {
    const gpu::Capabilities& c = dev().caps();
    const gpu::CoopMatApi want = gpu::detail::choose_coopmat_from_env(c.coopmat_nv_offered, c.coopmat_khr_offered);
    EXPECT_EQ(c.coopmat_api, want) << "offered: NV " << c.coopmat_nv_offered << ", KHR " << c.coopmat_khr_offered;
    EXPECT_EQ(c.coopmat_nv, c.coopmat_api != gpu::CoopMatApi::none);
    if (c.coopmat_nv) {
        EXPECT_FALSE(c.coopmat_shapes.empty());
    }
    std::printf("cooperative matrices on %s: %s (offered: NV %s, KHR %s)\n", c.device_name.c_str(),
                gpu::coopmat_api_name(c.coopmat_api), c.coopmat_nv_offered ? "yes" : "no",
                c.coopmat_khr_offered ? "yes" : "no");
}

TEST_F(CoopmatDevice, AnApiNamedButNotOfferedLeavesThemOffAndSaysSo) {
    const gpu::Capabilities& offered = dev().caps();
    const char* name = !offered.coopmat_khr_offered ? "khr" : !offered.coopmat_nv_offered ? "nv" : nullptr;
    if (!name) GTEST_SKIP() << "the device offers both extensions";
    EnvGuard env("VKML_COOPMAT", name);
    std::vector<std::string> messages;
    auto d = gpu::Device::create(device_desc(&messages));
    EXPECT_EQ(d->caps().coopmat_api, gpu::CoopMatApi::none);
    EXPECT_FALSE(d->caps().coopmat_nv);
    bool said = false;
    for (const std::string& m : messages) said |= m.find(std::string("VKML_COOPMAT=") + name) != std::string::npos;
    EXPECT_TRUE(said);
}

TEST_F(CoopmatDevice, OffAndDisableTurnThemOff) {
    {
        EnvGuard env("VKML_COOPMAT", "off");
        EXPECT_EQ(gpu::Device::create(device_desc())->caps().coopmat_api, gpu::CoopMatApi::none);
    }
    EnvGuard env("VKML_DISABLE_COOPMAT", "1");
    EXPECT_EQ(gpu::Device::create(device_desc())->caps().coopmat_api, gpu::CoopMatApi::none);
}

TEST_F(CoopmatDevice, AnUnknownValueIsAnError) {
    EnvGuard env("VKML_COOPMAT", "tensorcores");
    try {
        gpu::Device::create(device_desc());
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    }
}

} // namespace
} // namespace vkml::test
