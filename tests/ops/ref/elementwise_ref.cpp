#include "elementwise_ref.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace vkml::test::ref_elementwise {

using ops::ActivationKind;
using ops::BinaryKind;
using ops::UnaryKind;

gpu::Shape broadcast(const std::vector<gpu::Shape>& shapes) {
    size_t rank = 0;
    for (const auto& s : shapes) rank = std::max(rank, s.rank());
    std::vector<int64_t> dims(rank, 1);
    for (const auto& s : shapes) {
        for (size_t i = 0; i < s.rank(); ++i) {
            int64_t& d = dims[rank - s.rank() + i];
            if (s[i] == d || s[i] == 1) continue;
            if (d != 1) throw std::runtime_error("reference: shapes do not broadcast");
            d = s[i];
        }
    }
    return gpu::Shape(std::span<const int64_t>(dims));
}

HostTensor map(const std::vector<const HostTensor*>& inputs, const gpu::Shape& shape, gpu::DType dtype,
               const std::function<double(const std::vector<double>&)>& fn) {
    HostTensor out(shape, dtype);
    const size_t rank = shape.rank();
    std::vector<int64_t> index(rank);
    std::vector<double> args(inputs.size());
    for (size_t flat = 0; flat < out.size(); ++flat) {
        int64_t rest = int64_t(flat);
        for (size_t d = rank; d-- > 0;) {
            index[d] = rest % shape[d];
            rest /= shape[d];
        }
        for (size_t k = 0; k < inputs.size(); ++k) {
            const gpu::Shape& in = inputs[k]->shape();
            const std::vector<int64_t> strides = strides_of(in);
            int64_t at = 0;
            for (size_t j = 0; j < in.rank(); ++j) {
                const size_t d = rank - in.rank() + j; // right-aligned
                at += (in[j] == 1 ? 0 : index[d]) * strides[j];
            }
            args[k] = (*inputs[k])[size_t(at)];
        }
        out[flat] = fn(args);
    }
    return out;
}

namespace {
double sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}
double softplus(double x) {
    return std::log1p(std::exp(x));
}
double gelu(double x) {
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double sign(double x) {
    return double((x > 0) - (x < 0));
}
bool is_compare(BinaryKind k) {
    return int(k) >= int(BinaryKind::Equal) && int(k) <= int(BinaryKind::Xor);
}
} // namespace

double unary(UnaryKind kind, double x, const UnaryParams& p) {
    switch (kind) {
    case UnaryKind::Abs:
        return std::fabs(x);
    case UnaryKind::Neg:
        return -x;
    case UnaryKind::Exp:
        return std::exp(x);
    case UnaryKind::Log:
        return std::log(x);
    case UnaryKind::Sqrt:
        return std::sqrt(x);
    case UnaryKind::Reciprocal:
        return 1.0 / x;
    case UnaryKind::Floor:
        return std::floor(x);
    case UnaryKind::Ceil:
        return std::ceil(x);
    case UnaryKind::Round: {
        // Halves to even, written out rather than trusting the FPU rounding mode.
        const double f = std::floor(x), frac = x - f;
        if (frac > 0.5) return f + 1;
        if (frac < 0.5) return f;
        return std::fmod(f, 2.0) == 0 ? f : f + 1;
    }
    case UnaryKind::Sin:
        return std::sin(x);
    case UnaryKind::Cos:
        return std::cos(x);
    case UnaryKind::Erf:
        return std::erf(x);
    case UnaryKind::Sign:
        return sign(x);
    case UnaryKind::Not:
        return x == 0 ? 1 : 0;
    case UnaryKind::Relu:
        return std::max(x, 0.0);
    case UnaryKind::LeakyRelu:
        return x < 0 ? p.alpha * x : x;
    case UnaryKind::Elu:
        return x < 0 ? p.alpha * (std::exp(x) - 1) : x;
    case UnaryKind::Selu:
        return x > 0 ? p.gamma * x : p.gamma * (p.alpha * std::exp(x) - p.alpha);
    case UnaryKind::Celu:
        return std::max(0.0, x) + std::min(0.0, p.alpha * (std::exp(x / p.alpha) - 1));
    case UnaryKind::Sigmoid:
        return sigmoid(x);
    case UnaryKind::HardSigmoid:
        return std::max(0.0, std::min(1.0, p.alpha * x + p.beta));
    case UnaryKind::HardSwish:
        return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
    case UnaryKind::Tanh:
        return std::tanh(x);
    case UnaryKind::Softplus:
        return softplus(x);
    case UnaryKind::Softsign:
        return x / (1 + std::fabs(x));
    case UnaryKind::Mish:
        return x * std::tanh(softplus(x));
    case UnaryKind::Gelu:
        if (p.gelu_tanh) return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        return gelu(x);
    case UnaryKind::Swish:
        return x * sigmoid(p.alpha * x);
    case UnaryKind::Tan:
        return std::tan(x);
    case UnaryKind::Asin:
        return std::asin(x);
    case UnaryKind::Acos:
        return std::acos(x);
    case UnaryKind::Atan:
        return std::atan(x);
    case UnaryKind::Sinh:
        return std::sinh(x);
    case UnaryKind::Cosh:
        return std::cosh(x);
    case UnaryKind::Asinh:
        return std::asinh(x);
    case UnaryKind::Acosh:
        return std::acosh(x);
    case UnaryKind::Atanh:
        return std::atanh(x);
    case UnaryKind::ThresholdedRelu:
        return x > p.alpha ? x : 0.0;
    case UnaryKind::Shrink:
        return x < -p.alpha ? x + p.beta : x > p.alpha ? x - p.beta : 0.0;
    case UnaryKind::IsNaN:
        return std::isnan(x) ? 1.0 : 0.0;
    case UnaryKind::IsInf:
        return std::isinf(x) ? 1.0 : 0.0;
    }
    throw std::runtime_error("reference: unknown unary kind");
}

double activation(const ops::Activation& act, double x) {
    const double a = act.alpha, b = act.beta;
    switch (act.kind) {
    case ActivationKind::None:
        return x;
    case ActivationKind::Relu:
        return std::max(x, 0.0);
    case ActivationKind::LeakyRelu:
        return x < 0 ? a * x : x;
    case ActivationKind::Clip:
        return std::min(std::max(x, a), b);
    case ActivationKind::Sigmoid:
        return sigmoid(x);
    case ActivationKind::HardSigmoid:
        return std::max(0.0, std::min(1.0, a * x + b));
    case ActivationKind::HardSwish:
        return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
    case ActivationKind::Tanh:
        return std::tanh(x);
    case ActivationKind::Silu:
        return x * sigmoid(x);
    case ActivationKind::Gelu:
        return gelu(x);
    case ActivationKind::Elu:
        return x < 0 ? a * (std::exp(x) - 1) : x;
    case ActivationKind::Mish:
        return x * std::tanh(softplus(x));
    }
    throw std::runtime_error("reference: unknown activation");
}

HostTensor unary(UnaryKind kind, const HostTensor& x, const UnaryParams& p, const ops::Activation& act) {
    return map({&x}, x.shape(), x.desc.dtype,
               [&](const std::vector<double>& v) { return activation(act, unary(kind, v[0], p)); });
}

double binary(BinaryKind kind, double a, double b, int64_t fmod, bool integer) {
    switch (kind) {
    case BinaryKind::Add:
        return a + b;
    case BinaryKind::Sub:
        return a - b;
    case BinaryKind::Mul:
        return a * b;
    case BinaryKind::Div:
        return integer ? std::trunc(a / b) : a / b;
    case BinaryKind::Pow:
        return std::pow(a, b);
    case BinaryKind::Mod: {
        const double r = std::fmod(a, b); // exact, with the dividend's sign
        if (fmod == 1) return r;
        return r != 0 && (r < 0) != (b < 0) ? r + b : r;
    }
    case BinaryKind::PRelu:
        return a < 0 ? a * b : a;
    case BinaryKind::Equal:
        return a == b;
    case BinaryKind::Less:
        return a < b;
    case BinaryKind::LessOrEqual:
        return a <= b;
    case BinaryKind::Greater:
        return a > b;
    case BinaryKind::GreaterOrEqual:
        return a >= b;
    case BinaryKind::And:
        return a != 0 && b != 0;
    case BinaryKind::Or:
        return a != 0 || b != 0;
    case BinaryKind::Xor:
        return (a != 0) != (b != 0);
    case BinaryKind::BitShiftLeft:
    case BinaryKind::BitShiftRight: {
        const auto bits = static_cast<uint32_t>(static_cast<int64_t>(a));
        const auto n = static_cast<uint64_t>(static_cast<int64_t>(b));
        const uint32_t v = n >= 32 ? 0u : (kind == BinaryKind::BitShiftLeft ? bits << n : bits >> n);
        return static_cast<int32_t>(v);
    }
    }
    throw std::runtime_error("reference: unknown binary kind");
}

HostTensor binary(BinaryKind kind, const HostTensor& a, const HostTensor& b, int64_t fmod,
                  const ops::Activation& act) {
    const gpu::DType out = is_compare(kind) ? gpu::DType::u8 : a.desc.dtype;
    const bool integer = a.desc.dtype == gpu::DType::i32;
    return map({&a, &b}, broadcast({a.shape(), b.shape()}), out, [&](const std::vector<double>& v) {
        return activation(act, binary(kind, v[0], v[1], fmod, integer));
    });
}

HostTensor variadic(ops::VariadicKind kind, const std::vector<HostTensor>& inputs,
                    const ops::Activation& act) {
    std::vector<const HostTensor*> ptrs;
    std::vector<gpu::Shape> shapes;
    for (const auto& t : inputs) {
        ptrs.push_back(&t);
        shapes.push_back(t.shape());
    }
    return map(ptrs, broadcast(shapes), inputs[0].desc.dtype, [&](const std::vector<double>& v) {
        double r = v[0];
        for (size_t i = 1; i < v.size(); ++i) {
            switch (kind) {
            case ops::VariadicKind::Max:
                r = std::max(r, v[i]);
                break;
            case ops::VariadicKind::Min:
                r = std::min(r, v[i]);
                break;
            case ops::VariadicKind::Sum:
            case ops::VariadicKind::Mean:
                r += v[i];
                break;
            }
        }
        if (kind == ops::VariadicKind::Mean) r /= double(v.size());
        return activation(act, r);
    });
}

HostTensor clip(const HostTensor& x, double lo, double hi) {
    return map({&x}, x.shape(), x.desc.dtype,
               [&](const std::vector<double>& v) { return std::min(std::max(v[0], lo), hi); });
}

HostTensor where(const HostTensor& cond, const HostTensor& x, const HostTensor& y) {
    return map({&cond, &x, &y}, broadcast({cond.shape(), x.shape(), y.shape()}), x.desc.dtype,
               [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
}

namespace {
// Two's-complement wrap of an integer-valued double into `bits` bits (signed unless `is_unsigned`).
double wrap(double v, int bits, bool is_unsigned) {
    const double m = std::ldexp(1.0, bits);
    double r = std::fmod(v, m);
    if (r < 0) r += m;
    if (!is_unsigned && r >= m / 2) r -= m;
    return r;
}
double saturate(double v, double lo, double hi) {
    if (std::isnan(v)) return 0;
    return std::min(std::max(std::trunc(v), lo), hi);
}
} // namespace

HostTensor cast(const HostTensor& x, gpu::DType to, bool to_bool) {
    const bool from_float = x.desc.dtype == gpu::DType::f32 || x.desc.dtype == gpu::DType::f16;
    HostTensor out(x.shape(), to);
    for (size_t i = 0; i < x.size(); ++i) {
        const double v = x[i];
        double r = v;
        switch (to) {
        case gpu::DType::f32:
        case gpu::DType::f16:
            r = v;
            break;
        case gpu::DType::i32:
            r = from_float ? saturate(v, -2147483648.0, 2147483647.0) : wrap(v, 32, false);
            break;
        case gpu::DType::i64:
            r = from_float ? saturate(v, -9223372036854775808.0, 9223372036854775807.0) : v;
            break;
        case gpu::DType::u8:
            if (to_bool)
                r = v != 0 || std::isnan(v);
            else
                r = from_float ? saturate(v, 0, 255) : wrap(v, 8, true);
            break;
        }
        out[i] = r;
    }
    return out;
}

} // namespace vkml::test::ref_elementwise
