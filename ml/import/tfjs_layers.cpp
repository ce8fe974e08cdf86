// TF.js layers models: Keras topologies translated layer by layer (see vkml/import/tfjs.hpp for
// the layout policy: rank-4 tensors are NCHW in the graph).
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <numbers>

#include "graph_builder.hpp"
#include "import_util.hpp"
#include "json_view.hpp"
#include "tfjs_weights.hpp"
#include "vkml/import/tfjs.hpp"

namespace vkml::import {

using graph::DType;
using graph::Graph;
using graph::TensorData;
using graph::ValueId;

namespace {

// A Keras tensor as the graph holds it. Rank-4 tensors are stored NCHW.
struct KTensor {
    ValueId id = graph::no_value;
    int rank = 0;
};

int to_ir_axis(int64_t axis, int rank, const JsonView& where) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank)
        where.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (rank != 4) return static_cast<int>(axis);
    static constexpr int nhwc_to_nchw[4] = {0, 2, 3, 1};
    return nhwc_to_nchw[axis];
}

class LayersImporter {
public:
    LayersImporter(const std::filesystem::path& path, const nlohmann::json& root)
        : path_(path), file_(path.string()), root_(root, "", file_), b_(g_) {}

    Graph run();

private:
    using Translate = std::function<std::vector<KTensor>(const JsonView& cfg, const std::string& name,
                                                         const std::vector<KTensor>& in)>;

    // --- helpers ---
    [[noreturn]] void fail_layer(const std::string& problem,
                                 ErrorCode code = ErrorCode::InvalidArgument) const {
        import::fail(file_, "layer '" + layer_name_ + "' (" + layer_class_ + "): " + problem, code);
    }
    const TensorData& weight(const std::string& layer, const std::string& param,
                             std::vector<int64_t> expected_dims = {});
    ValueId weight_constant(const std::string& layer, const std::string& param, TensorData data) {
        return b_.constant(layer + "/" + param, std::move(data));
    }
    KTensor activation(const std::string& act, KTensor x, const std::string& out, const JsonView& where);
    KTensor to_channels_last(KTensor x, const std::string& name); // NCHW -> NHWC for rank 4 (Keras order)
    KTensor to_channels_first(KTensor x, const std::string& name);
    std::vector<int64_t> two(const JsonView& cfg, const std::string& key, int64_t fallback);
    Attributes conv_padding(const JsonView& cfg, const std::vector<int64_t>& kernel,
                            const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations);
    const KTensor& one_input(const std::vector<KTensor>& in) const {
        if (in.size() != 1) fail_layer("expects one input, got " + std::to_string(in.size()));
        return in[0];
    }
    void require_rank4(const KTensor& t) const {
        if (t.rank != 4)
            fail_layer("expects a rank-4 (image) input, got rank " + std::to_string(t.rank),
                       ErrorCode::Unsupported);
    }

    // --- layers ---
    KTensor input_layer(const JsonView& cfg, const std::string& name);
    std::vector<KTensor> translate(const std::string& cls, const JsonView& cfg, const std::string& name,
                                   const std::vector<KTensor>& in);
    KTensor conv2d(const JsonView& cfg, const std::string& name, const KTensor& x, bool depthwise);
    KTensor dense(const JsonView& cfg, const std::string& name, KTensor x);
    KTensor pool(const JsonView& cfg, const std::string& name, const KTensor& x, const std::string& op);
    KTensor batch_norm(const JsonView& cfg, const std::string& name, const KTensor& x);
    KTensor merge(const std::string& cls, const std::string& name, const std::vector<KTensor>& in);

    void functional(const JsonView& config);
    void sequential(const JsonView& config);

    std::filesystem::path path_;
    std::string file_;
    JsonView root_;
    Graph g_;
    GraphBuilder b_;
    std::unique_ptr<TfjsWeights> weights_;
    std::string layer_name_, layer_class_;   // the layer being translated, for errors
    std::map<std::string, KTensor> tensors_; // "layer:node:tensor" -> graph value
};

const TensorData& LayersImporter::weight(const std::string& layer, const std::string& param,
                                         std::vector<int64_t> expected_dims) {
    const std::string name = layer + "/" + param;
    const TensorData* w = weights_->find(name);
    if (!w) {
        // Nested models prefix weight names with the outer model's name.
        for (const auto& [k, v] : weights_->all())
            if (k.size() > name.size() && k.ends_with("/" + name)) w = &v;
    }
    if (!w) fail_layer("weight '" + name + "' is not in the weights manifest");
    if (w->dtype() != DType::f32)
        fail_layer("weight '" + name + "' is " + graph::dtype_name(w->dtype()) + ", expected float32");
    if (!expected_dims.empty() && w->dims() != expected_dims) {
        std::string e = "[", a = "[";
        for (int64_t d : expected_dims) e += std::to_string(d) + ",";
        for (int64_t d : w->dims()) a += std::to_string(d) + ",";
        fail_layer("weight '" + name + "' has shape " + a + "] but the layer's configuration implies " + e +
                   "]");
    }
    return *w;
}

std::vector<int64_t> LayersImporter::two(const JsonView& cfg, const std::string& key, int64_t fallback) {
    auto v = cfg.get(key);
    if (!v) return {fallback, fallback};
    std::vector<int64_t> r = v->as_ints();
    if (r.size() == 1) r.push_back(r[0]);
    if (r.size() != 2) v->fail("expected two values");
    for (int64_t x : r)
        if (x < 1) v->fail("values must be positive");
    return r;
}

Attributes LayersImporter::conv_padding(const JsonView& cfg, const std::vector<int64_t>& kernel,
                                        const std::vector<int64_t>& strides,
                                        const std::vector<int64_t>& dilations) {
    const std::string padding = cfg.string_or("padding", "valid");
    if (padding == "valid") return {{"pads", std::vector<int64_t>{0, 0, 0, 0}}};
    if (padding != "same")
        cfg.at("padding").fail("padding '" + padding + "' is not supported (same, valid are)");
    if (strides[0] == 1 && strides[1] == 1) {
        // With stride 1 TF's SAME padding does not depend on the input size: spell it out, extra
        // padding at the end as TF puts it, so no later stage has to know auto_pad.
        std::vector<int64_t> begin(2), end(2);
        for (int i = 0; i < 2; ++i) {
            const int64_t total = dilations[i] * (kernel[i] - 1);
            begin[i] = total / 2;
            end[i] = total - begin[i];
        }
        return {{"pads", std::vector<int64_t>{begin[0], begin[1], end[0], end[1]}}};
    }
    return {{"auto_pad", "SAME_UPPER"}}; // TF's SAME: the odd pixel of padding goes at the end
}

KTensor LayersImporter::to_channels_last(KTensor x, const std::string& name) {
    if (x.rank != 4) return x;
    x.id = b_.node("Transpose", {x.id}, name, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    return x;
}

KTensor LayersImporter::to_channels_first(KTensor x, const std::string& name) {
    if (x.rank != 4) return x;
    x.id = b_.node("Transpose", {x.id}, name, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
    return x;
}

KTensor LayersImporter::activation(const std::string& act, KTensor x, const std::string& out,
                                   const JsonView& where) {
    auto unary = [&](const char* op, Attributes a = {}) {
        x.id = b_.node(op, {x.id}, out, std::move(a));
        return x;
    };
    if (act.empty() || act == "linear") return x;
    if (act == "relu") return unary("Relu");
    if (act == "sigmoid") return unary("Sigmoid");
    if (act == "tanh") return unary("Tanh");
    if (act == "elu") return unary("Elu", {{"alpha", 1.f}});
    if (act == "selu") return unary("Selu"); // ONNX's defaults are Keras's constants
    if (act == "softplus") return unary("Softplus");
    if (act == "softsign") return unary("Softsign");
    if (act == "hard_sigmoid" || act == "hardSigmoid")
        return unary("HardSigmoid", {{"alpha", 0.2f}, {"beta", 0.5f}});
    if (act == "relu6") {
        x.id = b_.node("Clip", {x.id, b_.scalar(out + "/min", 0.f), b_.scalar(out + "/max", 6.f)}, out);
        return x;
    }
    if (act == "softmax") return unary("Softmax", {{"axis", int64_t{to_ir_axis(-1, x.rank, where)}}});
    if (act == "swish" || act == "silu") {
        const ValueId s = b_.node("Sigmoid", {x.id}, out + "/sigmoid");
        x.id = b_.node("Mul", {x.id, s}, out);
        return x;
    }
    if (act == "mish") { // x * tanh(softplus(x)); ONNX has Mish only from opset 18
        const ValueId sp = b_.node("Softplus", {x.id}, out + "/softplus");
        const ValueId t = b_.node("Tanh", {sp}, out + "/tanh");
        x.id = b_.node("Mul", {x.id, t}, out);
        return x;
    }
    if (act == "gelu") { // exact GELU, 0.5 x (1 + erf(x / sqrt 2)); ONNX has Gelu only from opset 20
        const ValueId d =
            b_.node("Mul", {x.id, b_.scalar(out + "/rsqrt2", static_cast<float>(1 / std::numbers::sqrt2))},
                    out + "/scaled");
        const ValueId e = b_.node("Erf", {d}, out + "/erf");
        const ValueId p = b_.node("Add", {e, b_.scalar(out + "/one", 1.f)}, out + "/erf1");
        const ValueId h = b_.node("Mul", {x.id, b_.scalar(out + "/half", 0.5f)}, out + "/half_x");
        x.id = b_.node("Mul", {h, p}, out);
        return x;
    }
    where.fail("activation '" + act + "' is not supported");
}

KTensor LayersImporter::input_layer(const JsonView& cfg, const std::string& name) {
    auto shape = cfg.get("batch_input_shape");
    if (!shape) shape = cfg.get("batch_shape"); // newer Keras
    if (!shape) cfg.fail("an input layer needs batch_input_shape");
    const std::string dtype = cfg.string_or("dtype", "float32");
    DType dt = DType::f32;
    if (dtype == "int32")
        dt = DType::i32;
    else if (dtype != "float32")
        cfg.at("dtype").fail("input dtype '" + dtype + "' is not supported");
    std::vector<graph::Dim> dims;
    const auto items = shape->items();
    const int rank = static_cast<int>(items.size());
    const bool first_input = g_.inputs().empty();
    auto dim_name = [&](const char* generic) {
        return first_input ? std::string(generic) : name + "_" + generic;
    };
    static const char* image_names[4] = {"batch", "height", "width", "channels"};
    for (int i = 0; i < rank; ++i) {
        const char* generic = rank == 4 ? image_names[i] : i == 0 ? "batch" : nullptr;
        if (items[i].is_null())
            dims.push_back(
                graph::Dim::symbolic(generic ? dim_name(generic) : dim_name("d") + std::to_string(i)));
        else {
            const int64_t v = items[i].as_int();
            if (v < 0) items[i].fail("dimension must not be negative");
            dims.push_back(graph::Dim::known(v));
        }
    }
    if (rank == 4) dims = {dims[0], dims[3], dims[1], dims[2]}; // NHWC declared, NCHW stored
    const ValueId id = g_.add_value(name, dt, graph::Shape(std::move(dims)));
    g_.inputs().push_back(id);
    return {id, rank};
}

KTensor LayersImporter::conv2d(const JsonView& cfg, const std::string& name, const KTensor& x,
                               bool depthwise) {
    require_rank4(x);
    if (cfg.string_or("data_format", "channels_last") != "channels_last")
        fail_layer("data_format channels_first is not supported", ErrorCode::Unsupported);
    const auto kernel = two(cfg, "kernel_size", 1);
    const auto strides = two(cfg, "strides", 1);
    const auto dilations = two(cfg, "dilation_rate", 1);
    const int64_t groups = depthwise ? 0 : cfg.int_or("groups", 1);
    ValueId w;
    int64_t out_channels;
    int64_t group = groups;
    if (depthwise) {
        const TensorData& k = weight(name, "depthwise_kernel");
        if (k.dims().size() != 4 || k.dims()[0] != kernel[0] || k.dims()[1] != kernel[1])
            fail_layer("depthwise_kernel does not have shape [kh, kw, in, multiplier]");
        const int64_t mult = cfg.int_or("depth_multiplier", 1);
        if (k.dims()[3] != mult)
            fail_layer("depthwise_kernel's last dimension differs from depth_multiplier");
        group = k.dims()[2];
        out_channels = group * mult;
        w = weight_constant(name, "depthwise_kernel", hwio_to_oihw(k, true));
    } else {
        out_channels = cfg.at("filters").as_int();
        const TensorData& k = weight(name, "kernel");
        if (k.dims().size() != 4 || k.dims()[0] != kernel[0] || k.dims()[1] != kernel[1] ||
            k.dims()[3] != out_channels)
            fail_layer("kernel shape does not match kernel_size and filters");
        if (groups < 1 || out_channels % groups) fail_layer("groups must divide filters");
        w = weight_constant(name, "kernel", hwio_to_oihw(k, false));
    }
    std::vector<ValueId> inputs = {x.id, w};
    if (cfg.bool_or("use_bias", true))
        inputs.push_back(weight_constant(name, "bias", weight(name, "bias", {out_channels})));
    Attributes attrs = conv_padding(cfg, kernel, strides, dilations);
    attrs.push_back({"kernel_shape", kernel});
    attrs.push_back({"strides", strides});
    attrs.push_back({"dilations", dilations});
    attrs.push_back({"group", group});
    const std::string act = cfg.string_or("activation", "linear");
    const bool has_act = act != "linear";
    KTensor y{b_.node("Conv", inputs, has_act ? name + "/conv" : name, std::move(attrs)), 4};
    return activation(act, y, name, cfg);
}

KTensor LayersImporter::dense(const JsonView& cfg, const std::string& name, KTensor x) {
    const int64_t units = cfg.at("units").as_int();
    const TensorData& k = weight(name, "kernel");
    if (k.dims().size() != 2 || k.dims()[1] != units) fail_layer("kernel shape is not [inputs, units]");
    const bool image = x.rank == 4;
    if (image) x = to_channels_last(x, name + "/nhwc"); // Dense acts on the last (channel) axis
    const std::string act = cfg.string_or("activation", "linear");
    const bool bias = cfg.bool_or("use_bias", true);
    const bool has_act = act != "linear";
    const std::string out = image || has_act ? name + "/dense" : name;
    const ValueId w = weight_constant(name, "kernel", k);
    if (x.rank == 2) {
        std::vector<ValueId> in = {x.id, w};
        if (bias) in.push_back(weight_constant(name, "bias", weight(name, "bias", {units})));
        x.id = b_.node("Gemm", in, out);
    } else {
        x.id = b_.node("MatMul", {x.id, w}, bias ? name + "/matmul" : out);
        if (bias)
            x.id = b_.node("Add", {x.id, weight_constant(name, "bias", weight(name, "bias", {units}))}, out);
    }
    if (image) {
        x = to_channels_first(x, has_act ? name + "/nchw" : name);
    }
    return activation(act, x, name, cfg);
}

KTensor LayersImporter::pool(const JsonView& cfg, const std::string& name, const KTensor& x,
                             const std::string& op) {
    require_rank4(x);
    const auto size = two(cfg, "pool_size", 2);
    auto strides = cfg.get("strides") ? two(cfg, "strides", 1) : size;
    Attributes attrs = conv_padding(cfg, size, strides, {1, 1});
    attrs.push_back({"kernel_shape", size});
    attrs.push_back({"strides", strides});
    return {b_.node(op, {x.id}, name, std::move(attrs)), 4};
}

KTensor LayersImporter::batch_norm(const JsonView& cfg, const std::string& name, const KTensor& x) {
    auto axis_v = cfg.get("axis");
    const std::vector<int64_t> axes = axis_v ? axis_v->as_ints() : std::vector<int64_t>{-1};
    if (axes.size() != 1 || to_ir_axis(axes[0], x.rank, cfg) != 1)
        fail_layer("only normalization over the channel axis is supported", ErrorCode::Unsupported);
    const TensorData& mean = weight(name, "moving_mean");
    const int64_t c = mean.dims().empty() ? 0 : mean.dims()[0];
    if (mean.dims().size() != 1) fail_layer("moving_mean is not a vector");
    const std::vector<float> ones(static_cast<size_t>(c), 1.f), zeros(static_cast<size_t>(c), 0.f);
    const ValueId gamma = cfg.bool_or("scale", true)
                              ? weight_constant(name, "gamma", weight(name, "gamma", {c}))
                              : b_.constant(name + "/gamma", TensorData::from_floats({c}, ones));
    const ValueId beta = cfg.bool_or("center", true)
                             ? weight_constant(name, "beta", weight(name, "beta", {c}))
                             : b_.constant(name + "/beta", TensorData::from_floats({c}, zeros));
    const ValueId m = weight_constant(name, "moving_mean", mean);
    const ValueId v = weight_constant(name, "moving_variance", weight(name, "moving_variance", {c}));
    return {b_.node("BatchNormalization", {x.id, gamma, beta, m, v}, name,
                    {{"epsilon", static_cast<float>(cfg.number_or("epsilon", 1e-3))}}),
            x.rank};
}

KTensor LayersImporter::merge(const std::string& cls, const std::string& name,
                              const std::vector<KTensor>& in) {
    if (in.size() < 2) fail_layer("a merge layer needs at least two inputs");
    for (const KTensor& t : in)
        if (t.rank != in[0].rank)
            fail_layer("inputs of different ranks are not supported", ErrorCode::Unsupported);
    std::vector<ValueId> ids;
    for (const KTensor& t : in) ids.push_back(t.id);
    if (cls == "Average") return {b_.node("Mean", ids, name), in[0].rank};
    if (cls == "Maximum") return {b_.node("Max", ids, name), in[0].rank};
    if (cls == "Minimum") return {b_.node("Min", ids, name), in[0].rank};
    const char* op = cls == "Add" ? "Add" : cls == "Subtract" ? "Sub" : "Mul";
    if (cls == "Subtract" && in.size() != 2) fail_layer("Subtract takes exactly two inputs");
    // Binary ops chained left to right; the last one carries the layer's name.
    ValueId acc = ids[0];
    for (size_t i = 1; i < ids.size(); ++i)
        acc = b_.node(op, {acc, ids[i]}, i + 1 == ids.size() ? name : name + "/partial");
    return {acc, in[0].rank};
}

std::vector<KTensor> LayersImporter::translate(const std::string& cls, const JsonView& cfg,
                                               const std::string& name, const std::vector<KTensor>& in) {
    if (cls == "Conv2D") return {conv2d(cfg, name, one_input(in), false)};
    if (cls == "DepthwiseConv2D") return {conv2d(cfg, name, one_input(in), true)};
    if (cls == "Dense") return {dense(cfg, name, one_input(in))};
    if (cls == "Activation") return {activation(cfg.at("activation").as_string(), one_input(in), name, cfg)};
    if (cls == "ReLU") {
        const KTensor& x = one_input(in);
        const auto max_value = cfg.get("max_value");
        const double slope = cfg.number_or("negative_slope", 0), threshold = cfg.number_or("threshold", 0);
        if (threshold != 0) fail_layer("a ReLU threshold is not supported", ErrorCode::Unsupported);
        if (max_value && slope != 0)
            fail_layer("a ReLU with both max_value and negative_slope is not supported",
                       ErrorCode::Unsupported);
        if (max_value)
            return {{b_.node("Clip",
                             {x.id, b_.scalar(name + "/min", 0.f),
                              b_.scalar(name + "/max", static_cast<float>(max_value->as_number()))},
                             name),
                     x.rank}};
        if (slope != 0)
            return {{b_.node("LeakyRelu", {x.id}, name, {{"alpha", static_cast<float>(slope)}}), x.rank}};
        return {{b_.node("Relu", {x.id}, name), x.rank}};
    }
    if (cls == "LeakyReLU") {
        const KTensor& x = one_input(in);
        return {
            {b_.node("LeakyRelu", {x.id}, name, {{"alpha", static_cast<float>(cfg.number_or("alpha", 0.3))}}),
             x.rank}};
    }
    if (cls == "ELU") {
        const KTensor& x = one_input(in);
        return {{b_.node("Elu", {x.id}, name, {{"alpha", static_cast<float>(cfg.number_or("alpha", 1.0))}}),
                 x.rank}};
    }
    if (cls == "PReLU") {
        const KTensor& x = one_input(in);
        TensorData alpha = weight(name, "alpha");
        if (x.rank == 4) {
            // Keras alpha is [H or 1, W or 1, C]; NCHW broadcasting wants [C, H or 1, W or 1].
            if (alpha.dims().size() != 3) fail_layer("alpha must have rank 3 for an image input");
            const auto& d = alpha.dims();
            const std::vector<float> a = alpha.to_floats();
            std::vector<float> t(a.size());
            for (int64_t y = 0; y < d[0]; ++y)
                for (int64_t xx = 0; xx < d[1]; ++xx)
                    for (int64_t c = 0; c < d[2]; ++c)
                        t[(c * d[0] + y) * d[1] + xx] = a[(y * d[1] + xx) * d[2] + c];
            alpha = TensorData::from_floats({d[2], d[0], d[1]}, t);
        }
        return {{b_.node("PRelu", {x.id, weight_constant(name, "alpha", std::move(alpha))}, name), x.rank}};
    }
    if (cls == "Softmax") {
        const KTensor& x = one_input(in);
        return {{b_.node("Softmax", {x.id}, name,
                         {{"axis", int64_t{to_ir_axis(cfg.int_or("axis", -1), x.rank, cfg)}}}),
                 x.rank}};
    }
    if (cls == "Add" || cls == "Subtract" || cls == "Multiply" || cls == "Average" || cls == "Maximum" ||
        cls == "Minimum")
        return {merge(cls, name, in)};
    if (cls == "Concatenate") {
        if (in.empty()) fail_layer("needs inputs");
        std::vector<ValueId> ids;
        for (const KTensor& t : in) {
            if (t.rank != in[0].rank) fail_layer("inputs of different ranks");
            ids.push_back(t.id);
        }
        const int axis = to_ir_axis(cfg.int_or("axis", -1), in[0].rank, cfg);
        return {{b_.node("Concat", ids, name, {{"axis", int64_t{axis}}}), in[0].rank}};
    }
    if (cls == "UpSampling2D") {
        const KTensor& x = one_input(in);
        require_rank4(x);
        const auto size = two(cfg, "size", 2);
        const std::string interp = cfg.string_or("interpolation", "nearest");
        Attributes attrs;
        // TF.js resizes with alignCorners = false and halfPixelCenters = false: ONNX's
        // "asymmetric" transformation (for nearest, floor rounding: an exact repeat).
        attrs.push_back({"coordinate_transformation_mode", "asymmetric"});
        if (interp == "nearest") {
            attrs.push_back({"mode", "nearest"});
            attrs.push_back({"nearest_mode", "floor"});
        } else if (interp == "bilinear") {
            attrs.push_back({"mode", "linear"});
        } else {
            cfg.at("interpolation").fail("interpolation '" + interp + "' is not supported");
        }
        const std::vector<float> scales = {1.f, 1.f, static_cast<float>(size[0]),
                                           static_cast<float>(size[1])};
        const ValueId s = b_.constant(name + "/scales", TensorData::from_floats({4}, scales));
        return {{b_.node("Resize", {x.id, graph::no_value, s}, name, std::move(attrs)), 4}};
    }
    if (cls == "MaxPooling2D") return {pool(cfg, name, one_input(in), "MaxPool")};
    if (cls == "AveragePooling2D") return {pool(cfg, name, one_input(in), "AveragePool")};
    if (cls == "GlobalAveragePooling2D" || cls == "GlobalMaxPooling2D") {
        const KTensor& x = one_input(in);
        require_rank4(x);
        const bool keep = cfg.bool_or("keepdims", false);
        const char* op = cls == "GlobalAveragePooling2D" ? "GlobalAveragePool" : "GlobalMaxPool";
        const ValueId p = b_.node(op, {x.id}, keep ? name : name + "/pool");
        if (keep) return {{p, 4}};
        return {{b_.node("Flatten", {p}, name, {{"axis", int64_t{1}}}), 2}};
    }
    if (cls == "BatchNormalization") return {batch_norm(cfg, name, one_input(in))};
    if (cls == "ZeroPadding2D") {
        const KTensor& x = one_input(in);
        require_rank4(x);
        int64_t t = 1, bo = 1, l = 1, r = 1;
        if (auto p = cfg.get("padding")) {
            if (p->is_number())
                t = bo = l = r = p->as_int();
            else if (p->size() == 2 && (*p)[0].is_number()) {
                t = bo = (*p)[0].as_int();
                l = r = (*p)[1].as_int();
            } else if (p->size() == 2) {
                const auto hv = (*p)[0].as_ints(), wv = (*p)[1].as_ints();
                if (hv.size() != 2 || wv.size() != 2) p->fail("expected ((top, bottom), (left, right))");
                t = hv[0], bo = hv[1], l = wv[0], r = wv[1];
            } else {
                p->fail("expected a padding of 1, 2 or 2x2 values");
            }
        }
        const ValueId pads = b_.ints(name + "/pads", {0, 0, t, l, 0, 0, bo, r});
        return {{b_.node("Pad", {x.id, pads}, name, {{"mode", "constant"}}), 4}};
    }
    if (cls == "Flatten") {
        const KTensor x = to_channels_last(one_input(in), name + "/nhwc"); // Keras flattens in NHWC order
        return {{b_.node("Flatten", {x.id}, name, {{"axis", int64_t{1}}}), 2}};
    }
    if (cls == "Reshape") {
        const KTensor x = to_channels_last(one_input(in), name + "/nhwc");
        std::vector<int64_t> target = cfg.at("target_shape").as_ints();
        target.insert(target.begin(), 0); // 0: keep the batch dimension
        KTensor y{b_.node("Reshape", {x.id, b_.ints(name + "/shape", target)},
                          target.size() == 4 ? name + "/nhwc_out" : name),
                  static_cast<int>(target.size())};
        return {target.size() == 4 ? to_channels_first(y, name) : y};
    }
    if (cls == "Dropout" || cls == "SpatialDropout2D" || cls == "GaussianNoise" || cls == "GaussianDropout" ||
        cls == "AlphaDropout" || cls == "ActivityRegularization")
        return {one_input(in)}; // inference: identity
    // Custom layers of @upscalerjs/esrgan-thick (packages/shared/src/esrgan/esrgan.ts there).
    if (cls == "MultiplyBeta") {
        const KTensor& x = one_input(in);
        const float beta = static_cast<float>(cfg.number_or("beta", 0.2));
        return {{b_.node("Mul", {x.id, b_.scalar(name + "/beta", beta)}, name), x.rank}};
    }
    if (cls.starts_with("PixelShuffle")) {
        // tf.depthToSpace(x, scale, 'NHWC') orders depth as (row offset, column offset, channel):
        // ONNX's DCR mode.
        const KTensor& x = one_input(in);
        require_rank4(x);
        int64_t scale = cfg.int_or("scale", 0);
        if (scale == 0) { // the class name carries it: PixelShuffle2x
            const std::string digits = cls.substr(12, cls.size() - 13);
            scale = digits.empty() ? 0 : std::atoi(digits.c_str());
        }
        if (scale < 2) fail_layer("cannot tell the pixel shuffle's scale");
        return {{b_.node("DepthToSpace", {x.id}, name, {{"blocksize", scale}, {"mode", "DCR"}}), 4}};
    }
    fail_layer("this layer type is not supported", ErrorCode::Unsupported);
}

void LayersImporter::functional(const JsonView& config) {
    const auto layers = config.at("layers").items();
    // Keras lists layers in an order where inbound layers come first; follow it.
    for (const JsonView& layer : layers) {
        layer_class_ = layer.at("class_name").as_string();
        const JsonView cfg = layer.at("config");
        layer_name_ = layer.has("name") ? layer.at("name").as_string() : cfg.at("name").as_string();
        if (layer_class_ == "InputLayer") {
            tensors_[layer_name_ + ":0:0"] = input_layer(cfg, layer_name_);
            continue;
        }
        const JsonView inbound = layer.at("inbound_nodes");
        const auto calls = inbound.items();
        if (calls.empty()) fail_layer("has no inbound nodes");
        for (size_t call = 0; call < calls.size(); ++call) {
            if (calls[call].is_object())
                calls[call].fail(
                    "Keras 3 inbound_nodes ({args, kwargs}) are not supported; convert with Keras 2");
            std::vector<KTensor> in;
            for (const JsonView& ref : calls[call].items()) {
                const std::string key = ref[0].as_string() + ":" + std::to_string(ref[1].as_int()) + ":" +
                                        std::to_string(ref[2].as_int());
                auto it = tensors_.find(key);
                if (it == tensors_.end())
                    ref.fail("refers to '" + ref[0].as_string() + "' (call " +
                             std::to_string(ref[1].as_int()) + "), which no earlier layer produces");
                in.push_back(it->second);
            }
            const std::string name = call == 0 ? layer_name_ : layer_name_ + "_call" + std::to_string(call);
            const std::vector<KTensor> out = translate(layer_class_, cfg, name, in);
            for (size_t t = 0; t < out.size(); ++t)
                tensors_[layer_name_ + ":" + std::to_string(call) + ":" + std::to_string(t)] = out[t];
        }
    }
    layer_name_.clear();
    for (const JsonView& ref : config.at("output_layers").items()) {
        const std::string key = ref[0].as_string() + ":" + std::to_string(ref[1].as_int()) + ":" +
                                std::to_string(ref[2].as_int());
        auto it = tensors_.find(key);
        if (it == tensors_.end())
            ref.fail("output '" + ref[0].as_string() + "' is not produced by any layer");
        g_.outputs().push_back(it->second.id);
    }
}

void LayersImporter::sequential(const JsonView& config) {
    // Old files store the layer list directly; newer ones under "layers".
    const auto layers = config.is_array() ? config.items() : config.at("layers").items();
    if (layers.empty()) config.fail("a Sequential model without layers");
    KTensor x;
    for (size_t i = 0; i < layers.size(); ++i) {
        const JsonView& layer = layers[i];
        layer_class_ = layer.at("class_name").as_string();
        const JsonView cfg = layer.at("config");
        layer_name_ = cfg.at("name").as_string();
        if (i == 0) {
            if (layer_class_ == "InputLayer") {
                x = input_layer(cfg, layer_name_);
                continue;
            }
            x = input_layer(cfg, layer_name_ + "_input");
        }
        x = one_input(translate(layer_class_, cfg, layer_name_, {x}));
    }
    layer_name_.clear();
    g_.outputs().push_back(x.id);
}

Graph LayersImporter::run() {
    g_.source = file_;
    g_.format = "tfjs-layers";
    // The translation emits ops with their opset-17 signatures (Resize scales as an input, Clip
    // bounds as inputs, Softmax over one axis), the newest opset Debian's ONNX 1.12 knows.
    g_.opsets.push_back({"", 17});
    g_.metadata["layout"] = "NCHW: the model's NHWC rank-4 tensors, inputs and outputs are stored NCHW";
    if (auto by = root_.get("generatedBy"); by && by->is_string())
        g_.metadata["generated_by"] = by->as_string();
    if (auto by = root_.get("convertedBy"); by && by->is_string())
        g_.metadata["converted_by"] = by->as_string();

    const JsonView topology = root_.at("modelTopology");
    const JsonView model = topology.has("model_config") ? topology.at("model_config") : topology;
    weights_ = std::make_unique<TfjsWeights>(root_.at("weightsManifest"), path_);
    const std::string cls = model.at("class_name").as_string();
    const JsonView config = model.at("config");
    if (!config.is_array()) g_.name = config.string_or("name", "");
    if (cls == "Functional" || cls == "Model")
        functional(config);
    else if (cls == "Sequential")
        sequential(config);
    else
        model.at("class_name")
            .fail("model class '" + cls + "' is not supported (Functional, Model, Sequential are)");
    if (g_.outputs().empty()) import::fail(file_, "the model has no outputs");
    g_.validate();
    return std::move(g_);
}

} // namespace

Graph load_tfjs_layers(const std::filesystem::path& model_json) {
    const nlohmann::json root = parse_json_file(model_json);
    return LayersImporter(model_json, root).run();
}

} // namespace vkml::import
