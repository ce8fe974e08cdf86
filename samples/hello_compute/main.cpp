// hello_compute: the smallest complete vkml program. Creates a device, puts two tensors on it,
// records one compute dispatch into a command buffer, and reads the result back.
#include <cstdio>
#include <string_view>
#include <vector>

#include "vkml/shader_ids.hpp" // vkml's own shaders: not API, through the vkml_internal target
#include "vkml/vkml.hpp"

int main(int argc, char** argv) try {
    if (argc > 1) { // no options: --help says what it does
        const bool help = std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h";
        std::fprintf(help ? stdout : stderr, "usage: hello_compute\n  Runs one compute shader (y = a * x + y) "
                                             "through vkml's Vulkan core and checks the result.\n");
        return help ? 0 : 2;
    }
    using namespace vkml::gpu;
    auto device = Device::create(); // best GPU; VKML_DEVICE picks another

    const uint32_t n = 1000;
    std::vector<float> x(n), y(n);
    for (uint32_t i = 0; i < n; ++i) x[i] = float(i), y[i] = 1.0f;
    Tensor tx(*device, {n}, DType::f32, "x"), ty(*device, {n}, DType::f32, "y");
    upload(*device, tx, x);
    upload(*device, ty, y);

    // y = 2 * x + y: the pipeline is built once and reused by every later dispatch.
    const Pipeline& axpy =
        device->pipeline({.shader = ShaderId::axpy_f32, .bindings = 2, .push_constant_bytes = 8});
    struct {
        uint32_t n;
        float a;
    } push{n, 2.0f};
    CommandBuffer cmd(*device, QueueRole::Compute);
    cmd.begin();
    const BufferRange buffers[] = {tx.range(), ty.range()};
    cmd.dispatch(axpy, buffers, push, cmd.groups_for(axpy, n));
    cmd.end();
    device->wait(QueueRole::Compute, device->submit(QueueRole::Compute, cmd));

    const std::vector<float> out = download_floats(*device, ty);
    std::printf("y[0] = %g, y[%u] = %g (expected 1 and %g)\n", out[0], n - 1, out[n - 1], 2.0 * (n - 1) + 1);
    return out[n - 1] == 2.0f * float(n - 1) + 1.0f ? 0 : 1;
} catch (const vkml::Error& e) {
    std::fprintf(stderr, "hello_compute: %s\n", e.what());
    return 1;
}
