// The passes before fusion: pruning, static input shapes, and shape inference with host folding.
#include <algorithm>
#include <set>

#include "lower.hpp"
#include "passes.hpp"

namespace vkml::graph {

namespace {

std::string list(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

gpu::Shape to_gpu(const Graph& g, const Value& v) {
    const auto sizes = v.shape ? v.shape->sizes() : std::nullopt;
    if (!sizes)
        g.fail("value '" + v.name + "' has no static shape" +
               (v.shape ? " (" + to_string(*v.shape) + ")" : std::string()));
    if (sizes->size() > gpu::max_rank)
        g.fail("value '" + v.name + "' has rank " + std::to_string(sizes->size()) + "; vkml supports up to 6",
               ErrorCode::Unsupported);
    try {
        return gpu::Shape(std::span<const int64_t>(*sizes));
    } catch (const Error& e) { // e.g. dimensions whose product passes 64 bits: name the file and value
        g.fail("value '" + v.name + "': " + e.what());
    }
}

// Evaluates node `n` on the host and makes its outputs constants.
void fold_node(Graph& g, const Node& n, int64_t max_elements) {
    std::vector<const TensorData*> data;
    std::vector<std::vector<int64_t>> shapes;
    for (ValueId v : n.inputs) {
        data.push_back(v == no_value ? nullptr : g.value(v).data.get());
        std::vector<int64_t> s;
        if (v != no_value) {
            const gpu::Shape gs = to_gpu(g, g.value(v));
            s.assign(gs.dims().begin(), gs.dims().end());
        }
        shapes.push_back(std::move(s));
    }
    std::vector<TensorData> out = host_evaluate(g, n, data, shapes, max_elements);
    for (size_t k = 0; k < n.outputs.size() && k < out.size(); ++k)
        if (n.outputs[k] != no_value) g.set_constant(n.outputs[k], std::move(out[k]));
}

// A Dropout that drops nothing: inference (no training_mode, or a constant false one), or training
// with a constant ratio of 0. Its mask output is then all true, a constant.
bool dropout_drops_nothing(const Graph& g, const Node& n) {
    auto constant = [&](size_t i) -> const TensorData* {
        return i < n.inputs.size() && n.inputs[i] != no_value ? g.value(n.inputs[i]).data.get() : nullptr;
    };
    const bool training_given = n.inputs.size() > 2 && n.inputs[2] != no_value;
    if (!training_given) return true;
    const TensorData* t = constant(2);
    if (!t || t->elements() != 1) return false;
    if (t->to_int64s()[0] == 0) return true;
    const TensorData* r = constant(1);
    return r && r->elements() == 1 && r->to_doubles()[0] == 0.0;
}

// Whether every present input of n is a constant.
bool inputs_constant(const Graph& g, const Node& n) {
    for (ValueId v : n.inputs)
        if (v != no_value && !g.value(v).is_constant()) return false;
    return true;
}

// Removes the nodes flagged in `folded` (one flag per node, their outputs now constants).
void drop_folded(Graph& g, const std::vector<char>& folded) {
    std::vector<Node> kept;
    for (size_t i = 0; i < g.nodes().size(); ++i)
        if (!folded[i]) kept.push_back(std::move(g.nodes()[i]));
    g.nodes() = std::move(kept);
}

} // namespace

size_t fold_constants(Graph& g, int64_t max_elements) {
    g.sort_topologically();
    std::vector<char> folded(g.nodes().size(), 0);
    size_t count = 0;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        const Node& n = g.nodes()[i];
        if (!host_evaluable(n)) continue;
        if (!inputs_constant(g, n)) continue;
        fold_node(g, n, max_elements);
        folded[i] = 1;
        ++count;
    }
    drop_folded(g, folded);
    return count;
}

namespace {

// Replaces node i (a sequence, optional or control-flow node, or a composite op) by what it
// resolves to, keeping `folded` (one flag per node) aligned with the node list.
void expand_in_place(Graph& g, size_t i, std::vector<char>& folded, ExpandBudget& budget, bool composite = false) {
    const Node node = g.nodes()[i];
    std::vector<Node> with = composite ? expand_composite(g, node, budget) : expand_structural(g, node, budget);
    auto& nodes = g.nodes();
    nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(i));
    nodes.insert(nodes.begin() + static_cast<std::ptrdiff_t>(i), std::make_move_iterator(with.begin()),
                 std::make_move_iterator(with.end()));
    folded.erase(folded.begin() + static_cast<std::ptrdiff_t>(i));
    folded.insert(folded.begin() + static_cast<std::ptrdiff_t>(i), with.size(), 0);
}

} // namespace

size_t expand_on_host(Graph& g, int64_t max_elements) {
    g.sort_topologically();
    ExpandBudget budget;
    size_t count = 0;
    std::vector<char> folded(g.nodes().size(), 0);
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        if (resolved_at_build(g, g.nodes()[i])) {
            expand_in_place(g, i, folded, budget);
            ++count;
            --i; // wraps at 0; ++i brings it back to the first replacement
            continue;
        }
        const Node& n = g.nodes()[i];
        if (!host_evaluable(n)) continue;
        if (!inputs_constant(g, n)) continue;
        fold_node(g, n, max_elements);
        folded[i] = 1;
    }
    drop_folded(g, folded);
    return count;
}

size_t prune(Graph& g) {
    std::vector<char> needed(g.value_count(), 0);
    for (ValueId v : g.outputs()) needed[v] = 1;
    auto& nodes = g.nodes();
    std::vector<char> keep(nodes.size(), 0);
    const std::vector<size_t> order = g.topological_order();
    for (size_t k = order.size(); k-- > 0;) {
        const Node& n = nodes[order[k]];
        bool used = false;
        for (ValueId v : n.outputs)
            if (v != no_value && needed[v]) used = true;
        if (!used) continue;
        keep[order[k]] = 1;
        for (ValueId v : n.inputs)
            if (v != no_value) needed[v] = 1;
    }
    std::vector<Node> kept;
    for (size_t i = 0; i < nodes.size(); ++i)
        if (keep[i]) kept.push_back(std::move(nodes[i]));
    const size_t removed = nodes.size() - kept.size();
    nodes = std::move(kept);
    return removed;
}

void fix_input_shapes(Graph& g, const std::map<std::string, int64_t, std::less<>>& free_dims,
                      const std::map<std::string, std::vector<int64_t>, std::less<>>& input_shapes,
                      const std::map<std::string, int64_t, std::less<>>& free_dim_denotations) {
    if (!free_dims.empty()) apply_free_dimension_overrides(g, free_dims);
    if (!free_dim_denotations.empty()) apply_denotation_overrides(g, free_dim_denotations);
    bool redeclared = false; // an input given another size than the model declares
    for (const auto& [name, dims] : input_shapes) {
        const ValueId id = g.find(name);
        bool is_input = false;
        for (ValueId v : g.inputs()) is_input |= v == id;
        if (!is_input) {
            std::vector<std::string> names;
            for (ValueId v : g.inputs()) names.push_back(g.value(v).name);
            g.fail("the model has no input named '" + name + "' (its inputs: " + list(names) + ")");
        }
        Value& v = g.value(id);
        std::string want = "[";
        for (size_t k = 0; k < dims.size(); ++k) want += (k ? "," : "") + std::to_string(dims[k]);
        want += "]";
        if (!v.shape) {
            v.shape = Shape(dims);
            continue;
        }
        if (v.shape->rank() != dims.size())
            g.fail("input '" + name + "' is declared " + to_string(*v.shape) + ", which does not fit " +
                   want);
        for (size_t k = 0; k < dims.size(); ++k) {
            if (dims[k] < 0)
                g.fail("input '" + name + "' cannot be given the shape " + want +
                       ": sizes must not be negative");
            const Dim d = (*v.shape)[k];
            if (d.is_known()) {
                // Exporters often write the example input's size where the network takes any
                // (the ONNX model zoo's fast-neural-style models say 1x3x224x224): an explicit
                // shape overrides the declared one, as ONNX Runtime runs such models at other
                // sizes. A model that really needs the declared size fails at the node that
                // does not fit, naming it.
                if (d.size != dims[k]) {
                    (*v.shape)[k] = Dim::known(dims[k]);
                    redeclared = true;
                }
            } else if (!d.symbol.empty()) {
                g.set_free_dimension(d.symbol, dims[k]);
            } else {
                (*v.shape)[k] = Dim::known(dims[k]);
            }
        }
    }
    if (redeclared) {
        // The declared shapes of computed values were derived for the old input size: forget
        // them (inference gives every one its shape), so that the graph outputs are not checked
        // against stale declarations.
        for (ValueId id = 0; id < g.value_count(); ++id) {
            Value& v = g.value(id);
            if (!v.is_constant() && std::find(g.inputs().begin(), g.inputs().end(), id) == g.inputs().end())
                v.shape.reset();
        }
    }
    for (ValueId id : g.inputs()) {
        const Value& v = g.value(id);
        if (v.shape && v.shape->is_static()) continue;
        std::vector<std::string> free;
        if (v.shape)
            for (const Dim& d : v.shape->dims())
                if (!d.is_known()) free.push_back(d.symbol.empty() ? "?" : d.symbol);
        g.fail("input '" + v.name + "' has " +
                   (v.shape ? "free dimensions " + to_string(*v.shape) : std::string("no declared shape")) +
                   "; give their sizes (SessionOptions::free_dims, free_dim_denotations or input_shapes; "
                   "`vkml run --free-dim " +
                   (free.empty() || free[0] == "?" ? std::string("NAME") : free[0]) + "=SIZE`)",
               ErrorCode::InvalidArgument);
    }
}

InferStats infer_and_fold(Graph& g, gpu::Device& device, const FloatPolicy& float_dtype) {
    InferStats stats;
    g.sort_topologically();
    // Declared static shapes of the graph outputs, to check the inference against.
    std::map<ValueId, std::vector<int64_t>> declared;
    for (ValueId v : g.outputs())
        if (const auto& s = g.value(v).shape;
            s && s->is_static() && !g.value(v).is_constant() && g.value(v).is_tensor())
            declared[v] = *s->sizes();

    std::vector<char> folded(g.nodes().size(), 0);
    ExpandBudget budget;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        if (resolved_at_build(g, g.nodes()[i])) {
            // Sequences, optionals and control flow: replaced by what they resolve to (tensor
            // nodes, inlined subgraphs, the node again for a loop's next iteration), which this
            // walk then reaches in turn.
            expand_in_place(g, i, folded, budget);
            --i; // wraps at 0; the loop's ++i brings it back to the first replacement
            continue;
        }
        if (composite_op(g, g.nodes()[i])) {
            expand_in_place(g, i, folded, budget, true);
            --i;
            continue;
        }
        const Node& n = g.nodes()[i];
        for (ValueId v : n.inputs)
            if (v != no_value && !g.value(v).is_tensor())
                g.fail(n, "input '" + g.value(v).name + "' is a " + value_kind_name(g.value(v).kind) + "; " +
                              n.op_type + " takes tensors");
        // Host folding: every present input constant, or Shape/Size (which read only the shape).
        const bool all_constant = inputs_constant(g, n);
        const bool shape_only =
            (n.op_type == "Shape" || n.op_type == "Size" || n.op_type == "EyeLike") && n.domain.empty();
        if (host_evaluable(n) && (all_constant || shape_only)) {
            fold_node(g, n, host_max_elements);
            folded[i] = 1;
            ++stats.folded;
            continue;
        }
        if (n.op_type == "Dropout" && n.domain.empty() && n.outputs.size() > 1 && n.outputs[1] != no_value &&
            dropout_drops_nothing(g, n)) {
            const gpu::Shape s = to_gpu(g, g.value(n.inputs.at(0)));
            std::vector<int64_t> dims(s.dims().begin(), s.dims().end());
            const auto count = static_cast<size_t>(s.elements());
            g.set_constant(n.outputs[1], TensorData(DType::boolean, dims, std::vector<std::byte>(count, std::byte{1})));
            g.nodes()[i].outputs[1] = no_value;
        }
        if (!detail::lowerable(n)) {
            if (host_evaluable(n))
                g.fail(n,
                       "can only run on the host, with constant inputs (it computes shapes or constants), "
                       "but an input is computed on the device",
                       ErrorCode::Unsupported);
            g.fail(n,
                   "operator " + (n.domain.empty() ? std::string() : n.domain + ".") + n.op_type +
                       " is not supported by vkml (`vkml ops` lists the supported operators)",
                   ErrorCode::Unsupported);
        }
        std::vector<detail::LowerInput> inputs;
        const gpu::DType fd = float_dtype(n);
        for (ValueId v : n.inputs) {
            detail::LowerInput in;
            if (v != no_value) {
                const Value& val = g.value(v);
                in.present = true;
                in.id = v;
                in.shape = to_gpu(g, val);
                in.ir = val.dtype;
                in.stored = graph::is_float(in.ir) ? fd : detail::storage_of(in.ir);
                in.data = val.data.get();
            }
            inputs.push_back(std::move(in));
        }
        detail::Lowered l;
        try {
            try {
                detail::LowerContext ctx(device, g, n, inputs, fd);
                l = detail::lower(ctx);
            } catch (const Error& e) {
                // As the session does: an op without an f16 kernel on this device runs in f32.
                if (fd != gpu::DType::f16 || e.code() != ErrorCode::Unsupported) throw;
                for (auto& in : inputs)
                    if (in.present && in.stored == gpu::DType::f16) in.stored = gpu::DType::f32;
                detail::LowerContext ctx(device, g, n, inputs, gpu::DType::f32);
                l = detail::lower(ctx);
            }
        } catch (const Error& e) {
            g.fail_for(n, e);
        }
        for (size_t k = 0; k < n.outputs.size(); ++k) {
            const ValueId out = n.outputs[k];
            if (out == no_value) continue;
            std::optional<gpu::Shape> shape;
            if (l.alias_input >= 0 && k == 0) shape = l.alias_shape;
            for (size_t j = 0; j < l.op_outputs.size(); ++j)
                if (l.op_outputs[j] == static_cast<int>(k))
                    shape = l.output_views[j] ? *l.output_views[j] : l.op->outputs()[j].shape;
            if (!shape)
                g.fail(n, "output " + std::to_string(k) + " is not supported", ErrorCode::Unsupported);
            Value& v = g.value(out);
            v.shape = Shape(std::vector<int64_t>(shape->dims().begin(), shape->dims().end()));
            v.dtype = l.out_ir[k];
        }
        ++stats.inferred;
    }
    drop_folded(g, folded);
    for (const auto& [v, sizes] : declared) {
        const Value& val = g.value(v);
        if (val.shape && val.shape->sizes() != sizes)
            g.fail("graph output '" + val.name + "' is declared " + to_string(Shape(sizes)) +
                   ", but its producer gives " + to_string(*val.shape));
    }
    return stats;
}

} // namespace vkml::graph
