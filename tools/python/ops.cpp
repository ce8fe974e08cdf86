// vkml.ops: operators one at a time on NumPy arrays, for testing and prototyping.
//   conv(): the layer-by-layer API itself (ops::Conv::create, record, submit), with its fused
//           activation and residual.
//   run():  any ONNX operator vkml lowers, through a one-node graph and a Session, so every op
//           family is reachable with ONNX's attribute names and nothing is re-implemented here.

#include <algorithm>
#include <optional>

#include "common.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/transfer.hpp"
#include "vkml/graph/graph.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/ops/conv.hpp"
#include "vkml/ops/registry.hpp"

namespace vkml::python {

namespace {

gpu::DType float_storage(const py::array& a, const char* what) {
    if (a.dtype().equal(py::dtype("float32"))) return gpu::DType::f32;
    if (a.dtype().equal(py::dtype("float16"))) return gpu::DType::f16;
    throw py::type_error(std::string("vkml.ops.conv: ") + what + " is " + text(a.dtype()) +
                         "; conv takes float32 or float16 arrays");
}

gpu::Shape gpu_shape(const py::array& a, const char* what) {
    if (a.ndim() < 1 || static_cast<size_t>(a.ndim()) > gpu::max_rank)
        throw py::value_error(std::string("vkml.ops.conv: ") + what + " has " + std::to_string(a.ndim()) +
                              " dimensions; vkml tensors have 1 to " + std::to_string(gpu::max_rank));
    std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
    return gpu::Shape(std::span<const int64_t>(dims));
}

ops::Activation activation_from(const py::object& name, float alpha, float beta) {
    ops::Activation a;
    if (name.is_none()) return a;
    auto squash = [](std::string s) {
        std::string t;
        for (char c : s)
            if (c != '_' && c != '-') t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return t;
    };
    const std::string want = squash(name.cast<std::string>());
    std::string known;
    for (int k = 1; k <= static_cast<int>(ops::ActivationKind::Mish); ++k) {
        const auto kind = static_cast<ops::ActivationKind>(k);
        const std::string n = ops::activation_name(kind);
        known += (known.empty() ? "" : ", ") + n;
        if (squash(n) == want) {
            a.kind = kind;
            a.alpha = alpha;
            a.beta = beta;
            return a;
        }
    }
    throw py::value_error("vkml.ops.conv: unknown activation '" + name.cast<std::string>() + "' (one of: " + known +
                          "; any case, underscores allowed)");
}

std::vector<int64_t> ints(const py::object& o) {
    return o.is_none() ? std::vector<int64_t>{} : o.cast<std::vector<int64_t>>();
}

py::array conv(const py::array& x, const py::array& w, const py::object& b, const py::object& strides,
               const py::object& pads, const py::object& dilations, int64_t group, const std::string& auto_pad,
               const py::object& activation, float alpha, float beta, const py::object& residual,
               const py::object& device) {
    const gpu::DType dtype = float_storage(x, "x");
    ops::ConvDesc d;
    d.input = {gpu_shape(x, "x"), dtype};
    d.weight = {gpu_shape(w, "w"), float_storage(w, "w")};
    std::vector<py::array> arrays{x, w};
    if (!b.is_none()) {
        const auto ba = b.cast<py::array>();
        d.bias = ops::TensorDesc{gpu_shape(ba, "b"), float_storage(ba, "b")};
        arrays.push_back(ba);
    }
    if (!residual.is_none()) {
        const auto r = residual.cast<py::array>();
        float_storage(r, "residual");
        d.residual = true;
        arrays.push_back(r);
    }
    for (const py::array& a : arrays)
        if (!a.dtype().equal(x.dtype()))
            throw py::type_error("vkml.ops.conv: every array must have x's dtype (" + text(x.dtype()) +
                                 "), got " + text(a.dtype()));
    d.strides = ints(strides);
    d.pads = ints(pads);
    d.dilations = ints(dilations);
    d.group = group;
    d.auto_pad = auto_pad;
    d.activation = activation_from(activation, alpha, beta);
    std::vector<graph::TensorData> host;
    for (size_t i = 0; i < arrays.size(); ++i) host.push_back(to_tensor(arrays[i], "vkml.ops.conv input"));
    const std::shared_ptr<gpu::Device> dev = device_for(device);

    graph::TensorData result;
    {
        py::gil_scoped_release nogil;
        const auto op = ops::Conv::create(*dev, d);
        if (d.residual && host.back().dims() != std::vector<int64_t>(op->outputs()[0].shape.dims().begin(),
                                                                       op->outputs()[0].shape.dims().end()))
            throw Error(ErrorCode::InvalidArgument, "vkml.ops.conv: residual has shape " +
                                                        graph::describe(host.back()) + ", the output is " +
                                                        ops::to_string(op->outputs()[0]));
        std::vector<gpu::Tensor> in, out;
        for (size_t i = 0; i < host.size(); ++i) {
            in.emplace_back(*dev, op->inputs()[i].shape, dtype, "vkml.ops.conv input " + std::to_string(i));
            gpu::upload_raw(*dev, in.back(), host[i].bytes());
        }
        out.emplace_back(*dev, op->outputs()[0].shape, dtype, "vkml.ops.conv output");
        std::optional<gpu::Buffer> scratch;
        if (op->scratch_bytes()) scratch.emplace(*dev, gpu::BufferDesc{.size = op->scratch_bytes(), .name = "scratch"});
        dev->run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
            op->record(cmd, in, out, scratch ? scratch->range() : gpu::BufferRange{});
            gpu::barrier::compute_to_transfer(cmd);
        });
        const auto shape = out[0].shape().dims();
        result = graph::TensorData(dtype == gpu::DType::f16 ? graph::DType::f16 : graph::DType::f32,
                                   std::vector<int64_t>(shape.begin(), shape.end()), gpu::download_raw(*dev, out[0]));
    }
    return to_numpy(result);
}

graph::Attribute attribute_from(const std::string& name, const py::handle& v) {
    auto fail = [&] {
        return py::type_error("vkml.ops.run: attribute '" + name + "' is a " +
                              type_name(v) +
                              "; attributes are int, float, str, lists of one of those, or a numpy array");
    };
    if (py::isinstance<py::bool_>(v)) return graph::Attribute(int64_t{v.cast<bool>() ? 1 : 0});
    if (py::isinstance<py::int_>(v)) return graph::Attribute(v.cast<int64_t>());
    if (py::isinstance<py::float_>(v)) return graph::Attribute(v.cast<float>());
    if (py::isinstance<py::str>(v)) return graph::Attribute(v.cast<std::string>());
    if (py::isinstance<py::array>(v)) return graph::Attribute(to_tensor(v.cast<py::array>(), "attribute '" + name + "'"));
    if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
        const auto seq = v.cast<py::sequence>();
        bool all_int = true, all_number = true, all_str = true;
        for (const py::handle e : seq) {
            const bool is_int = py::isinstance<py::int_>(e) && !py::isinstance<py::bool_>(e);
            all_int = all_int && is_int;
            all_number = all_number && (is_int || py::isinstance<py::float_>(e));
            all_str = all_str && py::isinstance<py::str>(e);
        }
        if (all_int) return graph::Attribute(seq.cast<std::vector<int64_t>>());
        if (all_number) return graph::Attribute(seq.cast<std::vector<float>>());
        if (all_str) return graph::Attribute(seq.cast<std::vector<std::string>>());
    }
    throw fail();
}

py::object run_op(const std::string& op_type, const py::list& inputs, const py::dict& attributes, int outputs,
                  const std::vector<int>& constants, int opset, const py::object& device) {
    if (outputs < 1) throw py::value_error("vkml.ops.run: outputs must be at least 1");
    graph::Graph g;
    g.name = op_type;
    g.source = "vkml.ops.run('" + op_type + "')";
    g.format = "onnx";
    g.opsets = {{"", opset}};
    for (int c : constants)
        if (c < 0 || static_cast<size_t>(c) >= inputs.size())
            throw py::value_error("vkml.ops.run: constants lists input " + std::to_string(c) + ", but there are " +
                                  std::to_string(inputs.size()) + " inputs");
    std::vector<graph::ValueId> node_inputs;
    std::vector<graph::TensorData> data;
    bool any_f16 = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const py::handle v = inputs[i];
        if (v.is_none()) { // an omitted optional input
            node_inputs.push_back(graph::no_value);
            continue;
        }
        const std::string name = "input" + std::to_string(i);
        py::array a;
        if (py::isinstance<py::array>(v)) {
            a = v.cast<py::array>();
        } else { // a Python number or list: float32 for floats (NumPy would say float64), int64 for ints
            a = py::module_::import("numpy").attr("asarray")(v).cast<py::array>();
            if (a.dtype().equal(py::dtype("float64"))) a = a.attr("astype")("float32").cast<py::array>();
        }
        graph::TensorData t = to_tensor(a, "vkml.ops.run('" + op_type + "') input " + std::to_string(i));
        const bool integer = t.dtype() == graph::DType::i32 || t.dtype() == graph::DType::i64;
        const bool listed = std::find(constants.begin(), constants.end(), static_cast<int>(i)) != constants.end();
        if (integer || listed) {
            node_inputs.push_back(g.add_constant(name, std::move(t)));
        } else {
            any_f16 = any_f16 || t.dtype() == graph::DType::f16;
            const graph::ValueId id = g.add_value(name, t.dtype(), graph::Shape(t.dims()));
            g.inputs().push_back(id);
            node_inputs.push_back(id);
            data.push_back(std::move(t));
        }
    }
    if (data.empty())
        throw py::value_error("vkml.ops.run('" + op_type +
                              "'): every input is a constant (integer inputs are, and those in constants=), so there "
                              "is nothing for the GPU to run");
    std::vector<graph::ValueId> node_outputs;
    for (int j = 0; j < outputs; ++j) {
        node_outputs.push_back(g.add_value("output" + std::to_string(j)));
        g.outputs().push_back(node_outputs.back());
    }
    graph::Node& n = g.add_node(op_type, node_inputs, node_outputs, op_type);
    for (auto [key, value] : attributes) {
        const std::string name = py::str(key);
        n.attributes.emplace(name, attribute_from(name, value));
    }
    const std::shared_ptr<gpu::Device> dev = device_for(device);
    std::vector<graph::TensorData> results;
    {
        py::gil_scoped_release nogil;
        // f32 storage for f32 inputs, so results are those of f32 arithmetic; f16 inputs keep f16.
        Session session(*dev, g, {.fp32 = !any_f16});
        results = session.run(data);
    }
    if (results.size() == 1) return to_numpy(results[0]);
    py::tuple t(results.size());
    for (size_t j = 0; j < results.size(); ++j) t[j] = to_numpy(results[j]);
    return t;
}

} // namespace

void register_ops(py::module_& m) {
    m.def("_op_conv", &conv, py::arg("x"), py::arg("w"), py::arg("b"), py::arg("strides"), py::arg("pads"),
          py::arg("dilations"), py::arg("group"), py::arg("auto_pad"), py::arg("activation"), py::arg("alpha"),
          py::arg("beta"), py::arg("residual"), py::arg("device"));
    m.def("_op_run", &run_op, py::arg("op_type"), py::arg("inputs"), py::arg("attributes"), py::arg("outputs"),
          py::arg("constants"), py::arg("opset"), py::arg("device"));
    m.def("_op_registry", [] {
        py::list l;
        for (const ops::OpInfo& o : ops::registry()) {
            py::dict d;
            d["type"] = o.type;
            d["family"] = o.family;
            d["dtypes"] = o.dtypes;
            d["notes"] = o.notes;
            l.append(d);
        }
        return l;
    });
}

} // namespace vkml::python
