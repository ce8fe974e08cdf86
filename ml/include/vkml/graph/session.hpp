#pragma once
// vkml::Session runs a model graph on a device: it prepares the graph (host constant folding,
// static shapes, fusions), lowers every node to an ops:: operator created once for its fixed shapes,
// plans one arena of transient memory by liveness, and then records the whole model, or chunks of
// it, into any command buffer as often as wanted.
//
//   auto graph = vkml::import::load_model("model.onnx");
//   vkml::Session session(device, graph, {.free_dims = {{"height", 64}, {"width", 64}}});
//   auto outputs = session.run({input});                       // host in, host out (blocking)
//   session.record(cmd, {inputs, outputs});                    // or into the caller's frame
//
// Data types: float tensors are stored as f16 where the device has 16-bit storage (arithmetic in
// f32 inside the kernels), unless SessionOptions::fp32 or a per-node override says f32. The
// session's inputs and outputs keep the model's dtypes; conversions happen inside the session.
// With SessionOptions::f16_guard, a calibration run (the first run(), or calibrate()) finds the
// nodes whose values f16 cannot hold and keeps them and their neighbours in f32 (kept_in_f32()).
//
// Synchronization: record() puts barriers between dependent ops and one at its start (so an
// earlier record of the same session, on the same queue, is finished with the arena). The caller
// orders its own writes of the input tensors before, and its reads of the outputs after, as with
// single ops (gpu::barrier). The arena belongs to the session, so two records of one session must
// not run at the same time (e.g. on two queues).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/profiler.hpp"
#include "vkml/gpu/tensor.hpp"
#include "vkml/graph/graph.hpp"
#include "vkml/ops/op.hpp"

namespace vkml {

enum class Precision : uint8_t {
    Auto, // f16 storage where the device has it (and SessionOptions::fp32 is off), else f32
    F32,
    F16, // f16 storage even when SessionOptions::fp32 is on (falls back to f32 without storage16)
};

struct SessionOptions {
    // Store every float tensor as f32 (full precision; reference runs, conformance tests).
    bool fp32 = false;
    // Per-node precision, keyed by node name or by op type ("Softmax"); a node name wins over its
    // op type. A node whose float dtype differs from its neighbours' gets conversions around it.
    std::map<std::string, Precision, std::less<>> precision;
    // Per-node accumulation of Conv, Gemm and MatMul (ops::Accumulation: F16 sums in f16 on tensor
    // cores where the device has them), keyed as `precision` is: {"Conv", F16} for every Conv.
    std::map<std::string, ops::Accumulation, std::less<>> accumulation;
    // The f16 guard (f16 storage only): the first run() (or calibrate()) runs the model step by
    // step once in f32 and once in f16 storage, finds the values f16 cannot hold (overflow: inf/NaN
    // only in f16, or beyond 65504; underflow: values flushed to zero, or living in f16's subnormal
    // range) and rebuilds the session with their nodes and those nodes' neighbours in f32; later
    // runs run that mixed plan at full speed. Entries of `precision` that name a node win.
    bool f16_guard = false;
    // Sizes for the model's free dimensions (like ONNX Runtime's AddFreeDimensionOverrideByName).
    std::map<std::string, int64_t, std::less<>> free_dims;
    // Sizes by dimension denotation ("DATA_BATCH": 1; like ONNX Runtime's
    // AddFreeDimensionOverrideByDenotation): every input dimension the model denotes so.
    std::map<std::string, int64_t, std::less<>> free_dim_denotations;
    // Whole input shapes by input name; fixes free dimensions (named or anonymous) too.
    std::map<std::string, std::vector<int64_t>, std::less<>> input_shapes;
    // Values for inputs that parameterize the model rather than carry data (a Reshape's target,
    // a Resize's scales, a TopK's K fed as graph inputs): they become constants at creation, as
    // vkml's operators need, and leave the session's inputs().
    std::map<std::string, graph::TensorData, std::less<>> constant_inputs;
    // Sequence inputs (and optional inputs holding a sequence): the shapes of their tensors, whose
    // count is the sequence's length. Each tensor becomes a session input "<name>[<i>]".
    std::map<std::string, std::vector<std::vector<int64_t>>, std::less<>> sequence_inputs;
    // Optional inputs that hold nothing this time (an optional input not named here holds its
    // tensor, an ordinary input, or the sequence given in sequence_inputs).
    std::set<std::string, std::less<>> absent_inputs;
    // The graph passes before lowering (see ml/graph/passes.hpp); off for comparisons.
    bool fuse = true;
    // Whole Anime4K-shaped networks as one dispatch (graph::fuse_conv_stacks, ops::FusedConvStack);
    // needs `fuse`. VKML_DISABLE_FUSED_STACK=1 turns it off for every session.
    bool fuse_conv_stack = true;
    // The queue run() and profile() submit to.
    gpu::QueueRole queue = gpu::QueueRole::Compute;
    // Each record begins with a read of the weights (the constant and prepacked buffers) into
    // the GPU's last-level cache, one dispatch per buffer that the first layers need not wait for:
    // in a frame, the rendering before a network evicts them, and each layer's first weight
    // loads would wait on memory K step by K step. nullopt: on GPUs, off on CPU devices (lavapipe);
    // VKML_PREFETCH_WEIGHTS=0 / 1 overrides for every session.
    std::optional<bool> prefetch_weights;
    // The model's f32 inputs and outputs bound as f16 tensors where the session stores floats in
    // f16 (TensorInfo::storage says which): no conversion steps at the session's edges, for callers
    // that write its inputs and read its outputs on the GPU themselves (a detector's letterbox and
    // decoder). run() still takes and returns the model's dtypes. Off: f32 tensors, as declared.
    bool storage_io = false;
};

// One of the session's inputs or outputs, with the model's dtype and the static shape it got.
struct TensorInfo {
    std::string name;
    graph::DType dtype = graph::DType::f32; // the model's (bool is stored as u8)
    gpu::DType storage = gpu::DType::f32;   // the gpu::Tensor dtype to bind
    gpu::Shape shape;
};

// A model input or output as the model declares it, and where its tensors are among the session's
// inputs() or outputs(): a tensor is one, a sequence its `count` tensors "<name>[0]" ...
// (from `first` on), an optional none (present false) or its content's.
struct ModelValue {
    std::string name;
    graph::ValueKind kind = graph::ValueKind::Tensor;
    graph::ValueKind element_kind = graph::ValueKind::Tensor; // an optional's content
    bool present = true;                                      // optionals: whether it holds a value
    size_t first = 0, count = 0;
};

// The tensors of one record(): one per session input and output, in the order of inputs() and
// outputs(), contiguous, with their shapes and storage dtypes, at offsets aligned to the device's
// minStorageBufferOffsetAlignment, and no output overlapping an input or another output. A chunk
// (split()) needs only the ones it reads and writes; the others may be empty tensors.
struct Bindings {
    std::span<const gpu::Tensor> inputs;
    std::span<const gpu::Tensor> outputs;
};

// Memory the session holds, in bytes.
struct SessionMemory {
    uint64_t arena = 0;      // the transient arena (intermediate values and op scratch)
    uint64_t peak_live = 0;  // the most bytes live at one step: the arena's lower bound
    uint64_t unshared = 0;   // what the transients would need without reuse
    uint64_t constants = 0;  // weights and other constants on the device
    uint64_t constants_read = 0; // of those, the bytes a run reads (the rest only fed `prepacked`)
    uint64_t prepacked = 0;  // weights re-packed once for their kernels (Conv's tensor-core layout)
    uint64_t transients = 0; // number of transient tensors planned
};

// One row of describe_steps()/profiles: what a recorded step runs.
struct StepInfo {
    std::string name;     // the node's name (fused nodes: "conv1+relu1"), or the value converted
    std::string op_type;  // the op's type, e.g. "Conv", "Cast"
    std::string detail;   // e.g. "f16[1, 64, 32, 32] -> f16[1, 64, 32, 32]"
    bool barrier = false; // a barrier is recorded before it
};

class Session;

// A contiguous run of a session's steps, recordable on its own (Session::split), so a frame graph
// can interleave a model with rendering. Chunks must be recorded in order, each after the previous
// one's work is visible (record() starts with a barrier; across queues, the frame graph's
// semaphores). A chunk is a view: the session must outlive it.
class SessionChunk {
public:
    void record(gpu::CommandBuffer& cmd, const Bindings& bindings, gpu::Profiler* profiler = nullptr) const;
    size_t first_step() const { return first_; }
    size_t end_step() const { return end_; }
    // Which session inputs the chunk reads and outputs it writes (to declare to a frame graph).
    const std::vector<size_t>& inputs_read() const { return inputs_; }
    const std::vector<size_t>& outputs_written() const { return outputs_; }
    double cost() const { return cost_; } // estimated work, in the units split() balances

private:
    friend class Session;
    const Session* session_ = nullptr;
    size_t first_ = 0, end_ = 0;
    std::vector<size_t> inputs_, outputs_;
    double cost_ = 0;
};

// A node the f16 guard keeps in f32, and why: "overflow" or "underflow" (its value), or
// "neighbour of X" (it reads or writes X's value).
struct KeptInF32 {
    std::string node;
    std::string reason;
};
// "node (reason), node (reason), ..." for logs.
std::string to_string(const std::vector<KeptInF32>& kept);

// Per-step GPU times of one run.
struct SessionProfile {
    std::vector<gpu::TimingRecord> records; // one per step, in recording order
    std::vector<std::string> op_types;      // the op type of each record
    double total_us = 0;                    // first start to last end
    std::string table() const;              // gpu::timing_table, plus a per-op-type summary
    std::string chrome_trace() const;       // gpu::chrome_trace_json
};

class Session {
public:
    // Prepares and lowers `graph` (a copy; the caller's graph is not changed). Throws vkml::Error
    // naming the file, the node and its op for anything vkml cannot run, at creation.
    Session(gpu::Device& device, const graph::Graph& graph, const SessionOptions& options = {});
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const std::vector<TensorInfo>& inputs() const;
    const std::vector<TensorInfo>& outputs() const;
    // Index of the input/output named `name`; throws naming the known names when absent.
    size_t input_index(std::string_view name) const;
    size_t output_index(std::string_view name) const;
    // The model's own inputs and outputs (sequences and optionals as one each), in the model's
    // order; constant_inputs are not among them.
    const std::vector<ModelValue>& model_inputs() const;
    const std::vector<ModelValue>& model_outputs() const;

    // Convenience: uploads, records, submits to options.queue, waits and downloads. A large model
    // is submitted in several chunks of bounded GPU time (sized from the previous run's speed), so
    // that no single submission runs for minutes on a slow device. Inputs in the order of inputs(), with the
    // model's dtypes and the inputs' shapes (checked). The session keeps its I/O tensors between calls.
    std::vector<graph::TensorData> run(std::span<const graph::TensorData> inputs);
    std::map<std::string, graph::TensorData> run(const std::map<std::string, graph::TensorData>& inputs);

    // The f16 guard's calibration (SessionOptions::f16_guard) on these inputs, now, instead of on
    // the first run(): rebuilds the session with the nodes it finds in f32 and returns them (as
    // kept_in_f32()). Earlier split() chunks, arena() and steps() are stale after it; record()
    // without a calibration runs the f16 plan as it is. Without the guard, or without f16 storage,
    // it returns nothing and changes nothing.
    std::vector<KeptInF32> calibrate(std::span<const graph::TensorData> inputs);
    // What the last calibration kept in f32 (empty before one, or when everything fits f16).
    const std::vector<KeptInF32>& kept_in_f32() const;
    // Whether the f16 guard has calibrated (always true without the guard).
    bool calibrated() const;

    // Records the whole model into `cmd`. With a profiler, each step is one timestamp scope (the
    // caller resets the profiler and reads it after the work completes).
    void record(gpu::CommandBuffer& cmd, const Bindings& bindings, gpu::Profiler* profiler = nullptr) const;

    // Up to `n` chunks of about equal estimated work (fewer when there are fewer steps).
    std::vector<SessionChunk> split(size_t n) const;
    // The arena the steps pass intermediate values through (null when there are none). A frame
    // graph imports it and declares every chunk's pass as reading and writing it, which orders
    // the chunks and puts the barriers between them.
    const std::shared_ptr<gpu::Buffer>& arena() const;

    // Runs once with a timestamp around every step (needs device timestamps: Unsupported otherwise).
    // With `outputs`, that same run's results are downloaded into it, as run() returns them, so a
    // caller that wants both the results and the times runs the model once, not twice.
    SessionProfile profile(std::span<const graph::TensorData> inputs, std::vector<graph::TensorData>* outputs = nullptr);

    // The graph as lowered: folded, fused, with static shapes (for dumps and tests).
    const graph::Graph& graph() const;
    std::vector<StepInfo> steps() const;
    SessionMemory memory() const;
    // Human-readable summary: inputs, outputs, steps, memory.
    std::string describe() const;

    struct Impl;

private:
    friend class SessionChunk;
    void run_bounded(std::span<const gpu::Tensor> inputs, std::span<const gpu::Tensor> outputs);
    void record_range(gpu::CommandBuffer& cmd, const Bindings& bindings, size_t first, size_t end,
                      gpu::Profiler* profiler) const;
    std::unique_ptr<Impl> impl_;
};

} // namespace vkml
