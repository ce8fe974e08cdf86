// TF.js graph models: TensorFlow GraphDef nodes translated one by one with TF semantics kept (see
// vkml/import/tfjs.hpp). NHWC operators run as their NCHW ONNX counterparts between Transposes;
// Transpose pairs that meet are cancelled afterwards.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "graph_builder.hpp"
#include "import_util.hpp"
#include "json_view.hpp"
#include "tfjs_weights.hpp"
#include "transpose_cleanup.hpp"
#include "vkml/import/tfjs.hpp"

namespace vkml::import {

using graph::DType;
using graph::Graph;
using graph::TensorData;
using graph::ValueId;

namespace {

std::string base64_decode(const std::string& in, const JsonView& where) {
    auto digit = [&](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+' || c == '-') return 62;
        if (c == '/' || c == '_') return 63;
        where.fail("invalid base64 text '" + in + "'");
    };
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    for (char c : in) {
        if (c == '=') break;
        acc = (acc << 6) | static_cast<uint32_t>(digit(c));
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xff));
        }
    }
    return out;
}

DType dtype_of(const std::string& tf, const JsonView& where) {
    if (tf == "DT_FLOAT") return DType::f32;
    if (tf == "DT_HALF") return DType::f16;
    if (tf == "DT_INT32") return DType::i32;
    if (tf == "DT_INT64") return DType::i64;
    if (tf == "DT_UINT8") return DType::u8;
    if (tf == "DT_BOOL") return DType::boolean;
    where.fail("TensorFlow type " + tf + " is not supported");
}

int64_t onnx_type_code(DType d) { // TensorProto.DataType numbers, for Cast's "to"
    switch (d) {
    case DType::f32:
        return 1;
    case DType::u8:
        return 2;
    case DType::i32:
        return 6;
    case DType::i64:
        return 7;
    case DType::boolean:
        return 9;
    case DType::f16:
        return 10;
    default:
        return 0;
    }
}

const std::vector<int64_t> to_nchw = {0, 3, 1, 2}, to_nhwc = {0, 2, 3, 1};

class GraphImporter {
public:
    GraphImporter(const std::filesystem::path& path, const nlohmann::json& root)
        : path_(path), file_(path.string()), root_(root, "", file_), b_(g_) {}
    Graph run();

private:
    struct TfNode {
        std::string name, op;
        std::vector<std::string> inputs; // tensor names, control inputs dropped
        JsonView json;
    };

    [[noreturn]] void fail_node(const std::string& problem,
                                ErrorCode code = ErrorCode::InvalidArgument) const {
        import::fail(file_, "node '" + node_->name + "' (" + node_->op + "): " + problem, code);
    }
    // Attributes of the current node.
    std::optional<JsonView> attr(const std::string& key) const {
        auto a = node_->json.get("attr");
        return a ? a->get(key) : std::nullopt;
    }
    std::string attr_string(const std::string& key, const std::string& fallback) const {
        auto a = attr(key);
        return a && a->has("s") ? base64_decode(a->at("s").as_string(), *a) : fallback;
    }
    std::vector<int64_t> attr_ints(const std::string& key, std::vector<int64_t> fallback) const {
        auto a = attr(key);
        if (!a) return fallback;
        auto list = a->get("list");
        if (!list) return fallback;
        auto i = list->get("i");
        if (!i) return {};
        std::vector<int64_t> out;
        for (const JsonView& v : i->items()) out.push_back(v.is_string() ? parse_int(v) : v.as_int());
        return out;
    }
    double attr_float(const std::string& key, double fallback) const {
        auto a = attr(key);
        return a && a->has("f") ? a->at("f").as_number() : fallback;
    }
    bool attr_bool(const std::string& key, bool fallback) const {
        auto a = attr(key);
        return a && a->has("b") ? a->at("b").as_bool() : fallback;
    }
    int64_t attr_int(const std::string& key, int64_t fallback) const {
        auto a = attr(key);
        if (!a || !a->has("i")) return fallback;
        const JsonView v = a->at("i");
        return v.is_string() ? parse_int(v) : v.as_int();
    }
    DType attr_type(const std::string& key, DType fallback) const {
        auto a = attr(key);
        return a && a->has("type") ? dtype_of(a->at("type").as_string(), *a) : fallback;
    }
    static int64_t parse_int(const JsonView& v) { // GraphDef JSON writes int64 as strings
        const std::string& s = v.as_string();
        size_t used = 0;
        int64_t r = 0;
        try {
            r = std::stoll(s, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != s.size() || s.empty()) v.fail("'" + s + "' is not an integer");
        return r;
    }

    ValueId input(size_t i) const {
        if (i >= node_->inputs.size()) fail_node("expects at least " + std::to_string(i + 1) + " inputs");
        auto it = values_.find(node_->inputs[i]);
        if (it == values_.end()) fail_node("input '" + node_->inputs[i] + "' is produced by no node");
        return it->second;
    }
    const TensorData& constant_input(size_t i, const char* what) const {
        const graph::Value& v = g_.value(input(i));
        if (!v.data) fail_node(std::string(what) + " must be a constant", ErrorCode::Unsupported);
        return *v.data;
    }
    std::vector<int64_t> constant_ints(size_t i, const char* what) const {
        const TensorData& d = constant_input(i, what);
        if (d.dtype() != DType::i32 && d.dtype() != DType::i64)
            fail_node(std::string(what) + " must be integers");
        return d.to_int64s();
    }
    void define(const std::string& tensor, ValueId v) { values_[tensor] = v; }
    // Adds the node's main output under its TF name.
    ValueId emit(const std::string& op, std::vector<ValueId> in, Attributes a = {}, DType dt = DType::f32) {
        const ValueId v = b_.node(op, std::move(in), node_->name, std::move(a), dt);
        define(node_->name, v);
        return v;
    }
    DType t() const { return attr_type("T", DType::f32); }

    ValueId nchw(ValueId x) {
        return b_.node("Transpose", {x}, node_->name + "/to_nchw", {{"perm", to_nchw}});
    }
    ValueId nhwc_out(ValueId y) {
        const ValueId v = b_.node("Transpose", {y}, node_->name, {{"perm", to_nhwc}});
        define(node_->name, v);
        return v;
    }
    bool is_nhwc() const {
        const std::string f = attr_string("data_format", "NHWC");
        if (f != "NHWC" && f != "NCHW")
            fail_node("data_format " + f + " is not supported", ErrorCode::Unsupported);
        return f == "NHWC";
    }
    Attributes padding(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                       const std::vector<int64_t>& dilations);

    void constant(const TfNode& n);
    void placeholder(const TfNode& n);
    void translate(const TfNode& n);
    void conv(bool depthwise, bool fused);
    void add(const std::string& op);

    std::filesystem::path path_;
    std::string file_;
    JsonView root_;
    Graph g_;
    GraphBuilder b_;
    std::unique_ptr<TfjsWeights> weights_;
    const TfNode* node_ = nullptr;
    std::map<std::string, ValueId> values_; // TF tensor name ("node" or "node:1") -> value
    std::map<std::string, int> readers_;    // TF node name -> number of reading nodes
    std::map<ValueId, size_t> conv_output_; // NHWC output of a bias-less Conv -> its node index
};

Attributes GraphImporter::padding(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& dilations) {
    const std::string p = attr_string("padding", "VALID");
    if (p == "VALID") return {{"pads", std::vector<int64_t>{0, 0, 0, 0}}};
    if (p == "SAME") {
        if (strides[0] == 1 && strides[1] == 1) {
            std::vector<int64_t> pads(4);
            for (int i = 0; i < 2; ++i) {
                const int64_t total =
                    dilations[static_cast<size_t>(i)] * (kernel[static_cast<size_t>(i)] - 1);
                pads[static_cast<size_t>(i)] = total / 2;
                pads[static_cast<size_t>(i + 2)] = total - total / 2;
            }
            return {{"pads", pads}};
        }
        return {{"auto_pad", "SAME_UPPER"}};
    }
    if (p == "EXPLICIT") {
        const auto e = attr_ints("explicit_paddings", {}); // [[n],[h],[w],[c]] begin/end pairs, NHWC
        if (e.size() != 8) fail_node("explicit_paddings must have 8 values");
        return {{"pads", std::vector<int64_t>{e[2], e[4], e[3], e[5]}}};
    }
    fail_node("padding " + p + " is not supported", ErrorCode::Unsupported);
}

void GraphImporter::conv(bool depthwise, bool fused) {
    if (!is_nhwc()) fail_node("NCHW convolutions are not supported", ErrorCode::Unsupported);
    const TensorData& filter = constant_input(1, "the filter");
    if (filter.dims().size() != 4) fail_node("the filter must have rank 4");
    const auto s = attr_ints("strides", {1, 1, 1, 1}), d = attr_ints("dilations", {1, 1, 1, 1});
    if (s.size() != 4 || d.size() != 4) fail_node("strides and dilations need 4 values");
    const std::vector<int64_t> kernel = {filter.dims()[0], filter.dims()[1]}, strides = {s[1], s[2]},
                               dil = {d[1], d[2]};
    Attributes a = padding(kernel, strides, dil);
    a.push_back({"kernel_shape", kernel});
    a.push_back({"strides", strides});
    a.push_back({"dilations", dil});
    a.push_back({"group", depthwise ? filter.dims()[2] : int64_t{1}});
    std::vector<ValueId> in = {nchw(input(0)),
                               b_.constant(node_->name + "/filter", hwio_to_oihw(filter, depthwise))};
    std::string activation;
    if (fused) {
        const auto ops = [&] {
            std::vector<std::string> out;
            if (auto f = attr("fused_ops"); f && f->has("list") && f->at("list").has("s"))
                for (const JsonView& v : f->at("list").at("s").items())
                    out.push_back(base64_decode(v.as_string(), v));
            return out;
        }();
        size_t k = 0;
        if (k < ops.size() && ops[k] == "BiasAdd") {
            in.push_back(input(2));
            ++k;
        }
        if (k < ops.size()) activation = ops[k++];
        if (k != ops.size() || (!ops.empty() && ops[0] != "BiasAdd"))
            fail_node("fused operations other than BiasAdd followed by an activation are not supported",
                      ErrorCode::Unsupported);
    }
    ValueId y = b_.node("Conv", in, node_->name + "/conv", std::move(a));
    const size_t conv_index = g_.nodes().size() - 1;
    if (activation == "Relu")
        y = b_.node("Relu", {y}, node_->name + "/act");
    else if (activation == "Relu6")
        y = b_.node("Clip", {y, b_.scalar(node_->name + "/min", 0), b_.scalar(node_->name + "/max", 6)},
                    node_->name + "/act");
    else if (activation == "LeakyRelu")
        y = b_.node("LeakyRelu", {y}, node_->name + "/act",
                    {{"alpha", static_cast<float>(attr_float("leakyrelu_alpha", 0.2))}});
    else if (activation == "Elu")
        y = b_.node("Elu", {y}, node_->name + "/act");
    else if (activation == "Sigmoid")
        y = b_.node("Sigmoid", {y}, node_->name + "/act");
    else if (!activation.empty())
        fail_node("fused activation " + activation + " is not supported", ErrorCode::Unsupported);
    const ValueId out = nhwc_out(y);
    if (!fused) conv_output_[out] = conv_index; // a following bias Add may fold into it
}

void GraphImporter::add(const std::string& op) {
    const ValueId a = input(0), b = input(1);
    // Conv2D then BiasAdd/Add of a per-channel constant is how TF writes a biased convolution:
    // hand the bias to the Conv (when nothing else reads the bare convolution).
    if (op == "Add") {
        auto it = conv_output_.find(a);
        const graph::Value& bias = g_.value(b);
        if (it != conv_output_.end() && bias.data && bias.data->dtype() == DType::f32 &&
            bias.data->dims().size() == 1 &&
            readers_[node_->inputs[0].substr(0, node_->inputs[0].find(':'))] == 1) {
            graph::Node& conv_node = g_.nodes()[it->second];
            const int64_t channels = g_.value(conv_node.inputs[1]).data->dims()[0];
            if (conv_node.inputs.size() == 2 && bias.data->dims()[0] == channels) {
                conv_node.inputs.push_back(b);
                define(node_->name, a);
                conv_output_.erase(it);
                return;
            }
        }
    }
    emit(op, {a, b}, {}, t());
}

void GraphImporter::constant(const TfNode& n) {
    const TensorData* w = weights_->find(n.name);
    if (!w) {
        // Small constants may be written inline; tfjs' converter moves every Const into the
        // weights, so only empty tensors are expected here.
        n.json.fail("constant '" + n.name + "' is not in the weights manifest");
    }
    TensorData data = *w;
    // The converter stores int64 constants as int32; the graph's dtype says what they are.
    const DType declared = attr_type("dtype", data.dtype());
    if (declared == DType::i64 && data.dtype() == DType::i32) {
        const auto v = data.to_int64s();
        data = TensorData::from_int64s(data.dims(), v);
    }
    define(n.name, g_.add_constant(n.name, std::move(data)));
}

void GraphImporter::placeholder(const TfNode& n) {
    std::vector<graph::Dim> dims;
    if (auto s = attr("shape"); s && s->has("shape") && s->at("shape").has("dim")) {
        const auto ds = s->at("shape").at("dim").items();
        for (size_t i = 0; i < ds.size(); ++i) {
            const int64_t v = ds[i].has("size") ? parse_int(ds[i].at("size")) : -1;
            if (v >= 0)
                dims.push_back(graph::Dim::known(v));
            else
                dims.push_back(graph::Dim::symbolic(i == 0 ? "batch" : n.name + "_d" + std::to_string(i)));
        }
    }
    const ValueId v = g_.add_value(n.name, attr_type("dtype", DType::f32), graph::Shape(std::move(dims)));
    g_.inputs().push_back(v);
    define(n.name, v);
}

void GraphImporter::translate(const TfNode& n) {
    node_ = &n;
    const std::string& op = n.op;
    auto unary = [&](const char* onnx, Attributes a = {}) { emit(onnx, {input(0)}, std::move(a), t()); };
    if (op == "Const") return constant(n);
    if (op == "Placeholder") return placeholder(n);
    if (op == "NoOp") return;
    if (op == "Identity" || op == "StopGradient" || op == "Snapshot") return unary("Identity");
    if (op == "Conv2D") return conv(false, false);
    if (op == "DepthwiseConv2dNative") return conv(true, false);
    if (op == "_FusedConv2D") return conv(false, true);
    if (op == "FusedDepthwiseConv2dNative") return conv(true, true);
    if (op == "Add" || op == "AddV2" || op == "BiasAdd") return add("Add");
    if (op == "Sub") return emit("Sub", {input(0), input(1)}, {}, t()), void();
    if (op == "Mul") return emit("Mul", {input(0), input(1)}, {}, t()), void();
    if (op == "RealDiv" || op == "Div") return emit("Div", {input(0), input(1)}, {}, t()), void();
    if (op == "Maximum") return emit("Max", {input(0), input(1)}, {}, t()), void();
    if (op == "Minimum") return emit("Min", {input(0), input(1)}, {}, t()), void();
    if (op == "Pow") return emit("Pow", {input(0), input(1)}, {}, t()), void();
    if (op == "Relu") return unary("Relu");
    if (op == "Sigmoid") return unary("Sigmoid");
    if (op == "Tanh") return unary("Tanh");
    if (op == "Elu") return unary("Elu");
    if (op == "Selu") return unary("Selu");
    if (op == "Softplus") return unary("Softplus");
    if (op == "Neg") return unary("Neg");
    if (op == "Exp") return unary("Exp");
    if (op == "Log") return unary("Log");
    if (op == "Sqrt") return unary("Sqrt");
    if (op == "Abs") return unary("Abs");
    if (op == "Floor") return unary("Floor");
    if (op == "Rsqrt") {
        const ValueId s = b_.node("Sqrt", {input(0)}, n.name + "/sqrt");
        return emit("Reciprocal", {s}), void();
    }
    if (op == "Square") return emit("Mul", {input(0), input(0)}, {}, t()), void();
    if (op == "LeakyRelu")
        return unary("LeakyRelu", {{"alpha", static_cast<float>(attr_float("alpha", 0.2))}});
    if (op == "Relu6")
        return emit("Clip", {input(0), b_.scalar(n.name + "/min", 0), b_.scalar(n.name + "/max", 6)}), void();
    if (op == "Softmax") return unary("Softmax", {{"axis", int64_t{-1}}});
    if (op == "Transpose")
        return emit("Transpose", {input(0)}, {{"perm", constant_ints(1, "the permutation")}}, t()), void();
    if (op == "ConcatV2" || op == "Concat") {
        const bool v2 = op == "ConcatV2";
        const size_t count = n.inputs.size() - 1;
        std::vector<ValueId> in;
        for (size_t i = 0; i < count; ++i) in.push_back(input(v2 ? i : i + 1));
        const auto axis = constant_ints(v2 ? count : 0, "the axis");
        if (axis.size() != 1) fail_node("the axis must be a scalar");
        return emit("Concat", in, {{"axis", axis[0]}}, t()), void();
    }
    if (op == "Pad" || op == "PadV2" || op == "MirrorPad") {
        const TensorData& p = constant_input(1, "the paddings");
        const auto v = p.to_int64s();
        if (p.dims().size() != 2 || p.dims()[1] != 2) fail_node("paddings must have shape [rank, 2]");
        const size_t rank = static_cast<size_t>(p.dims()[0]);
        std::vector<int64_t> pads(2 * rank); // TF: [[begin, end] per axis]; ONNX: all begins, then all ends
        for (size_t i = 0; i < rank; ++i) {
            pads[i] = v[2 * i];
            pads[rank + i] = v[2 * i + 1];
        }
        std::vector<ValueId> in = {input(0), b_.ints(n.name + "/pads", pads)};
        std::string mode = "constant";
        if (op == "PadV2") in.push_back(input(2));
        if (op == "MirrorPad") {
            mode = attr_string("mode", "REFLECT");
            if (mode != "REFLECT")
                fail_node("MirrorPad mode " + mode + " is not supported", ErrorCode::Unsupported);
            mode = "reflect";
        }
        return emit("Pad", in, {{"mode", mode}}, t()), void();
    }
    if (op == "MaxPool" || op == "AvgPool") {
        if (!is_nhwc()) fail_node("NCHW pooling is not supported", ErrorCode::Unsupported);
        const auto k = attr_ints("ksize", {}), s = attr_ints("strides", {});
        if (k.size() != 4 || s.size() != 4) fail_node("ksize and strides need 4 values");
        Attributes a = padding({k[1], k[2]}, {s[1], s[2]}, {1, 1});
        a.push_back({"kernel_shape", std::vector<int64_t>{k[1], k[2]}});
        a.push_back({"strides", std::vector<int64_t>{s[1], s[2]}});
        const ValueId y = b_.node(op == "MaxPool" ? "MaxPool" : "AveragePool", {nchw(input(0))},
                                  n.name + "/pool", std::move(a));
        return nhwc_out(y), void();
    }
    if (op == "ResizeBilinear" || op == "ResizeNearestNeighbor") {
        const auto size = constant_ints(1, "the output size");
        if (size.size() != 2) fail_node("the output size must have 2 values");
        const bool align = attr_bool("align_corners", false), half = attr_bool("half_pixel_centers", false);
        const bool linear = op == "ResizeBilinear";
        Attributes a = {
            {"mode", linear ? "linear" : "nearest"},
            {"coordinate_transformation_mode", align  ? "align_corners"
                                               : half ? (linear ? "half_pixel" : "tf_half_pixel_for_nn")
                                                      : "asymmetric"}};
        if (!linear) a.push_back({"nearest_mode", align ? "round_prefer_ceil" : "floor"});
        // ONNX wants all four output sizes: N and C from the input's shape, H and W from TF.
        const ValueId x = nchw(input(0));
        const ValueId shape = b_.node("Shape", {x}, n.name + "/shape", {}, DType::i64);
        const ValueId nc =
            b_.node("Slice", {shape, b_.ints(n.name + "/zero", {0}), b_.ints(n.name + "/two", {2})},
                    n.name + "/nc", {}, DType::i64);
        const ValueId sizes = b_.node("Concat", {nc, b_.ints(n.name + "/hw", size)}, n.name + "/sizes",
                                      {{"axis", int64_t{0}}}, DType::i64);
        const ValueId y =
            b_.node("Resize", {x, graph::no_value, graph::no_value, sizes}, n.name + "/resize", std::move(a));
        return nhwc_out(y), void();
    }
    if (op == "Reshape") {
        ValueId shape = input(1);
        if (const graph::Value& s = g_.value(shape); s.data)
            shape = b_.ints(n.name + "/shape", s.data->to_int64s());
        else if (s.dtype == DType::i32)
            shape =
                b_.node("Cast", {shape}, n.name + "/shape", {{"to", onnx_type_code(DType::i64)}}, DType::i64);
        return emit("Reshape", {input(0), shape}, {}, t()), void();
    }
    if (op == "SplitV" || op == "Split") {
        const bool v = op == "SplitV";
        const auto dim = constant_ints(v ? 2 : 0, "the split dimension");
        if (dim.size() != 1) fail_node("the split dimension must be a scalar");
        const int64_t count = attr_int("num_split", 0);
        if (count < 1) fail_node("num_split must be positive");
        std::vector<ValueId> in = {input(v ? 0 : 1)};
        if (v) in.push_back(b_.ints(n.name + "/split", constant_ints(1, "the split sizes")));
        std::vector<std::string> outs = {n.name};
        for (int64_t i = 1; i < count; ++i) outs.push_back(n.name + ":" + std::to_string(i));
        const auto ids = b_.nodes("Split", in, outs, {{"axis", dim[0]}}, t());
        for (int64_t i = 0; i < count; ++i) define(outs[static_cast<size_t>(i)], ids[static_cast<size_t>(i)]);
        return;
    }
    if (op == "SparseToDense") {
        // dense = default everywhere, then the listed indices set: Expand + ScatterND.
        ValueId indices = input(0);
        const graph::Value& iv = g_.value(indices);
        if (iv.data && iv.data->dims().size() < 2) {
            auto dims = iv.data->dims();
            dims.resize(2, 1);
            if (iv.data->dims().empty()) dims = {1, 1};
            const auto v = iv.data->to_int64s();
            indices = b_.constant(n.name + "/indices", TensorData::from_int64s(dims, v));
        } else if (!iv.data) {
            fail_node("non-constant indices are not supported", ErrorCode::Unsupported);
        }
        const ValueId dense = b_.node("Expand", {input(3), input(1)}, n.name + "/dense", {}, t());
        return emit("ScatterND", {dense, indices, input(2)}, {}, t()), void();
    }
    if (op == "Squeeze") {
        const auto axes = attr_ints("squeeze_dims", {});
        std::vector<ValueId> in = {input(0)};
        if (!axes.empty()) in.push_back(b_.ints(n.name + "/axes", axes));
        return emit("Squeeze", in, {}, t()), void();
    }
    if (op == "ExpandDims")
        return emit("Unsqueeze", {input(0), b_.ints(n.name + "/axes", constant_ints(1, "the axis"))}, {},
                    t()),
               void();
    if (op == "Cast") {
        const DType to = attr_type("DstT", DType::f32);
        return emit("Cast", {input(0)}, {{"to", onnx_type_code(to)}}, to), void();
    }
    if (op == "Mean" || op == "Max" || op == "Min" || op == "Sum") {
        const auto axes = constant_ints(1, "the reduction axes");
        const int64_t keep = attr_bool("keep_dims", false) ? 1 : 0;
        if (op == "Sum")
            return emit("ReduceSum", {input(0), b_.ints(n.name + "/axes", axes)}, {{"keepdims", keep}}, t()),
                   void();
        const char* onnx = op == "Mean" ? "ReduceMean" : op == "Max" ? "ReduceMax" : "ReduceMin";
        return emit(onnx, {input(0)}, {{"axes", axes}, {"keepdims", keep}}, t()), void();
    }
    if (op == "MatMul") {
        ValueId a = input(0), bm = input(1);
        if (attr_bool("transpose_a", false))
            a = b_.node("Transpose", {a}, n.name + "/a_t", {{"perm", std::vector<int64_t>{1, 0}}});
        if (attr_bool("transpose_b", false))
            bm = b_.node("Transpose", {bm}, n.name + "/b_t", {{"perm", std::vector<int64_t>{1, 0}}});
        return emit("MatMul", {a, bm}, {}, t()), void();
    }
    if (op == "FusedBatchNorm" || op == "FusedBatchNormV2" || op == "FusedBatchNormV3") {
        const bool nhwc = is_nhwc();
        const ValueId x = nhwc ? nchw(input(0)) : input(0);
        const ValueId y =
            b_.node("BatchNormalization", {x, input(1), input(2), input(3), input(4)}, n.name + "/bn",
                    {{"epsilon", static_cast<float>(attr_float("epsilon", 1e-3))}});
        if (nhwc)
            nhwc_out(y);
        else
            define(n.name, y);
        return;
    }
    if (op == "DepthToSpace") {
        if (!is_nhwc()) fail_node("NCHW DepthToSpace is not supported", ErrorCode::Unsupported);
        const ValueId y = b_.node("DepthToSpace", {nchw(input(0))}, n.name + "/d2s",
                                  {{"blocksize", attr_int("block_size", 2)}, {"mode", "DCR"}});
        return nhwc_out(y), void();
    }
    fail_node("this TensorFlow operation is not supported", ErrorCode::Unsupported);
}

Graph GraphImporter::run() {
    g_.source = file_;
    g_.format = "tfjs-graph";
    // GraphDef has no model name; the file's ("nanodet") or, for model.json, its directory's.
    g_.name = path_.stem() == "model" ? path_.parent_path().filename().string() : path_.stem().string();
    g_.opsets.push_back({"", 17});
    g_.metadata["layout"] = "as in the TensorFlow graph (NHWC operators run between Transposes)";
    if (auto by = root_.get("generatedBy"); by && by->is_string())
        g_.metadata["generated_by"] = by->as_string();
    if (auto by = root_.get("convertedBy"); by && by->is_string())
        g_.metadata["converted_by"] = by->as_string();
    const JsonView topology = root_.at("modelTopology");
    if (auto lib = topology.get("library"); lib && lib->has("function") && lib->at("function").size() > 0)
        lib->fail("graph functions (control flow) are not supported");
    weights_ = std::make_unique<TfjsWeights>(root_.at("weightsManifest"), path_);

    std::vector<TfNode> nodes;
    std::map<std::string, size_t> index;
    for (const JsonView& nj : topology.at("node").items()) {
        TfNode n{nj.at("name").as_string(), nj.at("op").as_string(), {}, nj};
        if (auto ins = nj.get("input"))
            for (const std::string& s : ins->as_strings())
                if (!s.starts_with("^"))
                    n.inputs.push_back(s.ends_with(":0") ? s.substr(0, s.size() - 2) : s);
        if (index.count(n.name)) nj.fail("two nodes are named '" + n.name + "'");
        index[n.name] = nodes.size();
        nodes.push_back(std::move(n));
    }
    for (const TfNode& n : nodes)
        for (const std::string& in : n.inputs) ++readers_[in.substr(0, in.find(':'))];
    // GraphDef does not promise an order: translate each node after its inputs, depth first with
    // an explicit stack (a file's chain of nodes can be far deeper than the call stack).
    std::vector<int> state(nodes.size(), 0); // 0 new, 1 waiting for its inputs, 2 done
    for (size_t root_index = 0; root_index < nodes.size(); ++root_index) {
        std::vector<size_t> stack = {root_index};
        while (!stack.empty()) {
            const size_t i = stack.back();
            if (state[i] == 2) {
                stack.pop_back();
                continue;
            }
            if (state[i] == 0) {
                state[i] = 1;
                for (const std::string& in : nodes[i].inputs) {
                    auto it = index.find(in.substr(0, in.find(':')));
                    if (it == index.end()) nodes[i].json.fail("input '" + in + "' names no node");
                    if (state[it->second] == 1)
                        nodes[i].json.fail("node '" + nodes[i].name + "' is part of a cycle");
                    if (state[it->second] == 0) stack.push_back(it->second);
                }
                continue;
            }
            translate(nodes[i]); // state 1 on top again: every input is done
            state[i] = 2;
            stack.pop_back();
        }
    }

    // Outputs: the signature's when it has them, else every non-constant node nothing reads.
    std::vector<std::string> outputs;
    if (auto sig = root_.get("signature"); sig && sig->has("outputs")) {
        for (const auto& [key, o] : sig->at("outputs").members()) {
            std::string name = o.string_or("name", key);
            if (name.ends_with(":0")) name.resize(name.size() - 2);
            outputs.push_back(name);
        }
        std::sort(outputs.begin(), outputs.end()); // the JSON object has no order; keep one
    } else {
        for (const TfNode& n : nodes)
            if (!readers_.count(n.name) && n.op != "Const" && n.op != "NoOp") outputs.push_back(n.name);
    }
    for (const std::string& o : outputs) {
        auto it = values_.find(o);
        if (it == values_.end()) import::fail(file_, "output '" + o + "' is produced by no node");
        g_.outputs().push_back(it->second);
    }
    if (g_.outputs().empty()) import::fail(file_, "the model has no outputs");
    g_.metadata["transposes_cancelled"] = std::to_string(cancel_transpose_pairs(g_));
    g_.remove_unused_values();
    g_.validate();
    return std::move(g_);
}

} // namespace

Graph load_tfjs_graph(const std::filesystem::path& model_json) {
    const nlohmann::json root = parse_json_file(model_json);
    return GraphImporter(model_json, root).run();
}

} // namespace vkml::import
