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
// Bounded submissions: on a slow device (lavapipe on a few CPU cores) one big image through a
// large model is minutes of work, and one submission of minutes shows no progress, cannot be
// stopped and is what GPU watchdogs kill. So the probe session is timed once on the device (GPU
// timestamps where there are any), and the prepared work comes in pieces of about
// `piece_seconds` of GPU time each: several whole tiles, or one tile's session split at step
// boundaries (Session::split). The automatic tile size also keeps the longest single step of a
// tile under `max_step_seconds`, down to a core of 6 * overlap (a 96-pixel core and 128-pixel
// tile at the default overlap, which spends 44% of its work on the overlap: bounded steps cost
// time on slow devices; a fast GPU never gets near the cap). run() submits piece by piece; a
// caller with its own command buffers submits between record_piece() calls (media's
// FrameContext::flush does).
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
    // GPU time one piece of work should take, in seconds (0: the whole image is one piece).
    double piece_seconds = 0.25;
    // The automatic tile size keeps the longest step of a tile under this, in seconds (0: no cap).
    double max_step_seconds = 2.0;
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
    int64_t pieces = 1;               // bounded pieces of work (record_piece)
    double tile_seconds = 0;          // estimated GPU time of one tile (0: not measured)
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
    // the owned part out; a plan of one tile that is the whole image runs the session on `input`
    // and `output` themselves (no copies), so the caller's barriers must cover transfer and compute
    // access to both. `input` and `output` are contiguous tensors of input_shape()/output_shape().
    // One submission of it may run long on a slow device: see record_piece().
    void record(gpu::CommandBuffer& cmd, const gpu::Tensor& input, const gpu::Tensor& output) const;
    // The same work in plan().pieces pieces of about TiledDesc::piece_seconds of GPU time each:
    // recording pieces 0, 1, ... in order, into one command buffer or several submitted in order
    // on one queue, does what record() does. Each piece starts with the barrier it needs after
    // the previous one.
    void record_piece(gpu::CommandBuffer& cmd, const gpu::Tensor& input, const gpu::Tensor& output,
                      size_t piece) const;
    // The share of the work done once pieces 0..piece have run (1 after the last).
    double progress_after(size_t piece) const;
    // prepare() + record(), piece by piece, each piece its own submission (at most a few queued),
    // waited for. Ordered after vkml's earlier work on every queue.
    void run(const gpu::Tensor& input, const gpu::Tensor& output);
    // Host convenience: uploads `input` ([1, C, H, W], the model's dtype), runs, downloads.
    graph::TensorData run(const graph::TensorData& input);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    TilePlan plan_;
};

} // namespace vkml
