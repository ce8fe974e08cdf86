#pragma once
// `vkml bench ops`: per-operator micro-benchmarks timed with GPU timestamps. Each case builds one
// op at a given size; the runner times many records of it and reports the median, the achieved
// GFLOP/s and GB/s, and the share of the device's roofline: memory bandwidth measured in the same
// run by vkml's copy kernel, compute peak given with --peak-tflops (no Vulkan query reports it).
// Memory-bound ops also get "copy": the time of vkml's copy kernel moving the op's own bytes over
// the op's time (what share of a same-size copy's speed it reaches, launch and ramp included).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vkml/gpu/device.hpp"
#include "vkml/ops/op.hpp"

namespace vkml::bench {

struct OpBenchCase {
    std::string name;  // e.g. "Conv 3x3 64->64 @ 960x540"
    bool large = false; // real sizes for a real GPU; small ones run on lavapipe
    std::function<std::unique_ptr<ops::Op>(gpu::Device&, gpu::DType)> make;
    double flops = 0; // per run (multiply-add = 2), 0 for memory-bound ops
    double bytes = 0; // minimum bytes read and written per run at f32 (halved for f16 storage)
    // Fills input `index` (random in [-1, 1] for floats when absent).
    std::function<std::vector<float>(size_t index, size_t elements)> input;
};

std::vector<OpBenchCase> op_bench_cases();
// VKML_BENCH_CONV's cases (large), run before the others; throws vkml::Error on a malformed list.
std::vector<OpBenchCase> op_bench_extra_cases();

struct OpBenchOptions {
    std::string filter;      // substring of the case name
    bool large = false;      // the real sizes instead of the small ones
    int runs = 25;           // timed records per case
    double peak_tflops = 0;  // f32/f16 compute peak for the roofline share, 0 = unknown
    std::string json_path;   // also write the results there as JSON (empty: no file)
};

int run_op_bench(gpu::Device& device, const OpBenchOptions& options);

} // namespace vkml::bench
