// Ops vkml runs as a few of its other ops, expanded while infer_and_fold walks the graph (every
// input before the node has its static shape and dtype, the constants are folded):
//
//   MeanVarianceNormalization   D = X - ReduceMean(X, axes); Y = D / (Sqrt(ReduceMean(D * D, axes))
//                               + 1e-9): ONNX's function body, with the variance taken around the
//                               mean (the same value as E[X^2] - E[X]^2, without its cancellation)
//   MaxPool of uint8 or int8    Cast to f32, MaxPool, Cast back: exact, every such value is an f32
//   STFT                        Gather of the frames ([batch, frames, frame_length, 1 or 2], by a
//                               constant index table), Mul by the window, DFT over the frame axis
//   MatMulInteger, ConvInteger  (A - a_zero_point) and (B - b_zero_point) as f32, MatMul or Conv in
//                               f32 over chunks of the reduction so short that no partial sum can
//                               pass 2^24 (so every one is an exact integer), each chunk cast to
//                               int32, the chunks summed in int32 (wrapping, as ONNX Runtime does)
//   QLinearMatMul, QLinearConv  that int32 accumulator (plus QLinearConv's int32 bias) as f32, times
//                               scale_a x scale_b / y_scale, then QuantizeLinear with scale 1 and
//                               y's zero point (round half to even, saturating)
//
// The f32 nodes of the integer ops carry vkml_fp32, which the session's precision policy honours,
// so an f16 session computes them exactly as well.
#include <algorithm>

#include "op_types.hpp"
#include "passes.hpp"

namespace vkml::graph {

namespace {


constexpr int64_t onnx_float = 1, onnx_int32 = 6;
constexpr int64_t exact_f32 = int64_t{1} << 24; // every integer of magnitude up to this is an f32

bool eight_bit(DType t) {
    return t == DType::u8 || t == DType::i8;
}

struct Composer {
    Graph& g;
    const Node& n; // a copy owned by the caller
    ExpandBudget& budget;
    std::vector<Node> out;

    [[noreturn]] void fail(const std::string& problem, ErrorCode code = ErrorCode::InvalidArgument) const {
        g.fail(n, problem, code);
    }
    bool has(size_t i) const { return i < n.inputs.size() && n.inputs[i] != no_value; }
    ValueId in(size_t i) const {
        if (!has(i)) fail("input " + std::to_string(i) + " is missing");
        return n.inputs[i];
    }
    const Value& val(ValueId v) const { return g.value(v); }
    std::vector<int64_t> dims(ValueId v) const {
        const auto sizes = val(v).shape ? val(v).shape->sizes() : std::nullopt;
        if (!sizes) fail("input '" + val(v).name + "' has no static shape");
        return *sizes;
    }

    std::string prefix() const { return n.name + "/"; }
    ValueId fresh(const std::string& base) { return g.add_value(g.unique_name(prefix() + base)); }
    ValueId const_ints(const std::string& base, const std::vector<int64_t>& v) {
        return g.add_constant(g.unique_name(prefix() + base),
                              TensorData::from_int64s({static_cast<int64_t>(v.size())}, v));
    }
    ValueId const_float(const std::string& base, float f) {
        return g.add_constant(g.unique_name(prefix() + base), TensorData::scalar(f));
    }
    Node& emit(std::string op, std::vector<ValueId> inputs, std::vector<ValueId> outputs, const std::string& what,
               bool fp32 = false) {
        if (++budget.nodes > max_expanded_nodes)
            fail("expands into more than " + std::to_string(max_expanded_nodes) + " nodes", ErrorCode::Unsupported);
        Node m;
        m.name = prefix() + what;
        m.op_type = std::move(op);
        m.inputs = std::move(inputs);
        m.outputs = std::move(outputs);
        if (fp32) m.attributes.insert_or_assign("vkml_fp32", Attribute(int64_t{1}));
        out.push_back(std::move(m));
        return out.back();
    }
    ValueId op1(const std::string& op, std::vector<ValueId> inputs, const std::string& what, bool fp32 = false) {
        const ValueId y = fresh(what);
        emit(op, std::move(inputs), {y}, what, fp32);
        return y;
    }
    ValueId cast(ValueId x, int64_t to, const std::string& what, bool fp32, ValueId into = no_value) {
        const ValueId y = into == no_value ? fresh(what) : into;
        emit("Cast", {x}, {y}, what, fp32).attributes.insert_or_assign("to", Attribute(to));
        return y;
    }

    void mvn() {
        const ValueId x = in(0);
        if (!is_float(val(x).dtype)) fail(std::string("takes a float tensor, not ") + dtype_name(val(x).dtype));
        const std::vector<int64_t> axes = n.get_ints("axes", {0, 2, 3});
        auto mean = [&](ValueId v, const std::string& what) {
            Node& r = emit("ReduceMean", {v}, {fresh(what)}, what);
            r.attributes.insert_or_assign("axes", Attribute(axes));
            r.attributes.insert_or_assign("keepdims", Attribute(int64_t{1}));
            return r.outputs[0];
        };
        const ValueId m = mean(x, "mean");
        const ValueId d = op1("Sub", {x, m}, "centred");
        const ValueId var = mean(op1("Mul", {d, d}, "squares"), "variance");
        const ValueId sd = op1("Add", {op1("Sqrt", {var}, "deviation"), const_float("epsilon", 1e-9f)}, "deviation_eps");
        emit("Div", {d, sd}, {n.outputs.at(0)}, "normalized");
    }

    // A decision input that must be a constant by now.
    std::vector<int64_t> constant_ints(size_t i, const std::string& what) const {
        const ValueId v = in(i);
        if (!val(v).is_constant())
            fail("its " + what + " '" + val(v).name +
                     "' must be a constant: vkml builds a fixed program for it, and this value is computed on the "
                     "device (give it with SessionOptions::constant_inputs if it is a model input)",
                 ErrorCode::Unsupported);
        if (is_float(val(v).dtype)) fail("its " + what + " must be an integer");
        return val(v).data->to_int64s();
    }

    void stft() {
        const ValueId signal = in(0);
        if (!is_float(val(signal).dtype)) fail(std::string("takes a float signal, not ") + dtype_name(val(signal).dtype));
        const std::vector<int64_t> sd = dims(signal);
        if (sd.size() != 3 || (sd[2] != 1 && sd[2] != 2))
            fail("takes a signal [batch, length, 1 or 2], not " + to_string(Shape(sd)));
        const auto step = constant_ints(1, "frame_step");
        if (step.size() != 1 || step[0] < 1) fail("frame_step must be one positive value");
        const ValueId window = has(2) ? in(2) : no_value;
        int64_t length = -1;
        if (window != no_value) {
            const auto wd = dims(window);
            if (wd.size() != 1) fail("its window must be 1-D");
            length = wd[0];
        }
        if (has(3)) {
            const auto l = constant_ints(3, "frame_length");
            if (l.size() != 1) fail("frame_length must hold one value");
            if (length >= 0 && l[0] != length)
                fail("frame_length " + std::to_string(l[0]) + " is not the window's length " + std::to_string(length));
            length = l[0];
        }
        if (length < 1) fail("needs a window or a frame_length of at least 1");
        if (length > sd[1])
            fail("its frames (" + std::to_string(length) + ") are longer than the signal (" + std::to_string(sd[1]) + ")");
        const int64_t frames = (sd[1] - length) / step[0] + 1;
        if (frames > max_loop_iterations || length > host_max_elements / frames)
            fail("has too many frames to index (" + std::to_string(frames) + " of " + std::to_string(length) + ")",
                 ErrorCode::Unsupported);
        std::vector<int64_t> index(static_cast<size_t>(frames * length));
        for (int64_t f = 0; f < frames; ++f)
            for (int64_t j = 0; j < length; ++j) index[static_cast<size_t>(f * length + j)] = f * step[0] + j;
        const ValueId table = g.add_constant(g.unique_name(prefix() + "frame_index"),
                                             TensorData::from_int64s({frames, length}, index));
        const ValueId framed = fresh("frames");
        emit("Gather", {signal, table}, {framed}, "frames").attributes.insert_or_assign("axis", Attribute(int64_t{1}));
        ValueId x = framed;
        if (window != no_value) {
            const ValueId w = op1("Reshape", {window, const_ints("window_shape", {length, 1})}, "window_column");
            x = op1("Mul", {framed, w}, "windowed");
        }
        std::vector<ValueId> dft_inputs = {x};
        if (g.opset_version("") >= 20) dft_inputs = {x, no_value, const_ints("axis", {2})};
        Node& dft = emit("DFT", dft_inputs, {n.outputs.at(0)}, "dft");
        if (g.opset_version("") < 20) dft.attributes.insert_or_assign("axis", Attribute(int64_t{2}));
        dft.attributes.insert_or_assign("onesided", Attribute(n.get_int("onesided", 1)));
    }

    void max_pool_8bit() {
        const ValueId x = in(0);
        const DType t = val(x).dtype;
        const ValueId xf = cast(x, onnx_float, "as_float", false);
        Node pool = n;
        pool.name = prefix() + "pool";
        pool.inputs = {xf};
        const ValueId yf = fresh("pooled");
        pool.outputs.at(0) = yf;
        if (++budget.nodes > max_expanded_nodes) fail("expands into too many nodes", ErrorCode::Unsupported);
        out.push_back(std::move(pool));
        cast(yf, t == DType::u8 ? 2 : 3, std::string("to_") + dtype_name(t), false, n.outputs.at(0));
    }

    // The largest |x - zero point| the values of x and its zero point allow (their data when
    // constant, else their types' ranges).
    int64_t max_offset(ValueId x, ValueId zero_point) const {
        auto range = [&](ValueId v, int64_t& lo, int64_t& hi) {
            const Value& value = val(v);
            if (!eight_bit(value.dtype))
                fail("input '" + value.name + "' is " + dtype_name(value.dtype) + "; " + n.op_type +
                     " takes uint8 or int8");
            lo = value.dtype == DType::u8 ? 0 : -128;
            hi = value.dtype == DType::u8 ? 255 : 127;
            if (value.is_constant() && value.data->elements() > 0) {
                const auto d = value.data->to_int64s();
                lo = *std::min_element(d.begin(), d.end());
                hi = *std::max_element(d.begin(), d.end());
            }
        };
        int64_t xlo = 0, xhi = 0, zlo = 0, zhi = 0;
        range(x, xlo, xhi);
        if (zero_point != no_value) {
            if (val(zero_point).dtype != val(x).dtype)
                fail("its zero point '" + val(zero_point).name + "' is " + dtype_name(val(zero_point).dtype) +
                     ", its data " + dtype_name(val(x).dtype));
            range(zero_point, zlo, zhi);
        }
        return std::max<int64_t>({1, xhi - zlo, zhi - xlo});
    }

    // x - zero_point as f32 (the zero point reshaped to `zp_shape` when it is not a scalar).
    ValueId offset(ValueId x, ValueId zero_point, const std::vector<int64_t>& zp_shape, const std::string& what) {
        const ValueId xf = cast(x, onnx_float, what + "_float", true);
        if (zero_point == no_value) return xf;
        ValueId zf = cast(zero_point, onnx_float, what + "_zero_float", true);
        const auto zd = dims(zero_point);
        int64_t count = 1;
        for (int64_t d : zd) count *= d;
        if (count != 1) // a per-row or per-channel zero point
            zf = op1("Reshape", {zf, const_ints(what + "_zero_shape", zp_shape)}, what + "_zero", true);
        return op1("Sub", {xf, zf}, what + "_offset", true);
    }

    ValueId slice(ValueId x, int64_t axis, int64_t begin, int64_t end, const std::string& what) {
        return op1("Slice", {x, const_ints(what + "_starts", {begin}), const_ints(what + "_ends", {end}),
                             const_ints(what + "_axes", {axis})},
                   what, true);
    }

    // At most max_chunks f32 pieces of a reduction of `length` (a model asking for more is refused
    // before any node is made).
    static constexpr int64_t max_chunks = 4096;
    void check_chunks(int64_t length, int64_t chunk) const {
        if (length / chunk >= max_chunks)
            fail("its reduction of " + std::to_string(length) + " would take more than " + std::to_string(max_chunks) +
                     " exact f32 chunks of " + std::to_string(chunk),
                 ErrorCode::Unsupported);
    }

    // The int32 sum of `parts` (f32 exact integers) into the node's output.
    void sum_as_int32(const std::vector<ValueId>& parts, ValueId into) {
        if (parts.size() == 1) {
            cast(parts[0], onnx_int32, "to_int32", true, into);
            return;
        }
        std::vector<ValueId> ints;
        for (size_t k = 0; k < parts.size(); ++k)
            ints.push_back(cast(parts[k], onnx_int32, "chunk" + std::to_string(k) + "_int32", true));
        emit("Sum", ints, {into}, "sum", true);
    }

    ValueId optional(size_t i) const { return has(i) ? in(i) : no_value; }

    // (a - az) x (b - bz) as int32 into `into`.
    void matmul_integer(ValueId a, ValueId az, ValueId b, ValueId bz, ValueId into) {
        const std::vector<int64_t> ad = dims(a), bd = dims(b);
        if (ad.empty() || bd.empty()) fail("takes tensors of rank 1 or more");
        const int64_t k = ad.back(), kb = bd.size() == 1 ? bd[0] : bd[bd.size() - 2];
        if (k != kb) fail("A's columns (" + std::to_string(k) + ") are not B's rows (" + std::to_string(kb) + ")");
        // a_zero_point is per row of A ([M] -> [M, 1]); b_zero_point per column of B ([N] broadcasts).
        const int64_t rows = ad.size() >= 2 ? ad[ad.size() - 2] : 1;
        const ValueId af = offset(a, az, {rows, 1}, "a");
        const ValueId bf = offset(b, bz, {bd.back()}, "b");
        const int64_t chunk = std::max<int64_t>(1, exact_f32 / (max_offset(a, az) * max_offset(b, bz)));
        check_chunks(k, chunk);
        const int64_t b_axis = bd.size() == 1 ? 0 : static_cast<int64_t>(bd.size()) - 2;
        std::vector<ValueId> parts;
        for (int64_t k0 = 0; k0 < k || (k == 0 && parts.empty()); k0 += chunk) {
            const int64_t k1 = std::min(k, k0 + chunk);
            const std::string tag = "chunk" + std::to_string(parts.size());
            const bool whole = k0 == 0 && k1 == k;
            const ValueId as = whole ? af : slice(af, static_cast<int64_t>(ad.size()) - 1, k0, k1, tag + "_a");
            const ValueId bs = whole ? bf : slice(bf, b_axis, k0, k1, tag + "_b");
            parts.push_back(op1("MatMul", {as, bs}, tag, true));
            if (k == 0) break;
        }
        sum_as_int32(parts, into);
    }

    // Conv(x - xz, w - wz) with the node's attributes as int32 into `into`.
    void conv_integer(ValueId x, ValueId xz, ValueId w, ValueId wz, ValueId into) {
        const std::vector<int64_t> xd = dims(x), wd = dims(w);
        if (xd.size() < 3 || wd.size() != xd.size()) fail("takes X of rank 3 or more and W of the same rank");
        if (xz != no_value && val(xz).shape && val(xz).shape->rank() > 0 &&
            (!val(xz).shape->sizes() || (*val(xz).shape->sizes()) != std::vector<int64_t>{1}))
            fail("x_zero_point must be a scalar (per tensor)");
        std::vector<int64_t> w_zero_shape(wd.size(), 1);
        w_zero_shape[0] = wd[0];
        const ValueId xf = offset(x, xz, {1}, "x");
        const ValueId wf = offset(w, wz, w_zero_shape, "w");
        int64_t taps = 1;
        for (size_t i = 2; i < wd.size(); ++i) {
            taps *= std::max<int64_t>(1, wd[i]);
            if (taps > exact_f32) break; // more than any chunk holds; checked below
        }
        const int64_t limit = exact_f32 / (max_offset(x, xz) * max_offset(w, wz)); // products per sum
        const int64_t group = n.get_int("group", 1);
        const int64_t channels = wd[1]; // per group
        if (taps > limit)
            fail("its kernel has " + std::to_string(taps) + " taps; vkml computes ConvInteger exactly in f32 chunks of at most " +
                     std::to_string(limit) + " products",
                 ErrorCode::Unsupported);
        if (channels > limit / taps && group != 1)
            fail("sums " + std::to_string(channels) + " x " + std::to_string(taps) + " products per output with group " +
                     std::to_string(group) + "; vkml computes ConvInteger exactly in f32 chunks of at most " +
                     std::to_string(limit) + " products, split over input channels at group 1 only",
                 ErrorCode::Unsupported);
        const int64_t chunk = group != 1 ? std::max<int64_t>(1, channels) : std::max<int64_t>(1, limit / taps);
        check_chunks(channels, chunk);
        std::vector<ValueId> parts;
        for (int64_t c0 = 0; c0 < channels || parts.empty(); c0 += chunk) {
            const int64_t c1 = std::min(channels, c0 + chunk);
            const std::string tag = "chunk" + std::to_string(parts.size());
            const bool whole = c0 == 0 && c1 == channels;
            const ValueId xs = whole ? xf : slice(xf, 1, c0, c1, tag + "_x");
            const ValueId ws = whole ? wf : slice(wf, 1, c0, c1, tag + "_w");
            const ValueId y = fresh(tag);
            Node& conv = emit("Conv", {xs, ws}, {y}, tag, true);
            for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
                if (const Attribute* at = n.find(a)) conv.attributes.insert_or_assign(a, *at);
            parts.push_back(y);
            if (channels == 0) break;
        }
        sum_as_int32(parts, into);
    }

    // A scale as f32, reshaped to `shape` when it holds more than one value.
    ValueId scale(ValueId v, const std::vector<int64_t>& shape, const std::string& what) {
        if (!is_float(val(v).dtype)) fail("its " + what + " '" + val(v).name + "' must be a float tensor");
        ValueId f = cast(v, onnx_float, what + "_f32", true);
        int64_t count = 1;
        for (int64_t d : dims(v)) count *= d;
        if (count != 1) f = op1("Reshape", {f, const_ints(what + "_shape", shape)}, what + "_reshaped", true);
        return f;
    }

    // QuantizeLinear(acc x multiplier, 1, y_zero_point) into the node's output: round half to even
    // and saturate, the multiplier being (scale_a x scale_b / y_scale) as ONNX computes it.
    void requantize(ValueId acc, ValueId sa, ValueId sb, ValueId ys, ValueId yz) {
        const ValueId accf = cast(acc, onnx_float, "acc_f32", true);
        const ValueId m = op1("Div", {op1("Mul", {sa, sb}, "scales", true), scale(ys, {1}, "y_scale")}, "multiplier", true);
        const ValueId y = op1("Mul", {accf, m}, "scaled", true);
        std::vector<ValueId> q = {y, const_float("unit_scale", 1.f)};
        if (yz != no_value) q.push_back(yz);
        emit("QuantizeLinear", q, {n.outputs.at(0)}, "quantize", true);
    }

    // QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point).
    void qlinear_matmul() {
        const ValueId a = in(0), b = in(3);
        const std::vector<int64_t> ad = dims(a), bd = dims(b);
        if (ad.empty() || bd.empty()) fail("takes tensors of rank 1 or more");
        const int64_t rows = ad.size() >= 2 ? ad[ad.size() - 2] : 1;
        const ValueId acc = fresh("acc");
        matmul_integer(a, optional(2), b, optional(5), acc);
        requantize(acc, scale(in(1), {rows, 1}, "a_scale"), scale(in(4), {bd.back()}, "b_scale"), in(6), optional(7));
    }

    // QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B).
    void qlinear_conv() {
        const ValueId x = in(0), w = in(3);
        const std::vector<int64_t> wd = dims(w);
        if (wd.size() < 3) fail("takes W of rank 3 or more");
        std::vector<int64_t> per_channel(wd.size() - 1, 1);
        per_channel[0] = wd[0];
        ValueId acc = fresh("acc");
        conv_integer(x, optional(2), w, optional(5), acc);
        if (has(8)) {
            const ValueId bias = in(8);
            if (val(bias).dtype != DType::i32) fail("its bias must be int32");
            const auto bdims = dims(bias);
            if (bdims.size() != 1 || bdims[0] != wd[0]) fail("its bias must be [M], one per output channel");
            const ValueId b = op1("Reshape", {bias, const_ints("bias_shape", per_channel)}, "bias_column", true);
            acc = op1("Add", {acc, b}, "acc_bias", true);
        }
        requantize(acc, scale(in(1), {1}, "x_scale"), scale(in(4), per_channel, "w_scale"), in(6), optional(7));
    }
};

} // namespace

bool composite_type(const Node& node) {
    const detail::OpType* t = detail::find_op_type(node.domain, node.op_type);
    return t && t->expand == detail::Expand::composite;
}

bool composite_op(const Graph& graph, const Node& node) {
    if (composite_type(node)) return true;
    if (node.domain.empty() && node.op_type == "MaxPool" && !node.inputs.empty() && node.inputs[0] != no_value)
        return eight_bit(graph.value(node.inputs[0]).dtype);
    return false;
}

std::vector<Node> expand_composite(Graph& graph, const Node& node, ExpandBudget& budget) {
    Composer c{graph, node, budget, {}};
    try {
        if (node.outputs.empty() || node.outputs[0] == no_value) c.fail("has no output");
        if (node.op_type == "MeanVarianceNormalization")
            c.mvn();
        else if (node.op_type == "MaxPool")
            c.max_pool_8bit();
        else if (node.op_type == "MatMulInteger")
            c.matmul_integer(c.in(0), c.optional(2), c.in(1), c.optional(3), node.outputs[0]);
        else if (node.op_type == "ConvInteger")
            c.conv_integer(c.in(0), c.optional(2), c.in(1), c.optional(3), node.outputs[0]);
        else if (node.op_type == "QLinearMatMul")
            c.qlinear_matmul();
        else if (node.op_type == "QLinearConv")
            c.qlinear_conv();
        else if (node.op_type == "STFT")
            c.stft();
        else
            c.fail("internal: not a composite op");
    } catch (const Error& e) {
        graph.fail_for(node, e);
    }
    return std::move(c.out);
}

} // namespace vkml::graph
