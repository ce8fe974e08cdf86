#pragma once
// The operator test harness. Every op is checked against a plain CPU reference written in double
// precision (tests/ops/ref/, never shared with the GPU code), on random inputs that avoid zero, at
// odd and prime sizes, in f32 and f16 storage, on the shared GPU device with validation on.
//
//   auto x = random_tensor({2, 3, 5, 7}, DType::f16, 1);           // values already f16-rounded
//   auto op = ops::Relu::create(dev(), {...});
//   auto out = run_op(dev(), *op, {x});                            // GPU result, as doubles
//   expect_close(out[0], reference_relu(x), tolerance(DType::f16, 1e-6, 2e-3), "Relu");
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "vkml/ops/op.hpp"

namespace vkml::test {

using ops::TensorDesc;

// A host tensor in double precision with the shape and dtype of the GPU tensor it stands for.
struct HostTensor {
    TensorDesc desc;
    std::vector<double> data;

    HostTensor() = default;
    HostTensor(const gpu::Shape& shape, gpu::DType dtype)
        : desc{shape, dtype}, data(size_t(shape.elements()), 0.0) {}
    const gpu::Shape& shape() const { return desc.shape; }
    size_t size() const { return data.size(); }
    double& operator[](size_t i) { return data[i]; }
    double operator[](size_t i) const { return data[i]; }
};

// Uniform values in [lo, hi] with |v| >= min_magnitude (never zero by default), rounded to what
// `dtype` stores (f16: nearest half; integer dtypes: rounded to integers).
HostTensor random_tensor(const gpu::Shape& shape, gpu::DType dtype, uint32_t seed, double lo = -2.0,
                         double hi = 2.0, double min_magnitude = 0.05);
// Random integers in [lo, hi] (indices, for example).
HostTensor random_ints(const gpu::Shape& shape, gpu::DType dtype, uint32_t seed, int64_t lo, int64_t hi);
// The value `v` after storage in `dtype`.
double round_to(double v, gpu::DType dtype);

// Uploads `inputs`, records `op` once into a fresh command buffer (with its scratch), submits,
// waits and downloads every output. Extra `repeat` records (with a barrier between) check that
// record() can be called many times with the same result.
std::vector<HostTensor> run_op(gpu::Device& device, const ops::Op& op, const std::vector<HostTensor>& inputs,
                               int repeat = 1);

// Relative error of the whole output: ||got - want||_2 / ||want||_2 (absolute when want is 0).
double relative_error(const HostTensor& got, const HostTensor& want);
// A per-dtype tolerance: f32 or f16 storage.
inline double tolerance(gpu::DType dtype, double f32_tol, double f16_tol) {
    return dtype == gpu::DType::f16 ? f16_tol : f32_tol;
}
// Checks shapes match and relative_error <= tol; reports the worst element on failure.
void expect_close(const HostTensor& got, const HostTensor& want, double tol, const std::string& what);
// Exact equality (integer and boolean outputs, layout ops).
void expect_equal(const HostTensor& got, const HostTensor& want, const std::string& what);

// Index helpers for references: contiguous strides and the flat index of a multi-index.
std::vector<int64_t> strides_of(const gpu::Shape& shape);
// Expects `fn` to throw vkml::Error whose message contains every needle (op name, field, ...).
template <class Fn>
void expect_error(Fn&& fn, std::initializer_list<const char*> needles) {
    try {
        fn();
        ADD_FAILURE() << "expected a vkml::Error mentioning " << *needles.begin();
    } catch (const Error& e) {
        for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
}

// f32 always; f16 when the device has 16-bit storage.
std::vector<gpu::DType> float_dtypes(gpu::Device& device);

} // namespace vkml::test
