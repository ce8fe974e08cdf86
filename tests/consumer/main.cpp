// Built against an installed vkml: creates a device, runs one dispatch and checks it, and uses the
// plugin library's barrier rule, so both installed libraries and the headers are exercised.
#include <cstdio>
#include <vector>

#include "vkml/fg/access.hpp"
#include "vkml/vkml.hpp"

int main() try {
    using namespace vkml::gpu;
    auto device = Device::create();
    const uint32_t n = 257;
    std::vector<float> x(n, 2.0f), y(n, 1.0f);
    Tensor tx(*device, {n}, DType::f32), ty(*device, {n}, DType::f32);
    upload(*device, tx, x);
    upload(*device, ty, y);
    const Pipeline& p =
        device->pipeline({.shader = ShaderId::axpy_f32, .bindings = 2, .push_constant_bytes = 8});
    struct {
        uint32_t n;
        float a;
    } push{n, 3.0f};
    device->run_now(QueueRole::Compute, [&](CommandBuffer& cmd) {
        const BufferRange b[] = {tx.range(), ty.range()};
        cmd.dispatch(p, b, push, cmd.groups_for(p, n));
    });
    const auto out = download_floats(*device, ty);
    const bool barrier_rule =
        !vkml::fg::transition({VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_READ_BIT},
                              {VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_READ_BIT})
             .has_value();
    std::printf("consumer: vkml %s on %s: y[%u] = %g\n", VKML_VERSION_STRING,
                device->caps().device_name.c_str(), n - 1, out[n - 1]);
    return out[n - 1] == 7.0f && barrier_rule ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
}
