#pragma once
// Double-precision CPU references of the element-wise ops, written from the ONNX definitions and
// sharing nothing with the GPU code. Float results are returned unrounded (the tests compare with a
// tolerance); integer and bool results are exact.
#include <functional>
#include <vector>

#include "op_test.hpp"
#include "vkml/ops/elementwise.hpp"

namespace vkml::test::ref_elementwise {

// numpy broadcasting of any number of shapes (the test's own, to check the op's shape inference).
gpu::Shape broadcast(const std::vector<gpu::Shape>& shapes);
// out[i] = fn(inputs at i's broadcast position), for an output of `shape` and `dtype`.
HostTensor map(const std::vector<const HostTensor*>& inputs, const gpu::Shape& shape, gpu::DType dtype,
               const std::function<double(const std::vector<double>&)>& fn);

// ONNX attributes of a unary op (already defaulted by the test).
struct UnaryParams {
    double alpha = 0, beta = 0, gamma = 0;
    bool gelu_tanh = false;
};
double unary(ops::UnaryKind kind, double x, const UnaryParams& p);
double activation(const ops::Activation& act, double x);
HostTensor unary(ops::UnaryKind kind, const HostTensor& x, const UnaryParams& p,
                 const ops::Activation& act = {});

// `integer`: a and b hold integers (i32 semantics for Div and Mod).
double binary(ops::BinaryKind kind, double a, double b, int64_t fmod, bool integer);
HostTensor binary(ops::BinaryKind kind, const HostTensor& a, const HostTensor& b, int64_t fmod = 0,
                  const ops::Activation& act = {});
HostTensor variadic(ops::VariadicKind kind, const std::vector<HostTensor>& inputs,
                    const ops::Activation& act = {});
HostTensor clip(const HostTensor& x, double lo, double hi);
HostTensor where(const HostTensor& cond, const HostTensor& x, const HostTensor& y);
HostTensor cast(const HostTensor& x, gpu::DType to, bool to_bool);

} // namespace vkml::test::ref_elementwise
