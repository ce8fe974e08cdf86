#pragma once
// What the binding's files share: the devices the module opens (one per selection, shared by every
// session, op call and upscaler that names it), NumPy <-> graph::TensorData, the one-thread-at-a-time
// guard, and the registration functions of each file.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h> // in every file: type casters must agree across the module

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "vkml/gpu/device.hpp"
#include "vkml/graph/dtype.hpp"
#include "vkml/graph/tensor_data.hpp"

namespace vkml::python {

namespace py = pybind11;

// The device a `device=` argument names: None (VKML_DEVICE, else the best device), an index into
// vkml.devices() (out of range: ValueError naming the valid range), a name substring, or a
// DeviceInfo. Devices are created once and kept until the interpreter exits.
std::shared_ptr<gpu::Device> device_for(const py::object& device);
// What vkml.devices() says about a device (index, name, type, memory, fp16, coopmat, ...).
py::dict device_info(const gpu::Device& device);

// NumPy dtype of a graph dtype (bool for boolean) and back; a dtype vkml has no use for throws
// TypeError naming it.
py::dtype numpy_dtype(graph::DType dtype);
graph::DType graph_dtype(const py::dtype& dtype, const std::string& what);
// ONNX Runtime's type string: "tensor(float)", "tensor(float16)", ...
std::string onnx_type_name(graph::DType dtype);

// A C-contiguous copy of the array's data as a TensorData of its own dtype.
graph::TensorData to_tensor(const py::array& array, const std::string& what);
py::array to_numpy(const graph::TensorData& tensor);
std::string shape_text(const std::vector<int64_t>& dims); // "(1, 3, 8, 8)"
// str(obj), e.g. "float32" for a dtype.
inline std::string text(py::handle h) {
    return py::str(h).cast<std::string>();
}
// A str or os.PathLike as a path string.
inline std::string path_text(py::handle h) {
    return text(py::module_::import("os").attr("fspath")(h));
}
// The name of obj's type, for messages.
inline std::string type_name(py::handle h) {
    return text(py::type::of(h).attr("__name__"));
}

// Marks an object busy for the duration of a call. A second thread calling in meanwhile gets a
// RuntimeError saying so (vkml objects serve one thread at a time; the GIL is released while the
// GPU works, so the second call would otherwise run concurrently on the same arena).
class BusyGuard {
public:
    BusyGuard(std::atomic<bool>& flag, const char* what) : flag_(flag) {
        if (flag_.exchange(true))
            throw std::runtime_error(std::string(what) +
                                     " is already in use by another thread; a vkml session or upscaler serves "
                                     "one thread at a time (create one per thread)");
    }
    ~BusyGuard() { flag_ = false; }
    BusyGuard(const BusyGuard&) = delete;
    BusyGuard& operator=(const BusyGuard&) = delete;

private:
    std::atomic<bool>& flag_;
};

void register_session(py::module_& m);
void register_ops(py::module_& m);
void register_upscale(py::module_& m);

} // namespace vkml::python
