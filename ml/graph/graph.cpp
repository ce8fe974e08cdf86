#include "vkml/graph/graph.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <queue>
#include <set>

namespace vkml::graph {

// --- Node ---

const Attribute* Node::find(std::string_view attribute) const {
    auto it = attributes.find(attribute);
    return it == attributes.end() ? nullptr : &it->second;
}

std::string Node::describe() const {
    return "node '" + name + "' (" + op_type + ")";
}

namespace {

// Reads an attribute through `read`, turning a kind mismatch into an error that names the node.
template <class T, class Read>
T read_attribute(const Node& node, std::string_view attribute, T fallback, Read read) {
    const Attribute* a = node.find(attribute);
    if (!a) return fallback;
    try {
        return read(*a);
    } catch (const Error& e) {
        throw Error(ErrorCode::InvalidArgument,
                    node.describe() + ": attribute '" + std::string(attribute) + "': " + e.what());
    }
}

} // namespace

int64_t Node::get_int(std::string_view attribute, int64_t fallback) const {
    return read_attribute(*this, attribute, fallback, [](const Attribute& a) { return a.as_int(); });
}
float Node::get_float(std::string_view attribute, float fallback) const {
    return read_attribute(*this, attribute, fallback, [](const Attribute& a) { return a.as_float(); });
}
std::string Node::get_string(std::string_view attribute, std::string_view fallback) const {
    return read_attribute(*this, attribute, std::string(fallback),
                          [](const Attribute& a) { return a.as_string(); });
}
std::vector<int64_t> Node::get_ints(std::string_view attribute, std::vector<int64_t> fallback) const {
    return read_attribute(*this, attribute, std::move(fallback),
                          [](const Attribute& a) { return a.as_ints(); });
}
std::vector<float> Node::get_floats(std::string_view attribute, std::vector<float> fallback) const {
    return read_attribute(*this, attribute, std::move(fallback),
                          [](const Attribute& a) { return a.as_floats(); });
}
std::vector<std::string> Node::get_strings(std::string_view attribute,
                                           std::vector<std::string> fallback) const {
    return read_attribute(*this, attribute, std::move(fallback),
                          [](const Attribute& a) { return a.as_strings(); });
}
const TensorData& Node::get_tensor(std::string_view attribute) const {
    const Attribute* a = find(attribute);
    if (!a)
        throw Error(ErrorCode::InvalidArgument,
                    describe() + ": attribute '" + std::string(attribute) + "' is missing");
    try {
        return a->as_tensor();
    } catch (const Error& e) {
        throw Error(ErrorCode::InvalidArgument,
                    describe() + ": attribute '" + std::string(attribute) + "': " + e.what());
    }
}

const char* value_kind_name(ValueKind kind) {
    switch (kind) {
    case ValueKind::Tensor:
        return "tensor";
    case ValueKind::Sequence:
        return "sequence";
    case ValueKind::Optional:
        return "optional";
    }
    return "?";
}

// --- Graph: values and nodes ---

ValueId Graph::add_value(std::string value_name, DType dtype, std::optional<Shape> shape) {
    if (by_name_.count(value_name)) fail("two values are named '" + value_name + "'");
    const auto id = static_cast<ValueId>(values_.size());
    by_name_.emplace(value_name, id);
    values_.push_back(Value{std::move(value_name), dtype, std::move(shape), nullptr});
    return id;
}

ValueId Graph::add_constant(std::string value_name, TensorData data) {
    const ValueId id = add_value(std::move(value_name));
    set_constant(id, std::move(data));
    return id;
}

void Graph::set_constant(ValueId id, TensorData data) {
    Value& v = value(id);
    v.dtype = data.dtype();
    v.shape = Shape(data.dims());
    v.data = std::make_shared<const TensorData>(std::move(data));
}

ValueId Graph::find(std::string_view value_name) const {
    auto it = by_name_.find(value_name);
    return it == by_name_.end() ? no_value : it->second;
}

ValueId Graph::id(std::string_view value_name) const {
    const ValueId v = find(value_name);
    if (v == no_value) fail("no value is named '" + std::string(value_name) + "'");
    return v;
}

Value& Graph::value(ValueId id) {
    if (id >= values_.size()) fail("value id " + std::to_string(id) + " is out of range");
    return values_[id];
}

const Value& Graph::value(ValueId id) const {
    if (id >= values_.size()) fail("value id " + std::to_string(id) + " is out of range");
    return values_[id];
}

std::string Graph::unique_name(std::string_view base) const {
    std::string candidate(base);
    for (int i = 1; by_name_.count(candidate); ++i) candidate = std::string(base) + "_" + std::to_string(i);
    return candidate;
}

Node& Graph::add_node(std::string op_type, std::vector<ValueId> node_inputs,
                      std::vector<ValueId> node_outputs, std::string node_name) {
    if (node_name.empty()) node_name = op_type + "_" + std::to_string(nodes_.size());
    Node n;
    n.name = std::move(node_name);
    n.op_type = std::move(op_type);
    n.inputs = std::move(node_inputs);
    n.outputs = std::move(node_outputs);
    nodes_.push_back(std::move(n));
    return nodes_.back();
}

std::vector<ValueId> Graph::constants() const {
    std::vector<ValueId> out;
    for (ValueId i = 0; i < values_.size(); ++i)
        if (values_[i].is_constant()) out.push_back(i);
    return out;
}

int64_t Graph::opset_version(std::string_view domain) const {
    if (domain == "ai.onnx") domain = "";
    for (const OpsetImport& o : opsets)
        if (o.domain == domain || (domain.empty() && o.domain == "ai.onnx")) return o.version;
    return 0;
}

std::string Graph::describe(const Node& node) const {
    return node.describe() + " in '" + source + "'";
}

void Graph::fail(const Node& node, const std::string& problem, ErrorCode code) const {
    throw Error(code, "'" + source + "': " + node.describe() + ": " + problem);
}

void Graph::fail(const std::string& problem, ErrorCode code) const {
    throw Error(code, "'" + source + "': " + problem);
}

void Graph::fail_for(const Node& node, const Error& e) const {
    const std::string what = e.what();
    if (what.find("node '" + node.name + "'") != std::string::npos) throw;
    fail(node, what, e.code());
}

// --- checks and orderings ---

namespace {

constexpr size_t from_outside = ~size_t{0}; // produced by a graph input or a constant

// For each value, the index of the node producing it, from_outside, or absent; checks that no
// value has two producers and that ids are in range.
std::vector<std::optional<size_t>> producers(const Graph& g) {
    std::vector<std::optional<size_t>> producer(g.value_count());
    auto claim = [&](ValueId v, size_t who, const Node* node) {
        if (v >= g.value_count()) {
            if (node) g.fail(*node, "refers to value id " + std::to_string(v) + ", which does not exist");
            g.fail("a graph input refers to value id " + std::to_string(v) + ", which does not exist");
        }
        if (producer[v]) {
            const std::string what = "value '" + g.value(v).name + "' has more than one producer";
            if (node) g.fail(*node, what);
            g.fail(what);
        }
        producer[v] = who;
    };
    for (ValueId v : g.inputs()) claim(v, from_outside, nullptr);
    for (ValueId v : g.captures()) claim(v, from_outside, nullptr);
    for (ValueId v = 0; v < g.value_count(); ++v)
        if (g.value(v).elements && !producer[v]) producer[v] = from_outside; // a resolved sequence
    for (ValueId v = 0; v < g.value_count(); ++v)
        if (g.value(v).is_constant()) {
            if (producer[v]) g.fail("value '" + g.value(v).name + "' is both a graph input and a constant");
            producer[v] = from_outside;
        }
    const auto& nodes = g.nodes();
    for (size_t i = 0; i < nodes.size(); ++i)
        for (ValueId v : nodes[i].outputs)
            if (v != no_value) claim(v, i, &nodes[i]);
    return producer;
}

void check_inputs_defined(const Graph& g, const std::vector<std::optional<size_t>>& producer) {
    for (const Node& n : g.nodes())
        for (ValueId v : n.inputs) {
            if (v == no_value) continue;
            if (v >= g.value_count())
                g.fail(n, "refers to value id " + std::to_string(v) + ", which does not exist");
            if (!producer[v])
                g.fail(n,
                       "input '" + g.value(v).name + "' is produced by no node, graph input or initializer");
        }
    for (ValueId v : g.outputs()) {
        if (v >= g.value_count()) g.fail("a graph output refers to value id " + std::to_string(v));
        if (!producer[v])
            g.fail("graph output '" + g.value(v).name + "' is produced by no node, input or initializer");
    }
}

} // namespace

void Graph::validate() const {
    const auto producer = producers(*this);
    check_inputs_defined(*this, producer);
    for (size_t i = 0; i < nodes_.size(); ++i)
        for (ValueId v : nodes_[i].inputs)
            if (v != no_value && *producer[v] != from_outside && *producer[v] >= i)
                fail(nodes_[i], "reads '" + values_[v].name + "' before " + nodes_[*producer[v]].describe() +
                                    " produces it (nodes are not in topological order)");
}

std::vector<size_t> Graph::topological_order() const {
    const auto producer = producers(*this);
    check_inputs_defined(*this, producer);
    // Kahn's algorithm with the lowest original index first, so a valid order stays unchanged.
    const size_t n = nodes_.size();
    std::vector<size_t> pending(n, 0);
    std::vector<std::vector<size_t>> consumers(n);
    for (size_t i = 0; i < n; ++i) {
        std::set<size_t> deps; // a node reading one producer twice waits for it once
        for (ValueId v : nodes_[i].inputs)
            if (v != no_value && *producer[v] != from_outside) deps.insert(*producer[v]);
        pending[i] = deps.size();
        for (size_t d : deps) consumers[d].push_back(i);
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
        if (pending[i] == 0) ready.push(i);
    std::vector<size_t> order;
    order.reserve(n);
    while (!ready.empty()) {
        const size_t i = ready.top();
        ready.pop();
        order.push_back(i);
        for (size_t c : consumers[i])
            if (--pending[c] == 0) ready.push(c);
    }
    if (order.size() != n) {
        for (size_t i = 0; i < n; ++i)
            if (pending[i] != 0) fail(nodes_[i], "is part of a cycle: the graph has no topological order");
    }
    return order;
}

void Graph::sort_topologically() {
    const std::vector<size_t> order = topological_order();
    std::vector<Node> sorted;
    sorted.reserve(nodes_.size());
    for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
    nodes_ = std::move(sorted);
}

void Graph::remove_unused_values() {
    std::vector<char> used(values_.size(), 0);
    auto mark = [&](ValueId v) {
        if (v == no_value || v >= values_.size() || used[v]) return;
        used[v] = 1;
        // A resolved sequence or optional keeps what it holds.
        std::vector<ValueId> work = {v};
        while (!work.empty()) {
            const ValueId w = work.back();
            work.pop_back();
            if (values_[w].elements)
                for (ValueId e : *values_[w].elements)
                    if (e < values_.size() && !used[e]) {
                        used[e] = 1;
                        work.push_back(e);
                    }
        }
    };
    for (ValueId v : inputs_) mark(v);
    for (ValueId v : captures_) mark(v);
    for (ValueId v : outputs_) mark(v);
    for (const Node& n : nodes_) {
        for (ValueId v : n.inputs) mark(v);
        for (ValueId v : n.outputs) mark(v);
    }
    std::vector<ValueId> remap(values_.size(), no_value);
    std::vector<Value> kept;
    for (ValueId v = 0; v < values_.size(); ++v)
        if (used[v]) {
            remap[v] = static_cast<ValueId>(kept.size());
            kept.push_back(std::move(values_[v]));
        }
    values_ = std::move(kept);
    by_name_.clear();
    for (ValueId v = 0; v < values_.size(); ++v) by_name_.emplace(values_[v].name, v);
    auto fix = [&](ValueId& v) {
        if (v != no_value) v = remap[v];
    };
    for (ValueId& v : inputs_) fix(v);
    for (ValueId& v : outputs_) fix(v);
    for (ValueId& v : captures_) fix(v);
    for (Node& n : nodes_) {
        for (ValueId& v : n.inputs) fix(v);
        for (ValueId& v : n.outputs) fix(v);
    }
    for (Value& v : values_)
        if (v.elements)
            for (ValueId& e : *v.elements) fix(e);
}

// --- free dimensions ---

std::vector<std::string> Graph::free_dimensions() const {
    std::set<std::string> names;
    for (const Value& v : values_)
        if (v.shape)
            for (const Dim& d : v.shape->dims())
                if (!d.is_known() && !d.symbol.empty()) names.insert(d.symbol);
    return {names.begin(), names.end()};
}

size_t Graph::set_free_dimension(std::string_view symbol, int64_t size) {
    size_t replaced = 0;
    for (Value& v : values_)
        if (v.shape)
            for (Dim& d : v.shape->dims())
                if (!d.is_known() && d.symbol == symbol) {
                    d.size = size; // the denotation stays: an override by denotation checks it
                    d.symbol.clear();
                    ++replaced;
                }
    return replaced;
}

namespace {
// "a, b, c", or "none", for the override errors.
template <class Names>
std::string listed(const Names& names) {
    std::string list;
    for (const std::string& k : names) list += (list.empty() ? "" : ", ") + k;
    return list.empty() ? std::string("none") : list;
}
} // namespace

void apply_free_dimension_overrides(Graph& graph,
                                    const std::map<std::string, int64_t, std::less<>>& overrides) {
    const std::vector<std::string> known = graph.free_dimensions();
    for (const auto& [symbol, size] : overrides) {
        if (size < 1)
            graph.fail("free dimension '" + symbol + "' must be set to a size of at least 1, not " +
                       std::to_string(size));
        if (graph.set_free_dimension(symbol, size) == 0) {
            graph.fail("the model has no free dimension named '" + symbol + "' (it has: " + listed(known) + ")");
        }
    }
}

void apply_denotation_overrides(Graph& graph, const std::map<std::string, int64_t, std::less<>>& overrides) {
    auto lower = [](std::string_view s) {
        std::string l(s);
        for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return l;
    };
    std::set<std::string> denoted; // what the inputs carry, for the error
    for (ValueId v : graph.inputs())
        if (const auto& shape = graph.value(v).shape)
            for (const Dim& d : shape->dims())
                if (!d.denotation.empty()) denoted.insert(d.denotation);
    for (const auto& [denotation, size] : overrides) {
        if (size < 1)
            graph.fail("free dimension denotation '" + denotation +
                       "' must be set to a size of at least 1, not " + std::to_string(size));
        const std::string key = lower(denotation);
        size_t matched = 0;
        for (ValueId v : graph.inputs()) {
            Value& val = graph.value(v);
            if (!val.shape) continue;
            for (size_t k = 0; k < val.shape->rank(); ++k) {
                Dim& d = (*val.shape)[k];
                if (d.denotation.empty() || lower(d.denotation) != key) continue;
                ++matched;
                if (d.is_known()) {
                    if (d.size != size)
                        graph.fail("dimension " + std::to_string(k) + " of input '" + val.name + "' (" +
                                   d.denotation + ") is " + std::to_string(d.size) + ", not the " +
                                   std::to_string(size) + " its denotation override asks for");
                } else if (!d.symbol.empty()) {
                    graph.set_free_dimension(std::string(d.symbol), size); // d itself among them
                } else {
                    d.size = size;
                }
            }
        }
        if (matched == 0) {
            graph.fail("no input dimension of the model has the denotation '" + denotation +
                       "' (the inputs have: " + listed(denoted) + ")");
        }
    }
}

// --- text ---

namespace {

std::string value_text(const Graph& g, ValueId v) {
    if (v == no_value) return "\"\"";
    return g.value(v).name;
}

std::string typed(const Value& v) {
    std::string t = dtype_name(v.dtype) + (v.shape ? to_string(*v.shape) : std::string("[...]"));
    if (v.kind == ValueKind::Optional && v.element_kind == ValueKind::Sequence) t = "seq(" + t + ")";
    if (v.kind != ValueKind::Tensor)
        t = (v.kind == ValueKind::Sequence ? "seq(" : "optional(") + t + ")";
    return v.name + ": " + t;
}

} // namespace

std::string dump(const Graph& g) {
    std::string s = "graph '" + g.name + "' (" + g.format + ") from '" + g.source + "'\n";
    for (const OpsetImport& o : g.opsets)
        s += "opset " + (o.domain.empty() ? std::string("ai.onnx") : o.domain) + " " +
             std::to_string(o.version) + "\n";
    for (ValueId v : g.inputs()) s += "input " + typed(g.value(v)) + "\n";
    for (ValueId v : g.captures()) s += "capture " + typed(g.value(v)) + "\n";
    for (ValueId v : g.constants())
        s += "const " + g.value(v).name + ": " + describe(*g.value(v).data) + "\n";
    for (const Node& n : g.nodes()) {
        s += "node " + n.name + " = " + (n.domain.empty() ? "" : n.domain + ".") + n.op_type + "(";
        for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + value_text(g, n.inputs[i]);
        s += ") -> (";
        for (size_t i = 0; i < n.outputs.size(); ++i) s += (i ? ", " : "") + value_text(g, n.outputs[i]);
        s += ")";
        if (!n.attributes.empty()) {
            s += " {";
            bool first = true;
            for (const auto& [k, a] : n.attributes) {
                s += (first ? "" : ", ") + k + "=" + to_string(a);
                first = false;
            }
            s += "}";
        }
        s += "\n";
        // Subgraphs in full, indented under their node.
        for (const auto& [k, a] : n.attributes)
            if (a.kind() == AttributeKind::Graph) {
                const std::string inner = dump(a.as_graph());
                size_t at = inner.find('\n') + 1; // its header repeats the file
                s += "  " + k + ":\n";
                while (at < inner.size()) {
                    const size_t end = inner.find('\n', at);
                    const std::string line = inner.substr(at, end - at);
                    if (!line.starts_with("opset ")) s += "    " + line + "\n";
                    at = end == std::string::npos ? inner.size() : end + 1;
                }
            }
    }
    for (ValueId v : g.outputs()) s += "output " + typed(g.value(v)) + "\n";
    return s;
}

std::map<std::string, int> op_histogram(const Graph& graph) {
    std::map<std::string, int> h;
    for (const Node& n : graph.nodes()) ++h[n.op_type];
    return h;
}

} // namespace vkml::graph
