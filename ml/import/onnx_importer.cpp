#include "vkml/import/onnx.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <climits>
#include <cstring>
#include <limits>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <type_traits>

#include <onnx/onnx_pb.h>
#include <onnx/onnx-data.pb.h>

#include "import_util.hpp"

namespace vkml::import {

using graph::DType;
using graph::Graph;
using graph::TensorData;
using graph::ValueId;

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; a big-endian host would need byte swapping");

namespace {

// Per-model state: where errors point and where external data lives.
struct Context {
    std::string source;
    std::filesystem::path external_dir;
    int depth = 0;              // subgraph nesting: 0 for the model's graph
    std::vector<graph::OpsetImport> opsets; // the model's, which its subgraphs share

    [[noreturn]] void fail(const std::string& problem, ErrorCode code = ErrorCode::InvalidArgument) const {
        import::fail(source, problem, code);
    }
};

std::string onnx_type_name(int32_t type) {
    if (onnx::TensorProto_DataType_IsValid(type))
        return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(type));
    return "data type " + std::to_string(type);
}

DType to_dtype(int32_t type, const Context& ctx, const std::string& what) {
    switch (type) {
    case onnx::TensorProto_DataType_FLOAT:
        return DType::f32;
    case onnx::TensorProto_DataType_FLOAT16:
        return DType::f16;
    case onnx::TensorProto_DataType_INT32:
        return DType::i32;
    case onnx::TensorProto_DataType_INT64:
        return DType::i64;
    case onnx::TensorProto_DataType_UINT8:
        return DType::u8;
    case onnx::TensorProto_DataType_BOOL:
        return DType::boolean;
    case onnx::TensorProto_DataType_DOUBLE:
        return DType::f64;
    case onnx::TensorProto_DataType_INT8:
        return DType::i8;
    case onnx::TensorProto_DataType_INT16:
        return DType::i16;
    case onnx::TensorProto_DataType_UINT16:
        return DType::u16;
    case onnx::TensorProto_DataType_UINT32:
        return DType::u32;
    case onnx::TensorProto_DataType_UINT64:
        return DType::u64;
    case onnx::TensorProto_DataType_UNDEFINED:
        ctx.fail(what + " has no data type");
    default:
        break;
    }
    if (!onnx::TensorProto_DataType_IsValid(type)) ctx.fail(what + " has an invalid " + onnx_type_name(type));
    ctx.fail(what + " is " + onnx_type_name(type) +
                 "; vkml supports FLOAT, FLOAT16, DOUBLE, INT8-64, UINT8-64 and BOOL",
             ErrorCode::Unsupported);
}

uint64_t parse_uint(const std::string& text, const Context& ctx, const std::string& what) {
    uint64_t v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || p != end || text.empty())
        ctx.fail(what + " is '" + text + "', not a byte count");
    return v;
}

// Reads an initializer stored in a file beside the model (TensorProto.data_location = EXTERNAL).
std::vector<std::byte> read_external(const onnx::TensorProto& t, uint64_t expected, const Context& ctx,
                                     const std::string& what) {
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const auto& entry : t.external_data()) {
        if (entry.key() == "location")
            location = entry.value();
        else if (entry.key() == "offset")
            offset = parse_uint(entry.value(), ctx, what + ": external data offset");
        else if (entry.key() == "length")
            length = parse_uint(entry.value(), ctx, what + ": external data length");
        // "checksum" and unknown keys carry nothing vkml needs.
    }
    if (location.empty()) ctx.fail(what + " is stored externally but names no file (no 'location')");
    if (length && *length != expected)
        ctx.fail(what + " needs " + std::to_string(expected) + " bytes, but its external data length is " +
                 std::to_string(*length));
    const auto path = resolve_beside(ctx.external_dir, location, ctx.source);
    return read_file_range(path, offset, expected, ctx.source);
}

// Copies a repeated typed field (float_data, int32_data, ...) into element bytes, with a range
// check where the field is wider than the element (f16 bits and u8/bool stored in int32_data).
template <class Element, class Field>
std::vector<std::byte> from_field(const Field& field, int64_t n, const Context& ctx, const std::string& what,
                                  const char* field_name) {
    if (static_cast<int64_t>(field.size()) != n)
        ctx.fail(what + " needs " + std::to_string(n) + " values, but " + field_name + " has " +
                 std::to_string(field.size()));
    std::vector<std::byte> bytes(static_cast<size_t>(n) * sizeof(Element));
    for (int64_t i = 0; i < n; ++i) {
        const auto v = field.Get(static_cast<int>(i));
        using Stored = std::remove_cvref_t<decltype(v)>;
        Element e;
        if constexpr (std::is_same_v<Element, Stored>) {
            e = v;
        } else {
            if (v < static_cast<Stored>(std::numeric_limits<Element>::min()) ||
                v > static_cast<Stored>(std::numeric_limits<Element>::max()))
                ctx.fail(what + ": " + field_name + "[" + std::to_string(i) + "] = " + std::to_string(v) +
                         " does not fit the element type");
            e = static_cast<Element>(v);
        }
        std::memcpy(bytes.data() + i * sizeof(Element), &e, sizeof(Element));
    }
    return bytes;
}

TensorData to_tensor(const onnx::TensorProto& t, const Context& ctx, const std::string& what) {
    if (t.has_segment()) ctx.fail(what + " is segmented, which vkml does not read", ErrorCode::Unsupported);
    const DType dtype = to_dtype(t.data_type(), ctx, what);
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    int64_t n = 1;
    for (int64_t d : dims) {
        if (d < 0) ctx.fail(what + " has a negative dimension (" + std::to_string(d) + ")");
        if (d != 0 && n > (int64_t{1} << 40) / d) ctx.fail(what + " has implausibly large dimensions");
        n *= d;
    }
    const uint64_t expected = static_cast<uint64_t>(n) * graph::dtype_size(dtype);
    std::vector<std::byte> bytes;
    if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
        bytes = read_external(t, expected, ctx, what);
    } else if (t.has_raw_data()) {
        if (t.raw_data().size() != expected)
            ctx.fail(what + " (" + onnx_type_name(t.data_type()) + ", " + std::to_string(n) +
                     " elements) needs " + std::to_string(expected) + " bytes of raw_data, but has " +
                     std::to_string(t.raw_data().size()));
        bytes.resize(expected);
        if (expected) std::memcpy(bytes.data(), t.raw_data().data(), expected);
    } else {
        switch (dtype) {
        case DType::f32:
            bytes = from_field<float>(t.float_data(), n, ctx, what, "float_data");
            break;
        case DType::f16: // the bit patterns, one per int32
            bytes = from_field<uint16_t>(t.int32_data(), n, ctx, what, "int32_data");
            break;
        case DType::i32:
            bytes = from_field<int32_t>(t.int32_data(), n, ctx, what, "int32_data");
            break;
        case DType::i64:
            bytes = from_field<int64_t>(t.int64_data(), n, ctx, what, "int64_data");
            break;
        case DType::u8:
        case DType::boolean:
            bytes = from_field<uint8_t>(t.int32_data(), n, ctx, what, "int32_data");
            break;
        case DType::f64:
            bytes = from_field<double>(t.double_data(), n, ctx, what, "double_data");
            break;
        case DType::i8:
            bytes = from_field<int8_t>(t.int32_data(), n, ctx, what, "int32_data");
            break;
        case DType::i16:
            bytes = from_field<int16_t>(t.int32_data(), n, ctx, what, "int32_data");
            break;
        case DType::u16:
            bytes = from_field<uint16_t>(t.int32_data(), n, ctx, what, "int32_data");
            break;
        case DType::u32:
            bytes = from_field<uint32_t>(t.uint64_data(), n, ctx, what, "uint64_data");
            break;
        case DType::u64:
            bytes = from_field<uint64_t>(t.uint64_data(), n, ctx, what, "uint64_data");
            break;
        case DType::undefined:
            break;
        }
    }
    // Booleans are 0 or 1 for every consumer; normalise whatever byte the file used for true.
    if (dtype == DType::boolean)
        for (std::byte& b : bytes) b = b != std::byte{0} ? std::byte{1} : std::byte{0};
    return TensorData(dtype, std::move(dims), std::move(bytes));
}

struct ValueType {
    DType dtype = DType::undefined;
    std::optional<graph::Shape> shape;
    graph::ValueKind kind = graph::ValueKind::Tensor;
    graph::ValueKind element_kind = graph::ValueKind::Tensor;
};

// A TypeProto: a tensor, a sequence of tensors, or an optional of either (the element type and
// shape are the tensors'). Maps, sparse tensors and deeper nestings are Unsupported.
ValueType to_type(const onnx::TypeProto& type, const Context& ctx, const std::string& what, bool required) {
    ValueType out;
    const onnx::TypeProto* t = &type;
    if (t->has_optional_type()) {
        out.kind = graph::ValueKind::Optional;
        if (!t->optional_type().has_elem_type()) ctx.fail(what + " is an optional without an element type");
        t = &t->optional_type().elem_type();
        if (t->has_sequence_type()) out.element_kind = graph::ValueKind::Sequence;
    }
    if (t->has_sequence_type()) {
        if (out.kind == graph::ValueKind::Tensor) out.kind = graph::ValueKind::Sequence;
        if (!t->sequence_type().has_elem_type()) ctx.fail(what + " is a sequence without an element type");
        t = &t->sequence_type().elem_type();
    }
    if (!t->has_tensor_type()) {
        if (t->value_case() == onnx::TypeProto::VALUE_NOT_SET && !required && out.kind == graph::ValueKind::Tensor)
            return {};
        ctx.fail(what + " is not a tensor, a sequence of tensors or an optional of either (maps, sparse "
                        "tensors and nested sequences are not supported)",
                 ErrorCode::Unsupported);
    }
    if (t->tensor_type().elem_type() == onnx::TensorProto_DataType_UNDEFINED && out.kind != graph::ValueKind::Tensor)
        return out; // e.g. an empty optional of unknown type in test data
    out.dtype = to_dtype(t->tensor_type().elem_type(), ctx, what);
    if (t->tensor_type().has_shape()) {
        std::vector<graph::Dim> dims;
        for (const auto& d : t->tensor_type().shape().dim()) {
            if (d.has_dim_value()) {
                if (d.dim_value() < 0)
                    ctx.fail(what + " has a negative dimension (" + std::to_string(d.dim_value()) + ")");
                dims.push_back(graph::Dim::known(d.dim_value()));
            } else {
                dims.push_back(graph::Dim::symbolic(d.has_dim_param() ? d.dim_param() : std::string()));
            }
            dims.back().denotation = d.denotation(); // for overrides by denotation
        }
        out.shape = graph::Shape(std::move(dims));
    }
    return out;
}

ValueType to_value_type(const onnx::ValueInfoProto& info, const Context& ctx, bool required) {
    const std::string what = "value '" + info.name() + "'";
    if (!info.has_type()) {
        if (required) ctx.fail(what + " has no type");
        return {};
    }
    return to_type(info.type(), ctx, what, required);
}

// A TYPE_PROTO attribute (Optional's "type") as text: "tensor:f32", "sequence:i64", "optional:..."
// ("?" for an undefined element type).
std::string type_text(const onnx::TypeProto& type, const Context& ctx, const std::string& what) {
    const ValueType t = to_type(type, ctx, what, true);
    const std::string elem = t.dtype == DType::undefined ? "?" : graph::dtype_name(t.dtype);
    if (t.kind == graph::ValueKind::Optional)
        return std::string("optional:") + (t.element_kind == graph::ValueKind::Sequence ? "sequence:" : "tensor:") + elem;
    return std::string(graph::value_kind_name(t.kind)) + ":" + elem;
}

Graph convert_graph(const onnx::GraphProto& gp, const Context& ctx, bool subgraph);

// Deepest nesting of subgraphs vkml imports (a Loop in an If in a Loop ... ): beyond it a model is
// refused rather than recursed into.
constexpr int max_subgraph_depth = 16;

graph::Attribute to_attribute(const onnx::AttributeProto& a, const Context& ctx, const std::string& where) {
    const std::string what = where + ": attribute '" + a.name() + "'";
    if (!a.ref_attr_name().empty())
        ctx.fail(what + " refers to a function attribute, which is only valid inside a function");
    auto type = a.type();
    if (type == onnx::AttributeProto_AttributeType_UNDEFINED) {
        // Models written before IR version 2 leave the type out; the field that is set tells it.
        if (a.has_f())
            type = onnx::AttributeProto_AttributeType_FLOAT;
        else if (a.has_i())
            type = onnx::AttributeProto_AttributeType_INT;
        else if (a.has_s())
            type = onnx::AttributeProto_AttributeType_STRING;
        else if (a.has_t())
            type = onnx::AttributeProto_AttributeType_TENSOR;
        else if (a.floats_size())
            type = onnx::AttributeProto_AttributeType_FLOATS;
        else if (a.ints_size())
            type = onnx::AttributeProto_AttributeType_INTS;
        else if (a.strings_size())
            type = onnx::AttributeProto_AttributeType_STRINGS;
        else if (a.has_g())
            type = onnx::AttributeProto_AttributeType_GRAPH;
        else if (a.graphs_size())
            type = onnx::AttributeProto_AttributeType_GRAPHS;
        else
            ctx.fail(what + " has no type and no value");
    }
    switch (type) {
    case onnx::AttributeProto_AttributeType_FLOAT:
        return a.f();
    case onnx::AttributeProto_AttributeType_INT:
        return static_cast<int64_t>(a.i());
    case onnx::AttributeProto_AttributeType_STRING:
        return a.s();
    case onnx::AttributeProto_AttributeType_TENSOR:
        return to_tensor(a.t(), ctx, what);
    case onnx::AttributeProto_AttributeType_FLOATS:
        return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto_AttributeType_INTS:
        return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto_AttributeType_STRINGS:
        return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case onnx::AttributeProto_AttributeType_GRAPH: {
        if (!a.has_g()) ctx.fail(what + " is of kind GRAPH but holds no graph");
        if (ctx.depth >= max_subgraph_depth)
            ctx.fail(what + ": subgraphs are nested more than " + std::to_string(max_subgraph_depth) +
                         " deep, beyond what vkml imports",
                     ErrorCode::Unsupported);
        Context inner = ctx;
        ++inner.depth;
        try {
            return std::make_shared<const Graph>(convert_graph(a.g(), inner, true));
        } catch (const Error& e) {
            const std::string m = e.what();
            const std::string prefix = "'" + ctx.source + "': ";
            throw Error(e.code(), prefix + what + ": " + (m.starts_with(prefix) ? m.substr(prefix.size()) : m));
        }
    }
    case onnx::AttributeProto_AttributeType_GRAPHS:
        ctx.fail(what + " is a list of subgraphs, which vkml does not support", ErrorCode::Unsupported);
    case onnx::AttributeProto_AttributeType_TYPE_PROTO:
        return type_text(a.tp(), ctx, what);
    default:
        break;
    }
    if (!onnx::AttributeProto_AttributeType_IsValid(type))
        ctx.fail(what + " has an invalid attribute type " + std::to_string(type));
    ctx.fail(what + " is of kind " + onnx::AttributeProto_AttributeType_Name(type) +
                 ", which vkml does not support",
             ErrorCode::Unsupported);
}

bool is_default_domain(const std::string& domain) {
    return domain.empty() || domain == "ai.onnx";
}

// An ONNX Constant node's value, which the graph keeps as a constant rather than as a node.
TensorData constant_value(const onnx::NodeProto& node, const Context& ctx, const std::string& where) {
    if (node.attribute_size() != 1) ctx.fail(where + " must have exactly one value attribute");
    const onnx::AttributeProto& a = node.attribute(0);
    const graph::Attribute value = to_attribute(a, ctx, where);
    const std::string& name = a.name();
    try {
        if (name == "value") return value.as_tensor();
        if (name == "value_float") return TensorData::scalar(value.as_float());
        if (name == "value_floats") {
            const auto& v = value.as_floats();
            return TensorData::from_floats({static_cast<int64_t>(v.size())}, v);
        }
        if (name == "value_int") {
            const int64_t v = value.as_int();
            return TensorData::from_int64s({}, std::span<const int64_t>(&v, 1));
        }
        if (name == "value_ints") {
            const auto& v = value.as_ints();
            return TensorData::from_int64s({static_cast<int64_t>(v.size())}, v);
        }
    } catch (const Error& e) {
        ctx.fail(where + ": attribute '" + name + "': " + e.what());
    }
    ctx.fail(where + ": constant attribute '" + name +
                 "' is not supported (strings and sparse tensors are not)",
             ErrorCode::Unsupported);
}

Graph convert(const onnx::ModelProto& model, Context& ctx) {
    // An empty or cut-off file can still parse as a (mostly empty) ModelProto, so check that the
    // parts every model has are there before trusting anything else.
    if (!model.has_ir_version())
        ctx.fail("is not an ONNX model: it has no ir_version (empty, truncated or not ONNX)");
    if (!model.has_graph()) ctx.fail("is not a complete ONNX model: it has no graph (truncated?)");
    Graph meta;
    for (const auto& o : model.opset_import()) {
        const std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
        if (meta.opset_version(domain) != 0) ctx.fail("imports operator set '" + o.domain() + "' twice");
        meta.opsets.push_back({domain, o.version()});
    }
    if (meta.opsets.empty()) ctx.fail("imports no operator set: truncated, or not ONNX");
    const int64_t opset = meta.opset_version("");
    if (opset == 0) {
        // Legal for a model whose nodes all live in other domains (e.g. training ops).
        for (const auto& n : model.graph().node())
            if (is_default_domain(n.domain()))
                ctx.fail("node '" + n.name() + "' (" + n.op_type() +
                         ") is in the default domain, but the model imports no version of ai.onnx");
    } else if (opset < onnx_min_opset || opset > onnx_max_opset)
        ctx.fail("uses ai.onnx opset " + std::to_string(opset) + "; vkml reads opsets " +
                     std::to_string(onnx_min_opset) + " to " + std::to_string(onnx_max_opset),
                 ErrorCode::Unsupported);
    ctx.opsets = meta.opsets;
    Graph g = convert_graph(model.graph(), ctx, false);
    g.metadata["ir_version"] = std::to_string(model.ir_version());
    if (!model.producer_name().empty())
        g.metadata["producer"] =
            model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
    for (const auto& p : model.metadata_props()) g.metadata["onnx:" + p.key()] = p.value();
    return g;
}

// The model's graph, or (subgraph) a body or branch of a control-flow node: then a name no node,
// input or initializer of its own defines is an outer-scope value, which becomes one of the
// subgraph's captures(); the node owning a subgraph reads every value its subgraphs capture as an
// extra input, listed by name in its attribute vkml_captures.
Graph convert_graph(const onnx::GraphProto& gp, const Context& ctx, bool subgraph) {
    Graph g;
    g.source = ctx.source;
    g.format = "onnx";
    g.name = gp.name();
    g.opsets = ctx.opsets;
    const int64_t opset = g.opset_version("");
    const std::string where_graph = subgraph ? "subgraph '" + gp.name() + "' " : std::string();
    if (gp.sparse_initializer_size())
        ctx.fail("has sparse initializers ('" + gp.sparse_initializer(0).values().name() +
                     "'), which vkml does not read",
                 ErrorCode::Unsupported);
    for (const auto& t : gp.initializer()) {
        if (t.name().empty()) ctx.fail("has an initializer without a name");
        if (g.find(t.name()) != graph::no_value) ctx.fail("has two initializers named '" + t.name() + "'");
        g.add_constant(t.name(), to_tensor(t, ctx, "initializer '" + t.name() + "'"));
    }
    for (const auto& in : gp.input()) {
        if (in.name().empty()) ctx.fail("has a graph input without a name");
        // Before IR version 4 initializers were listed as inputs too; they stay constants.
        if (const ValueId v = g.find(in.name()); v != graph::no_value) {
            if (g.value(v).is_constant()) continue;
            ctx.fail("lists graph input '" + in.name() + "' twice");
        }
        ValueType t = to_value_type(in, ctx, !subgraph); // a body's inputs may leave their type out
        const ValueId v = g.add_value(in.name(), t.dtype, std::move(t.shape));
        g.value(v).kind = t.kind;
        g.value(v).element_kind = t.element_kind;
        g.inputs().push_back(v);
    }
    // An outer-scope value a subgraph reads (see convert_graph).
    auto capture = [&](const std::string& name) {
        const ValueId v = g.add_value(name);
        g.captures().push_back(v);
        return v;
    };
    std::map<std::string, ValueType, std::less<>> declared; // value_info: types of intermediate values
    for (const auto& vi : gp.value_info()) declared[vi.name()] = to_value_type(vi, ctx, false);

    // First create every node output, so nodes may appear in any order in the file, then wire
    // the inputs and sort.
    struct Pending {
        const onnx::NodeProto* proto;
        std::string name;
        std::string where;
    };
    std::vector<Pending> pending;
    // Identity nodes made here (an inlined If branch's outputs); a deque keeps their addresses.
    std::deque<google::protobuf::RepeatedPtrField<onnx::NodeProto>> made;
    // The nodes of the graph, and of every If whose condition is a constant by now (an
    // initializer or a Constant node before it): the branch it takes is inlined in its place, its
    // outputs passed on to the If's by Identity nodes, so the branch not taken never matters. An
    // If whose condition is computed stays, and is refused below as control flow.
    std::function<void(const google::protobuf::RepeatedPtrField<onnx::NodeProto>&, const std::string&)> add_nodes =
        [&](const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, const std::string& scope) {
            for (int i = 0; i < nodes.size(); ++i) {
                const onnx::NodeProto& np = nodes.Get(i);
                const std::string node_name =
                    np.name().empty() ? scope + np.op_type() + "_" + std::to_string(i) : np.name();
                const std::string where = "node '" + node_name + "' (" + np.op_type() + ")";
                if (np.op_type().empty()) ctx.fail("node #" + std::to_string(i) + " has no op_type");
                if (np.op_type() == "Constant" && is_default_domain(np.domain())) {
                    if (np.output_size() != 1 || np.output(0).empty())
                        ctx.fail(where + " must have exactly one output");
                    if (g.find(np.output(0)) != graph::no_value)
                        ctx.fail(where + ": its output '" + np.output(0) + "' is already produced elsewhere");
                    g.add_constant(np.output(0), constant_value(np, ctx, where));
                    continue;
                }
                if (np.op_type() == "If" && is_default_domain(np.domain()) && np.input_size() == 1 && !subgraph) {
                    const graph::ValueId c = g.find(np.input(0));
                    if (c != graph::no_value && g.value(c).is_constant()) {
                        const auto cond = g.value(c).data->to_int64s();
                        if (cond.size() != 1) ctx.fail(where + ": the condition must hold one value");
                        const char* taken = cond[0] ? "then_branch" : "else_branch";
                        const onnx::GraphProto* branch = nullptr;
                        for (const auto& a : np.attribute())
                            if (a.name() == taken && a.has_g()) branch = &a.g();
                        if (!branch) ctx.fail(where + " has no " + taken);
                        if (branch->output_size() != np.output_size())
                            ctx.fail(where + ": its " + taken + " has " + std::to_string(branch->output_size()) +
                                     " outputs, the If " + std::to_string(np.output_size()));
                        for (const auto& t : branch->initializer()) {
                            if (g.find(t.name()) != graph::no_value)
                                ctx.fail(where + ": " + taken + "'s initializer '" + t.name() +
                                         "' has the name of another value");
                            g.add_constant(t.name(), to_tensor(t, ctx, "initializer '" + t.name() + "'"));
                        }
                        add_nodes(branch->node(), node_name + "/");
                        auto& pass = made.emplace_back();
                        for (int k = 0; k < np.output_size(); ++k) {
                            if (np.output(k).empty()) continue;
                            onnx::NodeProto& id = *pass.Add();
                            id.set_op_type("Identity");
                            id.set_name(node_name + "/" + taken + "_output_" + std::to_string(k));
                            id.add_input(branch->output(k).name());
                            id.add_output(np.output(k));
                        }
                        add_nodes(pass, node_name + "/");
                        continue;
                    }
                }
                for (const std::string& out : np.output()) {
                    if (out.empty()) continue;
                    if (g.find(out) != graph::no_value)
                        ctx.fail(where + ": its output '" + out + "' is already produced elsewhere");
                    ValueType t;
                    if (auto it = declared.find(out); it != declared.end()) t = it->second;
                    const ValueId v = g.add_value(out, t.dtype, std::move(t.shape));
                    g.value(v).kind = t.kind;
                    g.value(v).element_kind = t.element_kind;
                }
                pending.push_back({&np, node_name, where});
            }
        };
    add_nodes(gp.node(), "");
    for (const Pending& p : pending) {
        const onnx::NodeProto& np = *p.proto;
        std::vector<ValueId> inputs, outputs;
        for (const std::string& in : np.input()) {
            if (in.empty()) {
                inputs.push_back(graph::no_value);
                continue;
            }
            ValueId v = g.find(in);
            if (v == graph::no_value) {
                if (!subgraph)
                    ctx.fail(p.where + ": input '" + in + "' is produced by no node, graph input or initializer");
                v = capture(in);
            }
            inputs.push_back(v);
        }
        for (const std::string& out : np.output())
            outputs.push_back(out.empty() ? graph::no_value : g.find(out));
        if (opset < 7 && is_default_domain(np.domain()) && !onnx_old_opset_op(np.op_type()))
            ctx.fail(p.where + ": the model imports ai.onnx opset " + std::to_string(opset) + "; " +
                         np.op_type() +
                         " changed meaning before opset 7, and vkml reads it from opset 7 on (re-export the "
                         "model with a newer opset)",
                     ErrorCode::Unsupported);
        graph::Node& n = g.add_node(np.op_type(), std::move(inputs), std::move(outputs), p.name);
        n.domain = is_default_domain(np.domain()) ? "" : np.domain();
        std::vector<std::string> captured; // by the node's subgraphs, in order of first use
        for (const auto& a : np.attribute()) {
            if (n.attributes.count(a.name())) ctx.fail(p.where + " has attribute '" + a.name() + "' twice");
            if (a.name().starts_with("vkml_")) ctx.fail(p.where + " has attribute '" + a.name() + "', a name vkml reserves");
            graph::Attribute attr = to_attribute(a, ctx, where_graph + p.where);
            if (attr.kind() == graph::AttributeKind::Graph)
                for (ValueId c : attr.as_graph().captures()) {
                    const std::string& name = attr.as_graph().value(c).name;
                    if (std::find(captured.begin(), captured.end(), name) == captured.end()) captured.push_back(name);
                }
            n.attributes.emplace(a.name(), std::move(attr));
        }
        if (!captured.empty()) {
            // The outer-scope values the subgraphs read become inputs of the node itself.
            const size_t node_index = g.nodes().size() - 1;
            std::vector<ValueId> extra;
            for (const std::string& name : captured) {
                ValueId v = g.find(name);
                if (v == graph::no_value) {
                    if (!subgraph)
                        ctx.fail(p.where + ": its subgraph reads '" + name +
                                 "', which no node, graph input or initializer produces");
                    v = capture(name);
                }
                extra.push_back(v);
            }
            graph::Node& owner = g.nodes()[node_index];
            owner.inputs.insert(owner.inputs.end(), extra.begin(), extra.end());
            owner.attributes.emplace("vkml_captures", captured);
        }
    }
    for (const auto& out : gp.output()) {
        ValueId v = g.find(out.name());
        if (v == graph::no_value) {
            if (!subgraph)
                ctx.fail("graph output '" + out.name() + "' is produced by no node, graph input or initializer");
            v = capture(out.name()); // a body passing an outer value on
        }
        ValueType t = to_value_type(out, ctx, false);
        graph::Value& value = g.value(v);
        if (value.dtype == DType::undefined) value.dtype = t.dtype;
        if (!value.shape) value.shape = std::move(t.shape);
        if (value.kind == graph::ValueKind::Tensor && t.kind != graph::ValueKind::Tensor) {
            value.kind = t.kind;
            value.element_kind = t.element_kind;
        }
        g.outputs().push_back(v);
    }
    if (g.outputs().empty()) ctx.fail(where_graph + "has no graph outputs");
    g.sort_topologically();
    g.validate();
    return g;
}

// Guards the protobuf library's global state we rely on: it must be the version the headers
// were written for (a mismatch would corrupt memory rather than fail).
void check_protobuf_version() {
    static const bool checked = [] {
        GOOGLE_PROTOBUF_VERIFY_VERSION;
        return true;
    }();
    (void)checked;
}

} // namespace

bool onnx_old_opset_op(std::string_view op_type) {
    // Element-wise ops of one input, the global pools and InstanceNormalization: only
    // consumed_inputs (a legacy memory hint) or nothing at all distinguishes opsets 1-6 from
    // today's versions.
    static const std::set<std::string_view> same = {
        "Abs",      "Ceil",     "Elu",    "Exp",          "Floor",   "HardSigmoid",       "Identity",
        "LeakyRelu", "Log",     "Neg",    "Not",          "Reciprocal", "Relu",           "Selu",
        "Sigmoid",  "Softplus", "Softsign", "Sqrt",       "Tanh",    "GlobalAveragePool", "GlobalMaxPool",
        "InstanceNormalization", "ReduceLogSum"};
    return same.count(op_type) > 0;
}

Graph load_onnx_bytes(std::span<const std::byte> bytes, const std::string& source,
                      const OnnxOptions& options) {
    check_protobuf_version();
    Context ctx{source, options.external_data_dir, 0, {}};
    if (bytes.size() > static_cast<size_t>(INT_MAX))
        ctx.fail("is over 2 GiB, the limit of a protobuf message; store the weights as external data",
                 ErrorCode::Unsupported);
    onnx::ModelProto model;
    if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        ctx.fail("is not a valid ONNX model: protobuf parsing failed (truncated or corrupted file?)");
    return convert(model, ctx);
}

Graph load_onnx(const std::filesystem::path& path, const OnnxOptions& options) {
    const std::vector<std::byte> bytes = read_file(path);
    OnnxOptions o = options;
    if (o.external_data_dir.empty())
        o.external_data_dir = path.parent_path().empty() ? "." : path.parent_path();
    return load_onnx_bytes(bytes, path.string(), o);
}

NamedTensor load_onnx_tensor(const std::filesystem::path& path) {
    check_protobuf_version();
    const std::vector<std::byte> bytes = read_file(path, INT_MAX);
    onnx::TensorProto t;
    Context ctx{path.string(), path.parent_path(), 0, {}};
    if (!t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        ctx.fail("is not a valid ONNX tensor: protobuf parsing failed (truncated or corrupted file?)");
    if (!t.has_data_type()) ctx.fail("is not an ONNX tensor: it has no data type");
    return {t.name(), to_tensor(t, ctx, "tensor '" + t.name() + "'")};
}

NamedValue load_onnx_value(const std::filesystem::path& path, graph::ValueKind kind) {
    check_protobuf_version();
    if (kind == graph::ValueKind::Tensor) {
        NamedTensor t = load_onnx_tensor(path);
        return {t.name, kind, true, {std::move(t.data)}};
    }
    const std::vector<std::byte> bytes = read_file(path, INT_MAX);
    Context ctx{path.string(), path.parent_path(), 0, {}};
    auto sequence = [&](const onnx::SequenceProto& s, NamedValue& v) {
        if (s.elem_type() != onnx::SequenceProto::TENSOR && s.tensor_values_size())
            ctx.fail("holds a sequence of something other than tensors", ErrorCode::Unsupported);
        for (const auto& t : s.tensor_values())
            v.tensors.push_back(to_tensor(t, ctx, "sequence '" + s.name() + "' element"));
    };
    NamedValue v;
    v.kind = kind;
    if (kind == graph::ValueKind::Sequence) {
        onnx::SequenceProto s;
        if (!s.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
            ctx.fail("is not a valid ONNX sequence: protobuf parsing failed");
        v.name = s.name();
        sequence(s, v);
        return v;
    }
    onnx::OptionalProto o;
    if (!o.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        ctx.fail("is not a valid ONNX optional: protobuf parsing failed");
    v.name = o.name();
    if (o.has_tensor_value()) {
        v.tensors.push_back(to_tensor(o.tensor_value(), ctx, "optional '" + o.name() + "'"));
    } else if (o.has_sequence_value()) {
        sequence(o.sequence_value(), v);
    } else if (o.elem_type() == onnx::OptionalProto::UNDEFINED) {
        v.present = false;
    } else {
        ctx.fail("holds an optional of a kind vkml does not read", ErrorCode::Unsupported);
    }
    return v;
}

} // namespace vkml::import
