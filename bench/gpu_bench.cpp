// Benchmarks of the Vulkan core, timed with GPU timestamps (manual time), so the numbers are the
// GPU's and not the host's. Side by side in one run: vkml's copy shader against the driver's own
// vkCmdCopyBuffer (the roofline a copy can reach on this device), and the cost of a submission.
//   build/bin/vkml_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <memory>

#include "vkml/shader_ids.hpp"
#include "vkml/vkml.hpp"

namespace {

using namespace vkml::gpu;

Device& device() {
    static std::unique_ptr<Device> d = Device::create();
    return *d;
}

// Times `record` on the GPU `reps` times inside one submission and reports the mean per rep.
template <class Fn>
void gpu_timed(benchmark::State& state, uint64_t bytes_moved, Fn&& record) {
    Device& dev = device();
    Profiler profiler(dev, 4);
    for (auto _ : state) {
        dev.run_now(QueueRole::Compute, [&](CommandBuffer& cmd) {
            record(cmd); // warm-up pass, not timed
            barrier::memory(cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT,
                            VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                            VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT);
            profiler.reset(cmd);
            profiler.begin(cmd, "op");
            record(cmd);
            profiler.end(cmd);
        });
        const auto r = profiler.results();
        state.SetIterationTime(r.empty() ? 0.0 : r[0].duration_us * 1e-6);
    }
    state.SetBytesProcessed(int64_t(state.iterations() * bytes_moved));
}

void BM_CopyShader(benchmark::State& state) {
    const bool f16 = state.range(1) != 0;
    const uint64_t bytes = uint64_t(state.range(0)) << 20;
    Device& dev = device();
    if (f16 && !dev.caps().storage16) return state.SkipWithError("no 16-bit storage");
    Buffer src(dev, {.size = bytes}), dst(dev, {.size = bytes});
    const Pipeline& p = dev.pipeline({.shader = f16 ? ShaderId::copy_f16 : ShaderId::copy_f32,
                                      .bindings = 2,
                                      .push_constant_bytes = 4,
                                      .workgroup = {256, 1, 1}});
    const uint32_t n4 = uint32_t(bytes / (f16 ? 8 : 16));
    gpu_timed(state, 2 * bytes, [&](CommandBuffer& cmd) {
        const BufferRange b[] = {src.range(), dst.range()};
        cmd.dispatch(p, b, n4, cmd.groups_for(p, n4));
    });
}
BENCHMARK(BM_CopyShader)->Args({64, 0})->Args({64, 1})->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CopyBufferDriver(benchmark::State& state) {
    const uint64_t bytes = uint64_t(state.range(0)) << 20;
    Device& dev = device();
    Buffer src(dev, {.size = bytes}), dst(dev, {.size = bytes});
    gpu_timed(state, 2 * bytes, [&](CommandBuffer& cmd) { cmd.copy(src.range(), dst.range(), bytes); });
}
BENCHMARK(BM_CopyBufferDriver)->Arg(64)->UseManualTime()->Unit(benchmark::kMicrosecond);

// Host-side cost of recording, submitting and waiting for one small dispatch.
void BM_SubmitAndWait(benchmark::State& state) {
    Device& dev = device();
    Buffer buf(dev, {.size = 1024});
    const Pipeline& fill =
        dev.pipeline({.shader = ShaderId::fill_f32, .bindings = 1, .push_constant_bytes = 8});
    struct {
        uint32_t n;
        float v;
    } push{256, 1.f};
    CommandBuffer cmd(dev, QueueRole::Compute);
    for (auto _ : state) {
        cmd.begin();
        const BufferRange r[] = {buf.range()};
        cmd.dispatch(fill, r, push, {4, 1, 1});
        cmd.end();
        dev.wait(QueueRole::Compute, dev.submit(QueueRole::Compute, cmd));
    }
}
BENCHMARK(BM_SubmitAndWait)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
