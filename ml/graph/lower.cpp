// Node -> operator lowering: ONNX attributes and constant inputs into ops::*Desc fields, per opset.
#include "lower.hpp"

#include "op_types.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "vkml/ops/conv.hpp"
#include "vkml/ops/conv3d.hpp"
#include "vkml/ops/detect.hpp"
#include "vkml/ops/elementwise.hpp"
#include "vkml/ops/fused.hpp"
#include "vkml/ops/layout.hpp"
#include "vkml/ops/loss.hpp"
#include "vkml/ops/math.hpp"
#include "vkml/ops/norm.hpp"
#include "vkml/ops/reduce.hpp"
#include "vkml/ops/rnn.hpp"
#include "vkml/ops/train.hpp"

namespace vkml::graph::detail {

namespace {

using ops::TensorDesc;

template <class Kind>
std::map<std::string, Kind, std::less<>> names_of(Kind last, const char* (*name)(Kind)) {
    std::map<std::string, Kind, std::less<>> m;
    for (int k = 0; k <= static_cast<int>(last); ++k)
        m.emplace(name(static_cast<Kind>(k)), static_cast<Kind>(k));
    return m;
}

const auto& unary_kinds() {
    static const auto m = names_of(ops::last_unary_kind, ops::unary_name);
    return m;
}
const auto& binary_kinds() {
    static const auto m = names_of(ops::BinaryKind::Xor, ops::binary_name);
    return m;
}
const auto& variadic_kinds() {
    static const auto m = names_of(ops::VariadicKind::Mean, ops::variadic_name);
    return m;
}
const auto& reduce_kinds() {
    static const auto m = names_of(ops::ReduceKind::LogSum, ops::reduce_op_name);
    return m;
}

int64_t norm_axis(const LowerContext& ctx, int64_t axis, size_t rank) {
    const int64_t r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r)
        ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    return axis < 0 ? axis + r : axis;
}

// One op whose inputs and outputs are the node's, in order (absent optional inputs skipped by
// the caller through `inputs`).
Lowered single(std::unique_ptr<ops::Op> op, std::vector<int> inputs, std::vector<int> outputs) {
    Lowered l;
    l.input_views.resize(inputs.size());
    l.output_views.resize(outputs.size());
    l.op_inputs = std::move(inputs);
    l.op_outputs = std::move(outputs);
    l.op = std::move(op);
    return l;
}

Lowered view(int input, const gpu::Shape& shape) {
    Lowered l;
    l.alias_input = input;
    l.alias_shape = shape;
    return l;
}

// Index of node output k, or -1 when the node does not produce it (absent optional output).
int out_or_none(const Node& n, size_t k) {
    return k < n.outputs.size() && n.outputs[k] != no_value ? static_cast<int>(k) : -1;
}

// Float ops: every input in the policy's float dtype; integer inputs of ops with an i32 kernel in
// i32. Returns the dtype the op runs in.
gpu::DType arithmetic_dtype(const LowerContext& ctx, size_t i, bool ints_ok) {
    if (ctx.is_float(i)) return ctx.float_dtype;
    const DType ir = ctx.input(i).ir;
    if (ints_ok && ir != DType::boolean && ir != DType::undefined) return LowerContext::int_compute;
    ctx.fail(std::string("inputs of type ") + dtype_name(ir) + " are not supported by this operator",
             ErrorCode::Unsupported);
}

// ---- convolution family --------------------------------------------------------------------------

// The window attributes Conv, ConvTranspose and the pools share, for the 2-D and the 3-D op
// descriptions.
template <class Desc> void read_window_attributes(const Node& n, Desc& d) {
    d.kernel_shape = n.get_ints("kernel_shape");
    d.strides = n.get_ints("strides");
    d.pads = n.get_ints("pads");
    d.dilations = n.get_ints("dilations");
    d.auto_pad = n.get_string("auto_pad", "NOTSET");
}

// ... and Conv's and ConvTranspose's group.
template <class Desc> void read_conv_attributes(const Node& n, Desc& d) {
    read_window_attributes(n, d);
    d.group = n.get_int("group", 1);
}

// 3-D Conv and ConvTranspose: their own op (ops::Conv3d).
Lowered lower_conv3d(LowerContext& ctx) {
    const Node& n = ctx.node;
    arithmetic_dtype(ctx, 0, false);
    ops::Conv3dDesc d;
    d.transpose = n.op_type == "ConvTranspose";
    d.input = ctx.desc(0);
    d.weight = ctx.desc_as(1, ctx.float_dtype);
    std::vector<int> ins = {0, 1};
    if (ctx.has(2) && !ctx.empty_or_absent(2)) {
        d.bias = ctx.desc_as(2, ctx.float_dtype);
        ins.push_back(2);
    }
    read_conv_attributes(n, d);
    if (d.transpose) {
        d.output_padding = n.get_ints("output_padding");
        d.output_shape = n.get_ints("output_shape");
    }
    d.activation = fused_activation(n);
    if (n.get_int("vkml_residual", 0)) {
        d.residual = true;
        ins.push_back(3);
    }
    return single(ops::Conv3d::create(ctx.device, d), ins, {0});
}

Lowered lower_conv(LowerContext& ctx) {
    const Node& n = ctx.node;
    if (ctx.input(0).shape.rank() == 5) return lower_conv3d(ctx);
    ops::ConvDesc d;
    d.input = ctx.desc(0);
    d.weight = ctx.desc_as(1, ctx.float_dtype);
    d.accumulation = ctx.accumulation;
    std::vector<int> ins = {0, 1};
    if (ctx.has(2)) {
        d.bias = ctx.desc_as(2, ctx.float_dtype);
        ins.push_back(2);
    }
    read_conv_attributes(n, d);
    d.activation = fused_activation(n);
    const std::string pad_mode = n.get_string("vkml_pad_mode", "constant");
    if (pad_mode != "constant" && pad_mode != "reflect" && pad_mode != "edge")
        throw Error(ErrorCode::InvalidArgument,
                    n.describe() + ": unknown vkml_pad_mode '" + pad_mode + "' (constant, reflect or edge)");
    d.pad_mode = pad_mode == "reflect" ? ops::ConvPadMode::Reflect
                 : pad_mode == "edge"  ? ops::ConvPadMode::Edge
                                       : ops::ConvPadMode::Zero;
    if (n.get_int("vkml_residual", 0)) {
        d.residual = true;
        ins.push_back(3);
    }
    if (!ctx.is_float(0)) arithmetic_dtype(ctx, 0, false);
    return single(ops::Conv::create(ctx.device, d), ins, {0});
}

// vkml.FusedConvStack (graph::fuse_conv_stacks): the input is read as it is stored (the op has
// f32 and f16 variants), so no conversion comes before it; the output has the input's dtype.
Lowered lower_fused_stack(LowerContext& ctx) {
    const Node& n = ctx.node;
    ops::ConvStackDesc d;
    d.input = ctx.stored(0);
    const int64_t layers = n.get_int("layers", 0);
    const std::string head = n.get_string("head", ""), act = n.get_string("act", ""), out = n.get_string("output", "");
    if (layers < 1 || (head != "conv1x1" && head != "last_layer") || act != "crelu" ||
        (out != "depth_to_space_bilinear" && out != "residual"))
        ctx.fail("malformed vkml.FusedConvStack node");
    d.head = head == "conv1x1" ? ops::StackHead::Concat1x1 : ops::StackHead::LastLayer;
    d.act = ops::StackAct::CRelu;
    d.output = out == "residual" ? ops::StackOutput::Residual : ops::StackOutput::DepthToSpaceBilinear;
    d.smem = ctx.float_dtype == gpu::DType::f16 ? gpu::DType::f16 : gpu::DType::f32;
    auto layer = [&](size_t at) {
        ops::ConvStackLayer l;
        const TensorData& w = ctx.constant(at, "weight");
        l.weight = w.to_floats();
        l.outputs = w.dims().empty() ? 0 : w.dims()[0];
        if (ctx.has(at + 1)) l.bias = ctx.const_floats(at + 1, "bias");
        return l;
    };
    for (int64_t l = 0; l < layers; ++l) d.layers.push_back(layer(1 + 2 * size_t(l)));
    if (d.head == ops::StackHead::Concat1x1) d.head_conv = layer(1 + 2 * size_t(layers));
    return single(ops::FusedConvStack::create(ctx.device, d), {0}, {0});
}

// vkml.FusedAttention (graph::fuse_attention): q, k, v and the additive mask in the node's float
// dtype, the condition as u8.
Lowered lower_fused_attention(LowerContext& ctx) {
    const Node& n = ctx.node;
    ops::AttentionDesc d;
    d.q = ctx.desc_as(0, ctx.float_dtype);
    d.k = ctx.desc_as(1, ctx.float_dtype);
    d.v = ctx.desc_as(2, ctx.float_dtype);
    d.k_transposed = n.get_int("k_transposed", 0) != 0;
    d.scale = n.get_float("scale", 1.f);
    std::vector<int> ins = {0, 1, 2};
    if (ctx.has(3)) {
        d.select = true;
        d.cond = ctx.desc_as(3, gpu::DType::u8);
        d.select_keep = n.get_int("select_keep", 1) != 0;
        d.fill = n.get_float("fill", 0.f);
        ins.push_back(3);
    }
    if (ctx.has(4)) {
        d.add_mask = true;
        d.mask = ctx.desc_as(4, ctx.float_dtype);
        ins.push_back(4);
    }
    return single(ops::FusedAttention::create(ctx.device, d), ins, {0});
}

Lowered lower_conv_transpose(LowerContext& ctx) {
    const Node& n = ctx.node;
    if (ctx.input(0).shape.rank() == 5) return lower_conv3d(ctx);
    ops::ConvTransposeDesc d;
    d.input = ctx.desc(0);
    d.weight = ctx.desc_as(1, ctx.float_dtype);
    std::vector<int> ins = {0, 1};
    if (ctx.has(2)) {
        d.bias = ctx.desc_as(2, ctx.float_dtype);
        ins.push_back(2);
    }
    read_conv_attributes(n, d);
    d.output_padding = n.get_ints("output_padding");
    d.output_shape = n.get_ints("output_shape");
    d.activation = fused_activation(n);
    if (!ctx.is_float(0)) arithmetic_dtype(ctx, 0, false);
    return single(ops::ConvTranspose::create(ctx.device, d), ins, {0});
}

Lowered lower_gemm(LowerContext& ctx) {
    const Node& n = ctx.node;
    ops::GemmDesc d;
    arithmetic_dtype(ctx, 0, false);
    d.a = ctx.desc_as(0, ctx.float_dtype);
    d.b = ctx.desc_as(1, ctx.float_dtype);
    std::vector<int> ins = {0, 1};
    if (ctx.has(2) && !ctx.empty_or_absent(2)) {
        d.c = ctx.desc_as(2, ctx.float_dtype);
        ins.push_back(2);
    }
    d.alpha = n.get_float("alpha", 1.f);
    d.beta = n.get_float("beta", 1.f);
    d.trans_a = n.get_int("transA", 0) != 0;
    d.trans_b = n.get_int("transB", 0) != 0;
    d.activation = fused_activation(n);
    d.accumulation = ctx.accumulation;
    return single(ops::Gemm::create(ctx.device, d), ins, {0});
}

Lowered lower_matmul(LowerContext& ctx) {
    arithmetic_dtype(ctx, 0, false);
    ops::MatMulDesc d{ctx.desc_as(0, ctx.float_dtype), ctx.desc_as(1, ctx.float_dtype), ctx.accumulation};
    return single(ops::MatMul::create(ctx.device, d), {0, 1}, {0});
}

// ---- element-wise ---------------------------------------------------------------------------------

Lowered lower_unary(LowerContext& ctx, ops::UnaryKind kind) {
    const Node& n = ctx.node;
    ops::UnaryDesc d;
    d.kind = kind;
    const bool int_kernel = kind == ops::UnaryKind::Abs || kind == ops::UnaryKind::Neg ||
                            kind == ops::UnaryKind::Sign || kind == ops::UnaryKind::Relu;
    if (kind == ops::UnaryKind::Not)
        d.input = ctx.desc_as(0, gpu::DType::u8);
    else
        d.input = ctx.desc_as(0, arithmetic_dtype(ctx, 0, int_kernel));
    if (const Attribute* a = n.find("alpha")) d.alpha = a->as_float();
    if (const Attribute* a = n.find("beta")) d.beta = a->as_float();
    if (const Attribute* a = n.find("gamma")) d.gamma = a->as_float();
    if (kind == ops::UnaryKind::IsInf) {
        d.detect_negative = n.get_int("detect_negative", 1) != 0;
        d.detect_positive = n.get_int("detect_positive", 1) != 0;
    }
    if (kind == ops::UnaryKind::Shrink) { // ONNX names its threshold lambd and its offset bias
        if (const Attribute* a = n.find("lambd")) d.alpha = a->as_float();
        if (const Attribute* a = n.find("bias")) d.beta = a->as_float();
    }
    d.approximate = n.get_string("approximate", "none");
    d.activation = fused_activation(n);
    Lowered l = single(ops::Unary::create(ctx.device, d), {0}, {0});
    const bool to_bool =
        kind == ops::UnaryKind::Not || kind == ops::UnaryKind::IsNaN || kind == ops::UnaryKind::IsInf;
    l.out_ir = {to_bool ? DType::boolean : ctx.input(0).ir};
    return l;
}

Lowered lower_binary(LowerContext& ctx, ops::BinaryKind kind) {
    const Node& n = ctx.node;
    ops::BinaryDesc d;
    d.kind = kind;
    using K = ops::BinaryKind;
    const bool logic = kind == K::And || kind == K::Or || kind == K::Xor;
    const bool compare = kind == K::Equal || kind == K::Less || kind == K::LessOrEqual ||
                         kind == K::Greater || kind == K::GreaterOrEqual;
    gpu::DType a, b;
    if (logic) {
        a = b = gpu::DType::u8;
    } else if (kind == K::Pow) {
        // Float bases: the exponent converted to the base's dtype (ONNX allows an integer one).
        // Integer base and exponent: the i32 kernel (exact, by squaring). An integer base with a
        // float exponent: computed in f32 and stored so; readers of the integer result truncate it
        // (a cast to the integer type), as ONNX Runtime's pow in double then cast does.
        if (ctx.is_float(0))
            a = arithmetic_dtype(ctx, 0, false);
        else if (!ctx.is_float(1))
            a = arithmetic_dtype(ctx, 0, true);
        else
            a = gpu::DType::f32;
        b = a;
    } else if (kind == K::BitShiftLeft || kind == K::BitShiftRight) {
        if (ctx.is_float(0) || ctx.is_float(1) || ctx.is_bool(0))
            ctx.fail("BitShift takes unsigned integer inputs", ErrorCode::Unsupported);
        a = b = arithmetic_dtype(ctx, 0, true);
    } else if (kind == K::Equal && ctx.is_bool(0)) {
        a = b = gpu::DType::u8;
    } else {
        a = b = arithmetic_dtype(ctx, ctx.is_float(0) ? 0 : 1, kind != K::PRelu);
        if (ctx.is_float(0) != ctx.is_float(1) && kind != K::PRelu)
            ctx.fail("mixes float and integer inputs", ErrorCode::Unsupported);
    }
    d.a = ctx.desc_as(0, a);
    d.b = ctx.desc_as(1, b);
    d.fmod = n.get_int("fmod", 0);
    d.activation = fused_activation(n);
    Lowered l = single(ops::Binary::create(ctx.device, d), {0, 1}, {0});
    l.out_ir = {logic || compare ? DType::boolean : ctx.input(0).ir};
    return l;
}

Lowered lower_variadic(LowerContext& ctx, ops::VariadicKind kind) {
    ops::VariadicDesc d;
    d.kind = kind;
    std::vector<int> ins;
    const gpu::DType dt = arithmetic_dtype(ctx, 0, kind != ops::VariadicKind::Mean);
    for (size_t i = 0; i < ctx.count(); ++i) {
        if (!ctx.has(i)) continue;
        d.inputs.push_back(ctx.desc_as(i, dt));
        ins.push_back(static_cast<int>(i));
    }
    d.activation = fused_activation(ctx.node);
    Lowered l = single(ops::Variadic::create(ctx.device, d), ins, {0});
    l.out_ir = {ctx.input(0).ir};
    return l;
}

Lowered lower_clip(LowerContext& ctx) {
    const Node& n = ctx.node;
    ops::ClipDesc d;
    const gpu::DType dt = arithmetic_dtype(ctx, 0, true);
    d.input = ctx.desc_as(0, dt);
    std::vector<int> ins = {0};
    if (ctx.opset < 11) {
        d.min_value = n.get_float("min", -std::numeric_limits<float>::infinity());
        d.max_value = n.get_float("max", std::numeric_limits<float>::infinity());
    } else {
        for (size_t i : {size_t{1}, size_t{2}}) {
            if (ctx.empty_or_absent(i)) continue;
            if (ctx.is_constant(i)) {
                const auto v = ctx.constant(i, i == 1 ? "min" : "max").to_floats();
                if (v.size() != 1) ctx.fail(std::string(i == 1 ? "min" : "max") + " must hold one value");
                (i == 1 ? d.min_value : d.max_value) = v[0];
            } else {
                (i == 1 ? d.min : d.max) = ctx.desc_as(i, dt);
                ins.push_back(static_cast<int>(i));
            }
        }
    }
    Lowered l = single(ops::Clip::create(ctx.device, d), ins, {0});
    l.out_ir = {ctx.input(0).ir};
    return l;
}

Lowered lower_where(LowerContext& ctx) {
    ops::WhereDesc d;
    d.condition = ctx.desc_as(0, gpu::DType::u8);
    gpu::DType dt = gpu::DType::u8;
    if (!ctx.is_bool(1)) dt = arithmetic_dtype(ctx, 1, true);
    d.x = ctx.desc_as(1, dt);
    d.y = ctx.desc_as(2, dt);
    Lowered l = single(ops::Where::create(ctx.device, d), {0, 1, 2}, {0});
    l.out_ir = {ctx.input(1).ir};
    return l;
}

Lowered lower_cast(LowerContext& ctx) {
    const Node& n = ctx.node;
    const DType to = n.op_type == "CastLike" ? ctx.input(1).ir : onnx_type(n.get_int("to", 1), ctx.graph, n);
    const LowerInput& x = ctx.input(0);
    const bool float_to_float = graph::is_float(to) && ctx.is_float(0);
    gpu::DType target = graph::is_float(to) ? ctx.float_dtype : storage_of(to);
    if (float_to_float && x.stored == target) {
        // Both sides stored alike: the value is unchanged, so the output is a view of the input.
        Lowered l = view(0, x.shape);
        l.out_ir = {to};
        return l;
    }
    if (to == x.ir && !float_to_float) {
        Lowered l = view(0, x.shape); // same type: identity (conversions happen where needed)
        l.out_ir = {to};
        return l;
    }
    ops::CastDesc d;
    d.input = ctx.stored(0);
    d.to = target;
    d.to_bool = to == DType::boolean;
    Lowered l = single(ops::Cast::create(ctx.device, d), {0}, {0});
    l.out_ir = {to};
    return l;
}

// ---- normalization ----------------------------------------------------------------------------------

Lowered lower_batchnorm(LowerContext& ctx) {
    const Node& n = ctx.node;
    if (n.get_int("training_mode", 0) != 0) {
        // Batch statistics and the running-statistic outputs (opset 14+).
        arithmetic_dtype(ctx, 0, false);
        ops::BatchNormTrainingDesc d;
        d.input = ctx.desc(0);
        d.scale = ctx.desc_as(1, ctx.float_dtype);
        d.bias = ctx.desc_as(2, ctx.float_dtype);
        d.input_mean = ctx.desc_as(3, ctx.float_dtype);
        d.input_var = ctx.desc_as(4, ctx.float_dtype);
        d.epsilon = n.get_float("epsilon", 1e-5f);
        d.momentum = n.get_float("momentum", 0.9f);
        if (fused_activation(n).kind != ops::ActivationKind::None)
            ctx.fail("a fused activation on training-mode BatchNormalization", ErrorCode::Unsupported);
        Lowered l = single(ops::BatchNormTraining::create(ctx.device, d), {0, 1, 2, 3, 4},
                           {0, out_or_none(n, 1), out_or_none(n, 2)});
        l.out_ir.assign(n.outputs.size(), ctx.input(0).ir);
        return l;
    }
    for (size_t k = 1; k < n.outputs.size(); ++k)
        if (n.outputs[k] != no_value)
            ctx.fail("the running mean/variance outputs (training) are not supported",
                     ErrorCode::Unsupported);
    if (ctx.opset < 9 && n.get_int("spatial", 1) == 0)
        ctx.fail("spatial = 0 is not supported", ErrorCode::Unsupported);
    ops::BatchNormalizationDesc d;
    arithmetic_dtype(ctx, 0, false);
    d.input = ctx.desc(0);
    d.scale = ctx.desc_as(1, ctx.float_dtype);
    d.bias = ctx.desc_as(2, ctx.float_dtype);
    d.input_mean = ctx.desc_as(3, ctx.float_dtype);
    d.input_var = ctx.desc_as(4, ctx.float_dtype);
    d.epsilon = n.get_float("epsilon", 1e-5f);
    d.momentum = n.get_float("momentum", 0.9f);
    d.activation = fused_activation(n);
    return single(ops::BatchNormalization::create(ctx.device, d), {0, 1, 2, 3, 4}, {0});
}

Lowered lower_norm(LowerContext& ctx) {
    const Node& n = ctx.node;
    const std::string& op = n.op_type;
    arithmetic_dtype(ctx, 0, false);
    const gpu::DType f = ctx.float_dtype;
    if (op == "InstanceNormalization") {
        ops::InstanceNormalizationDesc d;
        d.input = ctx.desc(0);
        d.scale = ctx.desc_as(1, f);
        d.bias = ctx.desc_as(2, f);
        d.epsilon = n.get_float("epsilon", 1e-5f);
        d.activation = fused_activation(n);
        return single(ops::InstanceNormalization::create(ctx.device, d), {0, 1, 2}, {0});
    }
    if (op == "LayerNormalization") {
        ops::LayerNormalizationDesc d;
        d.input = ctx.desc(0);
        d.scale = ctx.desc_as(1, f);
        std::vector<int> ins = {0, 1};
        if (ctx.has(2)) {
            d.bias = ctx.desc_as(2, f);
            ins.push_back(2);
        }
        d.axis = n.get_int("axis", -1);
        d.epsilon = n.get_float("epsilon", 1e-5f);
        d.stash_type = n.get_int("stash_type", 1);
        const int mean = out_or_none(n, 1), inv = out_or_none(n, 2);
        d.stats_outputs = mean >= 0 || inv >= 0;
        d.activation = fused_activation(n);
        std::vector<int> outs = {0};
        if (d.stats_outputs) outs.insert(outs.end(), {mean, inv});
        Lowered l = single(ops::LayerNormalization::create(ctx.device, d), ins, outs);
        l.out_ir = {ctx.input(0).ir, DType::f32, DType::f32};
        l.out_ir.resize(n.outputs.size());
        return l;
    }
    if (op == "GroupNormalization") {
        ops::GroupNormalizationDesc d;
        d.input = ctx.desc(0);
        d.scale = ctx.desc_as(1, f);
        d.bias = ctx.desc_as(2, f);
        d.num_groups = n.get_int("num_groups", 0);
        d.epsilon = n.get_float("epsilon", 1e-5f);
        d.stash_type = n.get_int("stash_type", 1);
        d.activation = fused_activation(n);
        return single(ops::GroupNormalization::create(ctx.device, d), {0, 1, 2}, {0});
    }
    ops::LRNDesc d; // LRN
    d.input = ctx.desc(0);
    d.alpha = n.get_float("alpha", 1e-4f);
    d.beta = n.get_float("beta", 0.75f);
    d.bias = n.get_float("bias", 1.f);
    d.size = n.get_int("size", 0);
    return single(ops::LRN::create(ctx.device, d), {0}, {0});
}

// ---- reductions and pooling -------------------------------------------------------------------------

// Reduce* axes: the attribute before ReduceSum-13 / the others' opset 18, the optional input after.
std::vector<int64_t> reduce_axes(const LowerContext& ctx) {
    if (ctx.has(1)) return ctx.empty_or_absent(1) ? std::vector<int64_t>{} : ctx.const_ints(1, "axes");
    return ctx.node.get_ints("axes");
}

Lowered lower_reduce(LowerContext& ctx, ops::ReduceKind kind) {
    arithmetic_dtype(ctx, 0, false);
    ops::ReduceDesc d;
    d.kind = kind;
    d.input = ctx.desc(0);
    d.axes = reduce_axes(ctx);
    d.keepdims = ctx.node.get_int("keepdims", 1);
    d.noop_with_empty_axes = ctx.node.get_int("noop_with_empty_axes", 0);
    return single(ops::Reduce::create(ctx.device, d), {0}, {0});
}

Lowered lower_argreduce(LowerContext& ctx) {
    arithmetic_dtype(ctx, 0, false);
    ops::ArgReduceDesc d;
    d.kind = ctx.node.op_type == "ArgMax" ? ops::ArgReduceKind::ArgMax : ops::ArgReduceKind::ArgMin;
    d.input = ctx.desc(0);
    d.axis = ctx.node.get_int("axis", 0);
    d.keepdims = ctx.node.get_int("keepdims", 1);
    d.select_last_index = ctx.node.get_int("select_last_index", 0);
    Lowered l = single(ops::ArgReduce::create(ctx.device, d), {0}, {0});
    l.out_ir = {DType::i64};
    return l;
}

Lowered lower_topk(LowerContext& ctx) {
    const Node& n = ctx.node;
    arithmetic_dtype(ctx, 0, false);
    ops::TopKDesc d;
    d.input = ctx.desc(0);
    if (ctx.opset < 10) {
        d.k = n.get_int("k", 1);
    } else {
        const auto k = ctx.const_ints(1, "K");
        if (k.size() != 1) ctx.fail("K must hold one value");
        d.k = k[0];
    }
    d.axis = n.get_int("axis", -1);
    d.largest = n.get_int("largest", 1);
    d.sorted = n.get_int("sorted", 1);
    Lowered l = single(ops::TopK::create(ctx.device, d), {0}, {out_or_none(n, 0), out_or_none(n, 1)});
    l.out_ir = {ctx.input(0).ir, DType::i64};
    return l;
}

Lowered lower_softmax(LowerContext& ctx) {
    const Node& n = ctx.node;
    arithmetic_dtype(ctx, 0, false);
    ops::SoftmaxDesc d;
    d.kind = n.op_type == "Softmax"      ? ops::SoftmaxKind::Softmax
             : n.op_type == "LogSoftmax" ? ops::SoftmaxKind::LogSoftmax
                                         : ops::SoftmaxKind::Hardmax;
    const gpu::Shape& shape = ctx.input(0).shape;
    if (ctx.opset >= 13) {
        d.input = ctx.desc(0);
        d.axis = n.get_int("axis", -1);
        return single(ops::Softmax::create(ctx.device, d), {0}, {0});
    }
    // Before opset 13 the input is coerced to 2-D at `axis` and normalized along the second
    // dimension: a view to [outer, inner], softmax over axis 1, a view back.
    const int64_t axis =
        shape.rank() == 0 ? 0 : norm_axis(ctx, n.get_int("axis", 1), shape.rank() + 1); // axis may equal rank
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < shape.rank(); ++k) (static_cast<int64_t>(k) < axis ? outer : inner) *= shape[k];
    const gpu::Shape flat{outer, inner};
    d.input = {flat, ctx.policy(0)};
    d.axis = 1;
    Lowered l = single(ops::Softmax::create(ctx.device, d), {0}, {0});
    l.input_views[0] = flat;
    l.output_views[0] = shape;
    return l;
}

ops::PoolWindow pool_window(const Node& n) {
    ops::PoolWindow w;
    read_window_attributes(n, w);
    w.ceil_mode = n.get_int("ceil_mode", 0);
    return w;
}

Lowered lower_pool(LowerContext& ctx) {
    const Node& n = ctx.node;
    arithmetic_dtype(ctx, 0, false);
    ops::PoolWindow w = pool_window(n);
    TensorDesc in = ctx.desc(0);
    if (in.shape.rank() == 5 && n.op_type != "LpPool") {
        if (out_or_none(n, 1) >= 0) ctx.fail("3-D MaxPool has no Indices output in vkml", ErrorCode::Unsupported);
        if (n.get_int("storage_order", 0) != 0) ctx.fail("storage_order applies to Indices", ErrorCode::Unsupported);
        ops::Pool3dDesc d{n.op_type == "MaxPool", in, w, n.get_int("count_include_pad", 0)};
        Lowered l = single(ops::Pool3d::create(ctx.device, d), {0}, {0});
        l.out_ir.assign(n.outputs.size(), ctx.input(0).ir);
        return l;
    }
    if (in.shape.rank() != 3 && in.shape.rank() != 4)
        ctx.fail("pools 1-D, 2-D and (MaxPool, AveragePool) 3-D inputs only, this one is " + in.shape.str(),
                 ErrorCode::Unsupported);
    std::optional<gpu::Shape> in_view;
    const bool one_d = in.shape.rank() == 3;
    if (one_d) {
        // 1-D pooling as 2-D with a height of 1: [N, C, W] viewed as [N, C, 1, W].
        in.shape = gpu::Shape{in.shape[0], in.shape[1], 1, in.shape[2]};
        in_view = in.shape;
        auto widen = [](std::vector<int64_t>& v, int64_t unit) {
            if (!v.empty()) v.insert(v.begin(), unit);
        };
        widen(w.kernel_shape, 1);
        widen(w.strides, 1);
        widen(w.dilations, 1);
        if (w.pads.size() == 2) w.pads = {0, w.pads[0], 0, w.pads[1]};
    }
    std::unique_ptr<ops::Op> op;
    std::vector<int> outs = {0};
    if (n.op_type == "MaxPool") {
        ops::MaxPoolDesc d;
        d.input = in;
        d.window = w;
        d.indices = out_or_none(n, 1) >= 0;
        d.storage_order = n.get_int("storage_order", 0);
        if (d.indices) outs.push_back(1);
        op = ops::MaxPool::create(ctx.device, d);
    } else if (n.op_type == "AveragePool") {
        ops::AveragePoolDesc d;
        d.input = in;
        d.window = w;
        d.count_include_pad = n.get_int("count_include_pad", 0);
        op = ops::AveragePool::create(ctx.device, d);
    } else {
        ops::LpPoolDesc d;
        d.input = in;
        d.window = w;
        d.p = n.get_int("p", 2);
        op = ops::LpPool::create(ctx.device, d);
    }
    std::vector<gpu::Shape> out_shapes;
    for (const auto& o : op->outputs()) out_shapes.push_back(o.shape);
    Lowered l = single(std::move(op), {0}, outs);
    if (one_d) {
        l.input_views[0] = in_view;
        for (size_t k = 0; k < out_shapes.size(); ++k) {
            const gpu::Shape& s = out_shapes[k];
            l.output_views[k] = gpu::Shape{s[0], s[1], s[3]};
        }
    }
    l.out_ir = {ctx.input(0).ir, DType::i64};
    l.out_ir.resize(n.outputs.size());
    return l;
}

Lowered lower_global_pool(LowerContext& ctx) {
    arithmetic_dtype(ctx, 0, false);
    ops::GlobalPoolDesc d;
    const std::string& op = ctx.node.op_type;
    d.kind = op == "GlobalAveragePool" ? ops::GlobalPoolKind::Average
             : op == "GlobalMaxPool"   ? ops::GlobalPoolKind::Max
                                       : ops::GlobalPoolKind::Lp;
    d.input = ctx.desc(0);
    d.p = ctx.node.get_int("p", 2);
    return single(ops::GlobalPool::create(ctx.device, d), {0}, {0});
}

// ---- layout -------------------------------------------------------------------------------------------

// Layout ops move bits in whatever dtype a value is stored in; floats that are stored in another
// dtype than the policy's stay so (no conversion just to copy).
TensorDesc layout_desc(const LowerContext& ctx, size_t i) {
    return ctx.stored(i);
}

Lowered lower_resize(LowerContext& ctx) {
    const Node& n = ctx.node;
    arithmetic_dtype(ctx, 0, false);
    ops::ResizeDesc d;
    d.input = ctx.desc(0);
    d.mode = n.get_string("mode", "nearest");
    if (n.op_type == "Upsample" || ctx.opset < 11) {
        // Upsample and Resize-10: asymmetric coordinates, nearest rounds down; scales only.
        const size_t scales_at = 1;
        if (n.op_type == "Upsample" && ctx.opset < 9)
            d.scales = n.get_floats("scales");
        else
            d.scales = ctx.const_floats(scales_at, "scales");
        if (d.mode == "bilinear") d.mode = "linear";
        d.coordinate_transformation_mode = "asymmetric";
        d.nearest_mode = "floor";
    } else {
        if (!ctx.empty_or_absent(1)) d.roi = ctx.const_floats(1, "roi");
        if (!ctx.empty_or_absent(2)) d.scales = ctx.const_floats(2, "scales");
        if (!ctx.empty_or_absent(3)) d.sizes = ctx.const_ints(3, "sizes");
        d.axes = n.get_ints("axes");
        d.coordinate_transformation_mode = n.get_string("coordinate_transformation_mode", "half_pixel");
        d.nearest_mode = n.get_string("nearest_mode", "round_prefer_floor");
        d.keep_aspect_ratio_policy = n.get_string("keep_aspect_ratio_policy", "stretch");
        d.cubic_coeff_a = n.get_float("cubic_coeff_a", -0.75f);
        d.exclude_outside = n.get_int("exclude_outside", 0);
        d.extrapolation_value = n.get_float("extrapolation_value", 0.f);
        d.antialias = n.get_int("antialias", 0);
        // tf_crop_and_resize takes roi per axis of the input; the desc wants it for `axes`.
        if (!d.roi.empty() && d.coordinate_transformation_mode != "tf_crop_and_resize") d.roi.clear();
    }
    return single(ops::Resize::create(ctx.device, d), {0}, {0});
}

Lowered lower_pad(LowerContext& ctx) {
    const Node& n = ctx.node;
    ops::PadDesc d;
    d.input = layout_desc(ctx, 0);
    d.mode = n.get_string("mode", "constant");
    if (ctx.opset < 11) {
        d.pads = n.get_ints("pads");
        d.constant_value = n.get_float("value", 0.f);
    } else {
        d.pads = ctx.const_ints(1, "pads");
        if (!ctx.empty_or_absent(2)) {
            const TensorData& v = ctx.constant(2, "constant_value");
            if (v.elements() != 1) ctx.fail("constant_value must hold one value");
            d.constant_value = graph::is_float(v.dtype())
                                   ? static_cast<double>(v.to_floats()[0])
                                   : static_cast<double>(v.to_int64s()[0]);
        }
        if (!ctx.empty_or_absent(3)) d.axes = ctx.const_ints(3, "axes");
    }
    return single(ops::Pad::create(ctx.device, d), {0}, {0});
}

Lowered lower_slice(LowerContext& ctx) {
    const Node& n = ctx.node;
    ops::SliceDesc d;
    d.input = layout_desc(ctx, 0);
    if (ctx.opset < 10) {
        d.starts = n.get_ints("starts");
        d.ends = n.get_ints("ends");
        d.axes = n.get_ints("axes");
    } else {
        d.starts = ctx.const_ints(1, "starts");
        d.ends = ctx.const_ints(2, "ends");
        if (!ctx.empty_or_absent(3)) d.axes = ctx.const_ints(3, "axes");
        if (!ctx.empty_or_absent(4)) d.steps = ctx.const_ints(4, "steps");
    }
    return single(ops::Slice::create(ctx.device, d), {0}, {0});
}

Lowered lower_split(LowerContext& ctx) {
    const Node& n = ctx.node;
    ops::SplitDesc d;
    d.input = layout_desc(ctx, 0);
    d.axis = n.get_int("axis", 0);
    if (ctx.opset >= 13) {
        if (!ctx.empty_or_absent(1)) d.split = ctx.const_ints(1, "split");
    } else {
        d.split = n.get_ints("split");
    }
    d.num_outputs = n.get_int("num_outputs", 0);
    if (d.split.empty() && d.num_outputs == 0) {
        // Before opset 18: equal parts, one per output.
        const int64_t parts = static_cast<int64_t>(n.outputs.size());
        const int64_t len = d.input.shape[static_cast<size_t>(norm_axis(ctx, d.axis, d.input.shape.rank()))];
        if (parts == 0 || len % parts != 0)
            ctx.fail("cannot split length " + std::to_string(len) + " into " + std::to_string(parts) +
                     " equal parts");
        d.split.assign(static_cast<size_t>(parts), len / parts);
    }
    std::vector<int> outs;
    for (size_t k = 0; k < n.outputs.size(); ++k) outs.push_back(out_or_none(n, k));
    Lowered l = single(ops::Split::create(ctx.device, d), {0}, outs);
    l.out_ir.assign(n.outputs.size(), ctx.input(0).ir);
    return l;
}

Lowered lower_concat(LowerContext& ctx) {
    ops::ConcatDesc d;
    d.axis = ctx.node.get_int("axis", 0);
    // One dtype for all: the policy's for floats; integers as stored when they agree.
    bool same = true;
    for (size_t i = 0; i < ctx.count(); ++i)
        if (ctx.has(i) && ctx.input(i).stored != ctx.input(0).stored) same = false;
    const gpu::DType dt = ctx.is_float(0) ? (same ? ctx.input(0).stored : ctx.float_dtype)
                          : same          ? ctx.input(0).stored
                                          : storage_of(ctx.input(0).ir);
    std::vector<int> ins;
    for (size_t i = 0; i < ctx.count(); ++i) {
        if (!ctx.has(i)) continue;
        d.inputs.push_back(ctx.desc_as(i, dt));
        ins.push_back(static_cast<int>(i));
    }
    Lowered l = single(ops::Concat::create(ctx.device, d), ins, {0});
    l.out_ir = {ctx.input(0).ir};
    return l;
}

Lowered lower_layout(LowerContext& ctx) {
    const Node& n = ctx.node;
    const std::string& op = n.op_type;
    std::unique_ptr<ops::Op> o;
    std::vector<int> ins = {0};
    if (op == "Transpose") {
        o = ops::Transpose::create(ctx.device,
                                   {layout_desc(ctx, 0), n.get_ints("perm"), fused_activation(n)});
    } else if (op == "DepthToSpace") {
        o = ops::DepthToSpace::create(
            ctx.device, {layout_desc(ctx, 0), n.get_int("blocksize", 0), n.get_string("mode", "DCR")});
    } else if (op == "SpaceToDepth") {
        o = ops::SpaceToDepth::create(ctx.device, {layout_desc(ctx, 0), n.get_int("blocksize", 0)});
    } else if (op == "Expand") {
        o = ops::Expand::create(ctx.device, {layout_desc(ctx, 0), ctx.const_ints(1, "shape")});
    } else if (op == "Trilu") {
        int64_t k = 0;
        if (!ctx.empty_or_absent(1)) {
            const auto v = ctx.const_ints(1, "k");
            if (v.size() != 1) ctx.fail("k must hold one value");
            k = v[0];
        }
        o = ops::Trilu::create(ctx.device, {layout_desc(ctx, 0), k, n.get_int("upper", 1) != 0});
    } else if (op == "Tile") {
        o = ops::Tile::create(ctx.device, {layout_desc(ctx, 0), ctx.const_ints(1, "repeats")});
    } else if (op == "Gather" || op == "GatherElements") {
        const TensorDesc idx = ctx.stored(1);
        if (idx.dtype != gpu::DType::i32 && idx.dtype != gpu::DType::i64)
            ctx.fail("indices must be int32 or int64", ErrorCode::Unsupported);
        if (op == "Gather")
            o = ops::Gather::create(ctx.device, {layout_desc(ctx, 0), idx, n.get_int("axis", 0)});
        else
            o = ops::GatherElements::create(ctx.device, {layout_desc(ctx, 0), idx, n.get_int("axis", 0)});
        ins.push_back(1);
    } else {
        ctx.fail("internal: no layout lowering", ErrorCode::Generic);
    }
    Lowered l = single(std::move(o), ins, {0});
    l.out_ir = {ctx.input(0).ir};
    return l;
}

Lowered lower_view(LowerContext& ctx) {
    const Node& n = ctx.node;
    const std::string& op = n.op_type;
    const gpu::Shape& in = ctx.input(0).shape;
    gpu::Shape out = in;
    if (op == "Reshape") {
        out = ops::reshape_shape(in, ctx.const_ints(1, "shape"), n.get_int("allowzero", 0) != 0);
    } else if (op == "Flatten") {
        out = ops::flatten_shape(in, n.get_int("axis", 1));
    } else if (op == "Squeeze" || op == "Unsqueeze") {
        std::vector<int64_t> axes;
        if (ctx.opset >= 13) {
            if (!ctx.empty_or_absent(1)) axes = ctx.const_ints(1, "axes");
        } else {
            axes = n.get_ints("axes");
        }
        if (op == "Unsqueeze" && in.rank() + axes.size() > gpu::max_rank)
            ctx.fail("the result would have rank " + std::to_string(in.rank() + axes.size()) +
                         "; vkml supports up to 6",
                     ErrorCode::Unsupported);
        out = op == "Squeeze" ? ops::squeeze_shape(in, axes) : ops::unsqueeze_shape(in, axes);
    } else if (op == "Dropout") {
        // The mask of a Dropout that drops nothing is a constant (infer_and_fold): a mask left
        // here is a random one.
        if (ctx.opset >= 12 && ctx.has(2)) {
            const auto t = ctx.constant(2, "training_mode").to_int64s();
            if (!t.empty() && t[0]) {
                const bool zero_ratio = !ctx.empty_or_absent(1) && ctx.const_floats(1, "ratio") == std::vector<float>{0.f};
                if (!zero_ratio)
                    ctx.fail("training_mode with a ratio other than 0 (random dropping) is not supported",
                             ErrorCode::Unsupported);
            }
        }
        if (out_or_none(n, 1) >= 0) ctx.fail("the mask output is not supported", ErrorCode::Unsupported);
    }
    Lowered l = view(0, out);
    l.out_ir = {ctx.input(0).ir};
    return l;
}

Lowered lower_nms(LowerContext& ctx) {
    const Node& n = ctx.node;
    arithmetic_dtype(ctx, 0, false);
    ops::NonMaxSuppressionDesc d;
    d.boxes = ctx.desc(0);
    d.scores = ctx.desc_as(1, ctx.float_dtype);
    if (!ctx.empty_or_absent(2)) {
        const auto v = ctx.const_ints(2, "max_output_boxes_per_class");
        d.max_output_boxes_per_class = v.empty() ? 0 : v[0];
    }
    if (!ctx.empty_or_absent(3)) d.iou_threshold = ctx.const_floats(3, "iou_threshold").at(0);
    if (!ctx.empty_or_absent(4)) d.score_threshold = ctx.const_floats(4, "score_threshold").at(0);
    d.center_point_box = n.get_int("center_point_box", 0);
    if (d.max_output_boxes_per_class <= 0)
        ctx.fail("max_output_boxes_per_class must be at least 1 (an empty output has no tensor)",
                 ErrorCode::Unsupported);
    Lowered l = single(ops::NonMaxSuppression::create(ctx.device, d), {0, 1}, {0, -1});
    l.out_ir = {DType::i64};
    return l;
}

// ---- losses ---------------------------------------------------------------------------------------

Lowered lower_loss(LowerContext& ctx) {
    const Node& n = ctx.node;
    arithmetic_dtype(ctx, 0, false);
    ops::LossDesc d;
    d.softmax = n.op_type == "SoftmaxCrossEntropyLoss";
    d.input = ctx.desc(0);
    d.target = ctx.stored(1);
    std::vector<int> ins = {0, 1};
    if (!ctx.empty_or_absent(2)) {
        d.weight = ctx.desc_as(2, ctx.float_dtype);
        ins.push_back(2);
    }
    d.reduction = n.get_string("reduction", "mean");
    if (n.find("ignore_index")) d.ignore_index = n.get_int("ignore_index", 0);
    std::vector<int> outs = {0};
    if (d.softmax && out_or_none(n, 1) >= 0) {
        d.log_prob = true;
        outs.push_back(1);
    }
    Lowered l = single(ops::Loss::create(ctx.device, d), ins, outs);
    l.out_ir.assign(n.outputs.size(), ctx.input(0).ir);
    return l;
}

// ---- recurrent ------------------------------------------------------------------------------------

Lowered lower_rnn(LowerContext& ctx) {
    const Node& n = ctx.node;
    arithmetic_dtype(ctx, 0, false);
    ops::RnnDesc d;
    d.kind = n.op_type == "RNN" ? ops::RnnKind::RNN : n.op_type == "GRU" ? ops::RnnKind::GRU : ops::RnnKind::LSTM;
    const gpu::DType f = ctx.float_dtype;
    d.x = ctx.desc(0);
    d.w = ctx.desc_as(1, f);
    d.r = ctx.desc_as(2, f);
    std::vector<int> ins = {0, 1, 2};
    auto take = [&](size_t i, std::optional<ops::TensorDesc>& field, gpu::DType dt) {
        if (ctx.empty_or_absent(i)) return;
        field = ctx.desc_as(i, dt);
        ins.push_back(static_cast<int>(i));
    };
    take(3, d.b, f);
    if (!ctx.empty_or_absent(4) && ctx.input(4).stored != gpu::DType::i32)
        ctx.fail("sequence_lens must be int32", ErrorCode::Unsupported);
    take(4, d.sequence_lens, gpu::DType::i32);
    take(5, d.initial_h, f);
    if (d.kind == ops::RnnKind::LSTM) {
        take(6, d.initial_c, f);
        take(7, d.p, f);
    }
    d.direction = n.get_string("direction", "forward");
    d.hidden_size = n.get_int("hidden_size", 0);
    if (const Attribute* a = n.find("activations")) d.activations = a->as_strings();
    if (const Attribute* a = n.find("activation_alpha")) d.activation_alpha = a->as_floats();
    if (const Attribute* a = n.find("activation_beta")) d.activation_beta = a->as_floats();
    if (n.find("clip")) d.clip = n.get_float("clip", 0.f);
    d.input_forget = n.get_int("input_forget", 0);
    d.linear_before_reset = n.get_int("linear_before_reset", 0);
    d.layout = n.get_int("layout", 0);
    std::vector<int> outs = {out_or_none(n, 0), out_or_none(n, 1)};
    if (d.kind == ops::RnnKind::LSTM) outs.push_back(out_or_none(n, 2));
    Lowered l = single(ops::Rnn::create(ctx.device, d), ins, outs);
    l.out_ir.assign(n.outputs.size(), ctx.input(0).ir);
    return l;
}

Lowered lower_cumsum(LowerContext& ctx) {
    const Node& n = ctx.node;
    const gpu::DType dt = arithmetic_dtype(ctx, 0, true);
    const auto axis = ctx.const_ints(1, "axis");
    if (axis.size() != 1) ctx.fail("axis must hold one value");
    ops::CumSumDesc d{ctx.desc_as(0, dt), axis[0], n.get_int("exclusive", 0) != 0, n.get_int("reverse", 0) != 0};
    Lowered l = single(ops::CumSum::create(ctx.device, d), {0}, {0});
    l.out_ir = {ctx.input(0).ir};
    return l;
}

Lowered lower_grid_sample(LowerContext& ctx) {
    const Node& n = ctx.node;
    arithmetic_dtype(ctx, 0, false);
    ops::GridSampleDesc d{ctx.desc(0), ctx.desc_as(1, ctx.float_dtype), n.get_string("mode", "bilinear"),
                          n.get_string("padding_mode", "zeros"), n.get_int("align_corners", 0)};
    return single(ops::GridSample::create(ctx.device, d), {0, 1}, {0});
}

Lowered lower_quantize(LowerContext& ctx) {
    const Node& n = ctx.node;
    ops::QuantizeDesc d;
    d.dequantize = n.op_type == "DequantizeLinear";
    d.axis = n.get_int("axis", 1);
    if (n.get_int("block_size", 0) != 0) ctx.fail("blocked quantization is not supported", ErrorCode::Unsupported);
    if (!ctx.is_float(1)) ctx.fail("scale must be a float tensor");
    d.scale = ctx.desc_as(1, gpu::DType::f32);
    std::vector<int> ins = {0, 1};
    const bool zero = !ctx.empty_or_absent(2);
    if (zero) {
        d.zero_point = ctx.desc_as(2, gpu::DType::i32);
        ins.push_back(2);
    }
    // The quantized type: the zero point's (uint8 when there is none), or x's for DequantizeLinear.
    const DType q = d.dequantize ? ctx.input(0).ir : zero ? ctx.input(2).ir : DType::u8;
    if (q != DType::u8 && q != DType::i8 && !(d.dequantize && q == DType::i32))
        ctx.fail(std::string("quantized type ") + dtype_name(q) + " is not supported (uint8, int8)",
                 ErrorCode::Unsupported);
    Lowered l;
    if (d.dequantize) {
        d.input = ctx.desc_as(0, q == DType::u8 ? gpu::DType::u8 : gpu::DType::i32);
        d.float_dtype = ctx.float_dtype;
        l = single(ops::Quantize::create(ctx.device, d), ins, {0});
        l.out_ir = {ctx.input(1).ir};
    } else {
        arithmetic_dtype(ctx, 0, false);
        d.input = ctx.desc_as(0, ctx.float_dtype);
        d.to_int8 = q == DType::i8;
        l = single(ops::Quantize::create(ctx.device, d), ins, {0});
        l.out_ir = {q};
    }
    return l;
}

Lowered lower_optimizer(LowerContext& ctx) {
    const Node& n = ctx.node;
    ops::OptimizerDesc d;
    d.kind = n.op_type == "Adagrad" ? ops::OptimizerKind::Adagrad
             : n.op_type == "Adam"  ? ops::OptimizerKind::Adam
                                    : ops::OptimizerKind::Momentum;
    const size_t groups = d.kind == ops::OptimizerKind::Adam ? 4 : 3; // X, G and the states
    if (ctx.count() < 2 + groups || (ctx.count() - 2) % groups != 0)
        ctx.fail("takes R, T and " + std::to_string(groups) + " tensors per optimized input, has " +
                 std::to_string(ctx.count()) + " inputs");
    const size_t k = (ctx.count() - 2) / groups;
    if (n.outputs.size() != k * (groups - 1)) ctx.fail("has the wrong number of outputs");
    if (!ctx.is_float(0)) ctx.fail("R must be a float tensor");
    d.r = ctx.desc_as(0, gpu::DType::f32);
    d.t = ctx.desc_as(1, gpu::DType::i32);
    std::vector<int> ins = {0, 1};
    for (size_t i = 2; i < ctx.count(); ++i) {
        arithmetic_dtype(ctx, i, false);
        if (ctx.input(i).shape != ctx.input(2 + (i - 2) % k).shape) ctx.fail("X, G and the states must share shapes");
        ins.push_back(static_cast<int>(i));
    }
    for (size_t i = 0; i < k; ++i) d.x.push_back(ctx.desc_as(2 + i, gpu::DType::f32));
    d.norm_coefficient = n.get_float("norm_coefficient", 0.f);
    d.epsilon = n.get_float("epsilon", 0.f);
    if (d.kind == ops::OptimizerKind::Adagrad) {
        d.decay_factor = n.get_float("decay_factor", 0.f);
    } else if (d.kind == ops::OptimizerKind::Adam) {
        d.alpha = n.get_float("alpha", 0.9f);
        d.beta = n.get_float("beta", 0.999f);
        d.norm_coefficient_post = n.get_float("norm_coefficient_post", 0.f);
    } else {
        if (!n.find("alpha") || !n.find("beta")) ctx.fail("Momentum needs alpha and beta");
        d.alpha = n.get_float("alpha", 0.f);
        d.beta = n.get_float("beta", 0.f);
        const std::string mode = n.get_string("mode", "standard");
        if (mode != "standard" && mode != "nesterov") ctx.fail("mode must be standard or nesterov, is '" + mode + "'");
        d.nesterov = mode == "nesterov";
    }
    std::vector<int> outs;
    for (size_t j = 0; j < n.outputs.size(); ++j) outs.push_back(static_cast<int>(j));
    Lowered l = single(ops::Optimizer::create(ctx.device, d), ins, outs);
    l.out_ir.assign(n.outputs.size(), ctx.input(2).ir);
    return l;
}

Lowered lower_layout_more(LowerContext& ctx) {
    const Node& n = ctx.node;
    const std::string& op = n.op_type;
    if (op == "ReverseSequence") {
        ops::ReverseSequenceDesc d{layout_desc(ctx, 0), ctx.desc_as(1, gpu::DType::i32), n.get_int("time_axis", 0),
                                   n.get_int("batch_axis", 1)};
        Lowered l = single(ops::ReverseSequence::create(ctx.device, d), {0, 1}, {0});
        l.out_ir = {ctx.input(0).ir};
        return l;
    }
    arithmetic_dtype(ctx, 0, false);
    if (op == "MaxUnpool") {
        ops::MaxUnpoolDesc d;
        d.input = ctx.desc(0);
        d.indices = ctx.desc_as(1, gpu::DType::i32);
        d.kernel_shape = n.get_ints("kernel_shape");
        d.strides = n.get_ints("strides");
        d.pads = n.get_ints("pads");
        if (!ctx.empty_or_absent(2)) d.output_shape = ctx.const_ints(2, "output_shape");
        return single(ops::MaxUnpool::create(ctx.device, d), {0, 1}, {0});
    }
    // RoiAlign
    ops::RoiAlignDesc d;
    d.input = ctx.desc(0);
    d.rois = ctx.desc_as(1, ctx.float_dtype);
    d.batch_indices = ctx.desc_as(2, gpu::DType::i32);
    d.mode = n.get_string("mode", "avg");
    d.output_height = n.get_int("output_height", 1);
    d.output_width = n.get_int("output_width", 1);
    d.sampling_ratio = n.get_int("sampling_ratio", 0);
    d.spatial_scale = n.get_float("spatial_scale", 1.f);
    d.coordinate_transformation_mode =
        n.get_string("coordinate_transformation_mode", ctx.opset >= 16 ? "half_pixel" : "output_half_pixel");
    return single(ops::RoiAlign::create(ctx.device, d), {0, 1, 2}, {0});
}

Lowered lower_math(LowerContext& ctx) {
    const Node& n = ctx.node;
    if (n.op_type == "DFT") {
        arithmetic_dtype(ctx, 0, false);
        ops::DftDesc d;
        d.input = ctx.desc(0);
        if (!ctx.empty_or_absent(1)) {
            const auto len = ctx.const_ints(1, "dft_length");
            if (len.size() != 1) ctx.fail("dft_length must hold one value");
            d.length = len[0];
            if (d.length < 1) ctx.fail("dft_length must be positive, is " + std::to_string(d.length));
        }
        if (ctx.opset >= 20) {
            if (!ctx.empty_or_absent(2)) {
                const auto a = ctx.const_ints(2, "axis");
                if (a.size() != 1) ctx.fail("axis must hold one value");
                d.axis = a[0];
            } else {
                d.axis = -2;
            }
        } else {
            d.axis = n.get_int("axis", 1);
        }
        d.inverse = n.get_int("inverse", 0) != 0;
        d.onesided = n.get_int("onesided", 0) != 0;
        return single(ops::Dft::create(ctx.device, d), {0}, {0});
    }
    if (n.op_type == "Einsum") {
        ops::EinsumDesc d;
        d.equation = n.get_string("equation", "");
        std::vector<int> ins;
        for (size_t i = 0; i < ctx.count(); ++i) {
            if (!ctx.has(i)) continue;
            arithmetic_dtype(ctx, i, false);
            d.inputs.push_back(ctx.desc_as(i, ctx.float_dtype));
            ins.push_back(static_cast<int>(i));
        }
        return single(ops::Einsum::create(ctx.device, d), ins, {0});
    }
    arithmetic_dtype(ctx, 0, false);
    return single(ops::Det::create(ctx.device, {ctx.desc_as(0, ctx.float_dtype)}), {0}, {0});
}

Lowered lower_indexing(LowerContext& ctx) {
    const Node& n = ctx.node;
    const std::string& op = n.op_type;
    auto index = [&](size_t i) {
        const TensorDesc idx = ctx.stored(i);
        if (idx.dtype != gpu::DType::i32 && idx.dtype != gpu::DType::i64)
            ctx.fail("indices must be int32 or int64", ErrorCode::Unsupported);
        return idx;
    };
    Lowered l;
    if (op == "OneHot") {
        const auto depth = ctx.const_floats(1, "depth");
        if (depth.size() != 1) ctx.fail("depth must hold one value");
        const TensorDesc idx = ctx.is_float(0) ? ctx.desc_as(0, gpu::DType::f32) : index(0);
        ops::OneHotDesc d{idx, layout_desc(ctx, 2), static_cast<int64_t>(depth[0]), n.get_int("axis", -1)};
        l = single(ops::OneHot::create(ctx.device, d), {0, 2}, {0});
        l.out_ir = {ctx.input(2).ir};
        return l;
    }
    if (op == "GatherND") {
        ops::GatherNDDesc d{layout_desc(ctx, 0), index(1), n.get_int("batch_dims", 0)};
        l = single(ops::GatherND::create(ctx.device, d), {0, 1}, {0});
    } else {
        ops::ScatterDesc d;
        d.nd = op == "ScatterND";
        d.data = layout_desc(ctx, 0);
        d.indices = index(1);
        d.updates = ctx.desc_as(2, d.data.dtype);
        d.axis = n.get_int("axis", 0);
        d.reduction = n.get_string("reduction", "none");
        l = single(ops::Scatter::create(ctx.device, d), {0, 1, 2}, {0});
    }
    l.out_ir = {ctx.input(0).ir};
    return l;
}

} // namespace

// ---- context --------------------------------------------------------------------------------------

LowerContext::LowerContext(gpu::Device& device_, const Graph& graph_, const Node& node_,
                           std::vector<LowerInput> inputs, gpu::DType float_dtype_)
    : device(device_), graph(graph_), node(node_), float_dtype(float_dtype_),
      opset(graph_.opset_version("") ? graph_.opset_version("") : 18), in_(std::move(inputs)) {}

const LowerInput& LowerContext::input(size_t i) const {
    if (!has(i)) fail("input " + std::to_string(i) + " is required but absent");
    return in_[i];
}

const TensorData& LowerContext::constant(size_t i, const std::string& what) const {
    const LowerInput& x = input(i);
    if (!x.data)
        fail("input " + std::to_string(i) + " ('" + graph.value(x.id).name + "', " + what +
                 ") must be a constant: vkml creates operators for fixed parameters, and this one is "
                 "computed at run time",
             ErrorCode::Unsupported);
    return *x.data;
}

std::vector<int64_t> LowerContext::const_ints(size_t i, const std::string& what) const {
    const TensorData& t = constant(i, what);
    if (graph::is_float(t.dtype()))
        fail(what + " must be an integer tensor, is " + dtype_name(t.dtype()));
    return t.to_int64s();
}

std::vector<float> LowerContext::const_floats(size_t i, const std::string& what) const {
    return constant(i, what).to_floats();
}

bool LowerContext::empty_or_absent(size_t i) const {
    if (!has(i)) return true;
    return in_[i].shape.elements() == 0;
}

bool LowerContext::is_float(size_t i) const {
    return graph::is_float(input(i).ir);
}

gpu::DType LowerContext::policy(size_t i) const {
    return is_float(i) ? float_dtype : storage_of(input(i).ir);
}

void LowerContext::fail(const std::string& problem, ErrorCode code) const {
    graph.fail(node, problem, code);
}

// ---- entry points -----------------------------------------------------------------------------------

gpu::DType storage_of(DType dtype) {
    switch (dtype) {
    case DType::f16:
        return gpu::DType::f16;
    case DType::i32:
        return gpu::DType::i32;
    case DType::i64:
        return gpu::DType::i64;
    case DType::u8:
    case DType::boolean:
        return gpu::DType::u8;
    case DType::i8:
    case DType::i16:
    case DType::u16:
        return gpu::DType::i32;
    case DType::u32:
    case DType::u64:
        return gpu::DType::i64;
    default:
        return gpu::DType::f32;
    }
}

DType onnx_type(int64_t code, const Graph& graph, const Node& node) {
    switch (code) {
    case 1:
        return DType::f32;
    case 2:
        return DType::u8;
    case 6:
        return DType::i32;
    case 7:
        return DType::i64;
    case 9:
        return DType::boolean;
    case 10:
        return DType::f16;
    case 11:
        return DType::f64;
    case 3:
        return DType::i8;
    case 5:
        return DType::i16;
    case 4:
        return DType::u16;
    case 12:
        return DType::u32;
    case 13:
        return DType::u64;
    default:
        graph.fail(node, "casts to ONNX data type " + std::to_string(code) + ", which vkml does not support",
                   ErrorCode::Unsupported);
    }
}

ops::Activation fused_activation(const Node& node) {
    ops::Activation a;
    const std::string kind = node.get_string("vkml_activation", "");
    if (kind.empty()) return a;
    static const std::map<std::string, ops::ActivationKind, std::less<>> kinds = {
        {"Relu", ops::ActivationKind::Relu},
        {"LeakyRelu", ops::ActivationKind::LeakyRelu},
        {"Clip", ops::ActivationKind::Clip},
        {"Sigmoid", ops::ActivationKind::Sigmoid},
        {"HardSigmoid", ops::ActivationKind::HardSigmoid},
        {"HardSwish", ops::ActivationKind::HardSwish},
        {"Tanh", ops::ActivationKind::Tanh},
        {"Silu", ops::ActivationKind::Silu},
        {"Gelu", ops::ActivationKind::Gelu},
        {"Elu", ops::ActivationKind::Elu},
        {"Mish", ops::ActivationKind::Mish}};
    auto it = kinds.find(kind);
    if (it == kinds.end())
        throw Error(ErrorCode::InvalidArgument,
                    node.describe() + ": unknown fused activation '" + kind + "'");
    a.kind = it->second;
    a.alpha = node.get_float("vkml_activation_alpha", 0.f);
    a.beta = node.get_float("vkml_activation_beta", 0.f);
    return a;
}

namespace {

// The kind of a type the kind tables name (Unary, Binary, Variadic, Reduce*): op_types.inc lists
// each of these types with that table's lowering.
template <class Map> auto kind_of(const LowerContext& ctx, const Map& kinds) {
    const auto it = kinds.find(ctx.node.op_type);
    if (it == kinds.end()) ctx.fail("internal: op_types.inc names a lowering whose kind table lacks the type");
    return it->second;
}
Lowered lower_unary(LowerContext& ctx) {
    return lower_unary(ctx, kind_of(ctx, unary_kinds()));
}
Lowered lower_binary(LowerContext& ctx) {
    return lower_binary(ctx, kind_of(ctx, binary_kinds()));
}
Lowered lower_variadic(LowerContext& ctx) {
    return lower_variadic(ctx, kind_of(ctx, variadic_kinds()));
}
Lowered lower_reduce(LowerContext& ctx) {
    return lower_reduce(ctx, kind_of(ctx, reduce_kinds()));
}

Lowered lower_bit_shift(LowerContext& ctx) {
    const std::string dir = ctx.node.get_string("direction", "");
    if (dir != "LEFT" && dir != "RIGHT") ctx.fail("direction must be LEFT or RIGHT, is '" + dir + "'");
    return lower_binary(ctx, dir == "LEFT" ? ops::BinaryKind::BitShiftLeft : ops::BinaryKind::BitShiftRight);
}

Lowered lower_dynamic_quantize(LowerContext& ctx) {
    arithmetic_dtype(ctx, 0, false);
    Lowered l = single(ops::DynamicQuantize::create(ctx.device, {ctx.desc(0)}), {0},
                       {out_or_none(ctx.node, 0), out_or_none(ctx.node, 1), out_or_none(ctx.node, 2)});
    l.out_ir = {DType::u8, DType::f32, DType::u8};
    l.out_ir.resize(ctx.node.outputs.size());
    return l;
}

using LowerFn = Lowered (*)(LowerContext&);
constexpr LowerFn lower_none = nullptr;

// (domain, type) -> its lowering, from the `lowering` column of op_types.inc.
const std::map<std::pair<std::string_view, std::string_view>, LowerFn>& lowerings() {
    static const auto m = [] {
        std::map<std::pair<std::string_view, std::string_view>, LowerFn> table;
        auto add = [&table](std::string_view domain, std::string_view type, LowerFn fn) {
            if (fn) table.emplace(std::pair(domain, type), fn);
        };
#define VKML_OP(domain, type, lowering, host, expand, listed) add(op_domain::domain, #type, LowerFn(lower_##lowering));
#include "op_types.inc"
#undef VKML_OP
        return table;
    }();
    return m;
}

} // namespace

bool lowerable(const Node& node) {
    return lowerings().count({node.domain, node.op_type}) > 0;
}

Lowered lower(LowerContext& ctx) {
    const std::string& op = ctx.node.op_type;
    const auto it = lowerings().find({ctx.node.domain, op});
    if (it == lowerings().end())
        ctx.fail("operator " + op + " is not supported by vkml (`vkml ops` lists the supported ones)",
                 ErrorCode::Unsupported);
    Lowered l = it->second(ctx);
    // Default graph dtypes of the outputs: floats keep the first float input's type, other outputs
    // the first input's (so an i64 stored as i32, or a bool, stays what it is in the graph).
    if (l.out_ir.empty()) {
        DType float_ir = DType::f32;
        for (size_t i = 0; i < ctx.count(); ++i)
            if (ctx.has(i) && ctx.is_float(i)) {
                float_ir = ctx.input(i).ir;
                break;
            }
        l.out_ir.assign(ctx.node.outputs.size(), float_ir);
        for (size_t j = 0; l.op && j < l.op_outputs.size(); ++j) {
            const int k = l.op_outputs[j];
            const gpu::DType d = l.op->outputs()[j].dtype;
            if (k < 0 || d == gpu::DType::f32 || d == gpu::DType::f16) continue;
            const bool follow = ctx.has(0) && !ctx.is_float(0) && storage_of(ctx.input(0).ir) == d;
            l.out_ir[static_cast<size_t>(k)] = follow                 ? ctx.input(0).ir
                                               : d == gpu::DType::i32 ? DType::i32
                                               : d == gpu::DType::i64 ? DType::i64
                                                                      : DType::u8;
        }
    }
    l.out_ir.resize(ctx.node.outputs.size(), DType::f32);
    return l;
}

} // namespace vkml::graph::detail
