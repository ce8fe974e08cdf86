// Session: prepare the graph (passes.hpp), lower it node by node into steps, plan the arena,
// decide the barriers, then record.
//
// Construction, step by step:
//   prune             nodes no output needs are dropped before anything can fail on them
//   check ops         every op type is lowerable or host-evaluable: else one error naming it
//   input shapes      free dimensions and input shapes resolved: every input static
//   infer and fold    static shapes everywhere; shape subgraphs become constants
//   fuse              Conv+BN, Pad into Conv, residual Add, activations; whole Anime4K-shaped
//                     networks into one FusedConvStack
//   lower             one op per node (views need none), dtype conversions where the precision
//                     policy changes between neighbours, constants converted on the host
//   outputs           the producer of each output writes the caller's output tensor directly when
//                     it can; otherwise a final copy or conversion step does
//   plan              liveness of every transient, one arena, offsets by plan_memory
//   barriers          a barrier before a step that reads what an earlier step since the last
//                     barrier wrote, or writes what such a step read or wrote
#include "vkml/graph/session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "f16_guard.hpp"
#include "lower.hpp"
#include "memory_plan.hpp"
#include "passes.hpp"
#include "vkml/gpu/half.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/gpu/stream.hpp"
#include "vkml/gpu/transfer.hpp"
#include "vkml/ops/elementwise.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml {

using graph::DType;
using graph::Graph;
using graph::Node;
using graph::TensorData;
using graph::ValueId;

namespace {

// Where a tensor lives: an arena allocation, the constant buffer, or a caller's binding.
struct Ref {
    enum class Kind : uint8_t { Arena, Constant, Input, Output };
    Kind kind = Kind::Arena;
    uint32_t id = 0;
    gpu::Shape shape;
    gpu::DType dtype = gpu::DType::f32;
};

struct Step {
    std::string name;
    std::string op_type;
    const ops::Op* op = nullptr;
    std::vector<Ref> in, out;
    int64_t scratch = -1; // arena allocation of the op's scratch
    bool barrier = false;
    double cost = 0;
    // Resolved once the arena exists; empty tensors for the caller's bindings.
    std::vector<gpu::Tensor> in_t, out_t;
    gpu::BufferRange scratch_range;
    gpu::BufferRange prepacked; // the op's constant input packed once (Op::prepack), or none
    std::vector<ValueId> values; // per op output, the graph value it holds (none: no_value)

    // The constant input the op re-packs once at build (Op::prepack), with the packed size; none
    // where the op packs nothing or that input is not a constant.
    std::optional<ops::Op::Prepack> constant_prepack() const {
        const ops::Op::Prepack p = op->prepack();
        if (!p.bytes || p.input >= in.size() || in[p.input].kind != Ref::Kind::Constant) return std::nullopt;
        return p;
    }
};

struct Alloc {
    uint64_t bytes = 0; // rounded up to 16
    uint64_t exact = 0; // the tensor's own bytes
    uint32_t first = UINT32_MAX, last = 0;
    int output = -1; // the session output it became, or -1
    // A slice of a Concat's output written in place (concat_in_place), or a Split's output read in
    // place (split_in_place): the allocation lives at `parent_offset` bytes into allocation
    // `parent`.
    int64_t parent = -1;
    uint64_t parent_offset = 0;
    bool has_slices = false; // some allocation is a slice of this one
};

struct Constant {
    std::vector<std::byte> bytes;
    uint64_t offset = 0;
};

uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

gpu::Shape static_shape(const Graph& g, ValueId v) {
    const auto& val = g.value(v);
    const auto sizes = val.shape ? val.shape->sizes() : std::nullopt;
    if (!sizes) g.fail("internal: value '" + val.name + "' has no static shape after inference");
    return gpu::Shape(std::span<const int64_t>(*sizes));
}

// A constant's elements converted to `to` (floats rounded to f16 where wanted, integers narrowed
// as a cast would, bools as 0/1 bytes).
std::vector<std::byte> convert_constant(const TensorData& t, gpu::DType to) {
    const bool fl = graph::is_float(t.dtype());
    const size_t n = static_cast<size_t>(t.elements());
    std::vector<std::byte> out(n * gpu::dtype_size(to));
    if (to == gpu::DType::f32 || to == gpu::DType::f16) {
        const std::vector<float> f = fl ? t.to_floats() : [&] {
            const auto i = t.to_int64s();
            return std::vector<float>(i.begin(), i.end());
        }();
        if (to == gpu::DType::f32) {
            std::memcpy(out.data(), f.data(), out.size());
        } else {
            std::vector<uint16_t> h(n);
            gpu::floats_to_halves(f, h);
            std::memcpy(out.data(), h.data(), out.size());
        }
        return out;
    }
    std::vector<int64_t> i;
    if (fl) {
        for (float f : t.to_floats()) i.push_back(static_cast<int64_t>(f));
    } else {
        i = t.to_int64s();
    }
    for (size_t k = 0; k < n; ++k) {
        if (to == gpu::DType::i32) {
            const auto v = static_cast<int32_t>(static_cast<uint32_t>(i[k]));
            std::memcpy(out.data() + 4 * k, &v, 4);
        } else if (to == gpu::DType::i64) {
            std::memcpy(out.data() + 8 * k, &i[k], 8);
        } else {
            out[k] = static_cast<std::byte>(t.dtype() == DType::boolean ? (i[k] != 0) : (i[k] & 0xff));
        }
    }
    return out;
}

// Rough work of a step, for balancing split(): multiply-adds of the convolutions and matrix
// products, elements moved for everything else.
double step_cost(const ops::Op& op) {
    double elements = 0;
    for (const auto& d : op.inputs()) elements += static_cast<double>(d.shape.elements());
    for (const auto& d : op.outputs()) elements += static_cast<double>(d.shape.elements());
    const std::string type = op.type();
    const double out = op.outputs().empty() ? 0 : static_cast<double>(op.outputs()[0].shape.elements());
    if ((type == "Conv" || type == "ConvTranspose") && op.inputs().size() >= 2) {
        const auto& w = op.inputs()[1].shape;
        double taps = 1;
        for (size_t k = 1; k < w.rank(); ++k) taps *= static_cast<double>(w[k]);
        if (type == "ConvTranspose")
            taps = static_cast<double>(w[0]) * taps / std::max<double>(1, static_cast<double>(w[1]));
        return elements + 2 * out * taps;
    }
    if ((type == "Gemm" || type == "MatMul") && !op.inputs().empty()) {
        const auto& a = op.inputs()[0].shape;
        const double k =
            a.rank() ? static_cast<double>(std::max(a[a.rank() - 1], a.rank() > 1 ? a[a.rank() - 2] : 1)) : 1;
        return elements + 2 * out * k;
    }
    return elements;
}

std::string desc_list(const std::vector<ops::TensorDesc>& ds) {
    std::string s;
    for (const auto& d : ds) s += (s.empty() ? "" : ", ") + ops::to_string(d);
    return s;
}

} // namespace

struct Session::Impl {
    gpu::Device& device;
    SessionOptions options;
    Graph graph;
    std::vector<TensorInfo> inputs, outputs;
    std::vector<ModelValue> model_inputs, model_outputs;
    std::vector<std::unique_ptr<ops::Op>> ops;
    std::vector<Step> steps;
    std::vector<Alloc> allocs;
    std::vector<Constant> constants;
    std::vector<uint64_t> offsets;          // per allocation, in the arena
    std::vector<uint64_t> constant_offsets; // per constant, in the constant buffer
    std::shared_ptr<gpu::Buffer> arena, constant_buffer, prepacked_buffer;
    // SessionOptions::prefetch_weights: the read kernel and its sink (never written in practice).
    const gpu::Pipeline* prefetch = nullptr;
    std::shared_ptr<gpu::Buffer> prefetch_sink;
    SessionMemory memory;
    uint64_t alignment = 16;
    // run() and profile(): device tensors for the inputs and outputs, made on first use.
    std::vector<gpu::Tensor> io_inputs, io_outputs;
    // run(): seconds per unit of step cost, measured on the previous run (0: none yet).
    double seconds_per_cost = 0;

    // Lowering state.
    std::vector<std::optional<Ref>> stored; // per value: where it lives (constants: on demand)
    std::map<std::pair<ValueId, gpu::DType>, Ref> converted;
    std::map<std::pair<ValueId, gpu::DType>, uint32_t> constant_ids;
    // Values no step writes (views, in-place Concats): the values whose storage they are.
    std::map<ValueId, std::vector<ValueId>> sources;

    // The f16 guard: the caller's graph and options (rebuilds start from them), what the last
    // calibration kept in f32, and whether one ran.
    std::shared_ptr<const Graph> source_graph;
    SessionOptions user_options;
    std::vector<KeptInF32> kept;
    bool calibrated = true;

    Impl(gpu::Device& d, const Graph& g, const SessionOptions& o) : device(d), options(o), graph(g) {}

    gpu::DType float_dtype(const Node& n) const;
    bool explicit_precision(const Node& n) const;
    std::map<std::string, graph::detail::ValueStats> stats_by_step(Session& self,
                                                                   std::span<const TensorData> in);
    std::vector<KeptInF32> guard_round(const std::map<std::string, graph::detail::ValueStats>& f32,
                                       const std::map<std::string, graph::detail::ValueStats>& f16,
                                       std::map<std::string, Precision, std::less<>>& marks) const;
    graph::detail::Lowered lower_node(const Node& n, std::vector<graph::detail::LowerInput> in);
    void build();
    void expand_inputs();
    std::vector<std::string> expand_outputs();
    void lower_all();
    void assign_outputs();
    void plan();
    void decide_barriers();
    void resolve();
    void prepack_constants();

    Ref constant_ref(ValueId v, gpu::DType dtype);
    Ref ref_as(ValueId v, gpu::DType dtype);
    Ref new_alloc(const ops::TensorDesc& d);
    bool concat_in_place(const Node& n);
    bool split_in_place(const Node& n);
    // The allocation `a` is a slice of (itself when it is none), and `a`'s byte offset in it.
    uint32_t whole_of(uint32_t a, uint64_t* offset = nullptr) const;
    void add_step(std::string name, std::unique_ptr<ops::Op> op, std::vector<Ref> in, std::vector<Ref> out);
    std::vector<gpu::Tensor>& ensure_io(bool inputs_side);
};

namespace {

// A per-node option keyed by node name (or the name of a node fused into it) or by op type; the
// name wins. `fallback` where neither is there.
template <class V>
V node_option(const std::map<std::string, V, std::less<>>& options, const Node& n, V fallback) {
    if (auto it = options.find(n.name); it != options.end()) return it->second;
    for (const std::string& f : n.get_strings("vkml_fused"))
        if (auto it = options.find(f); it != options.end()) return it->second;
    if (auto it = options.find(n.op_type); it != options.end()) return it->second;
    return fallback;
}

} // namespace

gpu::DType Session::Impl::float_dtype(const Node& n) const {
    if (n.get_int("vkml_fp32", 0)) return gpu::DType::f32; // exact integer arithmetic (composite.cpp)
    const Precision p = node_option(options.precision, n, Precision::Auto);
    const bool f16 = device.caps().storage16;
    switch (p) {
    case Precision::F32:
        return gpu::DType::f32;
    case Precision::F16:
        return f16 ? gpu::DType::f16 : gpu::DType::f32;
    case Precision::Auto:
        break;
    }
    return f16 && !options.fp32 ? gpu::DType::f16 : gpu::DType::f32;
}

// Lowers with the node's float dtype; an op without an f16 kernel on this device gets f32.
graph::detail::Lowered Session::Impl::lower_node(const Node& n, std::vector<graph::detail::LowerInput> in) {
    const gpu::DType fd = float_dtype(n);
    auto attempt = [&](gpu::DType d) {
        graph::detail::LowerContext ctx(device, graph, n, in, d);
        ctx.accumulation = node_option(options.accumulation, n, ops::Accumulation::F32);
        return graph::detail::lower(ctx);
    };
    try {
        try {
            return attempt(fd);
        } catch (const Error& e) {
            if (fd != gpu::DType::f16 || e.code() != ErrorCode::Unsupported) throw;
            return attempt(gpu::DType::f32);
        }
    } catch (const Error& e) {
        graph.fail_for(n, e);
    }
}

Ref Session::Impl::constant_ref(ValueId v, gpu::DType dtype) {
    const auto key = std::make_pair(v, dtype);
    auto it = constant_ids.find(key);
    if (it == constant_ids.end()) {
        Constant c;
        c.bytes = convert_constant(*graph.value(v).data, dtype);
        constants.push_back(std::move(c));
        it = constant_ids.emplace(key, static_cast<uint32_t>(constants.size() - 1)).first;
    }
    return Ref{Ref::Kind::Constant, it->second, static_shape(graph, v), dtype};
}

Ref Session::Impl::new_alloc(const ops::TensorDesc& d) {
    Alloc a;
    // Rounded up to 16 bytes, as gpu::Tensor's own buffers are: vectorised kernels may read a
    // whole vec4 at the tail.
    a.exact = uint64_t(d.shape.elements()) * gpu::dtype_size(d.dtype);
    a.bytes = std::max<uint64_t>(align_up(a.exact, 16), 16);
    allocs.push_back(a);
    return Ref{Ref::Kind::Arena, static_cast<uint32_t>(allocs.size() - 1), d.shape, d.dtype};
}

void Session::Impl::add_step(std::string name, std::unique_ptr<ops::Op> op, std::vector<Ref> in,
                             std::vector<Ref> out) {
    Step s;
    s.name = std::move(name);
    s.op_type = op->type();
    s.op = op.get();
    s.in = std::move(in);
    s.out = std::move(out);
    s.cost = step_cost(*op);
    if (op->scratch_bytes()) {
        Alloc a;
        a.bytes = align_up(op->scratch_bytes(), 16);
        allocs.push_back(a);
        s.scratch = static_cast<int64_t>(allocs.size() - 1);
    }
    ops.push_back(std::move(op));
    steps.push_back(std::move(s));
}

// Value `v` in `dtype`: as stored, a converted constant, or through a Cast step made once.
Ref Session::Impl::ref_as(ValueId v, gpu::DType dtype) {
    const graph::Value& val = graph.value(v);
    if (val.is_constant()) return constant_ref(v, dtype);
    if (!stored[v]) graph.fail("internal: value '" + val.name + "' is read before it is produced");
    const Ref& r = *stored[v];
    if (r.dtype == dtype) return r;
    const auto key = std::make_pair(v, dtype);
    if (auto it = converted.find(key); it != converted.end()) return it->second;
    ops::CastDesc d;
    d.input = {r.shape, r.dtype};
    d.to = dtype;
    d.to_bool = val.dtype == DType::boolean;
    auto op = ops::Cast::create(device, d);
    const Ref out = new_alloc(op->outputs()[0]);
    add_step(val.name + "@" + gpu::dtype_name(dtype), std::move(op), {r}, {out});
    converted.emplace(key, out);
    return out;
}

void Session::Impl::lower_all() {
    stored.assign(graph.value_count(), std::nullopt);
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
        const ValueId v = graph.inputs()[i];
        stored[v] = Ref{Ref::Kind::Input, static_cast<uint32_t>(i), inputs[i].shape, inputs[i].storage};
    }
    for (const Node& n : graph.nodes()) {
        if (options.fuse && (concat_in_place(n) || split_in_place(n))) continue;
        const gpu::DType fd = float_dtype(n);
        std::vector<graph::detail::LowerInput> in;
        for (ValueId v : n.inputs) {
            graph::detail::LowerInput x;
            if (v != graph::no_value) {
                const graph::Value& val = graph.value(v);
                x.present = true;
                x.id = v;
                x.shape = static_shape(graph, v);
                x.ir = val.dtype;
                x.data = val.data.get();
                if (val.is_constant())
                    x.stored =
                        graph::is_float(x.ir) ? fd : graph::detail::storage_of(x.ir);
                else
                    x.stored = stored[v] ? stored[v]->dtype : graph::detail::storage_of(x.ir);
            }
            in.push_back(std::move(x));
        }
        graph::detail::Lowered l = lower_node(n, std::move(in));
        if (!l.op) {
            // A view: the output shares the input's storage under another shape.
            const ValueId src = n.inputs.at(static_cast<size_t>(l.alias_input));
            const graph::Value& sv = graph.value(src);
            Ref r = sv.is_constant() ? constant_ref(src, graph::is_float(sv.dtype)
                                                             ? fd
                                                             : graph::detail::storage_of(sv.dtype))
                                     : ref_as(src, stored[src] ? stored[src]->dtype : gpu::DType::f32);
            r.shape = l.alias_shape;
            stored[n.outputs.at(0)] = r;
            sources[n.outputs.at(0)] = {src};
            continue;
        }
        std::vector<Ref> op_in, op_out;
        for (size_t j = 0; j < l.op_inputs.size(); ++j) {
            const ValueId v = n.inputs.at(static_cast<size_t>(l.op_inputs[j]));
            Ref r = ref_as(v, l.op->inputs()[j].dtype);
            if (l.input_views[j]) r.shape = *l.input_views[j];
            op_in.push_back(r);
        }
        for (size_t j = 0; j < l.op->outputs().size(); ++j) {
            const Ref r = new_alloc(l.op->outputs()[j]);
            op_out.push_back(r);
            const int k = j < l.op_outputs.size() ? l.op_outputs[j] : -1;
            if (k < 0 || n.outputs.at(static_cast<size_t>(k)) == graph::no_value) continue;
            Ref v = r;
            if (l.output_views[j]) v.shape = *l.output_views[j];
            stored[n.outputs[static_cast<size_t>(k)]] = v;
        }
        std::string name = n.name;
        for (const std::string& f : n.get_strings("vkml_fused")) name += "+" + f;
        std::vector<ValueId> values(l.op->outputs().size(), graph::no_value);
        for (size_t j = 0; j < values.size() && j < l.op_outputs.size(); ++j)
            if (l.op_outputs[j] >= 0) values[j] = n.outputs.at(static_cast<size_t>(l.op_outputs[j]));
        add_step(std::move(name), std::move(l.op), std::move(op_in), std::move(op_out));
        steps.back().values = std::move(values);
    }
}

namespace {

// The node's "axis" (default 0) when the parts along it of a tensor of `shape` are contiguous
// blocks of it (every dimension before the axis is 1), else nothing.
std::optional<size_t> blocks_axis(const Node& n, const gpu::Shape& shape) {
    const auto rank = static_cast<int64_t>(shape.rank());
    int64_t axis = n.get_int("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    for (int64_t k = 0; k < axis; ++k)
        if (shape[static_cast<size_t>(k)] != 1) return std::nullopt;
    return static_cast<size_t>(axis);
}

} // namespace

// A Concat whose inputs are contiguous blocks of its output (every dimension before the axis is 1)
// costs no pass over memory: each input's allocation becomes a slice of the output's, so its
// producer writes there directly (Anime4K's CReLUs and heads, RDN's dense blocks). Each input must
// be a whole arena allocation of the output's storage type that is no slice yet, and every slice
// must start at the storage-buffer offset alignment; else the Concat runs as an op.
bool Session::Impl::concat_in_place(const Node& n) {
    if (n.op_type != "Concat" || !n.domain.empty() || n.outputs.size() != 1 || n.inputs.size() < 2) return false;
    const graph::Value& out = graph.value(n.outputs[0]);
    if (!out.shape || !out.shape->is_static() || out.dtype == DType::undefined) return false;
    const gpu::Shape shape = static_shape(graph, n.outputs[0]);
    if (!blocks_axis(n, shape)) return false;
    const gpu::DType storage = graph::is_float(out.dtype) ? float_dtype(n)
                                                                                : graph::detail::storage_of(out.dtype);
    // Each input continues the output; a run of inputs that are, in order, all the slices of an
    // earlier in-place Concat (Anime4K's heads concatenate every layer's CReLU parts again) moves
    // that whole Concat output instead.
    std::vector<uint32_t> slices;
    std::vector<uint64_t> starts;
    uint64_t total = 0;
    for (size_t k = 0; k < n.inputs.size();) {
        auto piece = [&](size_t i, uint32_t& top, uint64_t& at, uint64_t& bytes) {
            const ValueId v = n.inputs[i];
            if (v == graph::no_value || graph.value(v).is_constant() || !stored[v]) return false;
            const Ref& r = *stored[v];
            if (r.kind != Ref::Kind::Arena || r.dtype != storage) return false;
            bytes = uint64_t(r.shape.elements()) * gpu::dtype_size(storage);
            if (allocs[r.id].parent < 0 && bytes != allocs[r.id].exact) return false; // a view of a part
            top = whole_of(r.id, &at);
            return true;
        };
        uint32_t top = 0;
        uint64_t at = 0, bytes = 0;
        if (!piece(k++, top, at, bytes) || at != 0) return false;
        uint64_t covered = bytes;
        while (covered < allocs[top].exact) {
            uint32_t t2 = 0;
            uint64_t at2 = 0, b2 = 0;
            if (k >= n.inputs.size() || !piece(k++, t2, at2, b2) || t2 != top || at2 != covered) return false;
            covered += b2;
        }
        if (covered != allocs[top].exact || total % alignment ||
            std::find(slices.begin(), slices.end(), top) != slices.end())
            return false;
        slices.push_back(top);
        starts.push_back(total);
        total += covered;
    }
    if (total != uint64_t(shape.elements()) * gpu::dtype_size(storage)) return false;
    const Ref whole = new_alloc({shape, storage});
    allocs[whole.id].has_slices = true;
    for (size_t k = 0; k < slices.size(); ++k) {
        allocs[slices[k]].parent = whole.id;
        allocs[slices[k]].parent_offset = starts[k];
    }
    stored[n.outputs[0]] = whole;
    sources[n.outputs[0]] = n.inputs;
    return true;
}

// A Split whose outputs are contiguous blocks of its input (every dimension before the axis is 1)
// costs no pass over memory either: each output becomes a slice of the input's allocation, read
// where it lies (NanoDet's heads split every level's scores from its box distributions). The input
// must be a whole arena allocation of the node's storage type and every slice must start at the
// storage-buffer offset alignment; else the Split runs as an op. No step writes a slice (vkml has
// no in-place ops besides these), so readers of different slices never disturb each other.
bool Session::Impl::split_in_place(const Node& n) {
    if (n.op_type != "Split" || !n.domain.empty() || n.inputs.empty() || n.inputs[0] == graph::no_value ||
        n.outputs.empty())
        return false;
    const ValueId x = n.inputs[0];
    const graph::Value& in = graph.value(x);
    if (in.is_constant() || !stored[x] || !in.shape || !in.shape->is_static()) return false;
    const Ref& r = *stored[x];
    const gpu::DType storage =
        graph::is_float(in.dtype) ? float_dtype(n) : graph::detail::storage_of(in.dtype);
    if (r.kind != Ref::Kind::Arena || r.dtype != storage) return false;
    const uint64_t size = gpu::dtype_size(storage);
    if (uint64_t(r.shape.elements()) * size != allocs[r.id].exact) return false; // a view of a part
    const gpu::Shape shape = static_shape(graph, x);
    const auto found = blocks_axis(n, shape);
    if (!found) return false;
    const auto axis = static_cast<int64_t>(*found);
    const auto rank = static_cast<int64_t>(shape.rank());
    // The outputs, in order, must tile the input along the axis.
    std::vector<gpu::Shape> parts;
    int64_t covered = 0;
    for (ValueId v : n.outputs) {
        if (v == graph::no_value || !graph.value(v).shape || !graph.value(v).shape->is_static()) return false;
        const gpu::Shape o = static_shape(graph, v);
        if (o.rank() != shape.rank()) return false;
        for (int64_t k = 0; k < rank; ++k)
            if (k != axis && o[static_cast<size_t>(k)] != shape[static_cast<size_t>(k)]) return false;
        if ((uint64_t(covered) * uint64_t(shape.elements() / shape[static_cast<size_t>(axis)]) * size) %
            alignment)
            return false;
        covered += o[static_cast<size_t>(axis)];
        parts.push_back(o);
    }
    if (covered != shape[static_cast<size_t>(axis)]) return false;
    uint64_t at = 0;
    const uint32_t whole = r.id;
    for (size_t k = 0; k < parts.size(); ++k) {
        const Ref slice = new_alloc({parts[k], storage});
        allocs[slice.id].parent = whole;
        allocs[slice.id].parent_offset = at;
        allocs[whole].has_slices = true;
        at += uint64_t(parts[k].elements()) * size;
        stored[n.outputs[k]] = slice;
        sources[n.outputs[k]] = {x};
    }
    return true;
}

uint32_t Session::Impl::whole_of(uint32_t a, uint64_t* offset) const {
    uint64_t at = 0;
    for (; allocs[a].parent >= 0; a = static_cast<uint32_t>(allocs[a].parent)) at += allocs[a].parent_offset;
    if (offset) *offset = at;
    return a;
}

// Outputs: let the producer write the caller's tensor when the value is a whole arena tensor of
// the output's dtype that no other output claimed; else copy or convert into it at the end.
void Session::Impl::assign_outputs() {
    for (size_t j = 0; j < graph.outputs().size(); ++j) {
        const ValueId v = graph.outputs()[j];
        const TensorInfo& info = outputs[j];
        const graph::Value& val = graph.value(v);
        auto claimable = [&](const Ref& r) {
            const Alloc& a = allocs[r.id];
            return r.kind == Ref::Kind::Arena && a.output < 0 && a.parent < 0 && !a.has_slices;
        };
        if (!val.is_constant() && stored[v] && claimable(*stored[v]) && stored[v]->dtype == info.storage) {
            allocs[stored[v]->id].output = static_cast<int>(j);
            continue;
        }
        // A conversion some node already needed may be the output's dtype: write that one there.
        if (auto it = converted.find({v, info.storage});
            !val.is_constant() && it != converted.end() && claimable(it->second)) {
            allocs[it->second.id].output = static_cast<int>(j);
            continue;
        }
        Ref src = val.is_constant()
                      ? constant_ref(v, info.storage)
                      : (stored[v] ? *stored[v] : throw Error("internal: output without storage"));
        ops::CastDesc d;
        d.input = {src.shape, src.dtype};
        d.to = info.storage;
        d.to_bool = info.dtype == DType::boolean;
        auto op = ops::Cast::create(device, d);
        const Ref out{Ref::Kind::Output, static_cast<uint32_t>(j), info.shape, info.storage};
        add_step(info.name +
                     (src.dtype == info.storage ? "@copy" : std::string("@") + gpu::dtype_name(info.storage)),
                 std::move(op), {src}, {out});
    }
    // Claimed allocations become the caller's output tensors, under each reader's view shape.
    for (Step& s : steps)
        for (auto* refs : {&s.in, &s.out})
            for (Ref& r : *refs)
                if (r.kind == Ref::Kind::Arena && allocs[r.id].output >= 0) {
                    r.id = static_cast<uint32_t>(allocs[r.id].output);
                    r.kind = Ref::Kind::Output;
                }
}

void Session::Impl::plan() {
    for (uint32_t s = 0; s < steps.size(); ++s) {
        auto touch = [&](uint32_t a) {
            a = whole_of(a); // a slice lives as long as the whole it is part of
            allocs[a].first = std::min(allocs[a].first, s);
            allocs[a].last = std::max(allocs[a].last, s);
        };
        for (auto* refs : {&steps[s].in, &steps[s].out})
            for (const Ref& r : *refs)
                if (r.kind == Ref::Kind::Arena) touch(r.id);
        if (steps[s].scratch >= 0) touch(static_cast<uint32_t>(steps[s].scratch));
    }
    std::vector<graph::MemoryRequest> requests;
    std::vector<uint32_t> planned;
    for (uint32_t a = 0; a < allocs.size(); ++a) {
        if (allocs[a].output >= 0 || allocs[a].parent >= 0 || allocs[a].first == UINT32_MAX) continue;
        requests.push_back({allocs[a].bytes, allocs[a].first, allocs[a].last});
        planned.push_back(a);
    }
    const graph::MemoryPlan p = graph::plan_memory(requests, alignment);
    offsets.assign(allocs.size(), 0);
    for (size_t k = 0; k < planned.size(); ++k) offsets[planned[k]] = p.offsets[k];
    for (uint32_t a = 0; a < allocs.size(); ++a) {
        uint64_t at = 0;
        if (allocs[a].parent >= 0) offsets[a] = offsets[whole_of(a, &at)] + at;
    }
    memory.arena = p.arena_bytes;
    memory.peak_live = p.peak_live_bytes;
    memory.unshared = p.unshared_bytes;
    memory.transients = planned.size();
    if (p.arena_bytes)
        arena = std::make_shared<gpu::Buffer>(
            device, gpu::BufferDesc{.size = p.arena_bytes, .name = "session arena"});

    // Constants some step reads as such come first; those only re-packed once at build (Conv's
    // weights for the tensor cores, Op::prepack) after them: the weight prefetch reads only the
    // first part, the bytes a run actually reads.
    std::vector<bool> read_by_run(constants.size(), false);
    for (const Step& s : steps) {
        const auto pack = s.constant_prepack();
        for (size_t k = 0; k < s.in.size(); ++k)
            if (s.in[k].kind == Ref::Kind::Constant && !(pack && k == pack->input))
                read_by_run[s.in[k].id] = true;
    }
    uint64_t total = 0;
    constant_offsets.assign(constants.size(), 0);
    for (const bool first_part : {true, false}) {
        for (size_t i = 0; i < constants.size(); ++i) {
            if (read_by_run[i] != first_part) continue;
            constants[i].offset = constant_offsets[i] = total;
            total = align_up(total + std::max<uint64_t>(constants[i].bytes.size(), 1), alignment);
        }
        if (first_part) memory.constants_read = total;
    }
    memory.constants = total;
    if (total) {
        constant_buffer = std::make_shared<gpu::Buffer>(
            device, gpu::BufferDesc{.size = total, .name = "session constants"});
        std::vector<std::byte> blob(total);
        for (const Constant& c : constants)
            std::memcpy(blob.data() + c.offset, c.bytes.data(), c.bytes.size());
        gpu::upload(device, constant_buffer->range(), blob);
        constants.clear(); // on the device now
        constants.shrink_to_fit();
    }
}

void Session::Impl::decide_barriers() {
    // A region: an arena byte range, or a whole caller binding (constants are never written).
    struct Region {
        Ref::Kind kind;
        uint32_t id;
        uint64_t begin, end;
        bool overlaps(const Region& o) const {
            if (kind != o.kind) return false;
            if (kind == Ref::Kind::Arena) return begin < o.end && o.begin < end;
            return id == o.id;
        }
    };
    auto region = [&](const Ref& r) {
        if (r.kind == Ref::Kind::Arena)
            return Region{r.kind, 0, offsets[r.id], offsets[r.id] + allocs[r.id].bytes};
        return Region{r.kind, r.id, 0, 0};
    };
    std::vector<Region> written, read;
    auto hits = [](const std::vector<Region>& set, const Region& x) {
        return std::any_of(set.begin(), set.end(), [&](const Region& r) { return r.overlaps(x); });
    };
    for (Step& s : steps) {
        std::vector<Region> reads, writes;
        for (const Ref& r : s.in)
            if (r.kind != Ref::Kind::Constant) reads.push_back(region(r));
        for (const Ref& r : s.out) writes.push_back(region(r));
        if (s.scratch >= 0) {
            const auto a = static_cast<uint32_t>(s.scratch);
            writes.push_back({Ref::Kind::Arena, 0, offsets[a], offsets[a] + allocs[a].bytes});
        }
        bool need = false;
        for (const Region& r : reads) need |= hits(written, r);
        for (const Region& w : writes) need |= hits(written, w) || hits(read, w);
        if (need) {
            s.barrier = true;
            written.clear();
            read.clear();
        }
        read.insert(read.end(), reads.begin(), reads.end());
        written.insert(written.end(), writes.begin(), writes.end());
    }
}

void Session::Impl::resolve() {
    auto tensor = [&](const Ref& r) -> gpu::Tensor {
        if (r.kind == Ref::Kind::Arena) return gpu::Tensor(arena, offsets[r.id], r.shape, r.dtype);
        if (r.kind == Ref::Kind::Constant)
            return gpu::Tensor(constant_buffer, constant_offsets[r.id], r.shape, r.dtype);
        return {};
    };
    for (Step& s : steps) {
        for (const Ref& r : s.in) s.in_t.push_back(tensor(r));
        for (const Ref& r : s.out) s.out_t.push_back(tensor(r));
        if (s.scratch >= 0) {
            const auto a = static_cast<uint32_t>(s.scratch);
            s.scratch_range = arena->range(offsets[a], allocs[a].bytes);
        }
    }
}

// Ops that re-pack a constant input on every run (Conv's weights for the tensor cores) get it
// packed once, now, into a buffer of their own: each run then skips that dispatch and its barrier.
void Session::Impl::prepack_constants() {
    struct Job {
        Step* step;
        ops::Op::Prepack pack;
        uint64_t offset; // in prepacked_buffer
    };
    std::vector<Job> jobs;
    uint64_t total = 0;
    const uint64_t align = std::max<uint64_t>(alignment, device.caps().min_storage_buffer_offset_alignment);
    for (Step& s : steps) {
        const auto p = s.constant_prepack();
        if (!p) continue;
        jobs.push_back({&s, *p, total});
        total = align_up(total + p->bytes, align);
    }
    memory.prepacked = total;
    if (jobs.empty()) return;
    prepacked_buffer =
        std::make_shared<gpu::Buffer>(device, gpu::BufferDesc{.size = total, .name = "session prepacked weights"});
    for (const Job& j : jobs) j.step->prepacked = prepacked_buffer->range(j.offset, j.pack.bytes);
    device.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        gpu::barrier::transfer_to_compute(cmd); // the constants' upload
        for (const Job& j : jobs) j.step->op->record_prepack(cmd, j.step->in_t[j.pack.input], j.step->prepacked);
    });
}

// Sequence and optional inputs: a sequence becomes one input per tensor ("<name>[<i>]", shapes
// from SessionOptions::sequence_inputs) and the sequence value lists them; an optional holds its
// content (it becomes that input) or, named in absent_inputs, nothing (it leaves the inputs).
void Session::Impl::expand_inputs() {
    auto is_input = [&](const std::string& name) {
        const ValueId v = graph.find(name);
        return v != graph::no_value && std::find(graph.inputs().begin(), graph.inputs().end(), v) != graph.inputs().end();
    };
    for (const auto& [name, shapes] : options.sequence_inputs)
        if (!is_input(name))
            graph.fail("SessionOptions::sequence_inputs names '" + name + "', which is not an input of the model");
    for (const std::string& name : options.absent_inputs)
        if (!is_input(name) || graph.value(graph.find(name)).kind != graph::ValueKind::Optional)
            graph.fail("SessionOptions::absent_inputs names '" + name + "', which is not an optional input of the model");
    std::vector<ValueId> expanded;
    for (ValueId v : graph.inputs()) {
        graph::Value& val = graph.value(v);
        ModelValue m{val.name, val.kind, val.element_kind, true, expanded.size(), 0};
        if (val.kind == graph::ValueKind::Optional) {
            if (options.absent_inputs.count(val.name)) {
                val.elements = std::vector<ValueId>{};
                m.present = false;
                model_inputs.push_back(m);
                continue;
            }
            val.kind = val.element_kind; // it holds its content: the input is that
        }
        if (val.kind == graph::ValueKind::Sequence) {
            const auto it = options.sequence_inputs.find(val.name);
            if (it == options.sequence_inputs.end())
                graph.fail("input '" + val.name + "' is a sequence: give the shapes of its tensors "
                           "(SessionOptions::sequence_inputs)");
            const std::string base = val.name;
            const DType dtype = val.dtype;
            std::vector<ValueId> elems;
            for (size_t i = 0; i < it->second.size(); ++i) {
                const ValueId e = graph.add_value(base + "[" + std::to_string(i) + "]", dtype, graph::Shape(it->second[i]));
                elems.push_back(e);
                expanded.push_back(e);
            }
            graph.value(v).elements = std::move(elems);
            m.count = it->second.size();
            model_inputs.push_back(m);
            continue;
        }
        if (options.sequence_inputs.count(val.name))
            graph.fail("SessionOptions::sequence_inputs names '" + val.name + "', which is a tensor input");
        expanded.push_back(v);
        m.count = 1;
        model_inputs.push_back(m);
    }
    graph.inputs() = std::move(expanded);
}

// Sequence and optional outputs, resolved now: the graph's outputs become their tensors; returns
// the session's output names ("<name>[<i>]" for a sequence's tensors).
std::vector<std::string> Session::Impl::expand_outputs() {
    std::vector<ValueId> expanded;
    std::vector<std::string> names;
    for (ValueId v : graph.outputs()) {
        const graph::Value& val = graph.value(v);
        ModelValue m{val.name, val.kind, val.element_kind, true, expanded.size(), 0};
        if (val.kind == graph::ValueKind::Tensor) {
            expanded.push_back(v);
            names.push_back(val.name);
            m.count = 1;
            model_outputs.push_back(m);
            continue;
        }
        if (!val.elements) graph.fail("output '" + val.name + "' is a " + graph::value_kind_name(val.kind) +
                                      " that vkml could not resolve");
        std::vector<ValueId> tensors = *val.elements;
        bool sequence = val.kind == graph::ValueKind::Sequence;
        if (val.kind == graph::ValueKind::Optional) {
            m.present = !tensors.empty();
            if (m.present && !graph.value(tensors[0]).is_tensor()) {
                const graph::Value& inner = graph.value(tensors[0]);
                if (!inner.elements) graph.fail("output '" + val.name + "' holds an unresolved sequence");
                tensors = *inner.elements;
                sequence = true;
            }
        }
        for (size_t i = 0; i < tensors.size(); ++i) {
            expanded.push_back(tensors[i]);
            names.push_back(sequence ? val.name + "[" + std::to_string(i) + "]" : val.name);
        }
        m.count = tensors.size();
        model_outputs.push_back(m);
    }
    graph.outputs() = std::move(expanded);
    return names;
}

void Session::Impl::build() {
    // The ops' new pipelines compile on the pipeline cache's worker threads while planning goes on
    // (a cold cache: a torchvision densenet121 took 12.8 s to create on an H200, one at a time).
    gpu::PipelineBatch batch(device.pipelines());
    alignment = std::max<uint64_t>(device.caps().min_storage_buffer_offset_alignment, 16);
    for (const auto& [name, data] : options.constant_inputs) {
        const ValueId v = graph.find(name);
        auto& ins = graph.inputs();
        const auto it = std::find(ins.begin(), ins.end(), v);
        if (v == graph::no_value || it == ins.end())
            graph.fail("SessionOptions::constant_inputs names '" + name +
                       "', which is not an input of the model");
        graph::Value& val = graph.value(v);
        if (val.dtype != DType::undefined && val.dtype != data.dtype())
            graph.fail("input '" + name + "' is " + graph::dtype_name(val.dtype) + ", its constant value " +
                       graph::describe(data));
        if (val.kind == graph::ValueKind::Optional && val.element_kind == graph::ValueKind::Tensor)
            val.kind = graph::ValueKind::Tensor; // an optional holding this tensor
        if (val.kind != graph::ValueKind::Tensor)
            graph.fail("input '" + name + "' is a " + graph::value_kind_name(val.kind) +
                       "; SessionOptions::constant_inputs takes tensors");
        ins.erase(it);
        graph.set_constant(v, data);
    }
    graph::prune(graph);
    // Every op, also in subgraphs, is one vkml runs: else one error naming it, before any work.
    std::function<void(const Graph&)> check_ops = [&](const Graph& g) {
        for (const Node& n : g.nodes()) {
            if (!graph::detail::lowerable(n) && !graph::host_evaluable(n) && !graph::structural_op(n) &&
                !graph::composite_type(n))
                graph.fail(n,
                           "operator " + (n.domain.empty() ? std::string() : n.domain + ".") + n.op_type +
                               " is not supported by vkml (`vkml ops` lists the supported operators)",
                           ErrorCode::Unsupported);
            for (const auto& [key, a] : n.attributes)
                if (a.kind() == graph::AttributeKind::Graph) check_ops(a.as_graph());
        }
    };
    check_ops(graph);
    expand_inputs();
    graph::fix_input_shapes(graph, options.free_dims, options.input_shapes, options.free_dim_denotations);
    graph::infer_and_fold(graph, device, [this](const Node& n) { return float_dtype(n); });
    const std::vector<std::string> output_names = expand_outputs();
    if (options.fuse) graph::fuse(graph);
    if (options.fuse && options.fuse_conv_stack && !graph::conv_stack_disabled_by_env())
        graph::fuse_conv_stacks(graph, device, [this](const Node& n) { return float_dtype(n); });
    if (options.fuse && !graph::attention_disabled_by_env())
        graph::fuse_attention(graph, device, [this](const Node& n) { return float_dtype(n); });
    graph::prune(graph);
    graph.remove_unused_values();

    // SessionOptions::storage_io: f32 inputs and outputs bound in f16 where the session stores f16.
    const bool f16_io = options.storage_io && !options.fp32 && device.caps().storage16;
    auto io_storage = [&](DType d) {
        return f16_io && d == DType::f32 ? gpu::DType::f16 : graph::detail::storage_of(d);
    };
    for (ValueId v : graph.inputs()) {
        const graph::Value& val = graph.value(v);
        if (val.dtype == DType::undefined) graph.fail("input '" + val.name + "' has no data type");
        inputs.push_back({val.name, val.dtype, io_storage(val.dtype), static_shape(graph, v)});
    }
    for (size_t j = 0; j < graph.outputs().size(); ++j) {
        const ValueId v = graph.outputs()[j];
        const graph::Value& val = graph.value(v);
        outputs.push_back({output_names[j], val.dtype, io_storage(val.dtype), static_shape(graph, v)});
    }
    lower_all();
    assign_outputs();
    plan();
    decide_barriers();
    resolve();
    const char* prefetch_env = std::getenv("VKML_PREFETCH_WEIGHTS");
    const bool prefetch_on =
        prefetch_env && (prefetch_env[0] == '0' || prefetch_env[0] == '1')
            ? prefetch_env[0] == '1'
            : options.prefetch_weights.value_or(device.caps().device_type != VK_PHYSICAL_DEVICE_TYPE_CPU);
    if (prefetch_on) {
        prefetch = &device.pipeline({.shader = gpu::ShaderId::prefetch_f32,
                                     .bindings = 2,
                                     .push_constant_bytes = 4,
                                     .workgroup = {256, 1, 1},
                                     .name = "session weight prefetch"});
        prefetch_sink = std::make_shared<gpu::Buffer>(
            device, gpu::BufferDesc{.size = 16, .name = "session prefetch sink"});
    }
    batch.finish(); // every pipeline compiled (or the first creation error thrown)
    prepack_constants();
}

// ---- Session ---------------------------------------------------------------------------------------

Session::Session(gpu::Device& device, const Graph& graph, const SessionOptions& options)
    : impl_(std::make_unique<Impl>(device, graph, options)) {
    if (options.f16_guard && !options.fp32 && device.caps().storage16) {
        impl_->source_graph = std::make_shared<const Graph>(graph);
        impl_->user_options = options;
        impl_->calibrated = false;
    }
    impl_->build();
}

Session::~Session() = default;

const std::vector<TensorInfo>& Session::inputs() const {
    return impl_->inputs;
}
const std::vector<TensorInfo>& Session::outputs() const {
    return impl_->outputs;
}
const Graph& Session::graph() const {
    return impl_->graph;
}
SessionMemory Session::memory() const {
    return impl_->memory;
}
const std::vector<ModelValue>& Session::model_inputs() const {
    return impl_->model_inputs;
}
const std::vector<ModelValue>& Session::model_outputs() const {
    return impl_->model_outputs;
}
const std::shared_ptr<gpu::Buffer>& Session::arena() const {
    return impl_->arena;
}

namespace {
size_t index_of(const std::vector<TensorInfo>& infos, std::string_view name, const char* what,
                const std::string& source) {
    std::string known;
    for (size_t i = 0; i < infos.size(); ++i) {
        if (infos[i].name == name) return i;
        known += (known.empty() ? "" : ", ") + infos[i].name;
    }
    throw Error(ErrorCode::InvalidArgument, "'" + source + "' has no " + what + " named '" +
                                                std::string(name) + "' (its " + what + "s: " + known + ")");
}

std::string info_string(const TensorInfo& t) {
    return t.name + ": " + graph::dtype_name(t.dtype) + t.shape.str();
}
} // namespace

size_t Session::input_index(std::string_view name) const {
    return index_of(impl_->inputs, name, "input", impl_->graph.source);
}
size_t Session::output_index(std::string_view name) const {
    return index_of(impl_->outputs, name, "output", impl_->graph.source);
}

std::vector<StepInfo> Session::steps() const {
    std::vector<StepInfo> out;
    for (const Step& s : impl_->steps)
        out.push_back(
            {s.name, s.op_type, desc_list(s.op->inputs()) + " -> " + desc_list(s.op->outputs()), s.barrier});
    return out;
}

std::string Session::describe() const {
    std::ostringstream o;
    o << "model '" << impl_->graph.source << "'\n";
    for (const TensorInfo& t : impl_->inputs) o << "  input  " << info_string(t) << "\n";
    for (const TensorInfo& t : impl_->outputs) o << "  output " << info_string(t) << "\n";
    size_t barriers = 0;
    for (const StepInfo& s : steps()) {
        barriers += s.barrier;
        o << (s.barrier ? "  | " : "    ") << s.op_type << " '" << s.name << "': " << s.detail << "\n";
    }
    const SessionMemory& m = impl_->memory;
    o << impl_->steps.size() << " steps, " << barriers << " barriers (marked |); arena " << m.arena
      << " bytes for " << m.transients << " transients (peak live " << m.peak_live << ", without reuse "
      << m.unshared << "); constants " << m.constants << " bytes";
    if (m.prepacked)
        o << " (" << m.constants_read << " read by a run; " << m.prepacked
          << " re-packed once for their kernels)";
    o << "\n";
    if (!impl_->kept.empty()) o << "f16 guard: kept in f32: " << to_string(impl_->kept) << "\n";
    return o.str();
}

void Session::record_range(gpu::CommandBuffer& cmd, const Bindings& b, size_t first, size_t end,
                           gpu::Profiler* profiler) const {
    const Impl& im = *impl_;
    // Which bindings the steps in [first, end) use: only those must be bound.
    std::vector<char> used_in(im.inputs.size(), 0), used_out(im.outputs.size(), 0);
    for (size_t s = first; s < end; ++s)
        for (auto* refs : {&im.steps[s].in, &im.steps[s].out})
            for (const Ref& r : *refs) {
                if (r.kind == Ref::Kind::Input) used_in[r.id] = 1;
                if (r.kind == Ref::Kind::Output) used_out[r.id] = 1;
            }
    auto check = [&](std::span<const gpu::Tensor> given, const std::vector<TensorInfo>& want,
                     const std::vector<char>& used, const char* what) {
        if (given.size() != want.size())
            throw Error(ErrorCode::InvalidArgument, "Session::record: " + std::to_string(given.size()) + " " +
                                                        what + " tensors bound, the model has " +
                                                        std::to_string(want.size()));
        for (size_t i = 0; i < given.size(); ++i) {
            if (!used[i] && !given[i]) continue;
            if (!given[i] || given[i].shape() != want[i].shape || given[i].dtype() != want[i].storage ||
                !given[i].contiguous())
                throw Error(ErrorCode::InvalidArgument,
                            std::string("Session::record: ") + what + " '" + want[i].name +
                                "' must be a contiguous " + gpu::dtype_name(want[i].storage) +
                                want[i].shape.str() + " tensor" +
                                (given[i] ? std::string(", is ") + gpu::dtype_name(given[i].dtype()) +
                                                given[i].shape().str()
                                          : std::string(", none is bound")));
        }
    };
    check(b.inputs, im.inputs, used_in, "input");
    check(b.outputs, im.outputs, used_out, "output");
    auto bound = [&](const Ref& r, const gpu::Tensor& t) -> gpu::Tensor {
        if (r.kind == Ref::Kind::Input || r.kind == Ref::Kind::Output) {
            const gpu::Tensor& base = r.kind == Ref::Kind::Input ? b.inputs[r.id] : b.outputs[r.id];
            return base.shape() == r.shape ? base : base.reshape(r.shape);
        }
        return t;
    };
    std::vector<gpu::Tensor> in, out;
    // The first barrier orders this record after earlier work of the session on the queue (the
    // arena is reused between records).
    gpu::barrier::compute_to_compute(cmd);
    // The weights into the last-level cache: read-only, so the first step need not wait for it
    // (no barrier); the next barrier orders the sink's writes of one record before the next's.
    if (first == 0 && im.prefetch)
        for (const auto& [buf, bytes] : {std::pair{im.prepacked_buffer.get(), im.memory.prepacked},
                                         std::pair{im.constant_buffer.get(), im.memory.constants_read}}) {
            const uint64_t sectors = bytes / 32;
            if (!buf || !sectors || sectors > UINT32_MAX) continue;
            const gpu::BufferRange bufs[] = {buf->range(0, sectors * 32), im.prefetch_sink->range()};
            const uint32_t push = uint32_t(sectors);
            cmd.dispatch(*im.prefetch, bufs, push, cmd.groups_for(*im.prefetch, sectors));
        }
    for (size_t s = first; s < end; ++s) {
        const Step& st = im.steps[s];
        if (s != first && st.barrier) gpu::barrier::compute_to_compute(cmd);
        in.clear();
        out.clear();
        for (size_t k = 0; k < st.in.size(); ++k) in.push_back(bound(st.in[k], st.in_t[k]));
        for (size_t k = 0; k < st.out.size(); ++k) out.push_back(bound(st.out[k], st.out_t[k]));
        const bool timed = profiler && profiler->begin(cmd, st.name + " (" + st.op_type + ")");
        st.op->record(cmd, in, out, st.scratch_range, st.prepacked);
        if (timed) profiler->end(cmd);
    }
}

void Session::record(gpu::CommandBuffer& cmd, const Bindings& bindings, gpu::Profiler* profiler) const {
    record_range(cmd, bindings, 0, impl_->steps.size(), profiler);
}

void SessionChunk::record(gpu::CommandBuffer& cmd, const Bindings& bindings, gpu::Profiler* profiler) const {
    session_->record_range(cmd, bindings, first_, end_, profiler);
}

std::vector<SessionChunk> Session::split(size_t n) const {
    const auto& steps = impl_->steps;
    n = std::max<size_t>(1, std::min(n, std::max<size_t>(steps.size(), 1)));
    double total = 0;
    for (const Step& s : steps) total += s.cost;
    std::vector<size_t> bounds = {0};
    double acc = 0;
    for (size_t s = 0; s < steps.size(); ++s) {
        acc += steps[s].cost;
        const size_t made = bounds.size(); // chunks begun so far
        const size_t left_steps = steps.size() - (s + 1);
        if (made < n && s + 1 < steps.size() &&
            acc >= total * static_cast<double>(made) / static_cast<double>(n) && left_steps >= n - made)
            bounds.push_back(s + 1);
    }
    // Too few cuts (cost concentrated at the end): cut the remaining steps evenly.
    while (bounds.size() < n) {
        const size_t last = bounds.back();
        const size_t remaining = steps.size() - last, want = n - bounds.size() + 1;
        bounds.push_back(last + std::max<size_t>(1, remaining / want));
    }
    bounds.push_back(steps.size());
    std::vector<SessionChunk> chunks;
    for (size_t c = 0; c + 1 < bounds.size(); ++c) {
        SessionChunk ch;
        ch.session_ = this;
        ch.first_ = bounds[c];
        ch.end_ = bounds[c + 1];
        std::set<size_t> ins, outs;
        for (size_t s = ch.first_; s < ch.end_; ++s) {
            ch.cost_ += steps[s].cost;
            for (const Ref& r : steps[s].in) {
                if (r.kind == Ref::Kind::Input) ins.insert(r.id);
                if (r.kind == Ref::Kind::Output) outs.insert(r.id); // read back in place: declared written
            }
            for (const Ref& r : steps[s].out)
                if (r.kind == Ref::Kind::Output) outs.insert(r.id);
        }
        ch.inputs_.assign(ins.begin(), ins.end());
        ch.outputs_.assign(outs.begin(), outs.end());
        chunks.push_back(std::move(ch));
    }
    return chunks;
}

std::vector<gpu::Tensor>& Session::Impl::ensure_io(bool input_side) {
    auto& v = input_side ? io_inputs : io_outputs;
    const auto& infos = input_side ? inputs : outputs;
    if (v.empty())
        for (const TensorInfo& t : infos)
            v.emplace_back(device, t.shape, t.storage,
                           std::string(input_side ? "input " : "output ") + t.name);
    return v;
}

namespace {

void upload_inputs(gpu::Device& device, const std::vector<TensorInfo>& infos,
                   std::span<const TensorData> data, const std::vector<gpu::Tensor>& tensors,
                   const std::string& source) {
    if (data.size() != infos.size())
        throw Error(ErrorCode::InvalidArgument, "'" + source + "': " + std::to_string(data.size()) +
                                                    " inputs given, the model takes " +
                                                    std::to_string(infos.size()));
    for (size_t i = 0; i < infos.size(); ++i) {
        const TensorInfo& t = infos[i];
        const std::vector<int64_t> want(t.shape.dims().begin(), t.shape.dims().end());
        if (data[i].dtype() != t.dtype || data[i].dims() != want)
            throw Error(ErrorCode::InvalidArgument, "'" + source + "': input '" + t.name + "' must be " +
                                                        graph::dtype_name(t.dtype) + t.shape.str() +
                                                        ", got " + graph::describe(data[i]));
        // Types held in a wider or narrower device type (f64, i8, u32, ...) are converted here.
        if (graph::dtype_size(t.dtype) != gpu::dtype_size(t.storage))
            gpu::upload_raw(device, tensors[i], convert_constant(data[i], t.storage));
        else
            gpu::upload_raw(device, tensors[i], data[i].bytes());
    }
}

// The graph dtype whose bytes a device dtype holds.
DType graph_dtype_of(gpu::DType d) {
    switch (d) {
    case gpu::DType::f16:
        return DType::f16;
    case gpu::DType::i32:
        return DType::i32;
    case gpu::DType::i64:
        return DType::i64;
    case gpu::DType::u8:
        return DType::u8;
    default:
        return DType::f32;
    }
}

// The output tensors as run() returns them: in the model's dtypes (storage types widened back).
std::vector<TensorData> download_outputs(gpu::Device& device, const std::vector<TensorInfo>& infos,
                                         const std::vector<gpu::Tensor>& outs) {
    std::vector<TensorData> result;
    for (size_t j = 0; j < outs.size(); ++j) {
        const TensorInfo& t = infos[j];
        std::vector<int64_t> dims(t.shape.dims().begin(), t.shape.dims().end());
        if (graph::dtype_size(t.dtype) != gpu::dtype_size(t.storage))
            result.push_back(TensorData(graph_dtype_of(t.storage), std::move(dims), gpu::download_raw(device, outs[j]))
                                 .converted(t.dtype));
        else
            result.emplace_back(t.dtype, std::move(dims), gpu::download_raw(device, outs[j]));
    }
    return result;
}

} // namespace

// One model run as several submissions of bounded GPU time, so that a big model on a slow device
// is not one submission of minutes (the device shows progress; Device::wait never sees a long
// silence). Chunks are sized from the previous run's speed; the first run of a large model is cut
// into 8 (a cost above 1e9, about a GFLOP), small ones stay whole.
void Session::run_bounded(std::span<const gpu::Tensor> ins, std::span<const gpu::Tensor> outs) {
    Impl& im = *impl_;
    constexpr double piece_seconds = 0.25, large = 1e9;
    double total = 0;
    for (const Step& s : im.steps) total += s.cost;
    size_t n = 1;
    if (im.seconds_per_cost > 0)
        n = size_t(std::ceil(total * im.seconds_per_cost / piece_seconds));
    else if (total > large)
        n = 8;
    const std::vector<SessionChunk> chunks = split(std::max<size_t>(n, 1));
    // After everything vkml submitted before, on any queue (as Device::run_now orders its work).
    std::vector<gpu::SemaphoreWait> waits;
    for (size_t r = 0; r < gpu::queue_role_count; ++r)
        if (const uint64_t v = im.device.last_submitted(gpu::QueueRole(r)))
            waits.push_back({gpu::QueueRole(r), v, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT});
    const auto t0 = std::chrono::steady_clock::now();
    gpu::CommandStream stream(im.device, im.options.queue);
    for (size_t i = 0; i < chunks.size(); ++i) {
        gpu::CommandBuffer& cmd = stream.cmd();
        chunks[i].record(cmd, {ins, outs});
        if (i + 1 == chunks.size()) gpu::barrier::compute_to_transfer(cmd);
        stream.submit(i == 0 ? std::span<const gpu::SemaphoreWait>(waits)
                             : std::span<const gpu::SemaphoreWait>());
    }
    stream.wait();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (total > 0) im.seconds_per_cost = seconds / total;
}

std::vector<TensorData> Session::run(std::span<const TensorData> inputs) {
    if (!impl_->calibrated) calibrate(inputs);
    Impl& im = *impl_;
    const auto& ins = im.ensure_io(true);
    const auto& outs = im.ensure_io(false);
    upload_inputs(im.device, im.inputs, inputs, ins, im.graph.source);
    run_bounded(ins, outs);
    return download_outputs(im.device, im.outputs, outs);
}

std::map<std::string, TensorData> Session::run(const std::map<std::string, TensorData>& named) {
    std::vector<TensorData> in;
    for (const TensorInfo& t : impl_->inputs) {
        auto it = named.find(t.name);
        if (it == named.end())
            throw Error(ErrorCode::InvalidArgument,
                        "'" + impl_->graph.source + "': no data given for input '" + t.name + "'");
        in.push_back(it->second);
    }
    for (const auto& [name, data] : named) (void)input_index(name); // names a typo
    auto out = run(in);
    std::map<std::string, TensorData> result;
    for (size_t j = 0; j < out.size(); ++j) result.emplace(impl_->outputs[j].name, std::move(out[j]));
    return result;
}

SessionProfile Session::profile(std::span<const TensorData> inputs, std::vector<TensorData>* outputs) {
    if (!impl_->calibrated) calibrate(inputs);
    Impl& im = *impl_;
    gpu::Profiler profiler(im.device, static_cast<uint32_t>(im.steps.size() + 1));
    if (!profiler.supported())
        throw Error(ErrorCode::Unsupported,
                    im.device.caps().device_name + " has no timestamps for compute: cannot profile");
    const auto& ins = im.ensure_io(true);
    const auto& outs = im.ensure_io(false);
    upload_inputs(im.device, im.inputs, inputs, ins, im.graph.source);
    im.device.run_now(im.options.queue, [&](gpu::CommandBuffer& cmd) {
        profiler.reset(cmd);
        record(cmd, {ins, outs}, &profiler);
        if (outputs) gpu::barrier::compute_to_transfer(cmd);
    });
    if (outputs) *outputs = download_outputs(im.device, im.outputs, outs);
    SessionProfile p;
    p.records = profiler.results();
    for (const Step& s : im.steps) p.op_types.push_back(s.op_type);
    p.op_types.resize(p.records.size());
    for (const auto& r : p.records) p.total_us = std::max(p.total_us, r.start_us + r.duration_us);
    return p;
}

// ---- The f16 guard ----------------------------------------------------------------------------------
//
// Calibration: a reference session of the same graph in f32 and this session's f16 plan each run
// the inputs step by step, and the float value every step writes is summarised (f16_guard.hpp).
// A node fails f16 when its value does (f16_failure); the comparison with the f32 run counts only
// where the node's inputs came through the f16 run intact, so a loss is charged to the node that
// caused it, not to everything after it. Each node that fails, the nodes producing its inputs and
// those reading its outputs (through views) go to f32 by name, and the session is rebuilt; up to
// four rounds, until a round finds nothing more (a second cause behind a first one shows only once
// the first is fixed). Explicit SessionOptions::precision entries are never overridden.

// Whether the caller's options name this node's precision (by name, a fused node's name, or type).
bool Session::Impl::explicit_precision(const Node& n) const {
    const auto& p = user_options.precision;
    if (p.count(n.name) || p.count(n.op_type)) return true;
    for (const std::string& f : n.get_strings("vkml_fused"))
        if (p.count(f)) return true;
    return false;
}

// Runs the inputs through the steps, pausing after each one that writes a float value of the graph
// to summarise that value (before a later step can reuse its memory).
std::map<std::string, graph::detail::ValueStats>
Session::Impl::stats_by_step(Session& self, std::span<const TensorData> in) {
    const auto& ins = ensure_io(true);
    const auto& outs = ensure_io(false);
    upload_inputs(device, inputs, in, ins, graph.source);
    auto float_value = [&](ValueId v) {
        return v != graph::no_value && graph::is_float(graph.value(v).dtype);
    };
    std::map<std::string, graph::detail::ValueStats> stats;
    size_t begin = 0;
    for (size_t k = 0; k < steps.size(); ++k) {
        const Step& st = steps[k];
        if (std::none_of(st.values.begin(), st.values.end(), float_value) && k + 1 < steps.size()) continue;
        device.run_now(options.queue, [&](gpu::CommandBuffer& cmd) {
            self.record_range(cmd, {ins, outs}, begin, k + 1, nullptr);
            gpu::barrier::compute_to_transfer(cmd);
        });
        begin = k + 1;
        for (size_t j = 0; j < st.values.size(); ++j) {
            if (!float_value(st.values[j])) continue;
            const Ref& r = st.out[j];
            const gpu::Tensor& t = r.kind == Ref::Kind::Output ? outs[r.id] : st.out_t[j];
            stats[graph.value(st.values[j]).name] =
                graph::detail::value_stats(gpu::download_floats(device, t));
        }
    }
    return stats;
}

// One round: the nodes of this plan that fail f16 and their neighbours, added to `marks`.
std::vector<KeptInF32>
Session::Impl::guard_round(const std::map<std::string, graph::detail::ValueStats>& f32,
                           const std::map<std::string, graph::detail::ValueStats>& f16,
                           std::map<std::string, Precision, std::less<>>& marks) const {
    using graph::detail::ValueStats;
    const std::vector<Node>& nodes = graph.nodes();
    std::map<ValueId, size_t> producer;
    std::map<ValueId, std::vector<size_t>> consumers;
    for (size_t i = 0; i < nodes.size(); ++i) {
        for (ValueId v : nodes[i].outputs) producer[v] = i;
        for (ValueId v : nodes[i].inputs) consumers[v].push_back(i);
    }
    auto stats_of = [&](const std::map<std::string, ValueStats>& m, ValueId v) -> const ValueStats* {
        const auto it = m.find(graph.value(v).name);
        return it == m.end() ? nullptr : &it->second;
    };
    auto runtime_float = [&](ValueId v) {
        return v != graph::no_value && !graph.value(v).is_constant() && graph::is_float(graph.value(v).dtype);
    };
    // Whether this f16 run lost value v (a view or in-place Concat: any value it is made of).
    std::function<bool(ValueId)> lost = [&](ValueId v) -> bool {
        if (!runtime_float(v)) return false;
        if (const auto it = sources.find(v); it != sources.end())
            return std::any_of(it->second.begin(), it->second.end(), lost);
        const ValueStats *a = stats_of(f32, v), *b = stats_of(f16, v);
        return a && b && graph::detail::f16_run_lost(*a, *b);
    };
    std::vector<std::pair<size_t, std::string>> causes;
    for (size_t i = 0; i < nodes.size(); ++i) {
        const Node& n = nodes[i];
        // A node the caller pinned is left as it is, its neighbours too.
        if (n.name.empty() || float_dtype(n) == gpu::DType::f32 || explicit_precision(n)) continue;
        const bool inputs_fit = std::none_of(n.inputs.begin(), n.inputs.end(), lost);
        for (ValueId v : n.outputs) {
            if (!runtime_float(v) || sources.count(v)) continue;
            const ValueStats* a = stats_of(f32, v);
            if (!a) continue;
            const std::string why = graph::detail::f16_failure(*a, stats_of(f16, v), inputs_fit);
            if (!why.empty()) {
                causes.emplace_back(i, why);
                break;
            }
        }
    }
    std::vector<KeptInF32> found;
    auto display = [&](const Node& n) {
        std::string s = n.name;
        for (const std::string& f : n.get_strings("vkml_fused")) s += "+" + f;
        return s;
    };
    auto keep = [&](const Node& n, const std::string& reason) {
        if (n.name.empty() || marks.count(n.name) || explicit_precision(n) ||
            float_dtype(n) == gpu::DType::f32)
            return;
        marks[n.name] = Precision::F32;
        for (const std::string& f : n.get_strings("vkml_fused")) marks[f] = Precision::F32;
        found.push_back({display(n), reason});
    };
    for (const auto& [i, why] : causes) keep(nodes[i], why);
    // Neighbours, through views (a view's storage is its source's).
    std::function<void(ValueId, const std::string&)> keep_producers = [&](ValueId v, const std::string& why) {
        if (!runtime_float(v)) return;
        if (const auto p = producer.find(v); p != producer.end()) keep(nodes[p->second], why);
        if (const auto it = sources.find(v); it != sources.end())
            for (ValueId s : it->second) keep_producers(s, why);
    };
    std::function<void(ValueId, const std::string&)> keep_consumers = [&](ValueId v, const std::string& why) {
        const auto c = consumers.find(v);
        if (c == consumers.end()) return;
        for (size_t i : c->second) {
            keep(nodes[i], why);
            for (ValueId o : nodes[i].outputs)
                if (const auto it = sources.find(o);
                    it != sources.end() &&
                    std::find(it->second.begin(), it->second.end(), v) != it->second.end())
                    keep_consumers(o, why);
        }
    };
    for (const auto& [i, cause] : causes) {
        const std::string why = "neighbour of " + display(nodes[i]);
        for (ValueId v : nodes[i].inputs) keep_producers(v, why);
        for (ValueId v : nodes[i].outputs) keep_consumers(v, why);
    }
    return found;
}

namespace {
// A session's Impl built again from its caller's graph and options, with the guard's marks added
// (an entry the caller made stays as it is).
std::unique_ptr<Session::Impl> rebuilt(const Session::Impl& from,
                                       const std::map<std::string, Precision, std::less<>>& marks) {
    SessionOptions o = from.user_options;
    for (const auto& [key, p] : marks) o.precision.emplace(key, p);
    auto im = std::make_unique<Session::Impl>(from.device, *from.source_graph, o);
    im->source_graph = from.source_graph;
    im->user_options = from.user_options;
    im->calibrated = false;
    im->build();
    return im;
}
} // namespace

std::vector<KeptInF32> Session::calibrate(std::span<const TensorData> inputs) {
    if (!impl_->source_graph) return {};
    SessionOptions ref_options = impl_->user_options;
    ref_options.fp32 = true;
    ref_options.f16_guard = false;
    ref_options.precision.clear();
    Session reference(impl_->device, *impl_->source_graph, ref_options);
    const auto f32 = reference.impl_->stats_by_step(reference, inputs);
    std::map<std::string, Precision, std::less<>> marks;
    if (!impl_->kept.empty()) impl_ = rebuilt(*impl_, marks); // a new calibration starts from f16
    std::vector<KeptInF32> kept;
    for (int round = 0; round < 4; ++round) {
        const auto found = impl_->guard_round(f32, impl_->stats_by_step(*this, inputs), marks);
        if (found.empty()) break;
        kept.insert(kept.end(), found.begin(), found.end());
        impl_ = rebuilt(*impl_, marks);
    }
    impl_->kept = kept;
    impl_->calibrated = true;
    return kept;
}

std::string to_string(const std::vector<KeptInF32>& kept) {
    std::string s;
    for (const KeptInF32& k : kept) s += (s.empty() ? "" : ", ") + k.node + " (" + k.reason + ")";
    return s;
}

const std::vector<KeptInF32>& Session::kept_in_f32() const {
    return impl_->kept;
}

bool Session::calibrated() const {
    return impl_->calibrated;
}

std::string SessionProfile::table() const {
    std::string s = gpu::timing_table(records);
    std::map<std::string, std::pair<int, double>> by_type;
    double sum = 0;
    for (size_t i = 0; i < records.size(); ++i) {
        auto& e = by_type[i < op_types.size() ? op_types[i] : "?"];
        ++e.first;
        e.second += records[i].duration_us;
        sum += records[i].duration_us;
    }
    std::vector<std::pair<std::string, std::pair<int, double>>> rows(by_type.begin(), by_type.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
    char line[160];
    s += "\nby op type:\n";
    for (const auto& [type, e] : rows) {
        std::snprintf(line, sizeof line, "  %-24s %5d steps %12.3f ms %6.1f%%\n", type.c_str(), e.first,
                      e.second / 1000, sum > 0 ? 100.0 * e.second / sum : 0.0);
        s += line;
    }
    std::snprintf(line, sizeof line, "total: %.3f ms of GPU time over %.3f ms\n", sum / 1000,
                  total_us / 1000);
    return s + line;
}

std::string SessionProfile::chrome_trace() const {
    return gpu::chrome_trace_json(records);
}

} // namespace vkml
