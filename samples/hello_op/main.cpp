// hello_op: vkml's "hello world" for the operator library. Creates a device, one operator (a 3x3
// convolution with a fused ReLU), records it into a command buffer, submits it, and checks the
// result against a few lines of CPU code.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string_view>
#include <vector>

#include "vkml/ops/conv.hpp"
#include "vkml/vkml.hpp"

int main(int argc, char** argv) try {
    if (argc > 1) { // no options: --help says what it does
        const bool help = std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h";
        std::fprintf(help ? stdout : stderr, "usage: hello_op\n  Creates one Conv operator, records it into a "
                                             "command buffer and checks it against the CPU.\n");
        return help ? 0 : 2;
    }
    using namespace vkml;
    auto device = gpu::Device::create();
    const gpu::DType dtype = device->caps().storage16 ? gpu::DType::f16 : gpu::DType::f32;

    // Created once for fixed shapes: validates the descriptor and builds the pipeline.
    const int64_t C = 3, M = 8, H = 17, W = 17;
    auto conv = ops::Conv::create(*device, {.input = {{1, C, H, W}, dtype},
                                            .weight = {{M, C, 3, 3}, dtype},
                                            .pads = {1, 1, 1, 1},
                                            .activation = {ops::ActivationKind::Relu}});

    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    std::vector<float> x(size_t(C * H * W)), w(size_t(M * C * 9));
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
    gpu::Tensor tx(*device, {1, C, H, W}, dtype, "x"), tw(*device, {M, C, 3, 3}, dtype, "w");
    gpu::Tensor ty(*device, conv->outputs()[0].shape, dtype, "y");
    gpu::upload(*device, tx, x);
    gpu::upload(*device, tw, w);

    // Recorded into our command buffer; a renderer would pass its own (CommandBuffer::wrap).
    gpu::CommandBuffer cmd(*device, gpu::QueueRole::Compute);
    cmd.begin();
    const gpu::Tensor inputs[] = {tx, tw}, outputs[] = {ty};
    conv->record(cmd, inputs, outputs);
    cmd.end();
    device->wait(gpu::QueueRole::Compute, device->submit(gpu::QueueRole::Compute, cmd));
    const std::vector<float> y = gpu::download_floats(*device, ty);

    // The same convolution on the CPU (inputs rounded as the GPU stored them).
    auto stored = [&](float v) { return dtype == gpu::DType::f16 ? gpu::half_to_float(gpu::float_to_half(v)) : v; };
    double max_err = 0;
    for (int64_t m = 0; m < M; ++m)
        for (int64_t i = 0; i < H; ++i)
            for (int64_t j = 0; j < W; ++j) {
                double acc = 0;
                for (int64_t c = 0; c < C; ++c)
                    for (int64_t ki = 0; ki < 3; ++ki)
                        for (int64_t kj = 0; kj < 3; ++kj) {
                            const int64_t yi = i + ki - 1, xj = j + kj - 1;
                            if (yi < 0 || yi >= H || xj < 0 || xj >= W) continue;
                            acc += double(stored(x[size_t((c * H + yi) * W + xj)])) *
                                   stored(w[size_t(((m * C + c) * 3 + ki) * 3 + kj)]);
                        }
                max_err = std::max(max_err, std::fabs(std::max(acc, 0.0) - y[size_t((m * H + i) * W + j)]));
            }
    std::printf("hello_op: Conv 3x3 %lld->%lld + ReLU on %s, %s storage, %s kernel: max |error| %.2g\n", (long long)C,
                (long long)M, device->caps().device_name.c_str(), gpu::dtype_name(dtype),
                ops::conv_kernel_name(conv->kernel()), max_err);
    return max_err < (dtype == gpu::DType::f16 ? 2e-2 : 1e-4) ? 0 : 1;
} catch (const vkml::Error& e) {
    std::fprintf(stderr, "hello_op: %s\n", e.what());
    return 1;
}
