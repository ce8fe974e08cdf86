// TiledRunner: a small conv net (receptive radius 3, 2x pixel-shuffle upscale) run through
// overlapping tiles must equal the whole-image session run; too little overlap must not (so the
// comparison can fail); out-of-memory under a device memory limit retries with smaller tiles.
#include <gtest/gtest.h>

#include "session_util.hpp"
#include "vkml/gpu/allocator.hpp"
#include "vkml/graph/tiled.hpp"

namespace vkml::test {
namespace {

// x [1, 3, H, W] -> Conv3x3 (3->c) Relu -> Conv3x3 (c->c) Relu -> Conv3x3 (c->12) -> DepthToSpace 2
// -> [1, 3, 2H, 2W]. Three 3x3 convolutions: receptive radius 3 input pixels.
Graph upscale_net(int64_t c) {
    Graph g = new_graph("tiled_upscale");
    const ValueId x = g.add_value(
        "x", DType::f32,
        graph::Shape(std::vector<graph::Dim>{graph::Dim::known(1), graph::Dim::known(3),
                                             graph::Dim::symbolic("H"), graph::Dim::symbolic("W")}));
    g.inputs().push_back(x);
    auto conv = [&](ValueId in, int64_t cin, int64_t cout, const std::string& name, uint32_t seed) {
        const float k = 1.f / std::sqrt(float(cin * 9));
        const ValueId w = g.add_constant(name + "_w", rand_tensor({cout, cin, 3, 3}, seed, -k, k));
        const ValueId b = g.add_constant(name + "_b", rand_tensor({cout}, seed + 1, -0.1f, 0.1f));
        return node(g, "Conv", {in, w, b}, name, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    };
    ValueId v = node(g, "Relu", {conv(x, 3, c, "c1", 10)}, "r1");
    v = node(g, "Relu", {conv(v, c, c, "c2", 20)}, "r2");
    v = conv(v, c, 12, "c3", 30);
    g.outputs().push_back(node(g, "DepthToSpace", {v}, "y", {{"blocksize", int64_t(2)}}));
    return g;
}

TensorData whole_image(gpu::Device& device, const Graph& g, const TensorData& x) {
    Session s(device, g, {.fp32 = true, .input_shapes = {{"x", x.dims()}}});
    return s.run(std::vector<TensorData>{x})[0];
}

class Tiled : public GpuTest {};

TEST_F(Tiled, MatchesTheWholeImageRun) {
    const Graph g = upscale_net(8);
    // Odd sizes; cores that do and do not divide them; overlaps from the receptive radius up.
    struct Case {
        int64_t h, w, core, overlap;
    };
    for (const Case c : {Case{29, 37, 8, 3}, Case{23, 29, 5, 4}, Case{17, 40, 64, 3}, Case{1, 23, 6, 3},
                         Case{31, 9, 7, 16}}) {
        const TensorData x = rand_tensor({1, 3, c.h, c.w}, uint32_t(c.h * 100 + c.w), 0.f, 1.f);
        const TensorData want = whole_image(dev(), g, x);
        TiledRunner tiled(dev(), g, {.tile = c.core, .overlap = c.overlap, .session = {.fp32 = true}});
        const TensorData got = tiled.run(x);
        const TilePlan& p = tiled.plan();
        ASSERT_EQ(got.dims(), want.dims());
        EXPECT_EQ(p.scale, 2);
        EXPECT_LE(max_rel_diff(got, want), 1e-5)
            << c.h << "x" << c.w << " core " << c.core << " overlap " << c.overlap << ": " << p.tiles_y << "x"
            << p.tiles_x << " tiles of " << p.tile_h << "x" << p.tile_w;
        if (c.core + 2 * c.overlap < c.w) {
            EXPECT_GT(p.tiles_x, 1) << "the case is meant to tile";
        }
    }
}

// Overlap below the receptive radius leaves seams: the comparison above can fail.
TEST_F(Tiled, TooLittleOverlapShowsSeams) {
    const Graph g = upscale_net(8);
    const TensorData x = rand_tensor({1, 3, 20, 27}, 5, 0.f, 1.f);
    const TensorData want = whole_image(dev(), g, x);
    TiledRunner tiled(dev(), g, {.tile = 6, .overlap = 1, .session = {.fp32 = true}});
    EXPECT_GT(max_rel_diff(tiled.run(x), want), 1e-3);
}

// GPU tensors in and out, recorded twice into one command buffer (the second record must see
// the first's work finished with the session's arena and tile tensors): same result.
TEST_F(Tiled, RecordsIntoTheCallersCommandBuffer) {
    const Graph g = upscale_net(4);
    const TensorData x = rand_tensor({1, 3, 13, 22}, 77, 0.f, 1.f);
    const TensorData want = whole_image(dev(), g, x);
    TiledRunner tiled(dev(), g, {.tile = 7, .overlap = 3, .session = {.fp32 = true}});
    tiled.prepare(13, 22);
    gpu::Tensor in(dev(), tiled.input_shape(), tiled.input_dtype()),
        out(dev(), tiled.output_shape(), tiled.output_dtype());
    gpu::upload(dev(), in, x.to_floats());
    dev().run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT,
                             VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
        tiled.record(cmd, in, out);
        gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_TRANSFER_BIT,
                             VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT,
                             VK_PIPELINE_STAGE_2_TRANSFER_BIT,
                             VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT);
        tiled.record(cmd, in, out);
        gpu::barrier::compute_to_transfer(cmd);
        gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
                             VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
    });
    const auto s = tiled.output_shape();
    const TensorData got =
        TensorData::from_floats({s[0], s[1], s[2], s[3]}, gpu::download_floats(dev(), out));
    EXPECT_LE(max_rel_diff(got, want), 1e-5);
    // A tensor of the wrong shape is refused with a message naming both shapes.
    gpu::Tensor wrong(dev(), {1, 3, 13, 21}, tiled.input_dtype());
    try {
        gpu::CommandBuffer cmd(dev(), gpu::QueueRole::Compute);
        cmd.begin();
        tiled.record(cmd, wrong, out);
        ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[1, 3, 13, 22]"), std::string::npos) << e.what();
    }
}

// Under a device memory limit the whole image does not fit: an explicit whole-image tile runs
// out of memory and is halved until it fits, automatic sizing picks a fitting tile directly, and
// both still give the whole-image answer. A limit too small for any tile is a clear error.
TEST_F(Tiled, OutOfMemoryRetriesWithSmallerTiles) {
    const Graph g = upscale_net(32);
    const TensorData x = rand_tensor({1, 3, 48, 52}, 9, 0.f, 1.f);
    const TensorData want = whole_image(dev(), g, x);

    // The whole image's arena is about 2 x 48 x 52 x 32 x 4 bytes = 640 KiB (fp32); a 24-pixel
    // tile's about 130 KiB.
    gpu::DeviceDesc dd = device_desc();
    dd.memory_limit = 900 << 10;
    auto small = gpu::Device::create(dd);
    {
        TiledRunner tiled(*small, g, {.tile = 64, .overlap = 3, .min_tile = 4, .session = {.fp32 = true}});
        const TensorData got = tiled.run(x);
        EXPECT_GE(tiled.plan().retries, 1) << "the limit should have refused the whole image";
        EXPECT_GT(tiled.plan().tiles_y * tiled.plan().tiles_x, 1);
        EXPECT_LE(max_rel_diff(got, want), 1e-5);
    }
    {
        TiledRunner tiled(*small, g, {.overlap = 3, .min_tile = 4, .session = {.fp32 = true}});
        const TensorData got = tiled.run(x);
        EXPECT_LE(max_rel_diff(got, want), 1e-5);
        EXPECT_LE(tiled.plan().session_bytes, uint64_t(900) << 10);
    }
    small.reset();

    dd.memory_limit = 64 << 10; // below the weights and the smallest tile
    auto tiny = gpu::Device::create(dd);
    try {
        TiledRunner tiled(*tiny, g, {.tile = 16, .overlap = 3, .min_tile = 8, .session = {.fp32 = true}});
        tiled.run(x);
        ADD_FAILURE() << "expected OutOfDeviceMemory";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::OutOfDeviceMemory) << e.what();
        EXPECT_NE(std::string(e.what()).find("TiledRunner"), std::string::npos) << e.what();
    }
}

// Bounded submissions (issue 14): with a tiny piece time every tile's session is split into
// chunks, each recorded and submitted on its own by run(); the result is the whole-image one, the
// pieces are as many submissions, and the progress runs up to 1.
TEST_F(Tiled, PiecesOfBoundedTimeGiveTheSameResult) {
    const Graph g = upscale_net(8);
    const TensorData x = rand_tensor({1, 3, 29, 37}, 2929, 0.f, 1.f);
    const TensorData want = whole_image(dev(), g, x);
    TiledRunner tiled(dev(), g, {.tile = 8, .overlap = 3, .session = {.fp32 = true}, .piece_seconds = 1e-12});
    const TilePlan& p = tiled.prepare(29, 37);
    const int64_t tiles = p.tiles_x * p.tiles_y;
    EXPECT_GT(tiles, 1);
    EXPECT_GT(p.tile_seconds, 0) << "the probe was timed";
    EXPECT_GT(p.pieces, tiles) << "every tile split into chunks";
    EXPECT_EQ(p.pieces % tiles, 0);
    double last = 0;
    for (size_t i = 0; i < size_t(p.pieces); ++i) {
        EXPECT_GT(tiled.progress_after(i), last);
        last = tiled.progress_after(i);
    }
    EXPECT_DOUBLE_EQ(last, 1.0);
    const uint64_t before = dev().last_submitted(gpu::QueueRole::Compute);
    const TensorData got = tiled.run(x);
    EXPECT_GE(dev().last_submitted(gpu::QueueRole::Compute) - before, uint64_t(p.pieces));
    EXPECT_LE(max_rel_diff(got, want), 1e-5);

    // Pieces of whole tiles when a tile is quick, one piece when timing is off.
    TiledRunner grouped(dev(), g, {.tile = 8, .overlap = 3, .session = {.fp32 = true}, .piece_seconds = 1e6});
    EXPECT_EQ(grouped.prepare(29, 37).pieces, 1);
    EXPECT_LE(max_rel_diff(grouped.run(x), want), 1e-5);
    TiledRunner whole(dev(), g, {.tile = 8, .overlap = 3, .session = {.fp32 = true}, .piece_seconds = 0});
    EXPECT_EQ(whole.prepare(29, 37).pieces, 1);
}

// The automatic tile size keeps every step of a tile under max_step_seconds, down to a core of
// 6 * overlap; without the cap the (small) image is one tile.
TEST_F(Tiled, AutomaticTilesKeepEachStepShort) {
    const Graph g = upscale_net(8);
    const TensorData x = rand_tensor({1, 3, 40, 44}, 4044, 0.f, 1.f);
    const TensorData want = whole_image(dev(), g, x);
    TiledRunner capped(dev(), g, {.overlap = 3, .session = {.fp32 = true}, .max_step_seconds = 1e-12});
    EXPECT_EQ(capped.prepare(40, 44).core, 18);
    EXPECT_GT(capped.plan().tiles_x * capped.plan().tiles_y, 1);
    EXPECT_LE(max_rel_diff(capped.run(x), want), 1e-5);
    TiledRunner free_size(dev(), g, {.overlap = 3, .session = {.fp32 = true}, .max_step_seconds = 0});
    EXPECT_EQ(free_size.prepare(40, 44).tiles_x * free_size.plan().tiles_y, 1);
}

TEST_F(Tiled, RefusesModelsThatAreNotImageToImage) {
    Graph g = new_graph("two_outputs");
    const ValueId x = input(g, "x", {1, 3, 8, 8});
    g.outputs().push_back(node(g, "Relu", {x}, "a"));
    g.outputs().push_back(node(g, "Sigmoid", {x}, "b"));
    try {
        TiledRunner tiled(dev(), g);
        ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("one image input and one image output"), std::string::npos)
            << e.what();
    }
}

} // namespace
} // namespace vkml::test
