// A Session split into chunks, each an ML pass of a frame graph (as a renderer interleaves a model
// with its own passes), over several frames with frames in flight: the results equal run(), and
// validation (synchronization included) stays silent. The session's arena is imported into the
// graph and read-written by every chunk, which is what orders them.
#include <gtest/gtest.h>

#include <cstring>

#include "session/session_util.hpp"
#include "fg/plan.hpp"
#include "vkml/fg/executor.hpp"
#include "vkml/fg/frame_graph.hpp"

using namespace vkml;
using namespace vkml::test;

namespace {

class SessionFrameGraph : public GpuTest {};

// x -> (Conv 3x3 + Relu) x 6 -> Add(x) -> y, and a second output from the middle.
Graph chain() {
    Graph g = new_graph("chain");
    ValueId x = input(g, "x", {1, 4, 8, 7});
    const ValueId skip = x;
    for (int i = 0; i < 6; ++i) {
        const std::string n = "c" + std::to_string(i);
        const ValueId w =
            g.add_constant(n + "/w", rand_tensor({4, 4, 3, 3}, 10 + static_cast<uint32_t>(i), -0.3f, 0.3f));
        x = node(g, "Conv", {x, w}, n, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
        x = node(g, "Relu", {x}, n + "/relu");
        if (i == 2) g.outputs().push_back(node(g, "Sigmoid", {x}, "middle"));
    }
    g.outputs().push_back(node(g, "Add", {x, skip}, "y"));
    return g;
}

} // namespace

TEST_F(SessionFrameGraph, ChunksAsMlPassesMatchRun) {
    Session s(dev(), chain(), {.fp32 = true});
    const TensorData xd = rand_tensor({1, 4, 8, 7}, 3);
    const auto want = s.run(std::vector<TensorData>{xd});
    ASSERT_TRUE(s.arena());

    auto buffer_for = [&](const TensorInfo& t, const char* name) {
        return std::make_shared<gpu::Buffer>(
            dev(),
            gpu::BufferDesc{.size = uint64_t(t.shape.elements()) * gpu::dtype_size(t.storage), .name = name});
    };
    auto x = buffer_for(s.inputs()[0], "x");
    gpu::upload(dev(), x->range(), xd.bytes());
    std::vector<std::shared_ptr<gpu::Buffer>> outs = {buffer_for(s.outputs()[0], "middle"),
                                                      buffer_for(s.outputs()[1], "y")};

    fg::FrameGraph g({.name = "session"});
    const fg::ResourceState computed{.stages = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                     .access = VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT};
    fg::BufferHandle in = g.import_buffer("x", {.vkml_buffer = x});
    fg::BufferHandle arena = g.import_buffer("arena", {.vkml_buffer = s.arena(), .incoming = computed});
    std::vector<fg::BufferHandle> out_handles;
    for (size_t j = 0; j < outs.size(); ++j)
        out_handles.push_back(
            g.import_buffer(s.outputs()[j].name, {.vkml_buffer = outs[j], .incoming = computed}));
    const auto chunks = s.split(3);
    ASSERT_EQ(chunks.size(), 3u);
    for (size_t c = 0; c < chunks.size(); ++c) {
        const SessionChunk& chunk = chunks[c];
        fg::PassBuilder p = g.add_ml_pass("chunk " + std::to_string(c));
        if (!chunk.inputs_read().empty()) p.read(in);
        arena = p.write(arena, fg::BufferWrite::StorageReadWrite);
        std::vector<std::pair<size_t, fg::BufferHandle>> written;
        for (size_t j : chunk.outputs_written()) {
            out_handles[j] = p.write(out_handles[j]);
            written.emplace_back(j, out_handles[j]);
        }
        p.side_effect();
        p.record([&s, &chunk, in, written](fg::PassContext& ctx) {
            std::vector<gpu::Tensor> ins(s.inputs().size()), outs_t(s.outputs().size());
            for (size_t i : chunk.inputs_read())
                ins[i] = ctx.tensor(in, s.inputs()[i].shape, s.inputs()[i].storage);
            for (const auto& [j, h] : written)
                outs_t[j] = ctx.tensor(h, s.outputs()[j].shape, s.outputs()[j].storage);
            chunk.record(ctx.cmd(), {ins, outs_t});
        });
    }
    fg::Executor exec(dev(), {.frames_in_flight = 2, .name = "session"});
    for (int frame = 0; frame < 3; ++frame) exec.run(g);
    exec.wait_idle();
    EXPECT_TRUE(g.plan().culled.empty());
    for (size_t j = 0; j < outs.size(); ++j) {
        std::vector<float> got(static_cast<size_t>(s.outputs()[j].shape.elements()));
        gpu::download(dev(), outs[j]->range(), std::as_writable_bytes(std::span(got)));
        EXPECT_EQ(got, std::vector<float>(want[j].floats().begin(), want[j].floats().end()))
            << s.outputs()[j].name;
    }
}
