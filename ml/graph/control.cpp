// Sequences, optionals and control flow, resolved while a session is built (infer_and_fold calls
// expand_structural on each such node when it reaches it, with every input's shape and every
// foldable constant known). Nothing here runs on the device or at run time:
//
//   sequences     a sequence value lists the tensor values it holds (Value::elements); the ops
//                 that build or read one become that list, a constant, or plain tensor nodes
//                 (SequenceAt -> Identity, ConcatFromSequence -> Concat, SplitToSequence -> Slice)
//   optionals     likewise, with none or one element
//   If            a constant condition inlines the branch taken; a computed one inlines both and
//                 selects with Where, when the branches agree in kinds, dtypes and shapes
//   Loop          unrolled one iteration at a time: the body is inlined with the iteration number
//                 as a constant, then the node comes back for the next iteration, so a condition
//                 the body computes from constants and shapes folds before it is read
//   Scan          unrolled over the scan axis, whose length the static shapes give
//   SequenceMap   the body once per element
//
// Every decision input (a position, a trip count, a condition) must be a constant by then; a
// value computed on the device is an error naming the node and the value, as are loops past
// max_loop_iterations and expansions past max_expanded_nodes.
#include <algorithm>

#include "lower.hpp"
#include "op_types.hpp"
#include "passes.hpp"

namespace vkml::graph {

namespace {


std::string quoted(const Graph& g, ValueId v) {
    return "'" + g.value(v).name + "'";
}

struct Expander {
    Graph& g;
    const Node& n; // a copy owned by the caller: the graph's node list changes under us
    ExpandBudget& budget;
    std::vector<Node> out;
    const Node* blame = nullptr; // the node errors name, when not n (an IfSelect names its If)

    [[noreturn]] void fail(const std::string& problem, ErrorCode code = ErrorCode::InvalidArgument) const {
        g.fail(blame ? *blame : n, problem, code);
    }

    size_t onnx_inputs() const {
        const size_t captures = n.has("vkml_captures") ? n.get_strings("vkml_captures").size() : 0;
        const size_t parts = static_cast<size_t>(n.get_int("vkml_parts", 0));
        if (captures + parts > n.inputs.size()) fail("internal: more captures than inputs");
        return n.inputs.size() - captures - parts;
    }
    bool has(size_t i) const { return i < onnx_inputs() && n.inputs[i] != no_value; }
    ValueId in(size_t i) const {
        if (!has(i)) fail("input " + std::to_string(i) + " is missing");
        return n.inputs[i];
    }
    const Value& val(ValueId v) const { return g.value(v); }

    // A decision input: must be a constant by now.
    const TensorData& constant(size_t i, const std::string& what) const {
        const ValueId v = in(i);
        if (!val(v).is_constant())
            fail("its " + what + " " + quoted(g, v) +
                     " must be a constant: vkml resolves sequences and control flow when it builds a "
                     "session, and this value is computed on the device (give it with "
                     "SessionOptions::constant_inputs if it is a model input)",
                 ErrorCode::Unsupported);
        return *val(v).data;
    }
    int64_t constant_int(size_t i, const std::string& what) const {
        const TensorData& t = constant(i, what);
        if (t.elements() != 1 || is_float(t.dtype()))
            fail("its " + what + " must be one integer, is " + describe(t));
        return t.to_int64s()[0];
    }

    const std::vector<ValueId>& sequence(size_t i) const {
        const ValueId v = in(i);
        const Value& s = val(v);
        if (s.kind != ValueKind::Sequence)
            fail("input " + quoted(g, v) + " is a " + value_kind_name(s.kind) + "; " + n.op_type +
                 " takes a sequence");
        if (!s.elements) fail("internal: sequence " + quoted(g, v) + " is not resolved");
        return *s.elements;
    }

    std::string prefix() const { return n.name + "/"; }
    ValueId fresh(const std::string& base) { return g.add_value(g.unique_name(prefix() + base)); }
    ValueId const_ints(const std::string& base, std::vector<int64_t> dims, const std::vector<int64_t>& v) {
        return g.add_constant(g.unique_name(prefix() + base), TensorData::from_int64s(std::move(dims), v));
    }
    ValueId const_bool(const std::string& base, bool b) {
        return g.add_constant(g.unique_name(prefix() + base),
                              TensorData(DType::boolean, {}, {std::byte{static_cast<unsigned char>(b)}}));
    }
    Node& emit(std::string op, std::vector<ValueId> inputs, std::vector<ValueId> outputs, const std::string& what) {
        if (++budget.nodes > max_expanded_nodes)
            fail("expands into more than " + std::to_string(max_expanded_nodes) +
                     " nodes (vkml unrolls control flow when it builds a session)",
                 ErrorCode::Unsupported);
        Node m;
        m.name = prefix() + what;
        m.op_type = std::move(op);
        m.inputs = std::move(inputs);
        m.outputs = std::move(outputs);
        out.push_back(std::move(m));
        return out.back();
    }
    void identity(ValueId from, ValueId to) { emit("Identity", {from}, {to}, "to_" + val(to).name); }

    // `to` becomes a resolved sequence or optional.
    void set_sequence(ValueId to, std::vector<ValueId> elems, DType dtype) {
        Value& v = g.value(to);
        v.kind = ValueKind::Sequence;
        v.dtype = dtype;
        v.elements = std::move(elems);
    }
    void set_optional(ValueId to, std::optional<ValueId> elem, ValueKind element_kind, DType dtype) {
        Value& v = g.value(to);
        v.kind = ValueKind::Optional;
        v.element_kind = element_kind;
        v.dtype = dtype;
        v.elements = elem ? std::vector<ValueId>{*elem} : std::vector<ValueId>{};
    }
    void set_constant(ValueId to, TensorData t) {
        if (to != no_value) g.set_constant(to, std::move(t));
    }

    std::vector<int64_t> static_dims(ValueId v) const {
        const auto sizes = val(v).shape ? val(v).shape->sizes() : std::nullopt;
        if (!sizes) fail("input " + quoted(g, v) + " has no static shape");
        return *sizes;
    }

    // x with a dimension of 1 inserted at `axis` (a Reshape view).
    ValueId unsqueeze(ValueId x, int64_t axis, const std::string& what) {
        std::vector<int64_t> d = static_dims(x);
        const auto r = static_cast<int64_t>(d.size());
        if (axis < -r - 1 || axis > r) fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
        if (axis < 0) axis += r + 1;
        d.insert(d.begin() + axis, 1);
        const ValueId shape = const_ints(what + "_shape", {static_cast<int64_t>(d.size())}, d);
        const ValueId y = fresh(what);
        emit("Reshape", {x, shape}, {y}, what);
        return y;
    }
    // Tensors of equal shape stacked along a new `axis` into `to`, once their shapes are known:
    // a vkml.Stack node, resolved when the walk reaches it (stack_now).
    void stack(const std::vector<ValueId>& parts, int64_t axis, ValueId to, const std::string& what) {
        if (parts.empty()) fail("internal: nothing to stack");
        Node& s = emit("Stack", parts, {to}, what);
        s.domain = "vkml";
        s.attributes.emplace("axis", axis);
        s.attributes.emplace("vkml_what", what);
    }
    void stack_now(const std::vector<ValueId>& parts, int64_t axis, ValueId to, const std::string& what) {
        std::vector<ValueId> u;
        for (size_t k = 0; k < parts.size(); ++k) {
            if (val(parts[k]).kind != ValueKind::Tensor)
                fail("its " + what + " is a " + value_kind_name(val(parts[k]).kind) + ", not a tensor");
            u.push_back(unsqueeze(parts[k], axis, what + "_" + std::to_string(k)));
        }
        if (axis < 0) axis += static_cast<int64_t>(static_dims(parts[0]).size()) + 1;
        if (u.size() == 1) {
            identity(u[0], to);
            return;
        }
        emit("Concat", u, {to}, what).attributes.emplace("axis", axis);
    }

    // Inlines `body` with its formal inputs bound to `actual`; returns the values of its outputs.
    std::vector<ValueId> inline_graph(const Graph& body, const std::vector<ValueId>& actual, const std::string& tag) {
        if (actual.size() != body.inputs().size())
            fail("its subgraph '" + body.name + "' takes " + std::to_string(body.inputs().size()) + " inputs, " +
                 std::to_string(actual.size()) + " are given");
        std::vector<ValueId> map(body.value_count(), no_value);
        for (size_t k = 0; k < actual.size(); ++k) map[body.inputs()[k]] = actual[k];
        const auto names = n.get_strings("vkml_captures");
        const size_t first_capture = onnx_inputs();
        for (ValueId c : body.captures()) {
            const auto it = std::find(names.begin(), names.end(), body.value(c).name);
            if (it == names.end())
                fail("internal: its subgraph reads '" + body.value(c).name + "', which it does not capture");
            map[c] = n.inputs.at(first_capture + static_cast<size_t>(it - names.begin()));
        }
        const std::string p = prefix() + tag + "/";
        for (ValueId v = 0; v < body.value_count(); ++v) {
            if (map[v] != no_value) continue;
            const Value& bv = body.value(v);
            const ValueId nv = g.add_value(g.unique_name(p + bv.name), bv.dtype, bv.is_constant() ? bv.shape : std::nullopt);
            Value& x = g.value(nv);
            x.data = bv.data; // shared, not copied
            x.kind = bv.kind;
            x.element_kind = bv.element_kind;
            map[v] = nv;
        }
        for (const Node& bn : body.nodes()) {
            Node m = bn;
            m.name = p + bn.name;
            for (ValueId& v : m.inputs)
                if (v != no_value) v = map.at(v);
            for (ValueId& v : m.outputs)
                if (v != no_value) v = map.at(v);
            if (++budget.nodes > max_expanded_nodes)
                fail("expands into more than " + std::to_string(max_expanded_nodes) +
                         " nodes (vkml unrolls control flow when it builds a session)",
                     ErrorCode::Unsupported);
            out.push_back(std::move(m));
        }
        std::vector<ValueId> result;
        for (ValueId v : body.outputs()) result.push_back(map.at(v));
        return result;
    }

    const Graph& subgraph(const char* attribute) const {
        const Attribute* a = n.find(attribute);
        if (!a) fail("has no attribute '" + std::string(attribute) + "'");
        if (a->kind() != AttributeKind::Graph) fail("attribute '" + std::string(attribute) + "' is not a graph");
        return a->as_graph();
    }

    void sequence_op();
    void optional_op();
    void if_op();
    void if_select();
    void loop_op();
    void scan_op();
    void sequence_map();
    void select(ValueId cond, ValueId t, ValueId e, ValueId to, const std::string& what);
};

void Expander::sequence_op() {
    const std::string& op = n.op_type;
    const ValueId y = n.outputs.empty() ? no_value : n.outputs[0];
    if (y == no_value) return;
    if (op == "SequenceEmpty") {
        set_sequence(y, {}, detail::onnx_type(n.get_int("dtype", 1), g, n));
    } else if (op == "SequenceConstruct") {
        std::vector<ValueId> elems;
        for (size_t k = 0; k < onnx_inputs(); ++k) {
            const ValueId v = in(k);
            if (val(v).kind != ValueKind::Tensor) fail("input " + quoted(g, v) + " is not a tensor");
            if (k && val(v).dtype != val(elems[0]).dtype)
                fail("its inputs have different dtypes (" + std::string(dtype_name(val(elems[0]).dtype)) + ", " +
                     dtype_name(val(v).dtype) + ")");
            elems.push_back(v);
        }
        if (elems.empty()) fail("needs at least one input");
        set_sequence(y, elems, val(elems[0]).dtype);
    } else if (op == "SequenceLength") {
        const int64_t len = static_cast<int64_t>(sequence(0).size());
        set_constant(y, TensorData::from_int64s({}, std::span<const int64_t>(&len, 1)));
    } else if (op == "SequenceInsert" || op == "SequenceErase" || op == "SequenceAt") {
        std::vector<ValueId> elems = sequence(0);
        const auto len = static_cast<int64_t>(elems.size());
        const DType dtype = val(in(0)).dtype;
        const size_t pos_input = op == "SequenceInsert" ? 2 : 1;
        const bool insert = op == "SequenceInsert";
        int64_t pos = insert ? len : -1;
        if (op == "SequenceAt" || has(pos_input)) pos = constant_int(pos_input, "position");
        const int64_t lo = -len, hi = insert ? len : len - 1;
        if (pos < lo || pos > hi)
            fail("position " + std::to_string(pos) + " is out of range for a sequence of " + std::to_string(len) +
                 " tensors (" + std::to_string(lo) + " to " + std::to_string(hi) + ")");
        if (pos < 0) pos += len;
        const auto at = elems.begin() + pos;
        if (op == "SequenceAt") {
            identity(*at, y);
            return;
        }
        if (insert) {
            const ValueId t = in(1);
            if (val(t).kind != ValueKind::Tensor) fail("input " + quoted(g, t) + " is not a tensor");
            if (dtype != DType::undefined && val(t).dtype != dtype)
                fail("inserts a " + std::string(dtype_name(val(t).dtype)) + " tensor into a sequence of " +
                     dtype_name(dtype));
            elems.insert(at, t);
        } else {
            elems.erase(at);
        }
        set_sequence(y, std::move(elems), dtype == DType::undefined && insert ? val(in(1)).dtype : dtype);
    } else if (op == "SplitToSequence") {
        const ValueId x = in(0);
        if (val(x).kind != ValueKind::Tensor) fail("input " + quoted(g, x) + " is not a tensor");
        const std::vector<int64_t> dims = static_dims(x);
        const auto rank = static_cast<int64_t>(dims.size());
        int64_t axis = n.get_int("axis", 0);
        if (axis < -rank || axis >= rank)
            fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
        if (axis < 0) axis += rank;
        const int64_t length = dims[static_cast<size_t>(axis)];
        std::vector<int64_t> sizes;
        const bool given = has(1);
        if (given) {
            const TensorData& s = constant(1, "split");
            const auto v = s.to_int64s();
            if (s.dims().empty()) {
                if (v[0] <= 0) fail("split must be positive, is " + std::to_string(v[0]));
                for (int64_t at = 0; at < length; at += v[0]) sizes.push_back(std::min(v[0], length - at));
            } else {
                int64_t sum = 0;
                for (int64_t k : v) {
                    if (k < 0) fail("split sizes must not be negative");
                    sum += k;
                }
                if (sum != length)
                    fail("split sizes add up to " + std::to_string(sum) + ", the axis has " + std::to_string(length));
                sizes = v;
            }
        } else {
            sizes.assign(static_cast<size_t>(length), 1);
        }
        if (sizes.size() > static_cast<size_t>(max_loop_iterations))
            fail("splits into " + std::to_string(sizes.size()) + " tensors, more than the " +
                     std::to_string(max_loop_iterations) + " vkml makes",
                 ErrorCode::Unsupported);
        const bool squeeze = !given && n.get_int("keepdims", 1) == 0;
        const ValueId axes = const_ints("axes", {1}, std::vector<int64_t>{axis});
        std::vector<ValueId> elems;
        int64_t at = 0;
        for (size_t k = 0; k < sizes.size(); ++k) {
            const std::string tag = "split_" + std::to_string(k);
            const ValueId starts = const_ints(tag + "_start", {1}, std::vector<int64_t>{at});
            const ValueId ends = const_ints(tag + "_end", {1}, std::vector<int64_t>{at + sizes[k]});
            at += sizes[k];
            ValueId part = fresh(tag);
            emit("Slice", {x, starts, ends, axes}, {part}, tag);
            if (squeeze) {
                std::vector<int64_t> d = dims;
                d.erase(d.begin() + axis);
                const ValueId shape = const_ints(tag + "_shape", {static_cast<int64_t>(d.size())}, d);
                const ValueId sq = fresh(tag + "_squeezed");
                emit("Reshape", {part, shape}, {sq}, tag + "_squeeze");
                part = sq;
            }
            elems.push_back(part);
        }
        set_sequence(y, std::move(elems), val(x).dtype);
    } else if (op == "ConcatFromSequence") {
        const std::vector<ValueId> elems = sequence(0);
        if (elems.empty()) fail("its sequence " + quoted(g, in(0)) + " is empty: there is nothing to concatenate");
        if (!n.has("axis")) fail("attribute 'axis' is missing");
        int64_t axis = n.get_int("axis", 0);
        if (n.get_int("new_axis", 0)) {
            stack(elems, axis, y, "stacked");
            return;
        }
        const auto rank = static_cast<int64_t>(static_dims(elems[0]).size());
        if (axis < -rank || axis >= rank)
            fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
        if (elems.size() == 1) {
            identity(elems[0], y);
            return;
        }
        emit("Concat", elems, {y}, "concat").attributes.emplace("axis", axis < 0 ? axis + rank : axis);
    }
}

void Expander::optional_op() {
    const std::string& op = n.op_type;
    const ValueId y = n.outputs.empty() ? no_value : n.outputs[0];
    if (y == no_value) return;
    if (op == "Optional") {
        if (has(0)) {
            const ValueId x = in(0);
            if (val(x).kind == ValueKind::Optional) fail("input " + quoted(g, x) + " is an optional already");
            set_optional(y, x, val(x).kind, val(x).dtype);
            return;
        }
        const std::string type = n.get_string("type", "");
        const bool seq = type.starts_with("sequence:");
        if (!type.starts_with("tensor:") && !seq) fail("an Optional without input needs a tensor or sequence 'type'");
        const auto d = dtype_from_name(type.substr(type.find(':') + 1));
        set_optional(y, std::nullopt, seq ? ValueKind::Sequence : ValueKind::Tensor, d.value_or(DType::undefined));
    } else if (op == "OptionalHasElement") {
        bool present = has(0);
        if (present && val(in(0)).kind == ValueKind::Optional) {
            if (!val(in(0)).elements) fail("internal: optional " + quoted(g, in(0)) + " is not resolved");
            present = !val(in(0)).elements->empty();
        }
        set_constant(y, TensorData(DType::boolean, {}, {std::byte{static_cast<unsigned char>(present)}}));
    } else if (op == "OptionalGetElement") {
        const ValueId x = in(0);
        if (val(x).kind != ValueKind::Optional) {
            identity(x, y); // a tensor or a sequence is its own element (opset 18)
            return;
        }
        if (!val(x).elements) fail("internal: optional " + quoted(g, x) + " is not resolved");
        if (val(x).elements->empty())
            fail("the optional " + quoted(g, x) + " holds no element");
        identity(val(x).elements->front(), y);
    }
}

void Expander::if_op() {
    const Graph& then_branch = subgraph("then_branch");
    const Graph& else_branch = subgraph("else_branch");
    for (const Graph* b : {&then_branch, &else_branch})
        if (b->outputs().size() != n.outputs.size())
            fail("its " + std::string(b == &then_branch ? "then_branch" : "else_branch") + " has " +
                 std::to_string(b->outputs().size()) + " outputs, the If " + std::to_string(n.outputs.size()));
    const ValueId cond = in(0);
    if (val(cond).is_constant()) {
        const auto c = val(cond).data->to_int64s();
        if (c.size() != 1) fail("its condition must hold one value, holds " + std::to_string(c.size()));
        const bool take = c[0] != 0;
        const auto outs = inline_graph(take ? then_branch : else_branch, {}, take ? "then" : "else");
        for (size_t k = 0; k < outs.size(); ++k)
            if (n.outputs[k] != no_value) identity(outs[k], n.outputs[k]);
        return;
    }
    // Computed on the device: both branches, then a select once their outputs are known.
    const auto t = inline_graph(then_branch, {}, "then");
    const auto e = inline_graph(else_branch, {}, "else");
    std::vector<ValueId> ins = {cond};
    ins.insert(ins.end(), t.begin(), t.end());
    ins.insert(ins.end(), e.begin(), e.end());
    Node& s = emit("IfSelect", ins, n.outputs, "select");
    s.domain = "vkml";
    s.name = n.name; // errors name the If
}

// vkml.IfSelect(cond, then outputs..., else outputs...): per output, Where(cond, then, else).
void Expander::if_select() {
    Node as_if;
    as_if.name = n.name;
    as_if.op_type = "If";
    blame = &as_if;
    const size_t k = n.outputs.size();
    if (n.inputs.size() != 1 + 2 * k) fail("internal: IfSelect with " + std::to_string(n.inputs.size()) + " inputs");
    const ValueId cond = n.inputs[0];
    if (val(cond).is_constant()) { // folded meanwhile (it cannot be, but be exact)
        const bool take = val(cond).data->to_int64s().at(0) != 0;
        for (size_t j = 0; j < k; ++j)
            if (n.outputs[j] != no_value) identity(n.inputs[1 + (take ? j : k + j)], n.outputs[j]);
        blame = nullptr;
        return;
    }
    const std::vector<int64_t> cd = static_dims(cond);
    int64_t count = 1;
    for (int64_t d : cd) count *= d;
    if (count != 1) fail("its condition " + quoted(g, cond) + " must hold one value");
    ValueId c = cond;
    if (!cd.empty()) {
        const ValueId shape = const_ints("cond_shape", {0}, {});
        c = fresh("cond_scalar");
        emit("Reshape", {cond, shape}, {c}, "cond_scalar");
    }
    for (size_t j = 0; j < k; ++j)
        if (n.outputs[j] != no_value) select(c, n.inputs[1 + j], n.inputs[1 + k + j], n.outputs[j], "output " + std::to_string(j));
    blame = nullptr;
}

void Expander::select(ValueId cond, ValueId t, ValueId e, ValueId to, const std::string& what) {
    const Value &a = val(t), &b = val(e);
    auto differ = [&](const std::string& how) {
        fail("its condition " + quoted(g, n.inputs[0]) + " must be a constant: it is computed on the device, so vkml "
             "runs both branches and selects, but they disagree in " + what + " (" + how + ")",
             ErrorCode::Unsupported);
    };
    if (a.kind != b.kind) differ(std::string("a ") + value_kind_name(a.kind) + " and a " + value_kind_name(b.kind));
    if (a.kind == ValueKind::Tensor) {
        const auto sa = static_dims(t), sb = static_dims(e);
        if (sa != sb || a.dtype != b.dtype)
            differ(std::string(dtype_name(a.dtype)) + to_string(Shape(sa)) + " and " + dtype_name(b.dtype) +
                   to_string(Shape(sb)));
        emit("Where", {cond, t, e}, {to}, "where_" + val(to).name);
        return;
    }
    if (!a.elements || !b.elements) fail("internal: unresolved branch outputs");
    // Copies: adding values below moves the graph's values.
    const std::vector<ValueId> ea = *a.elements, eb = *b.elements;
    const ValueKind kind = a.kind, element_kind = a.element_kind;
    const DType dtype = a.dtype;
    if (ea.size() != eb.size())
        differ(std::to_string(ea.size()) + " and " + std::to_string(eb.size()) + " elements");
    std::vector<ValueId> elems;
    for (size_t i = 0; i < ea.size(); ++i) {
        const ValueId x = fresh(val(to).name + "_" + std::to_string(i));
        select(cond, ea[i], eb[i], x, what + " element " + std::to_string(i));
        elems.push_back(x);
    }
    if (kind == ValueKind::Sequence)
        set_sequence(to, std::move(elems), dtype);
    else
        set_optional(to, elems.empty() ? std::nullopt : std::optional<ValueId>(elems[0]), element_kind, dtype);
}

// Loop(M, cond, v_initial...) with body(iteration, cond_in, v_in...) -> (cond_out, v_out...,
// scan_out...). One iteration per expansion: the node comes back with vkml_iteration + 1, the
// body's outputs as its state, and the scan outputs so far (vkml_parts) after its captures.
void Expander::loop_op() {
    const Graph& body = subgraph("body");
    const size_t n_in = onnx_inputs();
    if (n_in < 2) fail("needs the inputs M and cond (either may be empty)");
    const size_t carried = n_in - 2;
    if (body.inputs().size() != carried + 2)
        fail("its body takes " + std::to_string(body.inputs().size()) + " inputs, it must take " +
             std::to_string(carried + 2) + " (iteration number, condition and " + std::to_string(carried) +
             " loop-carried values)");
    if (body.outputs().size() < carried + 1)
        fail("its body has " + std::to_string(body.outputs().size()) + " outputs, fewer than the condition and " +
             std::to_string(carried) + " loop-carried values");
    const size_t scans = body.outputs().size() - 1 - carried;
    if (n.outputs.size() != carried + scans)
        fail("has " + std::to_string(n.outputs.size()) + " outputs, its body gives " +
             std::to_string(carried + scans));
    const int64_t k = n.get_int("vkml_iteration", 0);
    const bool has_m = has(0), has_cond = has(1);
    if (!has_m && !has_cond) fail("has neither a trip count nor a condition: it would never end");
    int64_t trip = 0;
    if (has_m) trip = constant_int(0, "trip count");
    bool go = !has_m || k < trip;
    if (go && has_cond) {
        const TensorData& c = constant(1, k == 0 ? "condition" : "condition (computed by iteration " + std::to_string(k - 1) + ")");
        if (c.elements() != 1) fail("its condition must hold one value");
        go = c.to_int64s()[0] != 0;
    }
    const size_t parts_at = n.inputs.size() - static_cast<size_t>(n.get_int("vkml_parts", 0));
    std::vector<ValueId> parts(n.inputs.begin() + static_cast<std::ptrdiff_t>(parts_at), n.inputs.end());
    if (go) {
        if (k >= max_loop_iterations)
            fail("runs more than " + std::to_string(max_loop_iterations) +
                     " iterations; vkml unrolls loops when it builds a session and goes no further",
                 ErrorCode::Unsupported);
        std::vector<ValueId> actual = {const_ints("iteration_" + std::to_string(k), {}, std::vector<int64_t>{k}),
                                       has_cond ? in(1) : const_bool("cond_" + std::to_string(k), true)};
        for (size_t j = 0; j < carried; ++j) actual.push_back(in(2 + j));
        const auto outs = inline_graph(body, actual, std::to_string(k));
        Node next = n;
        // Without a condition input the body's cond_out is ignored (ONNX: a for loop).
        next.inputs = {has_m ? in(0) : no_value, has_cond ? outs[0] : no_value};
        next.inputs.insert(next.inputs.end(), outs.begin() + 1, outs.begin() + 1 + static_cast<std::ptrdiff_t>(carried));
        const std::size_t captures = n.inputs.size() - n_in - parts.size();
        next.inputs.insert(next.inputs.end(), n.inputs.begin() + static_cast<std::ptrdiff_t>(n_in),
                           n.inputs.begin() + static_cast<std::ptrdiff_t>(n_in + captures));
        next.inputs.insert(next.inputs.end(), parts.begin(), parts.end());
        next.inputs.insert(next.inputs.end(), outs.begin() + 1 + static_cast<std::ptrdiff_t>(carried), outs.end());
        next.attributes.insert_or_assign("vkml_iteration", k + 1);
        next.attributes.insert_or_assign("vkml_parts", static_cast<int64_t>(parts.size() + scans));
        out.push_back(std::move(next));
        return;
    }
    // Done: the carried values and the stacked scan outputs.
    for (size_t j = 0; j < carried; ++j)
        if (n.outputs[j] != no_value) identity(in(2 + j), n.outputs[j]);
    for (size_t s = 0; s < scans; ++s) {
        const ValueId to = n.outputs[carried + s];
        if (to == no_value) continue;
        std::vector<ValueId> mine;
        for (size_t i = s; i < parts.size(); i += scans) mine.push_back(parts[i]);
        if (!mine.empty()) {
            stack(mine, 0, to, "scan_output_" + std::to_string(s));
            continue;
        }
        // No iteration ran: an empty tensor of the body's declared element shape.
        const Value& decl = body.value(body.outputs()[1 + carried + s]);
        const auto sizes = decl.shape ? decl.shape->sizes() : std::nullopt;
        if (!sizes || decl.dtype == DType::undefined)
            fail("ran no iteration, and its body does not declare the dtype and static shape of scan output " +
                 std::to_string(s), ErrorCode::Unsupported);
        std::vector<int64_t> dims = {0};
        dims.insert(dims.end(), sizes->begin(), sizes->end());
        set_constant(to, TensorData(decl.dtype, dims, {}));
    }
}

// Scan: opset 9+ (states..., scan inputs...) with per-input axes and directions; opset 8
// (sequence_lens, states..., scan inputs...) with a batch axis 0 and the scan axis 1.
void Expander::scan_op() {
    const Graph& body = subgraph("body");
    const bool v8 = g.opset_version("") < 9;
    const size_t first = v8 ? 1 : 0;
    const size_t n_in = onnx_inputs();
    const auto m = static_cast<size_t>(n.get_int("num_scan_inputs", -1));
    if (!n.has("num_scan_inputs") || m == 0 || first + m > n_in) fail("num_scan_inputs is missing or out of range");
    const size_t states = n_in - first - m;
    if (body.inputs().size() != states + m)
        fail("its body takes " + std::to_string(body.inputs().size()) + " inputs, it must take " +
             std::to_string(states + m));
    if (body.outputs().size() < states || n.outputs.size() != body.outputs().size())
        fail("its body's outputs do not match the node's");
    const size_t scans = body.outputs().size() - states;
    auto attr = [&](const char* name, size_t count) {
        std::vector<int64_t> v = n.get_ints(name);
        if (v.empty()) v.assign(count, 0);
        if (v.size() != count) fail("attribute '" + std::string(name) + "' must have " + std::to_string(count) + " values");
        return v;
    };
    const std::vector<int64_t> in_dirs = attr(v8 ? "directions" : "scan_input_directions", m);
    const std::vector<int64_t> in_axes = v8 ? std::vector<int64_t>(m, 0) : attr("scan_input_axes", m);
    const std::vector<int64_t> out_dirs = v8 ? std::vector<int64_t>(scans, 0) : attr("scan_output_directions", scans);
    const std::vector<int64_t> out_axes = v8 ? std::vector<int64_t>(scans, 0) : attr("scan_output_axes", scans);

    auto gather = [&](ValueId x, int64_t index, int64_t axis, const std::string& what) {
        const ValueId idx = const_ints(what + "_index", {}, std::vector<int64_t>{index});
        const ValueId y = fresh(what);
        emit("Gather", {x, idx}, {y}, what).attributes.emplace("axis", axis);
        return y;
    };
    // One batch (opset 8) or the whole scan (9+): the states and scan inputs as the body sees
    // them, the final states and the scan outputs per step.
    auto run = [&](std::vector<ValueId> st, const std::vector<ValueId>& xs, const std::vector<std::vector<int64_t>>& xdims,
                   const std::string& tag, std::vector<std::vector<ValueId>>& steps_out) {
        int64_t length = -1;
        std::vector<int64_t> axes(m);
        for (size_t j = 0; j < m; ++j) {
            const auto& d = xdims[j];
            const auto r = static_cast<int64_t>(d.size());
            int64_t a = in_axes[j];
            if (a < -r || a >= r) fail("scan input axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
            if (a < 0) a += r;
            axes[j] = a;
            const int64_t len = d[static_cast<size_t>(a)];
            if (length >= 0 && len != length)
                fail("its scan inputs have different lengths (" + std::to_string(length) + ", " + std::to_string(len) + ")");
            length = len;
        }
        if (length > max_loop_iterations)
            fail("scans " + std::to_string(length) + " steps, more than the " + std::to_string(max_loop_iterations) +
                     " vkml unrolls", ErrorCode::Unsupported);
        if (length == 0) fail("scans a sequence of length 0", ErrorCode::Unsupported);
        for (int64_t t = 0; t < length; ++t) {
            std::vector<ValueId> actual = st;
            for (size_t j = 0; j < m; ++j) {
                const int64_t at = in_dirs[j] ? length - 1 - t : t;
                actual.push_back(gather(xs[j], at, axes[j], tag + "x" + std::to_string(j) + "_" + std::to_string(t)));
            }
            const auto outs = inline_graph(body, actual, tag + std::to_string(t));
            st.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(states));
            steps_out.emplace_back(outs.begin() + static_cast<std::ptrdiff_t>(states), outs.end());
        }
        return st;
    };
    auto scan_parts = [&](const std::vector<std::vector<ValueId>>& steps_out, size_t s) {
        std::vector<ValueId> p;
        for (const auto& step : steps_out) p.push_back(step[s]);
        if (out_dirs[s]) std::reverse(p.begin(), p.end());
        return p;
    };
    std::vector<ValueId> st0, xs;
    std::vector<std::vector<int64_t>> xdims;
    for (size_t j = 0; j < states; ++j) st0.push_back(in(first + j));
    for (size_t j = 0; j < m; ++j) {
        xs.push_back(in(first + states + j));
        xdims.push_back(static_dims(xs.back()));
    }
    if (!v8) {
        std::vector<std::vector<ValueId>> steps_out;
        const auto st = run(st0, xs, xdims, "", steps_out);
        for (size_t j = 0; j < states; ++j)
            if (n.outputs[j] != no_value) identity(st[j], n.outputs[j]);
        for (size_t s = 0; s < scans; ++s)
            if (n.outputs[states + s] != no_value)
                stack(scan_parts(steps_out, s), out_axes[s], n.outputs[states + s], "scan_output_" + std::to_string(s));
        return;
    }
    // Opset 8: every input has the batch first; the body runs per batch element.
    if (has(0)) {
        const auto lens = constant(0, "sequence_lens").to_int64s();
        for (size_t j = 0; j < m; ++j) {
            const auto& d = xdims[j];
            if (d.size() < 2) fail("scan input " + quoted(g, xs[j]) + " needs a batch and a sequence axis");
            for (int64_t l : lens)
                if (l != d[1])
                    fail("sequence_lens differ from the scan inputs' length; vkml scans whole sequences only",
                         ErrorCode::Unsupported);
        }
    }
    int64_t batch = -1;
    for (size_t j = 0; j < m; ++j) {
        const auto& d = xdims[j];
        if (d.empty()) fail("scan input " + quoted(g, xs[j]) + " has no batch axis");
        if (batch >= 0 && d[0] != batch) fail("its inputs have different batch sizes");
        batch = d[0];
    }
    if (batch > max_loop_iterations) fail("its batch is too large to unroll", ErrorCode::Unsupported);
    std::vector<std::vector<ValueId>> final_states(states), outputs(scans);
    for (int64_t b = 0; b < batch; ++b) {
        const std::string tag = "b" + std::to_string(b) + "_";
        std::vector<ValueId> st, x;
        std::vector<std::vector<int64_t>> dims;
        for (size_t j = 0; j < states; ++j) st.push_back(gather(st0[j], b, 0, tag + "state" + std::to_string(j)));
        for (size_t j = 0; j < m; ++j) {
            x.push_back(gather(xs[j], b, 0, tag + "input" + std::to_string(j)));
            dims.emplace_back(xdims[j].begin() + 1, xdims[j].end());
        }
        std::vector<std::vector<ValueId>> steps_out;
        const auto fin = run(st, x, dims, tag, steps_out);
        for (size_t j = 0; j < states; ++j) final_states[j].push_back(fin[j]);
        for (size_t s = 0; s < scans; ++s) {
            const ValueId y = fresh(tag + "scan_output_" + std::to_string(s));
            stack(scan_parts(steps_out, s), 0, y, tag + "scan_output_" + std::to_string(s));
            outputs[s].push_back(y);
        }
    }
    for (size_t j = 0; j < states; ++j)
        if (n.outputs[j] != no_value) stack(final_states[j], 0, n.outputs[j], "state_" + std::to_string(j));
    for (size_t s = 0; s < scans; ++s)
        if (n.outputs[states + s] != no_value) stack(outputs[s], 0, n.outputs[states + s], "output_" + std::to_string(s));
}

// SequenceMap(input_sequence, additional inputs...): the body once per element; sequence inputs
// give it their i-th tensor, tensor inputs themselves; every output is a sequence.
void Expander::sequence_map() {
    const Graph& body = subgraph("body");
    const size_t n_in = onnx_inputs();
    if (body.inputs().size() != n_in) fail("its body takes " + std::to_string(body.inputs().size()) + " inputs, the node has " + std::to_string(n_in));
    if (body.outputs().size() != n.outputs.size()) fail("its body's outputs do not match the node's");
    const size_t len = sequence(0).size();
    for (size_t j = 1; j < n_in; ++j)
        if (val(in(j)).kind == ValueKind::Sequence && sequence(j).size() != len)
            fail("its sequences have different lengths (" + std::to_string(len) + ", " + std::to_string(sequence(j).size()) + ")");
    if (len > static_cast<size_t>(max_loop_iterations)) fail("its sequence is too long to unroll", ErrorCode::Unsupported);
    std::vector<std::vector<ValueId>> results(n.outputs.size());
    for (size_t i = 0; i < len; ++i) {
        std::vector<ValueId> actual;
        for (size_t j = 0; j < n_in; ++j) actual.push_back(val(in(j)).kind == ValueKind::Sequence ? sequence(j)[i] : in(j));
        const auto outs = inline_graph(body, actual, std::to_string(i));
        for (size_t o = 0; o < outs.size(); ++o) {
            // Each element its own value, so the output sequence's tensors are tensors even if the
            // body passes one through.
            const ValueId e = fresh(val(n.outputs[o] == no_value ? outs[o] : n.outputs[o]).name + "_" + std::to_string(i));
            identity(outs[o], e);
            results[o].push_back(e);
        }
    }
    for (size_t o = 0; o < n.outputs.size(); ++o)
        if (n.outputs[o] != no_value) {
            const Value& decl = body.value(body.outputs()[o]);
            set_sequence(n.outputs[o], results[o], decl.dtype);
        }
}

} // namespace

bool structural_op(const Node& node) {
    const detail::OpType* t = detail::find_op_type(node.domain, node.op_type);
    return t && t->expand == detail::Expand::structural;
}

bool resolved_at_build(const Graph& graph, const Node& node) {
    if (structural_op(node)) return true;
    for (ValueId v : node.inputs)
        if (v != no_value && !graph.value(v).is_tensor()) return node.op_type == "Identity" && node.domain.empty();
    return false;
}

std::vector<Node> expand_structural(Graph& graph, const Node& node, ExpandBudget& budget) {
    Expander x{graph, node, budget, {}, nullptr};
    const std::string& op = node.op_type;
    try {
        if (node.domain == "vkml" && op == "IfSelect")
            x.if_select();
        else if (node.domain == "vkml" && op == "Stack")
            x.stack_now(node.inputs, node.get_int("axis", 0), node.outputs.at(0), node.get_string("vkml_what", "stack"));
        else if (op == "Identity") {
            const ValueId in = x.in(0);
            const Value& v = graph.value(in);
            if (!v.elements) graph.fail(node, "internal: its input '" + v.name + "' is not resolved");
            Value& o = graph.value(node.outputs.at(0));
            o.kind = v.kind;
            o.element_kind = v.element_kind;
            o.dtype = v.dtype;
            o.elements = v.elements;
        } else if (op.starts_with("Sequence") && op != "SequenceMap")
            x.sequence_op();
        else if (op == "SplitToSequence" || op == "ConcatFromSequence")
            x.sequence_op();
        else if (op.starts_with("Optional"))
            x.optional_op();
        else if (op == "If")
            x.if_op();
        else if (op == "Loop")
            x.loop_op();
        else if (op == "Scan")
            x.scan_op();
        else if (op == "SequenceMap")
            x.sequence_map();
        else
            graph.fail(node, "internal: not a structural op");
    } catch (const Error& e) {
        graph.fail_for(node, e);
    }
    return std::move(x.out);
}

} // namespace vkml::graph
