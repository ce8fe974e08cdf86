// TiledRunner: plans overlapping tiles, builds one session for the common tile size (halving it on
// out-of-memory), cuts the work into pieces of bounded GPU time, and records copy-in / session /
// copy-out per tile.
#include "vkml/graph/tiled.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "vkml/gpu/allocator.hpp"
#include "vkml/gpu/stream.hpp"
#include "vkml/gpu/transfer.hpp"

namespace vkml {

namespace {

[[noreturn]] void tiled_fail(ErrorCode code, const std::string& what) {
    throw Error(code, "TiledRunner: " + what);
}

// Tiles along one axis: every tile `tile` long, the last shifted back to end at the image edge.
// Each tile owns [own0, own1); boundaries lie in the middle of the overlaps.
struct Span {
    int64_t start = 0, own0 = 0, own1 = 0;
};

std::vector<Span> plan_axis(int64_t length, int64_t tile, int64_t overlap) {
    if (tile >= length) return {{0, 0, length}};
    const int64_t step = tile - 2 * overlap; // >= 1: tile = core + 2 * overlap, core >= 1
    std::vector<int64_t> starts;
    for (int64_t a = 0;; a += step) {
        if (a + tile >= length) {
            starts.push_back(length - tile);
            break;
        }
        starts.push_back(a);
    }
    std::vector<Span> spans(starts.size());
    for (size_t i = 0; i < starts.size(); ++i) {
        spans[i].start = starts[i];
        spans[i].own0 = i == 0 ? 0 : spans[i - 1].own1;
        // The middle of the overlap with the next tile: at least `overlap` from both tiles' edges.
        spans[i].own1 = i + 1 == starts.size() ? length : (starts[i + 1] + starts[i] + tile) / 2;
    }
    return spans;
}

bool is_oom(const Error& e) {
    return e.code() == ErrorCode::OutOfDeviceMemory;
}

// One piece of the prepared work: whole tiles [tile0, tile1), or the session chunks [chunk0,
// chunk1) of tile `tile0` alone (then tile1 == tile0 + 1 and the tile's copy-in comes with chunk 0
// and its copy-out with the last chunk).
struct Piece {
    size_t tile0 = 0, tile1 = 0;
    size_t chunk0 = 0, chunk1 = 0;
};

} // namespace

struct TiledRunner::Impl {
    gpu::Device& device;
    graph::Graph graph;
    TiledDesc desc;
    std::string input_name;
    int64_t channels_in = 0, channels_out = 0, scale = 0;
    gpu::DType dtype_in = gpu::DType::f32, dtype_out = gpu::DType::f32;
    double bytes_per_pixel = 0; // arena + tile I/O per input pixel, from the probe
    uint64_t constants = 0;     // the session's weights on the device
    // GPU seconds per tile input pixel of the whole session and of its longest step, measured on
    // the probe (0: not measured).
    double seconds_per_pixel = 0, step_seconds_per_pixel = 0;

    std::unique_ptr<Session> session;
    gpu::Tensor tile_in, tile_out;
    std::vector<Span> rows, cols;
    std::vector<SessionChunk> chunks; // the tile session split for pieces (empty: whole tiles)
    std::vector<Piece> pieces;

    Impl(gpu::Device& d, const graph::Graph& g, const TiledDesc& td) : device(d), graph(g), desc(td) {}

    SessionOptions options_for(int64_t h, int64_t w) const {
        SessionOptions o = desc.session;
        o.input_shapes[input_name] = {1, channels_in, h, w};
        return o;
    }

    // A small session to learn the scale, the output channels, the dtypes and the memory a tile
    // pixel costs.
    void probe() {
        const int64_t p = std::max<int64_t>(2 * desc.overlap + 16, 32);
        Session s(device, graph, options_for(p, p));
        const gpu::Shape& in = s.inputs()[0].shape;
        const gpu::Shape& out = s.outputs()[0].shape;
        if (out.rank() != 4 || out[0] != 1)
            tiled_fail(ErrorCode::InvalidArgument,
                       "the model's output " + out.str() + " is not NCHW [1, C, H, W]");
        if (out[2] % p != 0 || out[3] % p != 0 || out[2] / p != out[3] / p || out[2] < p)
            tiled_fail(ErrorCode::InvalidArgument,
                       "the model maps a " + in.str() + " input to " + out.str() +
                           ", not an integer scale of the same factor in height and width");
        scale = out[2] / p;
        channels_out = out[1];
        dtype_in = s.inputs()[0].storage;
        dtype_out = s.outputs()[0].storage;
        const SessionMemory m = s.memory();
        constants = m.constants;
        const double io = double(in.elements()) * double(gpu::dtype_size(dtype_in)) +
                          double(out.elements()) * double(gpu::dtype_size(dtype_out));
        bytes_per_pixel = (double(m.arena) + io) / double(p * p);
        if (desc.piece_seconds > 0 || (desc.max_step_seconds > 0 && desc.tile == 0)) {
            try {
                time_probe(s, p);
            } catch (const Error& e) {
                // The timing run's tensors did not fit: plan without it (one piece, no time cap)
                // rather than fail; the tiles themselves are sized from memory anyway.
                if (!is_oom(e)) throw;
                seconds_per_pixel = step_seconds_per_pixel = 0;
            }
        }
    }

    // How long the model takes on this device: one run of the probe session, per step from GPU
    // timestamps where the device has them, else the wall time of the run (then the longest step
    // is taken as the whole). Small tiles cost more per pixel than big ones, so this errs towards
    // smaller pieces.
    void time_probe(Session& s, int64_t p) {
        std::vector<graph::TensorData> in;
        for (const TensorInfo& t : s.inputs()) {
            std::vector<int64_t> dims(t.shape.dims().begin(), t.shape.dims().end());
            const size_t n = size_t(t.shape.elements());
            in.push_back(t.dtype == graph::DType::f32
                             ? graph::TensorData::from_floats(dims, std::vector<float>(n, 0.5f))
                             : graph::TensorData(t.dtype, dims,
                                                 std::vector<std::byte>(n * graph::dtype_size(t.dtype))));
        }
        double total = 0, longest = 0;
        if (device.caps().timestamps && device.caps().timestamp_period_ns > 0) {
            const SessionProfile prof = s.profile(in);
            for (const auto& r : prof.records) {
                total += r.duration_us * 1e-6;
                longest = std::max(longest, r.duration_us * 1e-6);
            }
        }
        if (total <= 0) {
            const auto t0 = std::chrono::steady_clock::now();
            s.run(in);
            total = longest = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        seconds_per_pixel = total / double(p * p);
        step_seconds_per_pixel = longest / double(p * p);
    }

    // The largest core whose session fits the memory vkml may still use.
    int64_t automatic_core() const {
        const gpu::MemoryStats st = device.allocator().stats();
        const double budget = double(st.device_local_budget) * desc.memory_share - double(constants);
        const double side = budget > 0 ? std::sqrt(budget / std::max(bytes_per_pixel, 1.0)) : 0.0;
        int64_t core = std::clamp<int64_t>(int64_t(side) - 2 * desc.overlap, desc.min_tile, desc.max_tile);
        if (desc.max_step_seconds > 0 && step_seconds_per_pixel > 0) {
            // No step of a tile longer than max_step_seconds; but not below a core of 6 * overlap,
            // where a tile already spends almost half its work on the overlap.
            const double time_side = std::sqrt(desc.max_step_seconds / step_seconds_per_pixel);
            const int64_t floor = std::max(desc.min_tile, 6 * desc.overlap);
            core = std::min(core, std::max(int64_t(time_side) - 2 * desc.overlap, floor));
        }
        return core;
    }

    // Cuts the planned tiles into pieces of about piece_seconds of GPU time.
    void plan_pieces(TilePlan& plan) {
        pieces.clear();
        chunks.clear();
        const size_t tiles = rows.size() * cols.size();
        const double tile_s = seconds_per_pixel * double(plan.tile_h * plan.tile_w);
        plan.tile_seconds = tile_s;
        if (desc.piece_seconds <= 0 || tile_s <= 0) {
            pieces.push_back({0, tiles, 0, 0});
        } else if (tile_s <= desc.piece_seconds) {
            const size_t per = std::max<size_t>(1, size_t(desc.piece_seconds / tile_s));
            for (size_t t = 0; t < tiles; t += per) pieces.push_back({t, std::min(tiles, t + per), 0, 0});
        } else {
            chunks = session->split(size_t(std::ceil(tile_s / desc.piece_seconds)));
            for (size_t t = 0; t < tiles; ++t)
                for (size_t c = 0; c < chunks.size(); ++c) pieces.push_back({t, t + 1, c, c + 1});
        }
        plan.pieces = int64_t(pieces.size());
    }

    // Builds the tile session and tensors for `core`; throws what the allocator threw.
    void build(int64_t height, int64_t width, int64_t core, TilePlan& plan) {
        chunks.clear();
        pieces.clear();
        session.reset();
        tile_in = {};
        tile_out = {};
        const int64_t th = std::min(height, core + 2 * desc.overlap);
        const int64_t tw = std::min(width, core + 2 * desc.overlap);
        session = std::make_unique<Session>(device, graph, options_for(th, tw));
        tile_in = gpu::Tensor(device, {1, channels_in, th, tw}, dtype_in, "tile input");
        tile_out = gpu::Tensor(device, {1, channels_out, th * scale, tw * scale}, dtype_out, "tile output");
        rows = plan_axis(height, th, desc.overlap);
        cols = plan_axis(width, tw, desc.overlap);
        plan.tile_h = th;
        plan.tile_w = tw;
        plan.core = core;
        plan.tiles_y = int64_t(rows.size());
        plan.tiles_x = int64_t(cols.size());
        const SessionMemory m = session->memory();
        plan.session_bytes = m.arena + tile_in.bytes() + tile_out.bytes();
        plan_pieces(plan);
    }
};

TiledRunner::TiledRunner(gpu::Device& device, const graph::Graph& graph, const TiledDesc& desc)
    : impl_(std::make_unique<Impl>(device, graph, desc)) {
    if (graph.inputs().size() != 1 || graph.outputs().size() != 1)
        tiled_fail(ErrorCode::InvalidArgument,
                   "the model '" + graph.name + "' has " + std::to_string(graph.inputs().size()) +
                       " inputs and " + std::to_string(graph.outputs().size()) +
                       " outputs; tiling needs one image input and one image output");
    if (desc.overlap < 0)
        tiled_fail(ErrorCode::InvalidArgument, "overlap " + std::to_string(desc.overlap) + " < 0");
    if (desc.tile < 0) tiled_fail(ErrorCode::InvalidArgument, "tile " + std::to_string(desc.tile) + " < 0");
    if (desc.min_tile < 1 || desc.max_tile < desc.min_tile)
        tiled_fail(ErrorCode::InvalidArgument, "min_tile " + std::to_string(desc.min_tile) +
                                                   " and max_tile " + std::to_string(desc.max_tile) +
                                                   " must satisfy 1 <= min <= max");
    if (!(desc.memory_share > 0 && desc.memory_share <= 1))
        tiled_fail(ErrorCode::InvalidArgument, "memory_share must be in (0, 1]");
    const graph::Value& in = graph.value(graph.inputs()[0]);
    impl_->input_name = in.name;
    if (!in.shape || in.shape->rank() != 4 || !(*in.shape)[1].is_known())
        tiled_fail(ErrorCode::InvalidArgument,
                   "the model's input '" + in.name + "' is not NCHW with a known channel count: " +
                       (in.shape ? graph::to_string(*in.shape) : std::string("no shape")));
    impl_->channels_in = (*in.shape)[1].size;
}

TiledRunner::~TiledRunner() = default;

const TilePlan& TiledRunner::prepare(int64_t height, int64_t width) {
    if (height < 1 || width < 1)
        tiled_fail(ErrorCode::InvalidArgument,
                   "image size " + std::to_string(height) + "x" + std::to_string(width) + " is empty");
    if (impl_->session && plan_.height == height && plan_.width == width) return plan_;
    Impl& m = *impl_;
    if (m.scale == 0) {
        try {
            m.probe();
        } catch (const Error& e) {
            if (!is_oom(e)) throw;
            tiled_fail(ErrorCode::OutOfDeviceMemory,
                       std::string("out of device memory for the model itself (a small probe tile): ") +
                           e.what());
        }
    }
    TilePlan plan;
    plan.height = height;
    plan.width = width;
    plan.scale = m.scale;
    // Free the previous size's session before measuring what is left (its memory returns once the
    // GPU is done with it: wait for that rather than count it as used).
    m.chunks.clear();
    m.pieces.clear();
    m.session.reset();
    m.tile_in = {};
    m.tile_out = {};
    if (m.device.retired_pending()) m.device.collect(true);
    int64_t core = m.desc.tile > 0 ? m.desc.tile : m.automatic_core();
    // No use in a core larger than the image.
    core = std::min(core, std::max(height, width));
    for (;;) {
        try {
            m.build(height, width, core, plan);
            break;
        } catch (const Error& e) {
            if (!is_oom(e)) throw;
            m.chunks.clear();
            m.pieces.clear();
            m.session.reset();
            m.tile_in = {};
            m.tile_out = {};
            if (core <= m.desc.min_tile)
                tiled_fail(ErrorCode::OutOfDeviceMemory,
                           "out of device memory even with " + std::to_string(core) + "-pixel tiles (+" +
                               std::to_string(m.desc.overlap) + " overlap, " + std::to_string(plan.retries) +
                               " halvings) for a " + std::to_string(height) + "x" + std::to_string(width) +
                               " image: " + e.what() +
                               "; free device memory, raise VKML_MEMORY_LIMIT or use a smaller model");
            core = std::max(m.desc.min_tile, core / 2);
            ++plan.retries;
        }
    }
    plan_ = plan;
    return plan_;
}

gpu::Shape TiledRunner::input_shape() const {
    return {1, impl_->channels_in, plan_.height, plan_.width};
}
gpu::Shape TiledRunner::output_shape() const {
    return {1, impl_->channels_out, plan_.height * plan_.scale, plan_.width * plan_.scale};
}
gpu::DType TiledRunner::input_dtype() const {
    return impl_->dtype_in;
}
gpu::DType TiledRunner::output_dtype() const {
    return impl_->dtype_out;
}

void TiledRunner::record(gpu::CommandBuffer& cmd, const gpu::Tensor& input, const gpu::Tensor& output) const {
    if (!impl_->session) tiled_fail(ErrorCode::InvalidArgument, "record() before prepare()");
    for (size_t i = 0; i < impl_->pieces.size(); ++i) record_piece(cmd, input, output, i);
}

double TiledRunner::progress_after(size_t piece) const {
    const size_t n = std::max<size_t>(impl_->pieces.size(), 1);
    return std::min(1.0, double(piece + 1) / double(n));
}

void TiledRunner::record_piece(gpu::CommandBuffer& cmd, const gpu::Tensor& input, const gpu::Tensor& output,
                               size_t piece) const {
    const Impl& m = *impl_;
    if (!m.session) tiled_fail(ErrorCode::InvalidArgument, "record() before prepare()");
    if (piece >= m.pieces.size())
        tiled_fail(ErrorCode::InvalidArgument,
                   "piece " + std::to_string(piece) + " of " + std::to_string(m.pieces.size()) + " recorded");
    auto check = [&](const gpu::Tensor& t, const char* what, const gpu::Shape& shape, gpu::DType dtype) {
        if (!t) tiled_fail(ErrorCode::InvalidArgument, std::string(what) + ": no tensor bound");
        if (t.shape() != shape || t.dtype() != dtype)
            tiled_fail(ErrorCode::InvalidArgument, std::string(what) + " is " + gpu::dtype_name(t.dtype()) +
                                                       t.shape().str() + ", the prepared plan needs " +
                                                       gpu::dtype_name(dtype) + shape.str());
        if (!t.contiguous()) tiled_fail(ErrorCode::InvalidArgument, std::string(what) + " is not contiguous");
    };
    check(input, "input", input_shape(), m.dtype_in);
    check(output, "output", output_shape(), m.dtype_out);

    const int64_t H = plan_.height, W = plan_.width, s = plan_.scale;
    const int64_t th = plan_.tile_h, tw = plan_.tile_w, C = m.channels_in, Co = m.channels_out;
    const uint64_t ein = gpu::dtype_size(m.dtype_in), eout = gpu::dtype_size(m.dtype_out);
    const int64_t OH = H * s, OW = W * s, oth = th * s, otw = tw * s;
    std::vector<VkBufferCopy> regions;
    const gpu::Tensor ins[] = {m.tile_in}, outs[] = {m.tile_out};
    const Piece& pc = m.pieces[piece];
    const bool whole = m.chunks.empty();
    if (whole && th == H && tw == W) {
        // One tile is the whole image: the session reads the input and writes the output itself,
        // no copies (a 4K frame's copy-out was 6480 row regions: vkml upscale ran 73 fps on an H200
        // with Anime4K-M at 1080p -> 4K, its network 0.6 ms).
        const gpu::Tensor direct_in[] = {input}, direct_out[] = {output};
        m.session->record(cmd, {direct_in, direct_out});
        return;
    }
    for (size_t t = pc.tile0; t < pc.tile1; ++t) {
        const Span& r = m.rows[t / m.cols.size()];
        const Span& c = m.cols[t % m.cols.size()];
        if (whole || pc.chunk0 == 0) {
            // The previous tile's copy-out read tile_out and its session read tile_in (in this piece
            // or an earlier submission on the queue).
            gpu::barrier::memory(cmd,
                                 VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                 VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT,
                                 VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT);
            // Copy in: whole rows of the tile, one region per (channel, row), or per channel when the
            // tile spans the full width (then its rows are contiguous in the image too).
            regions.clear();
            for (int64_t ch = 0; ch < C; ++ch) {
                if (tw == W) {
                    regions.push_back({input.byte_offset() + uint64_t((ch * H + r.start) * W) * ein,
                                       m.tile_in.byte_offset() + uint64_t(ch * th * tw) * ein,
                                       uint64_t(th * tw) * ein});
                    continue;
                }
                for (int64_t y = 0; y < th; ++y)
                    regions.push_back(
                        {input.byte_offset() + uint64_t((ch * H + r.start + y) * W + c.start) * ein,
                         m.tile_in.byte_offset() + uint64_t((ch * th + y) * tw) * ein, uint64_t(tw) * ein});
            }
            vkCmdCopyBuffer(cmd.vk(), input.buffer()->vk(), m.tile_in.buffer()->vk(),
                            uint32_t(regions.size()), regions.data());
            gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
                                 VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                 VK_ACCESS_2_SHADER_READ_BIT | VK_ACCESS_2_SHADER_WRITE_BIT);
        }
        if (whole)
            m.session->record(cmd, {ins, outs});
        else
            for (size_t k = pc.chunk0; k < pc.chunk1; ++k) m.chunks[k].record(cmd, {ins, outs});
        if (!whole && pc.chunk1 != m.chunks.size()) continue; // the tile goes on in the next piece
        gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                             VK_ACCESS_2_SHADER_WRITE_BIT | VK_ACCESS_2_SHADER_READ_BIT,
                             VK_PIPELINE_STAGE_2_TRANSFER_BIT,
                             VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT);
        // Copy out the owned part, in output pixels.
        regions.clear();
        const int64_t oy0 = r.own0 * s, oy1 = r.own1 * s, ox0 = c.own0 * s, ox1 = c.own1 * s;
        const int64_t ty = r.start * s, tx = c.start * s;
        for (int64_t ch = 0; ch < Co; ++ch) {
            if (ox0 == 0 && ox1 == OW && otw == OW) { // whole rows: contiguous in both
                regions.push_back({m.tile_out.byte_offset() + uint64_t((ch * oth + (oy0 - ty)) * otw) * eout,
                                   output.byte_offset() + uint64_t((ch * OH + oy0) * OW) * eout,
                                   uint64_t((oy1 - oy0) * OW) * eout});
                continue;
            }
            for (int64_t y = oy0; y < oy1; ++y)
                regions.push_back(
                    {m.tile_out.byte_offset() + uint64_t((ch * oth + (y - ty)) * otw + (ox0 - tx)) * eout,
                     output.byte_offset() + uint64_t((ch * OH + y) * OW + ox0) * eout,
                     uint64_t(ox1 - ox0) * eout});
        }
        vkCmdCopyBuffer(cmd.vk(), m.tile_out.buffer()->vk(), output.buffer()->vk(), uint32_t(regions.size()),
                        regions.data());
    }
}

void TiledRunner::run(const gpu::Tensor& input, const gpu::Tensor& output) {
    if (!input || input.shape().rank() != 4)
        tiled_fail(ErrorCode::InvalidArgument, "input must be an NCHW tensor [1, C, H, W]");
    prepare(input.shape()[2], input.shape()[3]);
    gpu::Device& device = impl_->device;
    const gpu::QueueRole queue = impl_->desc.session.queue;
    // After everything vkml submitted before, on any queue (as Device::run_now orders its work).
    std::vector<gpu::SemaphoreWait> waits;
    for (size_t r = 0; r < gpu::queue_role_count; ++r)
        if (const uint64_t v = device.last_submitted(gpu::QueueRole(r)))
            waits.push_back({gpu::QueueRole(r), v, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT});
    gpu::CommandStream stream(device, queue);
    const size_t n = impl_->pieces.size();
    for (size_t i = 0; i < n; ++i) {
        gpu::CommandBuffer& cmd = stream.cmd();
        // The pieces read the input and write the output with transfers, or with the session's
        // compute shaders where one tile is the whole image.
        if (i == 0)
            gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT,
                                 VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                 VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_SHADER_READ_BIT |
                                     VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_WRITE_BIT);
        record_piece(cmd, input, output, i);
        if (i + 1 == n)
            gpu::barrier::memory(cmd, VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                 VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_WRITE_BIT,
                                 VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                 VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT);
        stream.submit(i == 0 ? std::span<const gpu::SemaphoreWait>(waits)
                             : std::span<const gpu::SemaphoreWait>());
    }
    stream.wait();
}

graph::TensorData TiledRunner::run(const graph::TensorData& input) {
    const auto& d = input.dims();
    if (d.size() != 4 || d[0] != 1 || d[1] != impl_->channels_in)
        tiled_fail(ErrorCode::InvalidArgument, "host input must be [1, " +
                                                   std::to_string(impl_->channels_in) + ", H, W], has " +
                                                   std::to_string(d.size()) + " dimensions");
    prepare(d[2], d[3]);
    gpu::Tensor in(impl_->device, input_shape(), input_dtype(), "tiled input");
    gpu::Tensor out(impl_->device, output_shape(), output_dtype(), "tiled output");
    gpu::upload(impl_->device, in, input.to_floats());
    run(in, out);
    const auto s = output_shape();
    return graph::TensorData::from_floats({s[0], s[1], s[2], s[3]}, gpu::download_floats(impl_->device, out));
}

} // namespace vkml
