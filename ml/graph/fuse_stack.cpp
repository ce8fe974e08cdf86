// fuse_conv_stacks: a whole Anime4K-shaped network (a chain of 3x3 convolutions of few channels
// with CReLU between them, a 1x1 head over every layer's CReLU or a last 3x3 layer, DepthToSpace
// plus the bilinear 2x input, or the input plus a channel slice) becomes one vkml.FusedConvStack
// node, which the Session lowers to ops::FusedConvStack: one dispatch instead of ~27.
//
// The pattern, as the Anime4K importer builds it after fuse() (dedupe merges the CReLUs every
// reader built; merge_sibling_convs merges the heads and the L networks' paired layers):
//   f_0 = Conv3x3(x); a_l = Concat(Relu(f_l), Neg(f_l)+Relu); f_l = Conv3x3(a_{l-1})
//   h = Conv1x1(Concat(Relu(f_0), Neg(f_0), ..., Relu(f_{D-1}), Neg(f_{D-1})))  or  h = f_{D-1}
//   y = Add(Resize(x, linear, half_pixel, 2x), DepthToSpace(h, 2, CRD))  or  Add(x, Slice(h, 0:Cin))
// Every value inside is read by the pattern only; y may be read by anything.
#include <algorithm>
#include <cstdlib>
#include <set>

#include "passes.hpp"
#include "vkml/ops/fused.hpp"

namespace vkml::graph {

namespace {

bool float_type(DType d) {
    return d == DType::f32 || d == DType::f16;
}

class Matcher {
public:
    Matcher(const Graph& g) : g_(g), prod_(g.value_count(), -1), uses_(g.value_count()), output_(g.value_count(), 0) {
        for (size_t i = 0; i < g.nodes().size(); ++i) {
            const Node& n = g.nodes()[i];
            for (ValueId v : n.outputs)
                if (v != no_value) prod_[v] = int64_t(i);
            for (ValueId v : n.inputs)
                if (v != no_value) uses_[v].push_back(i);
        }
        for (ValueId v : g.outputs()) output_[v] = 1;
    }

    const Node* producer(ValueId v, std::string_view op) const {
        if (v == no_value || prod_[v] < 0) return nullptr;
        const Node& n = g_.nodes()[size_t(prod_[v])];
        if (n.op_type != op || !n.domain.empty() || n.outputs.empty() || n.outputs[0] != v) return nullptr;
        return &n;
    }
    size_t index(const Node* n) const { return size_t(n - g_.nodes().data()); }
    const std::vector<size_t>& uses(ValueId v) const { return uses_[v]; }
    bool is_output(ValueId v) const { return output_[v]; }

    const TensorData* constant(const Node& n, size_t i) const {
        if (i >= n.inputs.size() || n.inputs[i] == no_value) return nullptr;
        const Value& v = g_.value(n.inputs[i]);
        return v.is_constant() ? v.data.get() : nullptr;
    }
    bool absent(const Node& n, size_t i) const {
        return i >= n.inputs.size() || n.inputs[i] == no_value || (constant(n, i) && constant(n, i)->elements() == 0);
    }

    // A plain Conv (no fused activation or residual) with constant float weights [M, C, k, k],
    // stride 1, dilation 1, group 1, pads k / 2, and a constant bias or none.
    const Node* conv(ValueId v, int64_t k) const {
        const Node* n = producer(v, "Conv");
        if (!n || n->has("vkml_activation") || n->has("vkml_residual") || n->inputs.size() < 2 || n->inputs.size() > 3)
            return nullptr;
        const TensorData* w = constant(*n, 1);
        if (!w || !float_type(w->dtype()) || w->dims().size() != 4 || w->dims()[2] != k || w->dims()[3] != k) return nullptr;
        if (n->inputs.size() == 3 && n->inputs[2] != no_value) {
            const TensorData* b = constant(*n, 2);
            if (!b || !float_type(b->dtype()) || b->elements() != w->dims()[0]) return nullptr;
        }
        const int64_t p = k / 2;
        if (n->get_int("group", 1) != 1 || n->get_string("auto_pad", "NOTSET") != "NOTSET") return nullptr;
        if (n->get_ints("kernel_shape", {k, k}) != std::vector<int64_t>{k, k}) return nullptr;
        if (n->get_ints("strides", {1, 1}) != std::vector<int64_t>{1, 1}) return nullptr;
        if (n->get_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) return nullptr;
        if (n->get_ints("pads", {0, 0, 0, 0}) != std::vector<int64_t>{p, p, p, p}) return nullptr;
        return n;
    }

    // Relu(f) (no fused activation of its own): f, else no_value.
    ValueId relu_of(ValueId v) const {
        const Node* n = producer(v, "Relu");
        return n && !n->has("vkml_activation") && n->inputs.size() == 1 ? n->inputs[0] : no_value;
    }
    // Neg(f) with a fused Relu: f, else no_value.
    ValueId neg_relu_of(ValueId v) const {
        const Node* n = producer(v, "Neg");
        return n && n->get_string("vkml_activation", "") == "Relu" && n->inputs.size() == 1 ? n->inputs[0] : no_value;
    }
    const Node* channel_concat(ValueId v) const {
        const Node* n = producer(v, "Concat");
        if (!n || n->has("vkml_activation")) return nullptr;
        const int64_t axis = n->get_int("axis", 0);
        return axis == 1 || axis == -3 ? n : nullptr;
    }
    // a = Concat(Relu(f), Neg(f)+Relu): f, else no_value.
    ValueId crelu_of(ValueId a) const {
        const Node* cat = channel_concat(a);
        if (!cat || cat->inputs.size() != 2) return no_value;
        const ValueId f = relu_of(cat->inputs[0]);
        return f != no_value && neg_relu_of(cat->inputs[1]) == f ? f : no_value;
    }

private:
    const Graph& g_;
    std::vector<int64_t> prod_;
    std::vector<std::vector<size_t>> uses_;
    std::vector<char> output_;
};

std::vector<int64_t> const_ints(const TensorData* t) {
    return t ? t->to_int64s() : std::vector<int64_t>{};
}

struct Match {
    ValueId x = no_value;
    std::vector<const Node*> convs; // f_0 .. f_{D-1} (LastLayer: the last one is the head)
    const Node* head = nullptr;     // the 1x1 head, or null
    ops::StackOutput output{};
    std::set<size_t> nodes; // every node the fused one replaces
};

// The stack ending at `add` (y = Add(...)), or false.
bool match(const Graph& g, const Matcher& m, const Node& add, Match& out) {
    if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2 || add.outputs.size() != 1 ||
        add.has("vkml_activation"))
        return false;
    for (int side = 0; side < 2; ++side) {
        Match r;
        r.nodes.insert(m.index(&add));
        const ValueId a = add.inputs[size_t(side)], b = add.inputs[size_t(1 - side)];
        ValueId h = no_value;
        ValueId x_expected = no_value;
        if (const Node* d2s = m.producer(a, "DepthToSpace")) {
            const Node* rs = m.producer(b, "Resize");
            if (!rs || d2s->get_int("blocksize", 0) != 2 || d2s->get_string("mode", "DCR") != "CRD") continue;
            if (rs->get_string("mode", "nearest") != "linear" ||
                rs->get_string("coordinate_transformation_mode", "half_pixel") != "half_pixel" ||
                rs->get_int("antialias", 0) != 0 || rs->get_int("exclude_outside", 0) != 0 || rs->has("axes") ||
                rs->inputs.empty() || !m.absent(*rs, 1))
                continue;
            const TensorData* scales = m.constant(*rs, 2);
            const bool by_scales = scales && scales->elements() == 4 && m.absent(*rs, 3) &&
                                   scales->to_floats() == std::vector<float>{1, 1, 2, 2};
            const Value& xv = g.value(rs->inputs[0]);
            const auto xs = xv.shape ? xv.shape->sizes() : std::nullopt;
            const TensorData* sizes = m.constant(*rs, 3);
            const bool by_sizes = !by_scales && m.absent(*rs, 2) && sizes && xs && xs->size() == 4 &&
                                  sizes->to_int64s() == std::vector<int64_t>{(*xs)[0], (*xs)[1], 2 * (*xs)[2], 2 * (*xs)[3]};
            if (!by_scales && !by_sizes) continue;
            r.nodes.insert(m.index(d2s));
            r.nodes.insert(m.index(rs));
            r.output = ops::StackOutput::DepthToSpaceBilinear;
            h = d2s->inputs.at(0);
            x_expected = rs->inputs[0];
        } else if (const Node* sl = m.producer(a, "Slice")) {
            const std::vector<int64_t> axes = const_ints(m.constant(*sl, 3));
            if (sl->inputs.size() < 4 || const_ints(m.constant(*sl, 1)) != std::vector<int64_t>{0} ||
                !m.constant(*sl, 2) || (axes != std::vector<int64_t>{1} && axes != std::vector<int64_t>{-3}) ||
                (!m.absent(*sl, 4) && const_ints(m.constant(*sl, 4)) != std::vector<int64_t>{1}))
                continue;
            // The slice keeps the input's channels: its output has the input's shape (checked below).
            r.nodes.insert(m.index(sl));
            r.output = ops::StackOutput::Residual;
            h = sl->inputs[0];
            x_expected = b;
        } else {
            continue;
        }
        // The head, then the chain back to the input.
        const Node* last = nullptr;
        std::vector<ValueId> head_parts;
        if (const Node* h1 = m.conv(h, 1)) {
            const Node* cat = m.channel_concat(h1->inputs[0]);
            if (!cat || cat->inputs.size() < 2 || cat->inputs.size() % 2) continue;
            r.head = h1;
            r.nodes.insert(m.index(h1));
            r.nodes.insert(m.index(cat));
            head_parts = cat->inputs;
            const ValueId f_last = m.relu_of(head_parts[head_parts.size() - 2]);
            last = m.conv(f_last, 3);
        } else {
            last = m.conv(h, 3);
        }
        if (!last) continue;
        for (const Node* c = last;;) {
            r.convs.push_back(c);
            r.nodes.insert(m.index(c));
            const ValueId in = c->inputs[0];
            const ValueId f = m.crelu_of(in);
            const Node* prev = f != no_value ? m.conv(f, 3) : nullptr;
            if (!prev) {
                r.x = in;
                break;
            }
            // The CReLU between: its Concat, Relu and Neg.
            const Node* cat = m.channel_concat(in);
            r.nodes.insert(m.index(cat));
            r.nodes.insert(size_t(m.index(m.producer(cat->inputs[0], "Relu"))));
            r.nodes.insert(size_t(m.index(m.producer(cat->inputs[1], "Neg"))));
            c = prev;
            if (r.convs.size() > 64) break;
        }
        if (r.convs.size() > 64 || r.x != x_expected) continue;
        std::reverse(r.convs.begin(), r.convs.end());
        const size_t d = r.convs.size();
        if (r.head) {
            // The head reads [Relu(f_l), Neg(f_l)] for every layer, in order.
            if (head_parts.size() != 2 * d) continue;
            bool ok = true;
            for (size_t l = 0; l < d && ok; ++l) {
                const ValueId f = r.convs[l]->outputs[0];
                ok = m.relu_of(head_parts[2 * l]) == f && m.neg_relu_of(head_parts[2 * l + 1]) == f;
                if (ok) {
                    r.nodes.insert(m.index(m.producer(head_parts[2 * l], "Relu")));
                    r.nodes.insert(m.index(m.producer(head_parts[2 * l + 1], "Neg")));
                }
            }
            if (!ok) continue;
        } else if (d < 2) {
            continue; // a lone convolution is no stack
        }
        // Shapes: x [N, Cin, H, W] static, float; y as the op computes it.
        const Value& xv = g.value(r.x);
        const auto xs = xv.shape ? xv.shape->sizes() : std::nullopt;
        if (!xs || xs->size() != 4 || !float_type(xv.dtype)) continue;
        if (r.output == ops::StackOutput::Residual) {
            const Value& sv = g.value(a);
            if (!sv.shape || sv.shape->sizes() != xs) continue;
        }
        // Nothing outside reads a value inside.
        bool closed = true;
        for (size_t i : r.nodes) {
            for (ValueId v : g.nodes()[i].outputs) {
                if (v == no_value || v == add.outputs[0]) continue;
                if (m.is_output(v)) closed = false;
                for (size_t u : m.uses(v)) closed = closed && r.nodes.count(u);
            }
        }
        if (!closed) continue;
        out = std::move(r);
        return true;
    }
    return false;
}

ops::ConvStackLayer layer_of(const Graph& g, const Node& n) {
    ops::ConvStackLayer l;
    const TensorData& w = *g.value(n.inputs[1]).data;
    l.weight = w.to_floats();
    l.outputs = w.dims()[0];
    if (n.inputs.size() > 2 && n.inputs[2] != no_value) l.bias = g.value(n.inputs[2]).data->to_floats();
    return l;
}

} // namespace

bool conv_stack_disabled_by_env() {
    const char* v = std::getenv("VKML_DISABLE_FUSED_STACK");
    return v && *v && std::string_view(v) != "0";
}

size_t fuse_conv_stacks(Graph& g, gpu::Device& device, const FloatPolicy& float_dtype) {
    size_t fused = 0;
    for (bool again = true; again;) {
        again = false;
        const Matcher m(g);
        for (const Node& add : g.nodes()) {
            Match r;
            if (!match(g, m, add, r)) continue;
            ops::ConvStackDesc d;
            const Value& xv = g.value(r.x);
            d.input = {gpu::Shape(std::span<const int64_t>(*xv.shape->sizes())), gpu::DType::f32};
            d.head = r.head ? ops::StackHead::Concat1x1 : ops::StackHead::LastLayer;
            d.output = r.output;
            d.act = ops::StackAct::CRelu;
            // Shared memory in f16 only when every node of the stack is stored in f16.
            d.smem = gpu::DType::f16;
            for (size_t i : r.nodes)
                if (float_dtype(g.nodes()[i]) != gpu::DType::f16) d.smem = gpu::DType::f32;
            for (const Node* c : r.convs) d.layers.push_back(layer_of(g, *c));
            if (r.head) d.head_conv = layer_of(g, *r.head);
            if (!ops::FusedConvStack::supported(device, d)) continue;

            Node n;
            n.op_type = "FusedConvStack";
            n.domain = "vkml";
            n.name = g.unique_name(r.convs.front()->name + ".." + add.name);
            n.inputs.push_back(r.x);
            std::vector<std::string> names;
            for (const Node* c : r.convs) {
                n.inputs.push_back(c->inputs[1]);
                n.inputs.push_back(c->inputs.size() > 2 ? c->inputs[2] : no_value);
            }
            if (r.head) {
                n.inputs.push_back(r.head->inputs[1]);
                n.inputs.push_back(r.head->inputs.size() > 2 ? r.head->inputs[2] : no_value);
            }
            n.outputs = {add.outputs[0]};
            n.attributes.insert_or_assign("layers", int64_t(r.convs.size()));
            n.attributes.insert_or_assign("head", std::string(r.head ? "conv1x1" : "last_layer"));
            n.attributes.insert_or_assign("act", std::string("crelu"));
            n.attributes.insert_or_assign(
                "output", std::string(r.output == ops::StackOutput::Residual ? "residual" : "depth_to_space_bilinear"));
            for (size_t i : r.nodes) names.push_back(g.nodes()[i].name);
            n.attributes.insert_or_assign("vkml_stack_nodes", names);

            std::vector<Node> kept;
            for (size_t i = 0; i < g.nodes().size(); ++i)
                if (!r.nodes.count(i)) kept.push_back(std::move(g.nodes()[i]));
            kept.push_back(std::move(n));
            g.nodes() = std::move(kept);
            g.sort_topologically();
            g.remove_unused_values();
            ++fused;
            again = true;
            break;
        }
    }
    return fused;
}

} // namespace vkml::graph
