// Built against an installed vkml: creates a device, runs one operator and checks it, and uses the
// plugin library's barrier rule, so both installed libraries and the headers are exercised.
#include <cstdio>
#include <vector>

#include "vkml/fg/access.hpp"
#include "vkml/ops/elementwise.hpp"
#include "vkml/vkml.hpp"

int main() try {
    using namespace vkml::gpu;
    auto device = Device::create();
    const uint32_t n = 257;
    std::vector<float> x(n, 2.0f), y(n, 1.0f);
    Tensor tx(*device, {n}, DType::f32), ty(*device, {n}, DType::f32);
    upload(*device, tx, x);
    upload(*device, ty, y);
    // z = x * 3 + y, as two operators: t = x * 3, z = t + y.
    std::vector<float> three(n, 3.0f);
    Tensor t3(*device, {n}, DType::f32), tt(*device, {n}, DType::f32), tz(*device, {n}, DType::f32);
    upload(*device, t3, three);
    const vkml::ops::TensorDesc d{{n}, DType::f32};
    auto mul = vkml::ops::Binary::create(*device, {.kind = vkml::ops::BinaryKind::Mul, .a = d, .b = d});
    auto add = vkml::ops::Binary::create(*device, {.kind = vkml::ops::BinaryKind::Add, .a = d, .b = d});
    device->run_now(QueueRole::Compute, [&](CommandBuffer& cmd) {
        const Tensor mul_in[] = {tx, t3}, mul_out[] = {tt};
        mul->record(cmd, mul_in, mul_out);
        barrier::compute_to_compute(cmd); // t is read next
        const Tensor add_in[] = {tt, ty}, add_out[] = {tz};
        add->record(cmd, add_in, add_out);
    });
    const auto out = download_floats(*device, tz);
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
