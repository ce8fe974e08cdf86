// fuse_attention: scaled dot-product attention as exported transformers write it becomes one
// vkml.FusedAttention node, which the Session lowers to ops::FusedAttention (one dispatch; the
// scores and probabilities never reach memory).
//
// The pattern, from the attention's output back (passes.hpp lists the variants):
//   Y = MatMul(P, V); P = Softmax(S, last axis); S = [Add(S', mask)]; S' = [Where(cond, S'', c)];
//   S'' = [Mul(S''', c) or Div(S''', c)]; S''' = MatMul(Q', K')
// PyTorch's exporter writes manual attention (q @ k.transpose(-2, -1) * scale) as
// MatMul(Q, Transpose(K)) -> Mul, and scaled_dot_product_attention as
// MatMul(Mul(Q, sqrt s), Mul(Transpose(K), sqrt s)) -> Add(mask); GPT-2-style models divide by
// sqrt(D) and mask with Where(causal, S, min). Scalars multiplying Q or K are folded into the scale
// and Transposes of K's last two axes into how the kernel reads K.
#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "passes.hpp"
#include "vkml/ops/fused.hpp"

namespace vkml::graph {

namespace {

bool float_type(DType d) {
    return d == DType::f32 || d == DType::f16;
}

// A plain ONNX node: no fusion added to what it computes (an activation, a residual).
bool plain(const Node& n) {
    if (!n.domain.empty()) return false;
    for (const auto& [key, a] : n.attributes)
        if (key.starts_with("vkml_") && key != "vkml_fused") return false;
    return true;
}

// Producers and readers of every value.
class Index {
public:
    explicit Index(const Graph& g) : g_(g), prod_(g.value_count(), -1), uses_(g.value_count(), 0) {
        for (size_t i = 0; i < g.nodes().size(); ++i) {
            const Node& n = g.nodes()[i];
            for (ValueId v : n.outputs)
                if (v != no_value) prod_[v] = int64_t(i);
            for (ValueId v : n.inputs)
                if (v != no_value) ++uses_[v];
        }
        for (ValueId v : g.outputs()) uses_[v] += 2; // a graph output is never an intermediate
    }
    // The plain ONNX node of type `op` producing `v` as its first output, or null.
    const Node* producer(ValueId v, std::string_view op) const {
        if (v == no_value || prod_[v] < 0) return nullptr;
        const Node& n = g_.nodes()[size_t(prod_[v])];
        if (n.op_type != op || !plain(n) || n.outputs.empty() || n.outputs[0] != v) return nullptr;
        return &n;
    }
    const Node* producer(ValueId v) const {
        return v == no_value || prod_[v] < 0 ? nullptr : &g_.nodes()[size_t(prod_[v])];
    }
    size_t index(const Node* n) const { return size_t(n - g_.nodes().data()); }
    // Read by exactly one node input and no graph output.
    bool single(ValueId v) const { return uses_[v] == 1; }

private:
    const Graph& g_;
    std::vector<int64_t> prod_;
    std::vector<uint32_t> uses_;
};

std::optional<std::vector<int64_t>> sizes(const Graph& g, ValueId v) {
    if (v == no_value || !g.value(v).shape) return std::nullopt;
    return g.value(v).shape->sizes();
}

// The value of a one-element float constant.
std::optional<double> scalar(const Graph& g, ValueId v) {
    if (v == no_value || !g.value(v).is_constant()) return std::nullopt;
    const TensorData& d = *g.value(v).data;
    if (!float_type(d.dtype()) || d.elements() != 1) return std::nullopt;
    return double(d.to_floats()[0]);
}

struct Match {
    ValueId q = no_value, k = no_value, v = no_value, cond = no_value, mask = no_value;
    bool k_transposed = true;
    double scale = 1, fill = 0;
    bool select_keep = true;
    std::vector<size_t> dead; // the nodes replaced
};

// `n` multiplies (Mul) or divides (Div) its value input `x` by a constant scalar: returns x and
// the factor, without changing the value's shape.
std::optional<std::pair<ValueId, double>> scaled(const Graph& g, const Node& n) {
    if ((n.op_type != "Mul" && n.op_type != "Div") || n.inputs.size() != 2) return std::nullopt;
    const auto out = sizes(g, n.outputs[0]);
    for (size_t side = 0; side < 2; ++side) {
        if (n.op_type == "Div" && side == 1) break; // c / x is no scaling
        const ValueId x = n.inputs[side];
        const auto c = scalar(g, n.inputs[1 - side]);
        if (!c || x == no_value || g.value(x).is_constant() || sizes(g, x) != out) continue;
        if (n.op_type == "Div" && *c == 0) return std::nullopt;
        return std::pair{x, n.op_type == "Mul" ? *c : 1 / *c};
    }
    return std::nullopt;
}

bool swaps_last_two(const Node& t, size_t rank) {
    const std::vector<int64_t> perm = t.get_ints("perm");
    if (rank < 2 || perm.size() != rank) return false;
    for (size_t i = 0; i + 2 < rank; ++i)
        if (perm[i] != int64_t(i)) return false;
    return perm[rank - 2] == int64_t(rank - 1) && perm[rank - 1] == int64_t(rank - 2);
}

// What may stand between the scores and the Softmax, each optional, in this order back from the
// Softmax: Add(mask), Where, Mul/Div by a scalar, then the first MatMul. Each step tries with its
// node and, failing, without it; `m` is only changed on success.
enum class Step { Add, Where, Scale, MatMul };

class Matcher {
public:
    Matcher(const Graph& g, const Index& ix, std::vector<int64_t> ss) : g_(g), ix_(ix), ss_(std::move(ss)) {}

    bool scores(ValueId s, Step step, Match& m) const {
        switch (step) {
        case Step::Add:
            if (const Node* add = ix_.producer(s, "Add"); add && ix_.single(s) && add->inputs.size() == 2)
                for (size_t side = 0; side < 2; ++side) {
                    const ValueId x = add->inputs[side], mask = add->inputs[1 - side];
                    if (!scores_value(x) || mask == no_value || !sizes(g_, mask) ||
                        !float_type(g_.value(mask).dtype) || g_.value(mask).dtype != g_.value(x).dtype)
                        continue;
                    Match t = m;
                    t.mask = mask;
                    take(t, add);
                    if (scores(x, Step::Where, t)) return m = std::move(t), true;
                }
            return scores(s, Step::Where, m);
        case Step::Where:
            if (const Node* w = ix_.producer(s, "Where"); w && ix_.single(s) && w->inputs.size() == 3) {
                const ValueId cond = w->inputs[0];
                for (size_t side = 1; side < 3; ++side) {
                    const ValueId x = w->inputs[side];
                    const auto c = scalar(g_, w->inputs[3 - side]);
                    if (!c || !scores_value(x) || cond == no_value ||
                        g_.value(cond).dtype != DType::boolean || !sizes(g_, cond))
                        continue;
                    Match t = m;
                    t.cond = cond;
                    t.fill = *c;
                    t.select_keep = side == 1;
                    take(t, w);
                    if (scores(x, Step::Scale, t)) return m = std::move(t), true;
                }
            }
            return scores(s, Step::Scale, m);
        case Step::Scale:
            for (const char* op : {"Mul", "Div"})
                if (const Node* n = ix_.producer(s, op); n && ix_.single(s))
                    if (const auto sc = scaled(g_, *n); sc && scores_value(sc->first)) {
                        Match t = m;
                        t.scale *= sc->second;
                        take(t, n);
                        if (scores(sc->first, Step::MatMul, t)) return m = std::move(t), true;
                    }
            return scores(s, Step::MatMul, m);
        case Step::MatMul:
            break;
        }
        const Node* mm1 = ix_.producer(s, "MatMul");
        if (!mm1 || !ix_.single(s) || mm1->inputs.size() != 2 || sizes(g_, s) != ss_) return false;
        Match t = m;
        take(t, mm1);
        t.q = peel(mm1->inputs[0], false, t);
        t.k = peel(mm1->inputs[1], true, t);
        m = std::move(t);
        return true;
    }

private:
    // A value of the scores' shape read only by the next step.
    bool scores_value(ValueId x) const { return x != no_value && sizes(g_, x) == ss_ && ix_.single(x); }
    void take(Match& m, const Node* n) const { m.dead.push_back(ix_.index(n)); }
    // Q' = Q times scalars; K' = K^T: Transposes of the last two axes and scalars, in any order.
    // A peeled node is replaced only when the node reading it is and nothing else reads it.
    ValueId peel(ValueId x, bool allow_transpose, Match& m) const {
        bool reader_dead = true;
        for (int step = 0; step < 4; ++step) {
            const Node* n = ix_.producer(x);
            if (!n || !plain(*n) || n->outputs.size() != 1) break;
            ValueId next = no_value;
            if (const auto sc = scaled(g_, *n)) {
                m.scale *= sc->second;
                next = sc->first;
            } else if (allow_transpose && n->op_type == "Transpose" && n->inputs.size() == 1 &&
                       sizes(g_, x) && swaps_last_two(*n, sizes(g_, x)->size())) {
                m.k_transposed = !m.k_transposed;
                next = n->inputs[0];
            } else {
                break;
            }
            reader_dead = reader_dead && ix_.single(x);
            if (reader_dead) take(m, n);
            x = next;
        }
        return x;
    }

    const Graph& g_;
    const Index& ix_;
    const std::vector<int64_t> ss_;
};

bool match(const Graph& g, const Index& ix, const Node& mm2, Match& m) {
    if (mm2.op_type != "MatMul" || !plain(mm2) || mm2.inputs.size() != 2 || mm2.outputs.size() != 1)
        return false;
    // P = Softmax(S) over the last axis, read only here.
    const ValueId p = mm2.inputs[0];
    const Node* sm = ix.producer(p, "Softmax");
    if (!sm || !ix.single(p) || sm->outputs.size() != 1 || sm->inputs.empty()) return false;
    const auto ss = sizes(g, sm->inputs[0]);
    if (!ss || ss->size() < 2) return false;
    const int64_t rank = int64_t(ss->size());
    int64_t axis = sm->get_int("axis", g.opset_version("") && g.opset_version("") < 13 ? 1 : -1);
    if (axis < 0) axis += rank;
    if (axis != rank - 1) return false;
    m.v = mm2.inputs[1];
    m.dead = {ix.index(&mm2), ix.index(sm)};
    if (!Matcher(g, ix, *ss).scores(sm->inputs[0], Step::Add, m)) return false;
    for (ValueId x : {m.q, m.k, m.v}) {
        const auto xs = sizes(g, x);
        if (!xs || xs->size() < 2 || !float_type(g.value(x).dtype) || g.value(x).dtype != g.value(m.q).dtype)
            return false;
    }
    return float_type(g.value(mm2.outputs[0]).dtype);
}

gpu::Shape gpu_shape(const Graph& g, ValueId v) {
    const std::vector<int64_t> s = *g.value(v).shape->sizes();
    return gpu::Shape(std::span<const int64_t>(s));
}

} // namespace

bool attention_disabled_by_env() {
    const char* v = std::getenv("VKML_DISABLE_FUSED_ATTENTION");
    return v && *v && std::string_view(v) != "0";
}

size_t fuse_attention(Graph& g, gpu::Device& device, const FloatPolicy& float_dtype) {
    size_t fused = 0;
    const Index ix(g);
    std::vector<char> dead(g.nodes().size(), 0);
    std::vector<std::pair<size_t, Node>> replace; // at the final MatMul's place
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        const Node& mm2 = g.nodes()[i];
        Match m;
        if (dead[i] || !match(g, ix, mm2, m)) continue;
        bool taken = false;
        for (size_t d : m.dead) taken = taken || dead[d];
        if (taken) continue;
        // One float dtype for everything replaced.
        const gpu::DType fd = float_dtype(mm2);
        bool agree = true;
        for (size_t d : m.dead) agree = agree && float_dtype(g.nodes()[d]) == fd;
        if (!agree) continue;

        ops::AttentionDesc d;
        d.q = {gpu_shape(g, m.q), fd};
        d.k = {gpu_shape(g, m.k), fd};
        d.v = {gpu_shape(g, m.v), fd};
        d.k_transposed = m.k_transposed;
        d.scale = float(m.scale);
        if (m.cond != no_value) {
            d.select = true;
            d.cond = {gpu_shape(g, m.cond), gpu::DType::u8};
            d.select_keep = m.select_keep;
            d.fill = float(m.fill);
        }
        if (m.mask != no_value) {
            d.add_mask = true;
            d.mask = {gpu_shape(g, m.mask), fd};
        }
        if (!ops::FusedAttention::supported(device, d)) continue;

        Node n;
        n.op_type = "FusedAttention";
        n.domain = "vkml";
        n.name = mm2.name; // the output's producer; the others, in graph order, as fused names
        std::vector<size_t> parts = m.dead;
        std::sort(parts.begin(), parts.end());
        std::vector<std::string> names;
        for (size_t k : parts)
            if (k != i) names.push_back(g.nodes()[k].name);
        n.inputs = {m.q, m.k, m.v, m.cond, m.mask};
        n.outputs = {mm2.outputs[0]};
        n.attributes.insert_or_assign("scale", float(m.scale));
        n.attributes.insert_or_assign("k_transposed", int64_t(m.k_transposed));
        n.attributes.insert_or_assign("select_keep", int64_t(m.select_keep));
        n.attributes.insert_or_assign("fill", float(m.fill));
        n.attributes.insert_or_assign("vkml_fused", names);
        // The precision policy must give the fused node the dtype its parts had (it looks the
        // node's name, the fused names and its op type up): pin f32 where that is what they had.
        if (float_dtype(n) != fd) {
            if (fd != gpu::DType::f32) continue;
            n.attributes.insert_or_assign("vkml_fp32", int64_t{1});
        }
        for (size_t k : m.dead) dead[k] = 1;
        replace.emplace_back(i, std::move(n));
        ++fused;
    }
    if (!fused) return 0;
    std::vector<Node> kept;
    size_t r = 0;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        if (r < replace.size() && replace[r].first == i)
            kept.push_back(std::move(replace[r++].second));
        else if (!dead[i])
            kept.push_back(std::move(g.nodes()[i]));
    }
    g.nodes() = std::move(kept);
    g.sort_topologically();
    g.remove_unused_values();
    return fused;
}

} // namespace vkml::graph
