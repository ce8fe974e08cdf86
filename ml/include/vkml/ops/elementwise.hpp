#pragma once
// Element-wise operators with ONNX semantics: unary math and activations, binary arithmetic,
// comparisons and logic with numpy (multidirectional) broadcasting up to rank 6, the variadic
// Max/Min/Sum/Mean, Clip, Where and Cast.
//
// Float ops store f32 or f16. f16 ops compute in fp32 unless their desc's `math` is Auto (the
// default), the device has shaderFloat16 and the op has a half-precision path: Abs, Neg, Sign, Relu,
// Floor, Ceil, Round, Reciprocal, Add, Sub, Mul, Div, PRelu, variadic Max/Min/Sum and Clip, which
// are exact or correctly rounded in f16 (Reciprocal and Div: within 2.5 f16 ULP, falling back to
// fp32 for divisors outside [2^-14, 2^14] where half-precision division has no bound). Everything
// else (transcendentals and the activations built on them, parameterized activations, Pow, Mod,
// Mean, comparisons) computes in fp32; f16 math would lose accuracy or overflow in intermediates.
// f16 subnormals (|x| < 6.1e-5) may be flushed to zero by half-precision arithmetic. Fused
// activations always run in fp32, on the op's result rounded to f16 when the op ran in f16.
// Where noted, i32 is supported too. Booleans are u8 tensors holding 0 or 1. Unary and binary ops
// with a float result can apply a fused Activation before storing it (the graph optimizer folds a
// following Relu, Clip, ... into them).
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkml/ops/op.hpp"

namespace vkml::ops {

// ---------------------------------------------------------------------------------------------
// Unary: y = f(x), one class for every single-input op (each a case of one shader).

enum class UnaryKind : uint8_t {
    // math
    Abs, // f32, f16, i32
    Neg, // f32, f16, i32
    Exp,
    Log,
    Sqrt,
    Reciprocal,
    Floor,
    Ceil,
    Round, // halves to even
    Sin,
    Cos,
    Erf,
    Sign, // f32, f16, i32
    Not,  // u8 (bool) only
    // activations
    Relu,      // f32, f16, i32
    LeakyRelu, // alpha (0.01)
    Elu,       // alpha (1)
    Selu,      // alpha (1.67326...), gamma (1.05070...)
    Celu,      // alpha (1), nonzero
    Sigmoid,
    HardSigmoid, // alpha (0.2), beta (0.5)
    HardSwish,
    Tanh,
    Softplus,
    Softsign,
    Mish,
    Gelu,  // approximate: "none" (erf) or "tanh"
    Swish, // x * sigmoid(alpha * x), alpha (1): SiLU, the fused form of Mul(x, Sigmoid(x))
    // more math (fp32 math in either storage)
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    ThresholdedRelu, // x > alpha ? x : 0, alpha (1)
    Shrink,          // x < -alpha ? x + beta : x > alpha ? x - beta : 0; ONNX's lambd is alpha (0.5),
                     // its bias beta (0)
    // classification: f32, f16 in, u8 (bool) out
    IsNaN,
    IsInf, // detect_negative, detect_positive (1, 1)
};
inline constexpr UnaryKind last_unary_kind = UnaryKind::IsInf;
// The ONNX operator type, e.g. "LeakyRelu".
const char* unary_name(UnaryKind kind);

struct UnaryDesc {
    UnaryKind kind = UnaryKind::Relu;
    TensorDesc input;
    // ONNX attributes. Unset: the op's ONNX default (in brackets above). Setting one the op does not
    // have is an error.
    std::optional<float> alpha, beta, gamma;
    std::string approximate = "none";         // Gelu only
    bool detect_negative = true, detect_positive = true; // IsInf only
    Activation activation;                    // applied to the result before it is stored (float ops)
    MathPrecision math = MathPrecision::Auto; // f16 math for the kinds that have it (see above)
};

class Unary final : public Op {
    struct Key {
        explicit Key() = default;
    };

public:
    Unary(gpu::Device& device, Key) : Op(device) {} // use create()
    static std::unique_ptr<Unary> create(gpu::Device& device, const UnaryDesc& desc);
    const char* type() const override { return unary_name(kind_); }
    UnaryKind kind() const { return kind_; }
    // Whether the op computes in half precision (the f16a kernel); for tests and diagnostics.
    bool f16_math() const { return f16_math_; }

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    struct Push {
        uint32_t n;
        float alpha, beta, gamma, act_alpha, act_beta;
    };
    UnaryKind kind_ = UnaryKind::Relu;
    const gpu::Pipeline* pipeline_ = nullptr;
    const gpu::Pipeline* pipeline4_ = nullptr; // four elements per invocation (16-byte aligned bindings)
    Push push_{};
    bool f16_math_ = false;
};

// ---------------------------------------------------------------------------------------------
// Binary: c = a <op> b with numpy broadcasting (PRelu: the slope b broadcasts to a's shape only).

enum class BinaryKind : uint8_t {
    Add,            // f32, f16, i32
    Sub,            // f32, f16, i32
    Mul,            // f32, f16, i32
    Div,            // f32, f16, i32 (truncating, as C)
    Pow,            // f32, f16, i32 (by squaring, wrapping); a and b of the same dtype
    Mod,            // f32, f16, i32; fmod 0: the divisor's sign, fmod 1: the dividend's (C fmod)
    PRelu,          // f32, f16; inputs X and slope
    Equal,          // f32, f16, i32, u8 -> u8
    Less,           // f32, f16, i32, u8 -> u8
    LessOrEqual,    // f32, f16, i32, u8 -> u8
    Greater,        // f32, f16, i32, u8 -> u8
    GreaterOrEqual, // f32, f16, i32, u8 -> u8
    And,            // u8 -> u8
    Or,             // u8 -> u8
    Xor,            // u8 -> u8
    BitShiftLeft,   // i32 (as unsigned bits; shifts of 32 or more give 0)
    BitShiftRight,  // i32 (logical: as unsigned bits)
};
const char* binary_name(BinaryKind kind);

struct BinaryDesc {
    BinaryKind kind = BinaryKind::Add;
    TensorDesc a, b;                          // ONNX inputs A and B (PRelu: X and slope)
    int64_t fmod = 0;                         // Mod only
    Activation activation;                    // applied to the result before it is stored (float results)
    MathPrecision math = MathPrecision::Auto; // f16 math for Add, Sub, Mul, Div, PRelu
};

class Binary final : public Op {
    struct Key {
        explicit Key() = default;
    };

public:
    Binary(gpu::Device& device, Key) : Op(device) {} // use create()
    static std::unique_ptr<Binary> create(gpu::Device& device, const BinaryDesc& desc);
    const char* type() const override { return binary_name(kind_); }
    BinaryKind kind() const { return kind_; }
    // Dimensions left after merging (0: the no-index-math path); for tests and benchmarks.
    uint32_t broadcast_rank() const { return rank_; }
    // Whether the op computes in half precision (the f16a kernel); for tests and diagnostics.
    bool f16_math() const { return f16_math_; }

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    BinaryKind kind_ = BinaryKind::Add;
    const gpu::Pipeline* pipeline_ = nullptr;
    const gpu::Pipeline* pipeline4_ = nullptr; // rank 0, float results: four elements per invocation
    std::vector<uint32_t> push_; // the shader's push constants, as words
    uint32_t rank_ = 0;
    uint32_t n_ = 0;
    bool f16_math_ = false;
};

// ---------------------------------------------------------------------------------------------
// Variadic: ONNX Max, Min, Sum and Mean over one or more inputs, all broadcast together. N inputs
// take max(1, N - 1) dispatches: the first combines inputs 0 and 1 into the output, each further one
// folds the next input into the output in place (with a compute-to-compute barrier between).

enum class VariadicKind : uint8_t {
    Max,  // f32, f16, i32
    Min,  // f32, f16, i32
    Sum,  // f32, f16, i32
    Mean, // f32, f16
};
const char* variadic_name(VariadicKind kind);

struct VariadicDesc {
    VariadicKind kind = VariadicKind::Max;
    std::vector<TensorDesc> inputs; // at least one, all of one dtype
    Activation activation;          // applied by the last dispatch (float results)
    // f16 math for Max, Min and Sum (whose partial results are stored in f16 anyway); Mean computes
    // in fp32: its last step, (partial sum + x) / N, could overflow f16 before the division.
    MathPrecision math = MathPrecision::Auto;
};

class Variadic final : public Op {
    struct Key {
        explicit Key() = default;
    };

public:
    Variadic(gpu::Device& device, Key) : Op(device) {} // use create()
    static std::unique_ptr<Variadic> create(gpu::Device& device, const VariadicDesc& desc);
    const char* type() const override { return variadic_name(kind_); }
    VariadicKind kind() const { return kind_; }
    // Whether the op computes in half precision (the f16a kernel); for tests and diagnostics.
    bool f16_math() const { return f16_math_; }

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    struct Step {
        const gpu::Pipeline* pipeline = nullptr;
        std::vector<uint32_t> push;
        int a = 0; // input index, or -1 for the output (folding in place)
        int b = 0;
    };
    VariadicKind kind_ = VariadicKind::Max;
    std::vector<Step> steps_;
    uint32_t n_ = 0;
    bool f16_math_ = false;
};

// ---------------------------------------------------------------------------------------------
// Clip: y = min(max(x, min), max) (when min > max, every value becomes max, as ONNX says).

struct ClipDesc {
    TensorDesc input; // f32, f16, i32
    // ONNX Clip-11+ inputs: one-element tensors of the input's dtype. record() takes the inputs in
    // the order input, min (when given), max (when given).
    std::optional<TensorDesc> min, max;
    // ONNX Clip-6 attributes, used when the matching input is absent (and then only).
    float min_value = -std::numeric_limits<float>::infinity();
    float max_value = std::numeric_limits<float>::infinity();
    // f16 math gives exactly the fp32 result (the attribute bounds round to f16 monotonically).
    MathPrecision math = MathPrecision::Auto;
};

class Clip final : public Op {
    struct Key {
        explicit Key() = default;
    };

public:
    Clip(gpu::Device& device, Key) : Op(device) {} // use create()
    static std::unique_ptr<Clip> create(gpu::Device& device, const ClipDesc& desc);
    const char* type() const override { return "Clip"; }
    // Whether the op computes in half precision (the f16a kernel); for tests and diagnostics.
    bool f16_math() const { return f16_math_; }

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    struct Push {
        uint32_t n, lo, hi;
    };
    const gpu::Pipeline* pipeline_ = nullptr;
    Push push_{};
    int min_index_ = -1, max_index_ = -1;
    bool f16_math_ = false;
};

// ---------------------------------------------------------------------------------------------
// QuantizeLinear and DequantizeLinear (ONNX, linear 8-bit quantization), per tensor or per axis:
//   quantize:   y = saturate(round_half_to_even(x / scale) + zero_point), into [qmin, qmax]
//   dequantize: y = (x - zero_point) * scale
// The quantized side is u8 (uint8) or i32 holding int8 values (vkml stores int8 in i32); the float
// side f32 or f16. scale is f32 and zero_point i32, each one element or one per index of `axis`.
struct QuantizeDesc {
    bool dequantize = false;
    TensorDesc input;            // quantize: f32/f16; dequantize: u8 or i32
    TensorDesc scale;            // f32, [1] / [] or [input.shape[axis]]
    std::optional<TensorDesc> zero_point; // i32, scale's shape; absent: 0
    int64_t axis = 1;            // per-axis scale when scale has more than one element
    bool to_int8 = false;        // quantize: int8 range [-128, 127] in i32 (else uint8 [0, 255] in u8)
    DType float_dtype = DType::f32; // dequantize: the output's dtype
};

class Quantize final : public Op {
public:
    static std::unique_ptr<Quantize> create(gpu::Device& device, const QuantizeDesc& desc);
    const char* type() const override { return dequantize_ ? "DequantizeLinear" : "QuantizeLinear"; }

private:
    explicit Quantize(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline* pipeline_ = nullptr;
    std::array<int32_t, 6> push_{}; // elements, inner, channels, qmin, qmax, has zero point
    bool dequantize_ = false;
};

// ---------------------------------------------------------------------------------------------
// DynamicQuantizeLinear: uint8 quantization with the scale and zero point computed from the data:
// the range [min(0, min x), max(0, max x)] mapped onto [0, 255]. Outputs y (u8, x's shape),
// y_scale (f32 scalar) and y_zero_point (u8 scalar). Two dispatches: one workgroup finds the range
// (fp32), then every element is quantized. An all-zero input gives scale 0 and y = 0.
struct DynamicQuantizeDesc {
    TensorDesc input; // f32 or f16
};

class DynamicQuantize final : public Op {
public:
    static std::unique_ptr<DynamicQuantize> create(gpu::Device& device, const DynamicQuantizeDesc& desc);
    const char* type() const override { return "DynamicQuantizeLinear"; }

private:
    explicit DynamicQuantize(gpu::Device& device) : Op(device) {}
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    const gpu::Pipeline *range_ = nullptr, *quantize_ = nullptr;
    uint32_t count_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Where: out = condition ? x : y with three-way numpy broadcasting.

struct WhereDesc {
    TensorDesc condition; // u8 (bool)
    TensorDesc x, y;      // f32, f16, i32 or u8, the same for both
};

class Where final : public Op {
    struct Key {
        explicit Key() = default;
    };

public:
    Where(gpu::Device& device, Key) : Op(device) {} // use create()
    static std::unique_ptr<Where> create(gpu::Device& device, const WhereDesc& desc);
    const char* type() const override { return "Where"; }
    uint32_t broadcast_rank() const { return rank_; }

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    const gpu::Pipeline* pipeline_ = nullptr;
    std::vector<uint32_t> push_;
    uint32_t rank_ = 0;
    uint32_t n_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Cast between f32, f16, i32, i64 and u8.
//   float -> integer: truncates toward zero and saturates to the destination's range, NaN -> 0
//                     (ONNX leaves out-of-range conversions undefined).
//   integer -> narrower integer (i64 -> i32, i32 -> u8, ...): wraps, as C and numpy.
//   i64 -> float: rounded to nearest for values within 32 bits, within 1 ulp beyond.
//   to_bool (ONNX to = BOOL, stored as u8): nonzero -> 1 (NaN too), zero -> 0.

struct CastDesc {
    TensorDesc input;
    DType to = DType::f32;
    bool to_bool = false; // the destination is ONNX BOOL; needs to = u8
};

class Cast final : public Op {
    struct Key {
        explicit Key() = default;
    };

public:
    Cast(gpu::Device& device, Key) : Op(device) {} // use create()
    static std::unique_ptr<Cast> create(gpu::Device& device, const CastDesc& desc);
    const char* type() const override { return "Cast"; }

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    const gpu::Pipeline* pipeline_ = nullptr;
    uint32_t n_ = 0;
    const gpu::Pipeline* vec_pipeline_ = nullptr; // 4 elements an invocation (float to float)
};

} // namespace vkml::ops
