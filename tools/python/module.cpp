// The _vkml extension module: devices, errors, messages, and the registration of the sessions, ops
// and upscaler (session.cpp, ops.cpp, upscale.cpp). The Python package (vkml/__init__.py) puts
// the public names together.
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "common.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/capabilities.hpp"
#include "vkml/graph/shape.hpp"
#include "vkml/version.hpp"

namespace vkml::python {

namespace {

// --- exceptions: vkml::Error becomes vkml.Error or the subclass of its code ---------------------

// Exception classes, created at import and never freed (they live as long as the interpreter).
std::map<ErrorCode, PyObject*>& error_classes() {
    static std::map<ErrorCode, PyObject*> classes;
    return classes;
}

// `code` is the ErrorCode's name ("InvalidArgument"), for programs that branch on it.
PyObject* make_error_class(py::module_& m, const char* name, ErrorCode code, const char* code_name, py::handle base,
                           PyObject* builtin, const char* doc) {
    py::object bases = builtin ? py::object(py::make_tuple(base, py::handle(builtin))) : py::reinterpret_borrow<py::object>(base);
    const std::string qualified = std::string("vkml.") + name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
    if (!cls) throw py::error_already_set();
    PyObject_SetAttrString(cls, "code", py::str(code_name).ptr());
    m.add_object(name, py::handle(cls));
    error_classes()[code] = cls;
    return cls;
}

void register_errors(py::module_& m) {
    PyObject* base = make_error_class(m, "Error", ErrorCode::Generic, "Generic", PyExc_RuntimeError, nullptr,
                                      "A vkml failure; `code` names its kind (vkml::ErrorCode).");
    const py::handle b(base);
    make_error_class(m, "InvalidArgument", ErrorCode::InvalidArgument, "InvalidArgument", b, PyExc_ValueError,
                     "A descriptor, shape, option or model is wrong; the message names it.");
    make_error_class(m, "Unsupported", ErrorCode::Unsupported, "Unsupported", b, nullptr,
                     "The device or the build lacks a feature the request needs.");
    make_error_class(m, "OutOfDeviceMemory", ErrorCode::OutOfDeviceMemory, "OutOfDeviceMemory", b, PyExc_MemoryError,
                     "The memory budget or the driver refused: free memory or work in smaller pieces.");
    make_error_class(m, "OutOfHostMemory", ErrorCode::OutOfHostMemory, "OutOfHostMemory", b, PyExc_MemoryError,
                     "The host ran out of memory.");
    make_error_class(m, "DeviceLost", ErrorCode::DeviceLost, "DeviceLost", b, nullptr,
                     "The driver reported the device lost: nothing more runs on it.");
    make_error_class(m, "Timeout", ErrorCode::Timeout, "Timeout", b, PyExc_TimeoutError,
                     "The GPU made no progress for VKML_WAIT_TIMEOUT seconds.");
    make_error_class(m, "IoError", ErrorCode::Io, "Io", b, PyExc_OSError, "A file could not be read or written.");
    make_error_class(m, "VulkanError", ErrorCode::Vulkan, "Vulkan", b, nullptr, "Any other Vulkan failure.");
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const Error& e) {
            auto it = error_classes().find(e.code());
            PyObject* cls = it != error_classes().end() ? it->second : error_classes().at(ErrorCode::Generic);
            PyErr_SetString(cls, e.what());
        }
    });
}

// --- messages: validation and vkml's warnings, printed as the C++ default does and kept for tests --

std::mutex messages_mutex;
std::vector<std::string> messages;

void on_message(const gpu::Message& m) {
    if (m.severity == gpu::Severity::Info) return;
    const char* severity = m.severity == gpu::Severity::Error ? "error" : "warning";
    std::fprintf(stderr, "vkml %s [%.*s]: %.*s\n", severity, int(m.source.size()), m.source.data(),
                 int(m.text.size()), m.text.data());
    std::lock_guard lock(messages_mutex);
    messages.push_back(std::string(severity) + " [" + std::string(m.source) + "]: " + std::string(m.text));
}

std::vector<std::string> take_messages() {
    std::lock_guard lock(messages_mutex);
    return std::exchange(messages, {});
}

// --- devices -------------------------------------------------------------------------------------

gpu::DeviceDesc device_desc(std::string select) {
    gpu::DeviceDesc d;
    d.select = std::move(select);
    d.on_message = on_message;
    return d;
}

const std::vector<gpu::Capabilities>& capabilities() {
    static const std::vector<gpu::Capabilities> caps = gpu::Device::enumerate(device_desc({}));
    return caps;
}

std::mutex devices_mutex;
std::map<std::string, std::shared_ptr<gpu::Device>> devices;

std::string index_range_text(size_t count) {
    if (count == 0) return "vkml sees no Vulkan device (is a Vulkan driver installed? try mesa-vulkan-drivers)";
    return "vkml sees " + std::to_string(count) + " Vulkan device" + (count == 1 ? "" : "s") +
           ", so the valid indices are 0.." + std::to_string(count - 1);
}

size_t checked_index(const py::object& index) {
    const size_t count = capabilities().size();
    const long long i = index.cast<long long>();
    if (i < 0 || static_cast<size_t>(i) >= count)
        throw py::value_error("device index " + std::to_string(i) + " is out of range: " + index_range_text(count));
    return static_cast<size_t>(i);
}

uint64_t device_local_bytes(const gpu::Capabilities& c) {
    uint64_t total = 0;
    for (const gpu::MemoryHeapInfo& h : c.memory_heaps)
        if (h.device_local) total += h.size;
    return total;
}

std::string short_type(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return "cpu";
    default:
        return "other";
    }
}

py::dict device_dict(const gpu::Capabilities& c, size_t index) {
    py::dict d;
    d["index"] = index;
    d["name"] = c.device_name;
    d["type"] = short_type(c.device_type);
    d["memory"] = device_local_bytes(c);
    d["fp16"] = c.storage16;
    d["fp16_math"] = c.float16;
    d["coopmat"] = c.coopmat_nv;
    d["driver"] = c.driver_name;
    d["api_version"] = gpu::version_string(c.api_version);
    d["timestamps"] = c.timestamps;
    return d;
}

} // namespace

std::shared_ptr<gpu::Device> device_for(const py::object& device) {
    std::string key;
    if (device.is_none()) {
        key = "";
    } else if (py::isinstance<py::bool_>(device)) {
        throw py::type_error("device must be None, an index, a name or a vkml.DeviceInfo, not a bool");
    } else if (py::isinstance<py::int_>(device)) {
        key = std::to_string(checked_index(device));
    } else if (py::isinstance<py::str>(device)) {
        key = device.cast<std::string>();
        if (key.empty()) throw py::value_error("device name is empty: pass None for vkml's choice");
    } else if (py::hasattr(device, "index") && py::isinstance<py::int_>(device.attr("index"))) {
        key = std::to_string(checked_index(device.attr("index")));
    } else {
        throw py::type_error("device must be None, an index, a name or a vkml.DeviceInfo, not " +
                             type_name(device));
    }
    std::lock_guard lock(devices_mutex);
    auto& slot = devices[key];
    if (!slot) slot = gpu::Device::create(device_desc(key));
    return slot;
}

py::dict device_info(const gpu::Device& device) {
    const auto& caps = capabilities();
    for (size_t i = 0; i < caps.size(); ++i)
        if (caps[i].device_uuid == device.caps().device_uuid) return device_dict(caps[i], i);
    return device_dict(device.caps(), 0);
}

py::dtype numpy_dtype(graph::DType dtype) {
    switch (dtype) {
    case graph::DType::f32:
        return py::dtype("float32");
    case graph::DType::f16:
        return py::dtype("float16");
    case graph::DType::i32:
        return py::dtype("int32");
    case graph::DType::i64:
        return py::dtype("int64");
    case graph::DType::u8:
        return py::dtype("uint8");
    case graph::DType::boolean:
        return py::dtype("bool");
    default:
        throw py::type_error(std::string("vkml dtype ") + graph::dtype_name(dtype) + " has no NumPy dtype");
    }
}

graph::DType graph_dtype(const py::dtype& dtype, const std::string& what) {
    for (graph::DType d : {graph::DType::f32, graph::DType::f16, graph::DType::i32, graph::DType::i64,
                           graph::DType::u8, graph::DType::boolean})
        if (dtype.equal(numpy_dtype(d))) return d;
    throw py::type_error(what + ": NumPy dtype " + text(dtype) +
                         " is not one vkml runs (float32, float16, int32, int64, uint8, bool)");
}

std::string onnx_type_name(graph::DType dtype) {
    switch (dtype) {
    case graph::DType::f32:
        return "tensor(float)";
    case graph::DType::f16:
        return "tensor(float16)";
    case graph::DType::i32:
        return "tensor(int32)";
    case graph::DType::i64:
        return "tensor(int64)";
    case graph::DType::u8:
        return "tensor(uint8)";
    case graph::DType::boolean:
        return "tensor(bool)";
    default:
        return "tensor(undefined)";
    }
}

graph::TensorData to_tensor(const py::array& array, const std::string& what) {
    const graph::DType dtype = graph_dtype(array.dtype(), what);
    const auto c = py::array::ensure(array, py::array::c_style);
    if (!c) throw py::type_error(what + ": cannot view the array as C-contiguous");
    std::vector<int64_t> dims(c.shape(), c.shape() + c.ndim());
    std::vector<std::byte> bytes(static_cast<size_t>(c.nbytes()));
    if (!bytes.empty()) std::memcpy(bytes.data(), c.data(), bytes.size());
    return graph::TensorData(dtype, std::move(dims), std::move(bytes));
}

py::array to_numpy(const graph::TensorData& tensor) {
    std::vector<py::ssize_t> shape(tensor.dims().begin(), tensor.dims().end());
    py::array a(numpy_dtype(tensor.dtype()), shape);
    if (tensor.byte_size()) std::memcpy(a.mutable_data(), tensor.bytes().data(), tensor.byte_size());
    return a;
}

std::string shape_text(const std::vector<int64_t>& dims) {
    std::string s = "(";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + (dims.size() == 1 ? ",)" : ")");
}

} // namespace vkml::python

PYBIND11_MODULE(_vkml, m) {
    using namespace vkml::python;
    m.doc() = "vkml's C++ API for Python (the vkml package wraps it; import vkml, not _vkml)";
    m.attr("__version__") = VKML_VERSION_STRING;
    register_errors(m);

    m.def("_device_infos", [] {
        py::list out;
        const auto& caps = capabilities();
        for (size_t i = 0; i < caps.size(); ++i) out.append(device_dict(caps[i], i));
        return out;
    }, "Every Vulkan device the loader sees, as dicts (vkml.devices() makes DeviceInfo of them).");
    m.def("device_count", [] { return capabilities().size(); }, "How many Vulkan devices vkml sees.");
    m.def("device_name", [](const py::object& index) {
        return capabilities()[checked_index(index)].device_name;
    }, py::arg("index"), "The name of device `index` (ValueError naming the valid range otherwise).");
    m.def("_device_in_use", [](const py::object& device) { return device_info(*device_for(device)); },
          py::arg("device") = py::none(), "The device a `device=` argument selects, as a dict.");
    m.def("_take_messages", &take_messages,
          "Validation messages and vkml warnings since the last call (also printed to stderr).");
    m.def("_release_devices", [] {
        std::lock_guard lock(devices_mutex);
        devices.clear();
    }, "Drops the module's references to its devices (at exit; sessions keep theirs).");

    register_session(m);
    register_ops(m);
    register_upscale(m);
}
