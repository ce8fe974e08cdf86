// vkml.InferenceSession: ONNX Runtime's shape over vkml::Session. A model whose input shapes are
// static once `free_dims` are applied gets its Session at construction; one with free dimensions
// left gets a Session per distinct set of input shapes at run() (the last few kept), as ONNX
// Runtime accepts any shape its dimensions allow. A sequence input (sequence_inputs: the shapes of
// its tensors) is fed as a list of arrays, or its tensors one by one as "<name>[<i>]"; an optional
// input named in absent_inputs holds nothing and is not fed.

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "common.hpp"
#include "vkml/error.hpp"
#include "vkml/graph/graph.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"

namespace vkml::python {

namespace {

// One input or output as ONNX Runtime's NodeArg describes it: a shape of ints, free dimension
// names (str) and None for unnamed unknown dimensions; None for a wholly unknown shape.
struct NodeArg {
    std::string name;
    graph::DType dtype = graph::DType::undefined;
    std::optional<std::vector<graph::Dim>> dims;
};

py::object shape_object(const NodeArg& a) {
    if (!a.dims) return py::none();
    py::list l;
    for (const graph::Dim& d : *a.dims) {
        if (d.is_known())
            l.append(d.size);
        else if (!d.symbol.empty())
            l.append(d.symbol);
        else
            l.append(py::none());
    }
    return l;
}

std::string dims_text(const NodeArg& a) {
    if (!a.dims) return "unknown";
    std::string s = "[";
    for (size_t i = 0; i < a.dims->size(); ++i) {
        const graph::Dim& d = (*a.dims)[i];
        s += (i ? ", " : "") + (d.is_known() ? std::to_string(d.size) : d.symbol.empty() ? "?" : d.symbol);
    }
    return s + "]";
}

NodeArg from_value(const graph::Value& v) {
    NodeArg a{v.name, v.dtype, {}};
    if (v.shape) a.dims = v.shape->dims();
    return a;
}

NodeArg from_info(const TensorInfo& t) {
    NodeArg a{t.name, t.dtype, std::vector<graph::Dim>{}};
    for (int64_t d : t.shape.dims()) a.dims->push_back(graph::Dim::known(d));
    return a;
}

// What a session's profile=True run measured: per-step GPU times.
struct Profile {
    SessionProfile profile;
};

class InferenceSession {
public:
    InferenceSession(const py::object& path, const py::object& device, const std::string& precision,
                     const std::map<std::string, int64_t>& free_dims,
                     const std::map<std::string, int64_t>& free_dim_denotations,
                     const std::map<std::string, std::vector<std::vector<int64_t>>>& sequence_inputs,
                     const std::vector<std::string>& absent_inputs, bool profile,
                     const std::optional<std::string>& profile_file, const std::string& profile_prefix)
        : path_(path_text(path)), profile_(profile), profile_file_(profile_file.value_or("")),
          profile_prefix_(profile_prefix) {
        if (precision != "f16" && precision != "f32" && precision != "auto")
            throw py::value_error("precision must be \"f16\" (f16 storage where the device has it), \"auto\" (f16 "
                                  "with the f16 guard) or \"f32\", not \"" +
                                  precision + "\"");
        options_.fp32 = precision == "f32";
        options_.f16_guard = precision == "auto";
        for (const auto& [name, shapes] : sequence_inputs) {
            for (const auto& dims : shapes)
                for (int64_t d : dims)
                    if (d < 0)
                        throw py::value_error("sequence_inputs['" + name + "']: a shape " + shape_text(dims) +
                                              " with a negative size");
            options_.sequence_inputs[name] = shapes;
        }
        options_.absent_inputs.insert(absent_inputs.begin(), absent_inputs.end());
        for (const std::string& name : absent_inputs)
            if (sequence_inputs.count(name))
                throw py::value_error("input '" + name + "' is both in sequence_inputs and in absent_inputs");
        precision_ = precision;
        device_ = device_for(device);
        {
            py::gil_scoped_release nogil;
            graph_ = import::load_model(path_);
            std::map<std::string, int64_t, std::less<>> overrides(free_dims.begin(), free_dims.end());
            graph::apply_free_dimension_overrides(graph_, overrides);
            if (!free_dim_denotations.empty())
                graph::apply_denotation_overrides(
                    graph_, std::map<std::string, int64_t, std::less<>>(free_dim_denotations.begin(),
                                                                        free_dim_denotations.end()));
            bool fixed = true;
            std::set<std::string, std::less<>> names;
            for (graph::ValueId id : graph_.inputs()) {
                const graph::Value& v = graph_.value(id);
                names.insert(v.name);
                if (given_elsewhere(v.name)) continue;
                if (!v.shape || !v.shape->is_static()) fixed = false;
            }
            auto check_named = [&](const std::string& name, const char* option) {
                if (!names.count(name)) {
                    std::string all;
                    for (const std::string& n : names) all += (all.empty() ? "'" : ", '") + n + "'";
                    throw Error(ErrorCode::InvalidArgument, std::string(option) + " names '" + name +
                                                                "', which is not an input of the model (its inputs are " +
                                                                (all.empty() ? "none" : all) + ")");
                }
            };
            for (const auto& [name, shapes] : options_.sequence_inputs) check_named(name, "sequence_inputs");
            for (const std::string& name : options_.absent_inputs) check_named(name, "absent_inputs");
            if (fixed) sessions_.emplace_back(Shapes{}, std::make_unique<Session>(*device_, graph_, options_));
        }
        fixed_ = !sessions_.empty();
    }

    std::vector<NodeArg> inputs() const {
        check_open();
        std::vector<NodeArg> v;
        if (fixed_)
            for (const TensorInfo& t : sessions_.front().second->inputs()) v.push_back(from_info(t));
        else
            for (graph::ValueId id : graph_.inputs()) {
                const graph::Value& value = graph_.value(id);
                if (options_.absent_inputs.count(value.name)) continue;
                const auto seq = options_.sequence_inputs.find(value.name);
                if (seq == options_.sequence_inputs.end()) {
                    v.push_back(from_value(value));
                    continue;
                }
                // As the Session names them: one input per tensor of the sequence.
                for (size_t i = 0; i < seq->second.size(); ++i) {
                    NodeArg a{element_name(value.name, i), value.dtype, std::vector<graph::Dim>{}};
                    for (int64_t d : seq->second[i]) a.dims->push_back(graph::Dim::known(d));
                    v.push_back(std::move(a));
                }
            }
        return v;
    }

    std::vector<NodeArg> outputs() const {
        check_open();
        std::vector<NodeArg> v;
        if (fixed_)
            for (const TensorInfo& t : sessions_.front().second->outputs()) v.push_back(from_info(t));
        else
            for (graph::ValueId id : graph_.outputs()) v.push_back(from_value(graph_.value(id)));
        return v;
    }

    py::list run(const py::object& output_names, const py::object& feed) {
        check_open();
        BusyGuard busy(busy_, "this vkml.InferenceSession");
        if (!py::isinstance<py::dict>(feed))
            throw py::type_error("run() takes the inputs as a dict {name: numpy array}, not " +
                                 type_name(feed));
        const std::vector<NodeArg> declared = inputs();
        const std::vector<NodeArg> outs = outputs();
        auto names = [](const std::vector<NodeArg>& v) {
            std::string s;
            for (const NodeArg& a : v) s += (s.empty() ? "'" : ", '") + a.name + "'";
            return s.empty() ? std::string("none") : s;
        };
        // A sequence input's list of arrays becomes its tensors' inputs "<name>[<i>]".
        py::dict feeds;
        for (auto [key, value] : feed.cast<py::dict>()) {
            if (!py::isinstance<py::str>(key))
                throw py::type_error("input names are str, not " +
                                     type_name(key));
            const std::string name = key.cast<std::string>();
            const auto seq = options_.sequence_inputs.find(name);
            if (seq == options_.sequence_inputs.end()) {
                feeds[key] = value;
                continue;
            }
            if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value))
                throw py::type_error("input '" + name + "' is a sequence: feed a list of arrays, not " +
                                     type_name(value));
            const py::sequence items = value.cast<py::sequence>();
            if (items.size() != seq->second.size())
                throw py::value_error("input '" + name + "' is a sequence of " + std::to_string(seq->second.size()) +
                                      " tensors in this session (sequence_inputs); got " +
                                      std::to_string(items.size()));
            for (size_t i = 0; i < items.size(); ++i) feeds[py::str(element_name(name, i))] = items[i];
        }
        for (auto [key, value] : feeds) {
            (void)value;
            const std::string name = key.cast<std::string>();
            bool known = false;
            for (const NodeArg& a : declared) known = known || a.name == name;
            if (!known)
                throw py::value_error("unknown input '" + name + "': the model's inputs are " + names(declared));
        }
        // Inputs in the declared order, checked against the declared dtypes and shapes.
        std::map<std::string, graph::TensorData, std::less<>> data;
        Shapes shapes;
        const py::module_ np = py::module_::import("numpy");
        for (const NodeArg& a : declared) {
            if (!feeds.contains(a.name))
                throw py::value_error("missing input '" + a.name + "' (the model's inputs are " + names(declared) + ")");
            py::object value = feeds[py::str(a.name)];
            const py::dtype want = numpy_dtype(a.dtype);
            if (!py::isinstance<py::array>(value)) value = np.attr("asarray")(value, want);
            const py::array array = value.cast<py::array>();
            if (!array.dtype().equal(want))
                throw py::type_error("input '" + a.name + "' is " + onnx_type_name(a.dtype) + ", that is numpy." +
                                     text(want) + "; got a " + text(array.dtype()) +
                                     " array (convert it with .astype(numpy." + text(want) + "))");
            const std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
            bool fits = a.dims && a.dims->size() == dims.size();
            for (size_t i = 0; fits && i < dims.size(); ++i)
                fits = !(*a.dims)[i].is_known() || (*a.dims)[i].size == dims[i];
            if (!fits)
                throw py::value_error("input '" + a.name + "' has shape " + dims_text(a) +
                                      (fixed_ ? " in this session" : "") + "; got an array of shape " +
                                      shape_text(dims));
            data.insert_or_assign(a.name, to_tensor(array, "input '" + a.name + "'"));
            shapes.push_back(dims);
        }
        // Which outputs, in the order asked for.
        std::vector<std::string> wanted;
        if (output_names.is_none()) {
            for (const NodeArg& o : outs) wanted.push_back(o.name);
        } else {
            if (py::isinstance<py::str>(output_names))
                throw py::type_error("output_names is a list of names (or None for all), not a str");
            for (const py::handle n : output_names) {
                const std::string name = py::cast<std::string>(n);
                bool known = false;
                for (const NodeArg& o : outs) known = known || o.name == name;
                if (!known)
                    throw py::value_error("unknown output '" + name + "': the model's outputs are " + names(outs));
                wanted.push_back(name);
            }
        }

        std::vector<graph::TensorData> results;
        std::vector<std::string> result_names;
        {
            py::gil_scoped_release nogil;
            Session& s = session_for(declared, shapes);
            std::vector<graph::TensorData> ins;
            for (const TensorInfo& t : s.inputs()) ins.push_back(std::move(data.at(t.name)));
            if (profile_) { // one run, timed step by step, gives the results too
                SessionProfile p = s.profile(ins, &results);
                std::lock_guard lock(profile_mutex_);
                last_profile_ = std::move(p);
            } else {
                results = s.run(ins);
            }
            ++model_runs_;
            for (const TensorInfo& t : s.outputs()) result_names.push_back(t.name);
        }
        py::list out;
        for (const std::string& name : wanted)
            for (size_t j = 0; j < result_names.size(); ++j)
                if (result_names[j] == name) out.append(to_numpy(results[j]));
        return out;
    }

    std::optional<Profile> last_profile() const {
        std::lock_guard lock(profile_mutex_);
        if (!last_profile_) return std::nullopt;
        return Profile{*last_profile_};
    }

    std::string end_profiling() {
        check_open();
        if (!profile_)
            throw std::runtime_error("profiling is off: create the session with vkml.InferenceSession(..., profile=True)");
        std::optional<SessionProfile> profiled;
        {
            std::lock_guard lock(profile_mutex_);
            profiled = last_profile_;
        }
        if (!profiled) throw std::runtime_error("nothing profiled yet: run() the session first");
        std::string file = profile_file_;
        if (file.empty()) {
            const std::time_t now = std::time(nullptr);
            char stamp[32];
            std::tm local{};
            localtime_r(&now, &local);
            std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", &local);
            file = profile_prefix_ + "_" + stamp + ".json";
        }
        std::ofstream f(file);
        f << profiled->chrome_trace();
        if (!f) throw Error(ErrorCode::Io, "'" + file + "': cannot write the profile");
        return file;
    }

    void close() {
        BusyGuard busy(busy_, "this vkml.InferenceSession");
        closed_ = true;
        py::gil_scoped_release nogil; // a Session waits for its GPU work before it goes
        sessions_.clear();
        device_.reset();
    }
    bool closed() const { return closed_; }
    uint64_t model_runs() const { return model_runs_; }
    const std::string& path() const { return path_; }
    const std::string& precision() const { return precision_; }
    py::dict device() const {
        check_open();
        return device_info(*device_);
    }

private:
    using Shapes = std::vector<std::vector<int64_t>>;

    static std::string element_name(const std::string& name, size_t i) {
        return name + "[" + std::to_string(i) + "]";
    }
    // Whether the input's shapes come from sequence_inputs, or it is absent.
    bool given_elsewhere(const std::string& name) const {
        return options_.sequence_inputs.count(name) > 0 || options_.absent_inputs.count(name) > 0;
    }

    void check_open() const {
        if (closed_) throw py::value_error("this vkml.InferenceSession is closed ('" + path_ + "')");
    }

    // The session for these input shapes: the one built at construction, or one built for them.
    Session& session_for(const std::vector<NodeArg>& declared, const Shapes& shapes) {
        if (fixed_) return *sessions_.front().second;
        for (auto& [s, session] : sessions_)
            if (s == shapes) return *session;
        SessionOptions o = options_;
        // The tensor inputs' shapes; a sequence's tensors have theirs in sequence_inputs.
        for (size_t i = 0; i < declared.size(); ++i)
            if (graph_.find(declared[i].name) != graph::no_value) o.input_shapes[declared[i].name] = shapes[i];
        auto session = std::make_unique<Session>(*device_, graph_, o);
        if (sessions_.size() >= max_sessions) sessions_.erase(sessions_.begin());
        sessions_.emplace_back(shapes, std::move(session));
        return *sessions_.back().second;
    }

    static constexpr size_t max_sessions = 4;
    std::string path_;
    std::string precision_;
    bool profile_ = false;
    std::string profile_file_;
    std::string profile_prefix_;
    std::shared_ptr<gpu::Device> device_;
    graph::Graph graph_;
    SessionOptions options_;
    bool fixed_ = false;
    std::vector<std::pair<Shapes, std::unique_ptr<Session>>> sessions_;
    std::optional<SessionProfile> last_profile_; // written by run(), read by any thread
    mutable std::mutex profile_mutex_;
    bool closed_ = false;
    std::atomic<bool> busy_{false};
    uint64_t model_runs_ = 0; // times the model ran on the GPU (tests: a profiled run() runs it once)
};

py::list profile_records(const Profile& p) {
    py::list l;
    const auto& r = p.profile.records;
    for (size_t i = 0; i < r.size(); ++i) {
        py::dict d;
        d["name"] = r[i].name;
        d["op_type"] = i < p.profile.op_types.size() ? p.profile.op_types[i] : "";
        d["queue"] = gpu::queue_role_name(r[i].queue);
        d["start_us"] = r[i].start_us;
        d["duration_us"] = r[i].duration_us;
        l.append(d);
    }
    return l;
}

} // namespace

void register_session(py::module_& m) {
    py::class_<NodeArg>(m, "NodeArg", "An input or output of a session: name, shape and type, as in ONNX Runtime.")
        .def_readonly("name", &NodeArg::name)
        .def_property_readonly("shape", &shape_object,
                               "ints; the name (str) of a free dimension; None for an unnamed unknown one")
        .def_property_readonly("type", [](const NodeArg& a) { return onnx_type_name(a.dtype); },
                               "ONNX Runtime's type string, e.g. 'tensor(float)'")
        .def_property_readonly("dtype", [](const NodeArg& a) -> py::object {
            if (a.dtype == graph::DType::undefined) return py::none();
            return numpy_dtype(a.dtype);
        }, "the NumPy dtype run() takes or gives")
        .def("__repr__", [](const NodeArg& a) {
            return "NodeArg(name='" + a.name + "', type='" + onnx_type_name(a.dtype) + "', shape=" +
                   std::string(py::repr(shape_object(a))) + ")";
        });

    py::class_<Profile>(m, "Profile", "Per-step GPU times of one run (InferenceSession(profile=True)).")
        .def_property_readonly("records", &profile_records,
                               "one dict per step: name, op_type, queue, start_us, duration_us")
        .def_property_readonly("total_us", [](const Profile& p) { return p.profile.total_us; },
                               "first start to last end, in microseconds")
        .def("table", [](const Profile& p) { return p.profile.table(); },
             "the per-step table and the per-op-type summary that `vkml run --profile` prints")
        .def("chrome_trace", [](const Profile& p) { return p.profile.chrome_trace(); },
             "the Chrome trace JSON (chrome://tracing, ui.perfetto.dev)")
        .def("__repr__", [](const Profile& p) {
            return "<vkml.Profile: " + std::to_string(p.profile.records.size()) + " steps, " +
                   std::to_string(p.profile.total_us) + " us>";
        });

    py::class_<InferenceSession>(m, "InferenceSession",
                                 R"(A model on a Vulkan device, in ONNX Runtime's shape.

    sess = vkml.InferenceSession("model.onnx", device=0, precision="f16", free_dims={"batch": 1})
    y, = sess.run(None, {"x": x})          # numpy arrays in, numpy arrays out

path: an ONNX file, a TF.js model.json or an Anime4K weights JSON.
device: None (VKML_DEVICE, else the best device), an index into vkml.devices(), a name substring.
precision: "f16" (f16 storage where the device has it, f32 arithmetic), "auto" (f16 with the f16
    guard: the first run with each input shape also calibrates, keeping the nodes whose values
    overflow or underflow f16, and their neighbours, in f32) or "f32".
free_dims: sizes for the model's free dimensions; dimensions left free take the inputs' sizes at
    run() (a session is built per distinct set of input shapes, the last 4 kept).
free_dim_denotations: sizes by the dimensions' ONNX denotation ({"DATA_BATCH": 1}, compared without
    case, as ONNX Runtime's add_free_dimension_override_by_denotation), for every input dimension so
    denoted.
sequence_inputs: {name: [shape, ...]} for inputs that are sequences (or optionals holding one):
    the shapes of its tensors, whose count is its length. run() takes a list of arrays for it (or
    each tensor as "name[i]", as get_inputs() lists them).
absent_inputs: names of optional inputs that hold nothing; run() is not given them.
profile: time every step of each run on the GPU (the run itself, with a timestamp around each step);
    last_profile holds the times, end_profiling() writes the Chrome trace to profile_file
    (default <profile_prefix>_<date>_<time>.json in the current directory, profile_prefix
    "vkml_profile").
A session serves one thread at a time: a second thread calling run() meanwhile gets a
RuntimeError. The GIL is released while the GPU works.)")
        .def(py::init<const py::object&, const py::object&, const std::string&,
                      const std::map<std::string, int64_t>&, const std::map<std::string, int64_t>&,
                      const std::map<std::string, std::vector<std::vector<int64_t>>>&,
                      const std::vector<std::string>&, bool, const std::optional<std::string>&,
                      const std::string&>(),
             py::arg("path"), py::kw_only(), py::arg("device") = py::none(), py::arg("precision") = "f16",
             py::arg("free_dims") = std::map<std::string, int64_t>{},
             py::arg("free_dim_denotations") = std::map<std::string, int64_t>{},
             py::arg("sequence_inputs") = std::map<std::string, std::vector<std::vector<int64_t>>>{},
             py::arg("absent_inputs") = std::vector<std::string>{}, py::arg("profile") = false,
             py::arg("profile_file") = py::none(), py::arg("profile_prefix") = "vkml_profile")
        .def("get_inputs", &InferenceSession::inputs)
        .def("get_outputs", &InferenceSession::outputs)
        .def("run", &InferenceSession::run, py::arg("output_names"), py::arg("input_feed"),
             "Runs the model: output_names (None: all) in that order, input_feed {name: array}.")
        .def_property_readonly("last_profile", &InferenceSession::last_profile,
                               "the Profile of the latest run (profile=True), else None")
        .def("end_profiling", &InferenceSession::end_profiling,
             "Writes the latest run's Chrome trace and returns the file name (profile=True).")
        .def("close", &InferenceSession::close,
             "Frees the session's GPU memory; later calls raise ValueError.")
        .def_property_readonly("closed", &InferenceSession::closed)
        .def_property_readonly("_model_runs", &InferenceSession::model_runs,
                               "how many times run() ran the model on the GPU (for tests)")
        .def_property_readonly("path", &InferenceSession::path)
        .def_property_readonly("precision", &InferenceSession::precision)
        .def_property_readonly("_device", &InferenceSession::device)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__",
             [](InferenceSession& s, const py::args&) {
                 if (!s.closed()) s.close();
             })
        .def("__repr__", [](const InferenceSession& s) {
            return "<vkml.InferenceSession '" + s.path() + "' " + s.precision() + (s.closed() ? " closed>" : ">");
        });
}

} // namespace vkml::python
