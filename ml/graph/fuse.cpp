// Fusions: each saves one pass over an activation tensor in memory (and, for Conv+BatchNorm, the
// whole BatchNorm), the main cost of small convolutional networks on a GPU.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "vkml/gpu/half.hpp"
#include "passes.hpp"

namespace vkml::graph {

namespace {

struct Use {
    size_t node;
    size_t slot;
};

// Who reads each value; graph outputs count as a reader that cannot be rewired.
class Uses {
public:
    explicit Uses(const Graph& g) : uses_(g.value_count()), output_(g.value_count(), 0) {
        for (size_t i = 0; i < g.nodes().size(); ++i) {
            const Node& n = g.nodes()[i];
            for (size_t s = 0; s < n.inputs.size(); ++s)
                if (n.inputs[s] != no_value) uses_[n.inputs[s]].push_back({i, s});
        }
        for (ValueId v : g.outputs()) output_[v] = 1;
    }
    const std::vector<Use>& of(ValueId v) const { return uses_[v]; }
    // The value feeds exactly one node input and is no graph output: its producer may change.
    bool single(ValueId v) const { return !output_[v] && uses_[v].size() == 1; }
    bool is_output(ValueId v) const { return output_[v]; }

private:
    std::vector<std::vector<Use>> uses_;
    std::vector<char> output_;
};

// Index of the node producing each value, or -1.
std::vector<int64_t> producers(const Graph& g) {
    std::vector<int64_t> p(g.value_count(), -1);
    for (size_t i = 0; i < g.nodes().size(); ++i)
        for (ValueId v : g.nodes()[i].outputs)
            if (v != no_value) p[v] = static_cast<int64_t>(i);
    return p;
}

bool fusable_float(DType d) {
    return d == DType::f32 || d == DType::f16;
}

bool has_fusion(const Node& n) {
    return n.has("vkml_activation") || n.has("vkml_residual");
}

void note_fused(Node& into, const Node& from) {
    std::vector<std::string> names = into.get_strings("vkml_fused");
    names.push_back(from.name);
    into.attributes.insert_or_assign("vkml_fused", names);
}

const TensorData* constant_of(const Graph& g, ValueId v) {
    return v == no_value ? nullptr : g.value(v).data.get();
}

TensorData same_dtype(DType dtype, std::vector<int64_t> dims, const std::vector<double>& v) {
    if (dtype == DType::f16) {
        std::vector<uint16_t> h(v.size());
        for (size_t k = 0; k < v.size(); ++k) h[k] = gpu::float_to_half(static_cast<float>(v[k]));
        return TensorData::from_halves(std::move(dims), h);
    }
    std::vector<float> f(v.begin(), v.end());
    return TensorData::from_floats(std::move(dims), f);
}

// Drops the nodes marked in `dead`, re-sorts (a fusion may read a value produced after the
// fused node's old position) and forgets values nothing refers to.
void compact(Graph& g, const std::vector<char>& dead) {
    std::vector<Node> kept;
    for (size_t i = 0; i < g.nodes().size(); ++i)
        if (!dead[i]) kept.push_back(std::move(g.nodes()[i]));
    g.nodes() = std::move(kept);
    g.sort_topologically();
    g.remove_unused_values();
}

// Conv -> BatchNormalization: y = (conv(x, W) + B - mean) * s + beta with s = scale / sqrt(var + eps)
// is conv(x, W * s) + (B - mean) * s + beta, so the BatchNorm folds into new weights and bias.
size_t fuse_conv_batchnorm(Graph& g) {
    size_t fused = 0;
    const Uses uses(g);
    const auto prod = producers(g);
    std::vector<char> dead(g.nodes().size(), 0);
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        Node& bn = g.nodes()[i];
        if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() < 5) continue;
        if (bn.get_int("training_mode", 0) != 0 || bn.get_int("spatial", 1) != 1 || has_fusion(bn)) continue;
        bool extra_outputs = false;
        for (size_t k = 1; k < bn.outputs.size(); ++k) extra_outputs |= bn.outputs[k] != no_value;
        if (extra_outputs) continue;
        const ValueId x = bn.inputs[0];
        if (x == no_value || prod[x] < 0 || !uses.single(x) || dead[static_cast<size_t>(prod[x])]) continue;
        Node& conv = g.nodes()[static_cast<size_t>(prod[x])];
        if (conv.op_type != "Conv" || !conv.domain.empty() || has_fusion(conv) || conv.inputs.size() < 2)
            continue;
        const TensorData* w = constant_of(g, conv.inputs[1]);
        const TensorData* b = conv.inputs.size() > 2 ? constant_of(g, conv.inputs[2]) : nullptr;
        const bool has_b = conv.inputs.size() > 2 && conv.inputs[2] != no_value;
        const TensorData *scale = constant_of(g, bn.inputs[1]), *beta = constant_of(g, bn.inputs[2]),
                         *mean = constant_of(g, bn.inputs[3]), *var = constant_of(g, bn.inputs[4]);
        if (!w || (has_b && !b) || !scale || !beta || !mean || !var) continue;
        if (!fusable_float(w->dtype()) || w->dims().empty()) continue;
        const int64_t m = w->dims()[0];
        if (m <= 0 || scale->elements() != m || beta->elements() != m || mean->elements() != m ||
            var->elements() != m || (b && b->elements() != m))
            continue;
        const auto wv = w->to_floats(), sv = scale->to_floats(), bv = beta->to_floats(),
                   mv = mean->to_floats(), vv = var->to_floats();
        const auto cb = b ? b->to_floats() : std::vector<float>(static_cast<size_t>(m), 0.f);
        const double eps = bn.get_float("epsilon", 1e-5f);
        const size_t per = wv.size() / static_cast<size_t>(m);
        std::vector<double> nw(wv.size()), nb(static_cast<size_t>(m));
        for (size_t o = 0; o < static_cast<size_t>(m); ++o) {
            const double s = static_cast<double>(sv[o]) / std::sqrt(static_cast<double>(vv[o]) + eps);
            for (size_t e = 0; e < per; ++e) nw[o * per + e] = static_cast<double>(wv[o * per + e]) * s;
            nb[o] = (static_cast<double>(cb[o]) - mv[o]) * s + bv[o];
        }
        const ValueId nwid =
            g.add_constant(g.unique_name(conv.name + "/bn_weight"), same_dtype(w->dtype(), w->dims(), nw));
        const ValueId nbid =
            g.add_constant(g.unique_name(conv.name + "/bn_bias"), same_dtype(w->dtype(), {m}, nb));
        Node& c = g.nodes()[static_cast<size_t>(prod[x])]; // add_constant does not move nodes
        c.inputs.resize(std::max<size_t>(c.inputs.size(), 3), no_value);
        c.inputs[1] = nwid;
        c.inputs[2] = nbid;
        c.outputs[0] = g.nodes()[i].outputs[0];
        note_fused(c, g.nodes()[i]);
        dead[i] = 1;
        ++fused;
    }
    if (fused) compact(g, dead);
    return fused;
}

// Pad (spatial axes only) -> Conv. A constant-0 Pad adds to the Conv's own zero padding; a
// reflect or edge Pad becomes the padding of a Conv that had none, read in that mode
// (`vkml_pad_mode`, ops::ConvPadMode): the style network pads every layer by reflection.
size_t fuse_pad_into_conv(Graph& g) {
    size_t fused = 0;
    const Uses uses(g);
    std::vector<char> dead(g.nodes().size(), 0);
    const int64_t opset = g.opset_version("") ? g.opset_version("") : 18;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        const Node& pad = g.nodes()[i];
        if (pad.op_type != "Pad" || !pad.domain.empty()) continue;
        const std::string mode = pad.get_string("mode", "constant");
        if (mode != "constant" && mode != "reflect" && mode != "edge") continue;
        if (pad.outputs.empty() || pad.inputs.empty() || pad.outputs[0] == no_value ||
            pad.inputs[0] == no_value)
            continue;
        const ValueId y = pad.outputs[0];
        const Value& xv = g.value(pad.inputs[0]);
        if (!xv.shape || (xv.shape->rank() != 4 && xv.shape->rank() != 3) || uses.is_output(y) ||
            uses.of(y).empty())
            continue;
        const size_t rank = xv.shape->rank();
        std::vector<int64_t> pads;
        double value = 0;
        std::vector<int64_t> axes;
        if (opset < 11) {
            pads = pad.get_ints("pads");
            value = pad.get_float("value", 0.f);
        } else {
            const TensorData* p = constant_of(g, pad.inputs.size() > 1 ? pad.inputs[1] : no_value);
            if (!p) continue;
            pads = p->to_int64s();
            if (mode == "constant" && pad.inputs.size() > 2 && pad.inputs[2] != no_value) {
                const TensorData* c = constant_of(g, pad.inputs[2]);
                if (!c || c->elements() != 1) continue;
                value = fusable_float(c->dtype()) ? c->to_floats()[0] : static_cast<double>(c->to_int64s()[0]);
            }
            if (pad.inputs.size() > 3 && pad.inputs[3] != no_value) {
                const TensorData* a = constant_of(g, pad.inputs[3]);
                if (!a) continue;
                axes = a->to_int64s();
            }
        }
        if (value != 0) continue;
        if (axes.empty())
            for (size_t k = 0; k < rank; ++k) axes.push_back(static_cast<int64_t>(k));
        if (pads.size() != 2 * axes.size()) continue;
        std::vector<int64_t> begin(rank, 0), end(rank, 0);
        bool ok = true;
        for (size_t k = 0; k < axes.size(); ++k) {
            const int64_t a = axes[k] < 0 ? axes[k] + static_cast<int64_t>(rank) : axes[k];
            if (a < 0 || a >= static_cast<int64_t>(rank)) ok = false;
            if (!ok) break;
            begin[static_cast<size_t>(a)] = pads[k];
            end[static_cast<size_t>(a)] = pads[k + axes.size()];
        }
        if (!ok || begin[0] || end[0] || begin[1] || end[1]) continue;
        for (size_t k = 2; k < rank; ++k) ok &= begin[k] >= 0 && end[k] >= 0;
        // Mirroring needs each pad inside its axis (else the Pad op reports the error).
        for (size_t k = 2; ok && mode == "reflect" && k < rank; ++k)
            ok &= (*xv.shape)[k].is_known() && begin[k] < (*xv.shape)[k].size && end[k] < (*xv.shape)[k].size;
        // Every reader must be a Conv reading it as X, without auto_pad, whose pads (checked here,
        // before any reader changes) can take the Pad's without overflowing; a reflect or edge
        // Pad only goes into a Conv without padding, and a zero one not into a reflect / edge one.
        const size_t spatial = rank - 2;
        std::vector<std::vector<int64_t>> new_pads;
        for (const Use& u : uses.of(y)) {
            const Node& c = g.nodes()[u.node];
            ok &= c.op_type == "Conv" && c.domain.empty() && u.slot == 0 &&
                  c.get_string("auto_pad", "NOTSET") == "NOTSET" && !c.has("vkml_pad_mode");
            if (!ok) break;
            std::vector<int64_t> cp = c.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
            ok &= cp.size() == 2 * spatial;
            if (mode != "constant") ok &= std::all_of(cp.begin(), cp.end(), [](int64_t p) { return p == 0; });
            for (size_t k = 0; ok && k < spatial; ++k)
                ok &= !__builtin_add_overflow(cp[k], begin[k + 2], &cp[k]) &&
                      !__builtin_add_overflow(cp[k + spatial], end[k + 2], &cp[k + spatial]);
            new_pads.push_back(std::move(cp));
        }
        if (!ok) continue;
        size_t reader = 0;
        for (const Use& u : uses.of(y)) {
            Node& c = g.nodes()[u.node];
            c.attributes.insert_or_assign("pads", new_pads[reader++]);
            if (mode != "constant") c.attributes.insert_or_assign("vkml_pad_mode", mode);
            c.inputs[0] = pad.inputs[0];
            note_fused(c, pad);
        }
        dead[i] = 1;
        ++fused;
    }
    if (fused) compact(g, dead);
    return fused;
}

// Conv -> Add(other) with `other` of the output's shape: the Conv adds it in its store.
size_t fuse_residual(Graph& g) {
    size_t fused = 0;
    const Uses uses(g);
    const auto prod = producers(g);
    std::vector<char> dead(g.nodes().size(), 0), changed(g.nodes().size(), 0);
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        const Node& add = g.nodes()[i];
        if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2 || has_fusion(add) ||
            add.outputs.empty() || add.outputs[0] == no_value)
            continue;
        const Value& out = g.value(add.outputs[0]);
        for (size_t side = 0; side < 2; ++side) {
            const ValueId x = add.inputs[side], other = add.inputs[1 - side];
            if (x == no_value || other == no_value || x == other || prod[x] < 0 || !uses.single(x)) continue;
            const size_t ci = static_cast<size_t>(prod[x]);
            if (dead[ci] || changed[ci]) continue;
            Node& conv = g.nodes()[ci];
            if ((conv.op_type != "Conv" && conv.op_type != "ConvTranspose") || !conv.domain.empty() ||
                has_fusion(conv))
                continue;
            // ConvTranspose has no residual input in vkml: Conv only.
            if (conv.op_type != "Conv") continue;
            const Value &xv = g.value(x), &ov = g.value(other);
            if (!xv.shape || !ov.shape || !out.shape || !xv.shape->is_static() || *xv.shape != *ov.shape ||
                *out.shape != *xv.shape || !fusable_float(ov.dtype) || ov.dtype != xv.dtype)
                continue;
            conv.inputs.resize(3, no_value);
            conv.inputs.push_back(other);
            conv.attributes.insert_or_assign("vkml_residual", int64_t{1});
            conv.outputs[0] = add.outputs[0];
            note_fused(conv, add);
            dead[i] = 1;
            changed[ci] = 1;
            ++fused;
            break;
        }
    }
    if (fused) compact(g, dead);
    return fused;
}

// The ops whose kernels apply an ops::Activation before storing.
bool takes_activation(const Node& n, const Graph& g) {
    static const std::set<std::string, std::less<>> always = {
        "Conv", "ConvTranspose", "Gemm", "BatchNormalization", "InstanceNormalization", "GroupNormalization"};
    static const std::set<std::string, std::less<>> float_only = {
        "Add",   "Sub",     "Mul",         "Div",       "Pow",  "PRelu",    "Max",        "Min",   "Sum",
        "Mean",  "Abs",     "Neg",         "Exp",       "Log",  "Sqrt",     "Reciprocal", "Floor", "Ceil",
        "Round", "Sin",     "Cos",         "Erf",       "Sign", "Relu",     "LeakyRelu",  "Elu",   "Selu",
        "Celu",  "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Softplus", "Softsign",   "Mish",  "Gelu"};
    if (!n.domain.empty() || n.has("vkml_activation")) return false;
    if (n.op_type == "BatchNormalization" && n.get_int("training_mode", 0) != 0) return false;
    if (always.count(n.op_type)) return true;
    if (n.op_type == "LayerNormalization") {
        for (size_t k = 1; k < n.outputs.size(); ++k)
            if (n.outputs[k] != no_value) return false;
        return true;
    }
    return float_only.count(n.op_type) && fusable_float(g.value(n.outputs.at(0)).dtype);
}

// The activation `n` computes as an ops::Activation (kind, alpha, beta), or false.
bool activation_of(const Graph& g, const Node& n, std::string& kind, float& alpha, float& beta) {
    if (!n.domain.empty() || n.inputs.empty() || n.inputs[0] == no_value || n.outputs.empty() ||
        !fusable_float(g.value(n.inputs[0]).dtype))
        return false;
    const std::string& op = n.op_type;
    alpha = beta = 0.f;
    if (op == "Relu" || op == "Sigmoid" || op == "HardSwish" || op == "Tanh" || op == "Mish") {
        kind = op;
        return true;
    }
    if (op == "LeakyRelu") {
        kind = op;
        alpha = n.get_float("alpha", 0.01f);
        return true;
    }
    if (op == "Elu") {
        kind = op;
        alpha = n.get_float("alpha", 1.f);
        return true;
    }
    if (op == "HardSigmoid") {
        kind = op;
        alpha = n.get_float("alpha", 0.2f);
        beta = n.get_float("beta", 0.5f);
        return true;
    }
    if (op == "Gelu" && n.get_string("approximate", "none") == "none") {
        kind = op;
        return true;
    }
    if (op == "Clip") {
        alpha = -std::numeric_limits<float>::infinity();
        beta = std::numeric_limits<float>::infinity();
        const int64_t opset = g.opset_version("") ? g.opset_version("") : 18;
        if (opset < 11) {
            alpha = n.get_float("min", alpha);
            beta = n.get_float("max", beta);
        } else {
            for (size_t k = 1; k < 3; ++k) {
                if (k >= n.inputs.size() || n.inputs[k] == no_value) continue;
                const TensorData* c = constant_of(g, n.inputs[k]);
                if (!c || c->elements() != 1 || !fusable_float(c->dtype())) return false;
                (k == 1 ? alpha : beta) = c->to_floats()[0];
            }
        }
        kind = op;
        return true;
    }
    return false;
}

// x * Sigmoid(x), SiLU (Swish) as YOLOv5-v8, EfficientNet and most exporters write it: the Mul at
// `i` and the Sigmoid at `sig`, where x feeds only the two and the Sigmoid only the Mul. Returns x.
ValueId silu_of(const Graph& g, const Uses& uses, const std::vector<int64_t>& prod, size_t i, size_t& sig) {
    const Node& mul = g.nodes()[i];
    if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2 || mul.outputs.size() != 1)
        return no_value;
    for (size_t k = 0; k < 2; ++k) {
        const ValueId s = mul.inputs[k], x = mul.inputs[1 - k];
        if (s == no_value || x == no_value || prod[s] < 0 || !uses.single(s)) continue;
        const Node& sn = g.nodes()[static_cast<size_t>(prod[s])];
        if (sn.op_type != "Sigmoid" || !sn.domain.empty() || sn.inputs.size() != 1 || sn.inputs[0] != x) continue;
        const Value& xv = g.value(x);
        if (!fusable_float(xv.dtype) || uses.is_output(x) || uses.of(x).size() != 2) continue;
        if (!xv.shape || !g.value(mul.outputs[0]).shape || !(*xv.shape == *g.value(mul.outputs[0]).shape)) continue;
        sig = static_cast<size_t>(prod[s]);
        return x;
    }
    return no_value;
}

size_t fuse_activations(Graph& g) {
    size_t fused = 0;
    const Uses uses(g);
    const auto prod = producers(g);
    std::vector<char> dead(g.nodes().size(), 0), changed(g.nodes().size(), 0);
    // The producer of x takes `kind` and writes `out` instead of x; `gone` are the nodes it replaces.
    auto take = [&](ValueId x, ValueId out, const std::string& kind, float alpha, float beta,
                    std::initializer_list<size_t> gone) {
        if (prod[x] < 0) return false;
        const size_t pi = static_cast<size_t>(prod[x]);
        Node& p = g.nodes()[pi];
        if (dead[pi] || changed[pi] || p.outputs.empty() || p.outputs[0] != x || !takes_activation(p, g))
            return false;
        for (size_t k : gone)
            if (dead[k]) return false;
        p.attributes.insert_or_assign("vkml_activation", kind);
        p.attributes.insert_or_assign("vkml_activation_alpha", alpha);
        p.attributes.insert_or_assign("vkml_activation_beta", beta);
        p.outputs[0] = out;
        for (size_t k : gone) {
            note_fused(p, g.nodes()[k]);
            dead[k] = 1;
        }
        changed[pi] = 1;
        ++fused;
        return true;
    };
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        const Node& act = g.nodes()[i];
        std::string kind;
        float alpha = 0, beta = 0;
        size_t sig = 0;
        if (const ValueId x = silu_of(g, uses, prod, i, sig); x != no_value) {
            take(x, act.outputs[0], "Silu", 0.f, 0.f, {sig, i});
            continue;
        }
        if (!activation_of(g, act, kind, alpha, beta)) continue;
        const ValueId x = act.inputs[0];
        if (uses.single(x) && take(x, act.outputs[0], kind, alpha, beta, {i})) continue;
        // Else into the Transpose that alone reads the activation's result, through reshapes that
        // alone read theirs (an element-wise function commutes with both): NanoDet's heads
        // reshape and transpose their sigmoid scores.
        if (act.inputs.size() != 1 || !fusable_float(g.value(x).dtype)) continue;
        ValueId y = act.outputs[0];
        size_t first_reader = SIZE_MAX;
        while (uses.single(y)) {
            const Use u = uses.of(y)[0];
            const Node& r = g.nodes()[u.node];
            if (first_reader == SIZE_MAX) first_reader = u.node;
            if (u.slot != 0 || !r.domain.empty() || r.outputs.size() != 1 ||
                (r.op_type != "Reshape" && r.op_type != "Flatten" && r.op_type != "Squeeze" &&
                 r.op_type != "Unsqueeze"))
                break;
            y = r.outputs[0];
        }
        if (!uses.single(y)) continue;
        const size_t ti = uses.of(y)[0].node;
        Node& t = g.nodes()[ti];
        if (t.op_type != "Transpose" || !t.domain.empty() || uses.of(y)[0].slot != 0 || dead[ti] ||
            changed[ti] || t.has("vkml_activation"))
            continue;
        g.nodes()[first_reader].inputs[0] = x; // the Transpose itself, or the first reshape
        t.attributes.insert_or_assign("vkml_activation", kind);
        t.attributes.insert_or_assign("vkml_activation_alpha", alpha);
        t.attributes.insert_or_assign("vkml_activation_beta", beta);
        note_fused(t, act);
        dead[i] = 1;
        changed[ti] = 1;
        ++fused;
    }
    if (fused) compact(g, dead);
    return fused;
}

// Same attributes, ignoring the names of the nodes fused into each (vkml_fused).
bool same_attributes(const Node& a, const Node& b) {
    auto skip = [](const auto& kv) { return kv.first == "vkml_fused"; };
    auto ia = a.attributes.begin(), ib = b.attributes.begin();
    while (true) {
        while (ia != a.attributes.end() && skip(*ia)) ++ia;
        while (ib != b.attributes.end() && skip(*ib)) ++ib;
        if (ia == a.attributes.end() || ib == b.attributes.end())
            return ia == a.attributes.end() && ib == b.attributes.end();
        if (ia->first != ib->first || !(ia->second == ib->second)) return false;
        ++ia, ++ib;
    }
}

// Common subexpressions: a node with the op, domain, inputs and attributes of an earlier node
// computes the same values, so its readers read the earlier node's outputs instead (Anime4K's
// importer builds every layer's CReLU once per reader; exporters repeat Shape chains). Nodes
// whose outputs are graph outputs stay, as do nodes that draw random numbers.
size_t dedupe(Graph& g) {
    size_t merged = 0;
    const Uses uses(g);
    std::vector<char> dead(g.nodes().size(), 0);
    std::vector<ValueId> same(g.value_count());
    for (ValueId v = 0; v < same.size(); ++v) same[v] = v;
    std::map<std::tuple<std::string, std::string, std::vector<ValueId>>, std::vector<size_t>> seen;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        Node& n = g.nodes()[i];
        for (ValueId& v : n.inputs)
            if (v != no_value) v = same[v];
        if (n.op_type.rfind("Random", 0) == 0 || n.op_type == "Multinomial" || n.op_type == "Bernoulli" ||
            n.op_type == "Dropout" || n.outputs.empty())
            continue;
        bool output = false;
        for (ValueId v : n.outputs) output |= v != no_value && uses.is_output(v);
        auto& list = seen[{n.domain, n.op_type, n.inputs}];
        const Node* twin = nullptr;
        for (size_t j : list) {
            const Node& o = g.nodes()[j];
            if (o.outputs.size() == n.outputs.size() && same_attributes(o, n)) twin = &o;
            if (twin) break;
        }
        if (!twin || output) {
            list.push_back(i);
            continue;
        }
        bool usable = true; // an output this node has and the twin dropped cannot be redirected
        for (size_t k = 0; k < n.outputs.size(); ++k)
            usable &= n.outputs[k] == no_value || twin->outputs[k] != no_value;
        if (!usable) {
            list.push_back(i);
            continue;
        }
        for (size_t k = 0; k < n.outputs.size(); ++k)
            if (n.outputs[k] != no_value) same[n.outputs[k]] = twin->outputs[k];
        dead[i] = 1;
        ++merged;
    }
    if (merged) compact(g, dead);
    return merged;
}

// Convolutions of one input whose outputs are concatenated along the channels, in order and by
// nothing else (Anime4K's three output heads before the pixel shuffle): one Conv with the weights
// and biases stacked computes the concatenation, reading the input once and with no Concat pass.
size_t merge_sibling_convs(Graph& g) {
    size_t merged = 0;
    const Uses uses(g);
    const auto prod = producers(g);
    std::vector<char> dead(g.nodes().size(), 0);
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        const Node& cat = g.nodes()[i];
        if (cat.op_type != "Concat" || !cat.domain.empty() || cat.inputs.size() < 2) continue;
        const Value& out = g.value(cat.outputs.at(0));
        if (!out.shape || out.shape->rank() < 3 || !fusable_float(out.dtype)) continue;
        const int64_t rank = static_cast<int64_t>(out.shape->rank());
        int64_t axis = cat.get_int("axis", 0);
        if (axis < 0) axis += rank;
        if (axis != 1) continue;
        std::vector<size_t> convs;
        std::set<size_t> distinct;
        for (ValueId v : cat.inputs) {
            if (v == no_value || prod[v] < 0 || !uses.single(v)) break;
            const size_t ci = static_cast<size_t>(prod[v]);
            const Node& c = g.nodes()[ci];
            if (dead[ci] || c.op_type != "Conv" || !c.domain.empty() || c.has("vkml_residual") ||
                c.get_int("group", 1) != 1 || c.inputs.size() < 2 || c.outputs.size() != 1)
                break;
            convs.push_back(ci);
            distinct.insert(ci);
        }
        if (convs.size() != cat.inputs.size() || distinct.size() != convs.size()) continue;
        const Node& first = g.nodes()[convs[0]];
        std::vector<const TensorData*> ws, bs;
        bool ok = true;
        for (size_t ci : convs) {
            const Node& c = g.nodes()[ci];
            const TensorData* w = constant_of(g, c.inputs[1]);
            const bool has_b = c.inputs.size() > 2 && c.inputs[2] != no_value;
            const TensorData* b = has_b ? constant_of(g, c.inputs[2]) : nullptr;
            ok &= c.inputs[0] == first.inputs[0] && same_attributes(c, first) && w && fusable_float(w->dtype()) &&
                  w->dims().size() >= 3 && (!has_b || b);
            if (!ok) break;
            const TensorData* w0 = constant_of(g, first.inputs[1]);
            ok &= w0 && w->dtype() == w0->dtype() &&
                  std::equal(w->dims().begin() + 1, w->dims().end(), w0->dims().begin() + 1, w0->dims().end());
            ws.push_back(w);
            bs.push_back(b);
        }
        if (!ok) continue;
        std::vector<double> nw, nb;
        int64_t m = 0;
        for (size_t k = 0; k < ws.size(); ++k) {
            const auto wv = ws[k]->to_floats();
            nw.insert(nw.end(), wv.begin(), wv.end());
            const int64_t mk = ws[k]->dims()[0];
            const auto bv = bs[k] ? bs[k]->to_floats() : std::vector<float>(static_cast<size_t>(mk), 0.f);
            if (static_cast<int64_t>(bv.size()) != mk) ok = false;
            nb.insert(nb.end(), bv.begin(), bv.end());
            m += mk;
        }
        if (!ok) continue;
        std::vector<int64_t> dims = ws[0]->dims();
        dims[0] = m;
        const DType wt = ws[0]->dtype();
        const ValueId wid = g.add_constant(g.unique_name(first.name + "/merged_weight"), same_dtype(wt, dims, nw));
        const ValueId bid = g.add_constant(g.unique_name(first.name + "/merged_bias"), same_dtype(wt, {m}, nb));
        Node& c0 = g.nodes()[convs[0]];
        c0.inputs.resize(3, no_value);
        c0.inputs[1] = wid;
        c0.inputs[2] = bid;
        c0.outputs[0] = g.nodes()[i].outputs[0];
        for (size_t k = 1; k < convs.size(); ++k) {
            note_fused(c0, g.nodes()[convs[k]]);
            dead[convs[k]] = 1;
        }
        note_fused(c0, g.nodes()[i]);
        dead[i] = 1;
        ++merged;
    }
    if (merged) compact(g, dead);
    return merged;
}

// Channels of a static 4-D value along axis 1, or -1.
int64_t channels_of(const Graph& g, ValueId v) {
    const Value& val = g.value(v);
    if (!val.shape || val.shape->rank() != 4 || !val.shape->is_static()) return -1;
    return (*val.shape)[1].size;
}

// A channel Concat Z read only by group-1 Convs with constant weights, one of whose inputs A is
// also the first input of another channel Concat K = (A, F1, ..., Fk) (an RDN: each block's output
// LRL_d starts the next block's dense concatenation, and the global fusion concatenates every
// LRL_d). While lowering, K's output is one allocation with A as its first slice, so Z cannot
// have A as a slice of its own and runs as a copy. Concatenating (A, F1, ..., Fk) in Z instead,
// with the Convs' weights zero for F1 .. Fk, makes Z's inputs contiguous blocks again: Z costs
// nothing (esrgan-slim's LRLs_Concat: 67 us at 960x540 on an H200, esrgan-medium's 323 us), for
// a few more channels read by its Convs. K is the longest such Concat of A.
size_t merge_concat_prefixes(Graph& g) {
    size_t merged = 0;
    const Uses uses(g);
    const auto prod = producers(g); // the nodes are in topological order
    std::vector<char> done(g.nodes().size(), 0); // rewritten here: `uses` no longer describes them
    auto channel_concat = [&](const Node& n) {
        if (n.op_type != "Concat" || !n.domain.empty() || n.outputs.size() != 1 || n.inputs.size() < 2) return false;
        int64_t axis = n.get_int("axis", 0);
        if (axis < 0) axis += 4;
        if (axis != 1 || channels_of(g, n.outputs[0]) < 0) return false;
        for (ValueId v : n.inputs)
            if (v == no_value || g.value(v).is_constant() || channels_of(g, v) < 0) return false;
        return true;
    };
    for (size_t zi = 0; zi < g.nodes().size(); ++zi) {
        if (!channel_concat(g.nodes()[zi])) continue;
        const ValueId zout = g.nodes()[zi].outputs[0];
        if (uses.is_output(zout) || uses.of(zout).empty() || !fusable_float(g.value(zout).dtype)) continue;
        bool convs_only = true;
        for (const Use& u : uses.of(zout)) {
            const Node& c = g.nodes()[u.node];
            const TensorData* w = c.inputs.size() > 1 ? constant_of(g, c.inputs[1]) : nullptr;
            convs_only &= c.op_type == "Conv" && c.domain.empty() && u.slot == 0 && c.get_int("group", 1) == 1 && w &&
                          fusable_float(w->dtype()) && w->dims().size() == 4 &&
                          w->dims()[1] == channels_of(g, zout);
        }
        if (!convs_only) continue;
        const std::vector<ValueId> zin = g.nodes()[zi].inputs;
        std::vector<ValueId> expanded;
        std::vector<int64_t> from; // per new input: its first channel in Z's old output, or -1 (zeros)
        int64_t old_at = 0;
        bool changed = false, ok = true;
        for (ValueId a : zin) {
            const Node* best = nullptr;
            for (const Use& u : uses.of(a)) {
                const Node& k = g.nodes()[u.node];
                if (u.node == zi || done[u.node] || u.slot != 0 || !channel_concat(k)) continue;
                if (!best || channels_of(g, k.outputs[0]) > channels_of(g, best->outputs[0])) best = &k;
            }
            expanded.push_back(a);
            from.push_back(old_at);
            old_at += channels_of(g, a);
            if (!best) continue;
            for (size_t j = 1; j < best->inputs.size(); ++j) {
                const ValueId f = best->inputs[j];
                // computed before Z (so not from it), and not an input of Z already
                ok &= prod[f] < int64_t(zi) && std::find(zin.begin(), zin.end(), f) == zin.end() &&
                      std::find(expanded.begin(), expanded.end(), f) == expanded.end();
                expanded.push_back(f);
                from.push_back(-1);
            }
            changed = true;
        }
        if (!changed || !ok) continue;
        int64_t total = 0;
        for (ValueId v : expanded) total += channels_of(g, v);
        for (const Use& u : uses.of(zout)) {
            Node& c = g.nodes()[u.node];
            const TensorData& w = *constant_of(g, c.inputs[1]);
            const std::vector<int64_t> d = w.dims();
            const int64_t m = d[0], taps = d[2] * d[3], cin = d[1];
            const auto wv = w.to_floats();
            std::vector<double> nw(size_t(m * total * taps), 0.0);
            int64_t at = 0;
            for (size_t k = 0; k < expanded.size(); ++k) {
                const int64_t ck = channels_of(g, expanded[k]);
                if (from[k] >= 0)
                    for (int64_t o = 0; o < m; ++o)
                        for (int64_t ch = 0; ch < ck; ++ch)
                            for (int64_t t = 0; t < taps; ++t)
                                nw[size_t((o * total + at + ch) * taps + t)] = wv[size_t((o * cin + from[k] + ch) * taps + t)];
                at += ck;
            }
            c.inputs[1] = g.add_constant(g.unique_name(c.name + "/padded_weight"),
                                         same_dtype(w.dtype(), {m, total, d[2], d[3]}, nw));
        }
        Node& z = g.nodes()[zi];
        z.inputs = expanded;
        done[zi] = 1;
        (*g.value(zout).shape)[1] = Dim::known(total);
        ++merged;
    }
    if (merged) {
        g.sort_topologically();
        g.remove_unused_values();
    }
    return merged;
}

} // namespace

FusionReport fuse(Graph& graph, const FusionOptions& options) {
    FusionReport r;
    if (options.dedupe) r.dedupe = dedupe(graph);
    if (options.conv_batchnorm) r.conv_batchnorm = fuse_conv_batchnorm(graph);
    if (options.pad_into_conv) r.pad_into_conv = fuse_pad_into_conv(graph);
    if (options.residual) r.residual = fuse_residual(graph);
    if (options.activation) r.activation = fuse_activations(graph);
    if (options.sibling_convs) r.sibling_convs = merge_sibling_convs(graph);
    if (options.concat_prefixes) r.concat_prefixes = merge_concat_prefixes(graph);
    return r;
}

} // namespace vkml::graph
