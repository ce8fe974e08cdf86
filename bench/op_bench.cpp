#include "op_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <random>

#include "json_out.hpp"
#include "warm_up.hpp"
#include "vkml/shader_ids.hpp"
#include "vkml/vkml.hpp"

namespace vkml::bench {
namespace {

using gpu::DType;

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The median GPU time of vkml's copy kernel moving `bytes` (read once, written once; rounded up to
// 16): the time a memory-bound op of that traffic could reach with the same launch and ramp.
double copy_us(gpu::Device& device, uint64_t bytes, int runs) {
    // (At most one storage buffer's range: past it the time is that range's.)
    bytes = std::min(std::max<uint64_t>((bytes + 15) / 16 * 16, 16),
                     device.caps().max_storage_buffer_range / 16 * 16);
    gpu::Buffer src(device, {.size = bytes, .name = "bench src"}), dst(device, {.size = bytes, .name = "bench dst"});
    const gpu::Pipeline& copy = device.pipeline(
        {.shader = gpu::ShaderId::copy_f32, .bindings = 2, .push_constant_bytes = 4, .workgroup = {256, 1, 1}});
    const uint32_t n4 = uint32_t(bytes / 16);
    gpu::Profiler profiler(device, uint32_t(runs + 1));
    std::vector<double> us;
    device.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        profiler.reset(cmd);
        const gpu::BufferRange b[] = {src.range(), dst.range()};
        for (int i = 0; i < 4; ++i) { // untimed: the fresh buffers' first touches
            cmd.dispatch(copy, b, n4, cmd.groups_for(copy, n4));
            gpu::barrier::compute_to_compute(cmd);
        }
        for (int i = 0; i < runs + 1; ++i) {
            if (i) gpu::barrier::compute_to_compute(cmd);
            profiler.begin(cmd, "copy");
            cmd.dispatch(copy, b, n4, cmd.groups_for(copy, n4));
            profiler.end(cmd);
        }
    });
    for (const auto& r : profiler.results()) us.push_back(r.duration_us);
    us.erase(us.begin()); // first run warms caches and clocks
    return median(us);
}

// Device memory bandwidth as vkml's own copy kernel achieves it: the roofline for memory-bound ops.
double measure_bandwidth(gpu::Device& device, bool large) {
    // 256 MiB (more than any last-level cache) where a storage buffer may be that long; lavapipe's
    // maxStorageBufferRange is 128 MiB.
    const uint64_t bytes = std::min<uint64_t>(large ? (256ull << 20) : (16ull << 20),
                                              device.caps().max_storage_buffer_range / 16 * 16);
    const double t = copy_us(device, bytes, 7);
    return t > 0 ? 2.0 * double(bytes) / (t * 1e-6) : 0;
}

} // namespace

int run_op_bench(gpu::Device& device, const OpBenchOptions& options) {
    // VKML_BENCH_CONV's cases first: a malformed list fails before any GPU work.
    std::vector<OpBenchCase> all = op_bench_extra_cases();
    for (OpBenchCase& c : op_bench_cases()) all.push_back(std::move(c));
    const auto& caps = device.caps();
    const double bandwidth = measure_bandwidth(device, options.large);
    std::printf("device: %s\nroofline: memory %.1f GB/s (vkml copy kernel, this run)", caps.device_name.c_str(),
                bandwidth / 1e9);
    if (options.peak_tflops > 0) std::printf(", compute %.1f TFLOP/s (--peak-tflops)", options.peak_tflops);
    std::printf("\n\n%-44s %-4s %10s %10s %10s %9s %9s\n", "op", "type", "median us", "GFLOP/s", "GB/s", "roofline",
                "copy");
    int cases = 0;
    std::string rows; // JSON objects, one per measurement or skipped case
    auto json_row = [&](const OpBenchCase& c, DType dtype, const std::string& rest) {
        rows += std::string(rows.empty() ? "\n  " : ",\n  ") + "{\"name\": " + json_quote(c.name) +
                ", \"dtype\": " + json_quote(gpu::dtype_name(dtype)) + ", " + rest + "}";
    };
    for (const OpBenchCase& c : all) {
        if (c.large != options.large) continue;
        if (!options.filter.empty() && c.name.find(options.filter) == std::string::npos) continue;
        for (DType dtype : {DType::f32, DType::f16}) {
            if (dtype == DType::f16 && !caps.storage16) continue;
            std::unique_ptr<ops::Op> op;
            try {
                op = c.make(device, dtype);
            } catch (const Error& e) {
                std::printf("%-44s %-4s skipped: %s\n", c.name.c_str(), gpu::dtype_name(dtype), e.what());
                json_row(c, dtype, "\"skipped\": " + json_quote(e.what()));
                continue;
            }
            std::vector<gpu::Tensor> in, out;
            std::mt19937 rng(7);
            std::uniform_real_distribution<float> dist(-1.f, 1.f);
            for (size_t i = 0; i < op->inputs().size(); ++i) {
                const auto& d = op->inputs()[i];
                in.emplace_back(device, d.shape, d.dtype, "bench input");
                std::vector<float> data;
                if (c.input) {
                    data = c.input(i, size_t(d.shape.elements()));
                } else {
                    data.resize(size_t(d.shape.elements()));
                    for (float& v : data) v = dist(rng);
                }
                gpu::upload(device, in.back(), data);
            }
            for (const auto& d : op->outputs()) out.emplace_back(device, d.shape, d.dtype, "bench output");
            std::unique_ptr<gpu::Buffer> scratch;
            if (op->scratch_bytes())
                scratch = std::make_unique<gpu::Buffer>(device, gpu::BufferDesc{.size = op->scratch_bytes()});
            const gpu::BufferRange scratch_range = scratch ? scratch->range() : gpu::BufferRange{};
            const int warm_up = warm_up_records(
                device, [&](gpu::CommandBuffer& cmd) { op->record(cmd, in, out, scratch_range); }, 0.2, 4000);
            gpu::Profiler profiler(device, uint32_t(options.runs + 4));
            device.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
                profiler.reset(cmd);
                for (int i = 0; i < warm_up; ++i) { // warm-up, untimed
                    op->record(cmd, in, out, scratch_range);
                    gpu::barrier::compute_to_compute(cmd);
                }
                for (int i = 0; i < options.runs; ++i) {
                    profiler.begin(cmd, c.name);
                    op->record(cmd, in, out, scratch_range);
                    profiler.end(cmd);
                    gpu::barrier::compute_to_compute(cmd);
                }
            });
            std::vector<double> us;
            for (const auto& r : profiler.results()) us.push_back(r.duration_us);
            const double t = median(us) * 1e-6;
            const double bytes = dtype == DType::f16 ? c.bytes / 2 : c.bytes;
            const double gflops = t > 0 ? c.flops / t / 1e9 : 0, gbs = t > 0 ? bytes / t / 1e9 : 0;
            double share = 0;
            if (c.flops > 0 && options.peak_tflops > 0) share = gflops / (options.peak_tflops * 1e3);
            if (c.flops == 0 && bandwidth > 0) share = gbs * 1e9 / bandwidth;
            // Memory-bound ops also against a copy of their own traffic (half read, half written):
            // at these sizes a launch and its ramp are a good part of the time, which the large
            // copy's bandwidth leaves out.
            double copy_share = 0, copy_time = 0;
            if (c.flops == 0 && t > 0) {
                copy_time = copy_us(device, uint64_t(bytes / 2), options.runs);
                copy_share = copy_time * 1e-6 / t;
            }
            char share_text[16] = "-", copy_text[16] = "-";
            if (share > 0) std::snprintf(share_text, sizeof share_text, "%.0f%%", share * 100);
            if (copy_share > 0) std::snprintf(copy_text, sizeof copy_text, "%.0f%%", copy_share * 100);
            std::printf("%-44s %-4s %10.1f %10.1f %10.1f %9s %9s\n", c.name.c_str(), gpu::dtype_name(dtype), t * 1e6,
                        gflops, gbs, share_text, copy_text);
            json_row(c, dtype,
                     "\"median_us\": " + json_number(t * 1e6) + ", \"flops\": " + json_number(c.flops) +
                         ", \"bytes\": " + json_number(bytes) + ", \"gflops\": " + json_number(gflops) +
                         ", \"gbs\": " + json_number(gbs) + ", \"roofline\": " + (share > 0 ? json_number(share) : "null") +
                         ", \"copy_us\": " + (copy_time > 0 ? json_number(copy_time) : "null") +
                         ", \"copy_share\": " + (copy_share > 0 ? json_number(copy_share) : "null"));
            ++cases;
        }
    }
    std::printf("\n%d measurements; each the median of %d records timed with GPU timestamps\n", cases, options.runs);
    if (!options.json_path.empty()) {
        const std::string j = "{\"tool\": \"vkml bench ops\", \"device\": " + json_quote(caps.device_name) +
                              ", \"runs\": " + std::to_string(options.runs) +
                              ", \"bandwidth_gbs\": " + json_number(bandwidth / 1e9) +
                              ", \"peak_tflops\": " + (options.peak_tflops > 0 ? json_number(options.peak_tflops) : "null") +
                              ",\n \"cases\": [" + rows + "\n]}\n";
        if (!write_text_file(options.json_path, j)) return 1;
    }
    return cases > 0 ? 0 : 1;
}

} // namespace vkml::bench
