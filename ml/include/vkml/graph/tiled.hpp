#pragma once
// vkml::TiledRunner runs an image-to-image model (one NCHW input [1, C, H, W], one output
// [1, C', s*H, s*W]) on images of any size through overlapping tiles, so a 4K frame goes through a
// model whose whole-image activations would not fit the device's memory.
//
//   vkml::TiledRunner tiled(device, graph, {.overlap = 16});
//   tiled.prepare(1080, 1920);                           // picks the tile size, builds the session
//   tiled.record(cmd, input, output);                    // every tile, one command buffer
//   // or: auto out = tiled.run(host_image);            // host in, host out
//
// Tiles: every tile has the same input size (one Session serves all of them); tiles at the right
// and bottom edges are shifted back inside the image rather than shrunk or padded, so a tile's
// image-border pixels see exactly the whole-image run's padding. Neighbouring tiles overlap by at
// least 2 * overlap input pixels; each output pixel is taken from the one tile that owns it, the
// ownership boundary lying in the middle of the overlap, so every kept pixel is at least `overlap`
// input pixels from any tile edge that is not an image edge. When `overlap` covers the model's
// receptive radius, the result equals the whole-image run (up to float rounding): no seams, no
// blending needed.
//
// Tile size: `tile` (the owned core, in input pixels; the session's tile is core + 2 * overlap) or,
// when 0, the largest square tile whose session (activations arena + tile I/O) fits a share of the
// device-local memory vkml may still use (MemoryAllocator::stats().device_local_budget), measured
// from a probe session. When building a tile session or its tensors runs out of device memory
// (vkml::Error OutOfDeviceMemory, e.g. under VKML_MEMORY_LIMIT), the tile is halved and the
// session rebuilt, down to `min_tile`; below that the error says how much the smallest tile needs.
//
// Synchronization (record): the caller makes its writes of `input` visible to transfer reads
// before, and waits for transfer writes of `output` after (tiles are copied in and out with
// vkCmdCopyBuffer; the session runs on compute). Input and output stay on the GPU.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/tensor.hpp"
#include "vkml/graph/graph.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/graph/tensor_data.hpp"

namespace vkml {

struct TiledDesc {
    int64_t tile = 0;          // owned core of a tile, input pixels per side; 0 = from the memory budget
    int64_t overlap = 16;      // context on each side of the core, input pixels (>= receptive radius)
    int64_t min_tile = 16;     // the smallest core the out-of-memory retries go down to
    int64_t max_tile = 2048;   // the largest automatic core
    double memory_share = 0.5; // share of the free device-local budget the automatic size may use
    SessionOptions session;    // for the tile session (its input_shapes entry is set per tile)
};

// What prepare() settled on.
struct TilePlan {
    int64_t height = 0, width = 0;    // the image, input pixels
    int64_t tile_h = 0, tile_w = 0;   // the session's input tile (core + overlap, clipped)
    int64_t core = 0;                 // the core size it was derived from
    int64_t tiles_y = 0, tiles_x = 0; // tiles per column / row
    int64_t scale = 1;                // output pixels per input pixel
    int64_t retries = 0;              // out-of-memory halvings it took
    uint64_t session_bytes = 0;       // the tile session's arena + tile I/O
};

class TiledRunner {
public:
    // Checks the graph has one input and one output; the scale and channels come from a probe
    // session (built at the first prepare()). Throws vkml::Error naming the problem.
    TiledRunner(gpu::Device& device, const graph::Graph& graph, const TiledDesc& desc = {});
    ~TiledRunner();
    TiledRunner(const TiledRunner&) = delete;
    TiledRunner& operator=(const TiledRunner&) = delete;

    // Plans tiles for an image of height x width and builds the tile session (retrying smaller
    // tiles on out-of-memory). Cheap when called again with the same size.
    const TilePlan& prepare(int64_t height, int64_t width);
    const TilePlan& plan() const { return plan_; }

    // Shapes and dtypes of the tensors record() takes for the prepared size.
    gpu::Shape input_shape() const;
    gpu::Shape output_shape() const;
    gpu::DType input_dtype() const;
    gpu::DType output_dtype() const;

    // Records every tile of the prepared plan into `cmd`: copy the tile in, run the session, copy
    // the owned part out. `input` and `output` are contiguous tensors of input_shape()/output_shape().
    void record(gpu::CommandBuffer& cmd, const gpu::Tensor& input, const gpu::Tensor& output) const;
    // prepare() + record() on a fresh command buffer, submitted and waited for.
    void run(const gpu::Tensor& input, const gpu::Tensor& output);
    // Host convenience: uploads `input` ([1, C, H, W], the model's dtype), runs, downloads.
    graph::TensorData run(const graph::TensorData& input);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    TilePlan plan_;
};

} // namespace vkml
