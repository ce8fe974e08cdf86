// `vkml selftest`: proves the selected device runs vkml's shaders correctly, by dispatching
// axpy in every storage precision the device has on random data and checking each element
// against a double-precision CPU result.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "commands.hpp"
#include "vkml/shader_ids.hpp"
#include "vkml/vkml.hpp"

namespace vkml::tool {
namespace {

struct Check {
    std::string name;
    bool ok = false;
    double max_err = 0;
    double gpu_ms = 0;
};

Check run_axpy(gpu::Device& device, gpu::DType dtype, uint32_t n) {
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> dist(-4.f, 4.f);
    std::vector<float> x(n), y(n);
    for (auto& v : x) v = dist(rng);
    for (auto& v : y) v = dist(rng);
    const float a = 0.75f;
    // What the GPU sees after storage rounding, so the check measures the arithmetic only.
    auto stored = [&](float v) {
        return dtype == gpu::DType::f16 ? gpu::half_to_float(gpu::float_to_half(v)) : v;
    };

    gpu::Tensor tx(device, {n}, dtype, "selftest x"), ty(device, {n}, dtype, "selftest y");
    gpu::upload(device, tx, x);
    gpu::upload(device, ty, y);
    const bool f16 = dtype == gpu::DType::f16;
    const gpu::Pipeline& pipe =
        device.pipeline({.shader = f16 ? gpu::ShaderId::axpy_f16 : gpu::ShaderId::axpy_f32,
                         .bindings = 2,
                         .push_constant_bytes = 8,
                         .workgroup = {256, 1, 1}});
    gpu::Profiler profiler(device, 4);
    struct {
        uint32_t n;
        float a;
    } push{n, a};
    device.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        profiler.reset(cmd);
        profiler.begin(cmd, "axpy");
        const gpu::BufferRange bufs[] = {tx.range(), ty.range()};
        cmd.dispatch(pipe, bufs, push, cmd.groups_for(pipe, n));
        profiler.end(cmd);
    });
    const std::vector<float> out = gpu::download_floats(device, ty);

    Check c{std::string("axpy ") + gpu::dtype_name(dtype) + " x" + std::to_string(n)};
    c.ok = true;
    for (uint32_t i = 0; i < n; ++i) {
        const double want = double(a) * stored(x[i]) + stored(y[i]);
        const double err = std::fabs(out[i] - want);
        // f32: a couple of ulps of the result; f16: half an ulp of the result from output rounding.
        const double tol = f16 ? std::ldexp(std::fabs(want), -10) + 1e-4 : 4e-7 * (std::fabs(want) + 1);
        c.max_err = std::max(c.max_err, err);
        if (!(err <= tol)) c.ok = false;
    }
    const auto timings = profiler.results();
    if (!timings.empty()) c.gpu_ms = timings[0].duration_us / 1000.0;
    return c;
}

} // namespace

int selftest_main(Args args) {
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
        std::printf("usage: vkml selftest\n"
                    "  Runs compute dispatches in f32 and f16 storage on the selected device (VKML_DEVICE)\n"
                    "  and checks every element.\n");
        return 0;
    }
    if (!args.empty()) {
        std::fprintf(stderr, "vkml selftest: takes no options (select a device with VKML_DEVICE)\n");
        return 2;
    }
    auto device = gpu::Device::create();
    const auto& caps = device->caps();
    std::printf("selftest on %s (%s)\n", caps.device_name.c_str(), gpu::device_type_name(caps.device_type));
    std::vector<Check> checks;
    const uint32_t n = (1u << 20) + 7; // odd, so the tail of the last workgroup is exercised
    checks.push_back(run_axpy(*device, gpu::DType::f32, n));
    if (caps.storage16)
        checks.push_back(run_axpy(*device, gpu::DType::f16, n));
    else
        std::printf("  axpy f16: skipped, the device has no 16-bit storage\n");
    int failed = 0;
    for (const Check& c : checks) {
        std::printf("  %-22s %s  max |error| %.3g  GPU %.3f ms\n", c.name.c_str(), c.ok ? "ok    " : "FAILED",
                    c.max_err, c.gpu_ms);
        failed += !c.ok;
    }
    const auto mem = device->allocator().stats();
    std::printf("  memory: peak %.1f MiB in use, %llu block(s)\n", double(mem.peak_in_use) / (1 << 20),
                (unsigned long long)mem.blocks);
    std::printf("selftest: %zu passed, %d failed\n", checks.size() - size_t(failed), failed);
    return failed ? 1 : 0;
}

} // namespace vkml::tool
