// `vkml bench model MODEL --size WxH [--fp32]`: one whole model timed on the GPU. Each run is one
// Session::record bracketed by timestamps, all runs in one submission after warm-up runs; the
// median is reported with the achieved TFLOP/s (multiply-adds of the convolutions and matrix
// products, counted from the lowered graph's shapes) and the session's memory. --json FILE also
// writes them machine-readably (bench/run_peers.py reads it).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../../bench/json_out.hpp"
#include "../../bench/warm_up.hpp"
#include "commands.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"
#include "vkml/vkml.hpp"

namespace vkml::tool {
namespace {

// Floating-point operations of the model's Conv, ConvTranspose, Gemm and MatMul nodes.
double model_flops(const graph::Graph& g) {
    double flops = 0;
    for (const graph::Node& n : g.nodes()) {
        if (n.op_type == "FusedConvStack" && n.domain == "vkml") { // every weight at every input pixel
            const auto& x = g.value(n.inputs.at(0)).shape;
            const auto xs = x ? x->sizes() : std::nullopt;
            if (!xs || xs->size() != 4) continue;
            for (size_t i = 1; i < n.inputs.size(); i += 2)
                if (n.inputs[i] != graph::no_value && g.value(n.inputs[i]).data)
                    flops += 2.0 * double((*xs)[0] * (*xs)[2] * (*xs)[3]) * double(g.value(n.inputs[i]).data->elements());
            continue;
        }
        if (n.op_type != "Conv" && n.op_type != "ConvTranspose" && n.op_type != "Gemm" && n.op_type != "MatMul")
            continue;
        if (n.inputs.size() < 2 || n.outputs.empty()) continue;
        const auto& w = g.value(n.inputs[1]).shape;
        const auto& y = g.value(n.outputs[0]).shape;
        const auto& x = g.value(n.inputs[0]).shape;
        if (!w || !y || !x) continue;
        const auto ws = w->sizes(), ys = y->sizes(), xs = x->sizes();
        if (!ws || !ys || !xs) continue;
        auto product = [](const std::vector<int64_t>& v, size_t from) {
            double p = 1;
            for (size_t i = from; i < v.size(); ++i) p *= double(v[i]);
            return p;
        };
        if (n.op_type == "Conv") { // every output element: C/group * kh * kw multiply-adds
            flops += 2.0 * product(*ys, 0) * product(*ws, 1);
        } else if (n.op_type == "ConvTranspose") { // every input element scatters into M/group * kh * kw
            flops += 2.0 * product(*xs, 0) * product(*ws, 1);
        } else { // Gemm / MatMul: output elements times the inner dimension
            const int64_t k = xs->empty() ? 1 : (n.op_type == "Gemm" && n.get_int("transA", 0) ? (*xs)[0] : xs->back());
            flops += 2.0 * product(*ys, 0) * double(k);
        }
    }
    return flops;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

} // namespace

int bench_model_main(Args args) {
    const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h");
    if (args.empty() || help) {
        std::fprintf(
            help ? stdout : stderr,
            "usage: vkml bench model MODEL [--size WxH] [--fp32] [--runs N] [--json FILE] [--profile]\n"
            "                        [--no-fused-stack] [--f16-accumulate] [--cold]\n"
            "  Times one whole model (ONNX, TF.js or Anime4K) on the GPU: median of --runs, TFLOP/s,\n"
            "  memory; --profile adds the GPU time of every step; --no-fused-stack runs an Anime4K-shaped\n"
            "  network layer by layer instead of as one FusedConvStack dispatch (as "
            "VKML_DISABLE_FUSED_STACK=1);\n"
            "  --f16-accumulate lets Conv, Gemm and MatMul sum in f16 on tensor cores "
            "(ops::Accumulation::F16);\n"
            "  --cold writes 256 MiB of other memory before each timed run (untimed), so the caches hold\n"
            "  none of the model's weights or tensors, as in a frame after the rendering (and before\n"
            "  --profile's run).\n");
        return help ? 0 : 2;
    }
    const std::string path(args[0]);
    int width = 960, height = 540, runs = 20;
    bool fp32 = false, profile = false, fused_stack = true, f16_accumulate = false, cold = false;
    std::string json_path;
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "--fp32") {
            fp32 = true;
        } else if (a == "--profile") {
            profile = true;
        } else if (a == "--no-fused-stack") {
            fused_stack = false;
        } else if (a == "--f16-accumulate") {
            f16_accumulate = true;
        } else if (a == "--cold") {
            cold = true;
        } else if ((a == "--size" || a == "--runs" || a == "--json") && i + 1 < args.size()) {
            const std::string v(args[++i]);
            if (a == "--json") {
                json_path = v;
            } else if (a == "--runs") {
                runs = std::max(1, std::atoi(v.c_str()));
            } else if (std::sscanf(v.c_str(), "%dx%d", &width, &height) != 2 || width <= 0 || height <= 0) {
                std::fprintf(stderr, "vkml bench model: --size takes WxH, e.g. 960x540 (got '%s')\n", v.c_str());
                return 2;
            }
        } else {
            std::fprintf(stderr, "vkml bench model: unknown option '%.*s'\n", int(a.size()), a.data());
            return 2;
        }
    }

    graph::Graph g = import::load_model(path);
    if (g.inputs().size() != 1) {
        std::fprintf(stderr, "vkml bench model: %s has %zu inputs; only single-image models are benchmarked\n",
                     path.c_str(), g.inputs().size());
        return 1;
    }
    const graph::Value& in = g.value(g.inputs()[0]);
    int64_t channels = 3;
    if (in.shape && in.shape->rank() == 4 && (*in.shape)[1].is_known()) channels = (*in.shape)[1].size;
    SessionOptions options;
    options.fp32 = fp32;
    options.fuse_conv_stack = fused_stack;
    if (f16_accumulate)
        for (const char* type : {"Conv", "Gemm", "MatMul"}) options.accumulation[type] = ops::Accumulation::F16;
    options.input_shapes[in.name] = {1, channels, height, width};

    auto device = gpu::Device::create();
    Session session(*device, g, options);

    std::vector<gpu::Tensor> inputs, outputs;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(0.f, 1.f);
    for (const TensorInfo& t : session.inputs()) {
        inputs.emplace_back(*device, t.shape, t.storage, "bench " + t.name);
        std::vector<float> data(size_t(t.shape.elements()));
        for (float& v : data) v = dist(rng);
        gpu::upload(*device, inputs.back(), data);
    }
    for (const TensorInfo& t : session.outputs()) outputs.emplace_back(*device, t.shape, t.storage, "bench " + t.name);

    // A second of work: a GPU that idled while this process compiled its pipelines (a cold
    // pipeline cache) ramps its clocks back up slowly under a small network's short dispatches.
    // With 0.2 s an H100 timed NanoDet at 3.8 ms after a cold start and 1.1 ms warm.
    const int warm_up = bench::warm_up_records(
        *device, [&](gpu::CommandBuffer& cmd) { session.record(cmd, {inputs, outputs}); }, 1.0, 5000);
    gpu::Profiler profiler(*device, uint32_t(runs + 2));
    // --cold: 256 MiB written between runs, more than any GPU's last-level cache (50 MiB on an H100).
    constexpr uint64_t flush_bytes = uint64_t(256) << 20;
    std::optional<gpu::Buffer> flush;
    if (cold) flush.emplace(*device, gpu::BufferDesc{.size = flush_bytes, .name = "bench cache flush"});
    device->run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        profiler.reset(cmd);
        for (int i = 0; i < warm_up; ++i) session.record(cmd, {inputs, outputs}); // warm-up
        for (int i = 0; i < runs; ++i) {
            if (flush) {
                gpu::barrier::compute_to_transfer(cmd);
                cmd.fill(flush->range(), uint32_t(i), flush_bytes);
                gpu::barrier::transfer_to_compute(cmd);
            }
            profiler.begin(cmd, "model");
            session.record(cmd, {inputs, outputs});
            profiler.end(cmd);
        }
    });
    std::vector<double> ms;
    for (const auto& r : profiler.results()) ms.push_back(r.duration_us / 1000.0);
    if (profile) {
        // One more run with a timestamp scope per step: where the time goes, op by op (with
        // --cold, after the 256 MiB of other writes too).
        gpu::Profiler steps(*device, uint32_t(session.steps().size() + 4));
        device->run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
            steps.reset(cmd);
            if (flush) {
                gpu::barrier::compute_to_transfer(cmd);
                cmd.fill(flush->range(), 7u, flush_bytes);
                gpu::barrier::transfer_to_compute(cmd);
            }
            session.record(cmd, {inputs, outputs}, &steps);
        });
        std::printf("%s\n", gpu::timing_table(steps.results()).c_str());
    }
    const double t = median(ms);
    const double flops = model_flops(session.graph());
    const SessionMemory mem = session.memory();
    std::printf("model:    %s (%s)\ndevice:   %s\ninput:    %s [1, %lld, %d, %d], %s storage%s\n", path.c_str(),
                g.format.c_str(), device->caps().device_name.c_str(), in.name.c_str(), (long long)channels, height,
                width, fp32 ? "f32" : (device->caps().storage16 ? "f16" : "f32"),
                f16_accumulate ? ", f16 accumulation asked" : "");
    size_t stacks = 0;
    for (const StepInfo& st : session.steps()) stacks += st.op_type == "FusedConvStack";
    std::printf(
        "steps:    %zu%s\nGPU time: %.3f ms median of %d (min %.3f, max %.3f)%s\n", session.steps().size(),
        stacks ? " (a FusedConvStack: VKML_DISABLE_FUSED_STACK=1 or --no-fused-stack to time it unfused)"
               : "",
        t, runs, *std::min_element(ms.begin(), ms.end()), *std::max_element(ms.begin(), ms.end()),
        cold ? ", each after 256 MiB of other writes (--cold)" : "");
    std::printf("compute:  %.2f GFLOP per run, %.2f TFLOP/s\n", flops / 1e9, t > 0 ? flops / (t * 1e-3) / 1e12 : 0.0);
    std::printf("memory:   arena %.1f MiB (peak live %.1f MiB)\n", double(mem.arena) / (1 << 20),
                double(mem.peak_live) / (1 << 20));
    if (!json_path.empty()) {
        using bench::json_number;
        using bench::json_quote;
        std::string j =
            "{\"tool\": \"vkml bench model\", \"model\": " + json_quote(path) +
            ", \"format\": " + json_quote(g.format) + ", \"name\": " + json_quote(g.name) +
            ",\n \"device\": " + json_quote(device->caps().device_name) +
            ", \"input\": " + json_quote(in.name) + ", \"shape\": [1, " + std::to_string(channels) + ", " +
            std::to_string(height) + ", " + std::to_string(width) +
            "], \"storage\": " + json_quote(fp32 ? "f32" : (device->caps().storage16 ? "f16" : "f32")) +
            ", \"f16_accumulate\": " + (f16_accumulate ? "true" : "false") +
            ", \"cold\": " + (cold ? "true" : "false") + ",\n \"runs\": " + std::to_string(runs) +
            ", \"median_ms\": " + json_number(t) +
            ", \"min_ms\": " + json_number(*std::min_element(ms.begin(), ms.end())) +
            ", \"max_ms\": " + json_number(*std::max_element(ms.begin(), ms.end())) +
            ",\n \"flops\": " + json_number(flops) +
            ", \"tflops\": " + json_number(t > 0 ? flops / (t * 1e-3) / 1e12 : 0.0) +
            ", \"steps\": " + std::to_string(session.steps().size()) +
            ", \"fused_stacks\": " + std::to_string(stacks) +
            ", \"arena_bytes\": " + std::to_string(mem.arena) +
            ", \"peak_live_bytes\": " + std::to_string(mem.peak_live) + "}\n";
        if (!bench::write_text_file(json_path, j)) return 1;
    }
    return 0;
}

} // namespace vkml::tool
