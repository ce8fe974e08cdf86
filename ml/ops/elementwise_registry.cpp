#include "families.hpp"

namespace vkml::ops::detail {

// Kernels: one invocation per element. Unary ops: elementwise_unary, the op a specialization
// constant. Binary ops: elementwise_binary / elementwise_compare with numpy broadcasting up to rank
// 6 (dimensions merged at create(); a flat path without index math when all shapes are equal).
// Math precision (MathPrecision): f16 tensors compute in half precision under Auto on devices with
// shaderFloat16 only where that is exact or correctly rounded (or, for division, 2.5 ULP); the notes
// say which ops; the rest compute in fp32. Fused activations always run in fp32.
void add_elementwise_ops(std::vector<OpInfo>& out) {
    const std::string f = "Element-wise";
    const std::string fused = "; fused activation (float results, fp32 math)";
    const std::string bcast = "numpy broadcasting up to rank 6 (flat path when shapes match)";
    const std::string math = "fp32 math";
    const std::string exact16 =
        "f16: half-precision math under Auto with shaderFloat16 (exact; f16 subnormals may flush to 0)";
    const std::string div16 = "f16: half-precision division under Auto with shaderFloat16 (2.5 ULP; fp32 "
                              "for divisors outside [2^-14, 2^14], where half-precision division has no "
                              "bound; f16 subnormals may flush to 0)";
    const std::string add16 = "f16: half-precision math under Auto with shaderFloat16 (correctly rounded; "
                              "f16 subnormals may flush to 0)";
    auto unary = [&](const char* type, const std::string& dtypes, const std::string& notes) {
        out.push_back({type, f, dtypes, notes});
    };
    unary("Abs", "f32, f16, i32", exact16 + " (i32: integer)" + fused);
    unary("Neg", "f32, f16, i32", exact16 + " (i32: integer)" + fused);
    unary("Exp", "f32, f16", math + fused);
    unary("Log", "f32, f16", math + fused);
    unary("Sqrt", "f32, f16", math + fused);
    unary("Reciprocal", "f32, f16", div16 + fused);
    unary("Floor", "f32, f16", exact16 + fused);
    unary("Ceil", "f32, f16", exact16 + fused);
    unary("Round", "f32, f16", "halves to even; " + exact16 + fused);
    unary("Sin", "f32, f16", math + fused);
    unary("Cos", "f32, f16", math + fused);
    unary("Erf", "f32, f16", "rational approximation, absolute error below 1.2e-7" + fused);
    unary("Sign", "f32, f16, i32", exact16 + " (i32: integer)" + fused);
    unary("Not", "u8 (bool)", "nonzero -> 0, zero -> 1");
    unary("IsNaN", "f32, f16 -> bool", "elementwise_classify");
    unary("IsInf", "f32, f16 -> bool", "detect_negative, detect_positive");
    unary("Relu", "f32, f16, i32", exact16 + " (i32: integer)" + fused);
    // Parameterized activations stay fp32: f16 would round alpha/beta, and HardSigmoid/HardSwish
    // cancel near their kinks. The transcendental ones lose accuracy and overflow in f16 (exp(12)).
    unary("LeakyRelu", "f32, f16", "alpha; " + math + fused);
    unary("Elu", "f32, f16", "alpha; " + math + fused);
    unary("Selu", "f32, f16", "alpha, gamma; " + math + fused);
    unary("Celu", "f32, f16", "alpha (nonzero); " + math + fused);
    unary("Sigmoid", "f32, f16", math + fused);
    unary("HardSigmoid", "f32, f16", "alpha, beta; " + math + fused);
    unary("HardSwish", "f32, f16", math + fused);
    unary("Tanh", "f32, f16", math + fused);
    unary("Softplus", "f32, f16", "overflow-free form; " + math + fused);
    unary("Softsign", "f32, f16", math + fused);
    unary("Mish", "f32, f16", math + fused);
    unary("Gelu", "f32, f16", "approximate \"none\" (erf) and \"tanh\"; " + math + fused);
    for (const char* trig : {"Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"})
        unary(trig, "f32, f16", math + fused);
    unary("ThresholdedRelu", "f32, f16", "alpha; " + math + fused);
    unary("Shrink", "f32, f16", "lambd, bias; " + math + fused);
    unary("Swish", "f32, f16",
          "alpha (opset 24); alpha 1 is SiLU, the fused form of Mul(x, Sigmoid(x)); " + math + fused);
    out.push_back({"Clip", f, "f32, f16, i32",
                   "min/max as one-element inputs (Clip-11+) or attributes min_value/max_value (Clip-6), "
                   "default -inf/+inf; min > max gives max; i32 attribute bounds round inward; " +
                       exact16 + ": bounds rounded to f16, the same result as fp32"});

    out.push_back({"Add", f, "f32, f16, i32", bcast + "; " + add16 + fused});
    out.push_back({"Sub", f, "f32, f16, i32", bcast + "; " + add16 + fused});
    out.push_back({"Mul", f, "f32, f16, i32", bcast + "; " + add16 + fused});
    out.push_back({"Div", f, "f32, f16, i32",
                   bcast + "; i32 truncates toward zero, division by 0 undefined; " + div16 + fused});
    out.push_back({"Pow", f, "f32, f16, i32",
                   bcast +
                       "; a float base takes the exponent in its dtype; negative base with an integral "
                       "exponent as C pow, NaN otherwise; " +
                       math + fused + "; integer base and exponent: exact by squaring (i32, wrapping), "
                       "integer base with a float exponent: fp32, truncated to the base's type"});
    for (const char* q : {"QuantizeLinear", "DequantizeLinear"})
        out.push_back({q, f, "f32, f16 <-> uint8 (u8), int8 (held in i32)",
                       "per tensor or per axis (axis); zero point optional; round half to even, saturating; "
                       "fp32 math"});
    out.push_back({"DynamicQuantizeLinear", f, "f32, f16 -> uint8",
                   "range [min(0, min x), max(0, max x)] from one workgroup, then per element; fp32 math"});
    out.push_back({"BitShift", f, "i32 (u8, u16, u32, u64 computed in 32 bits)",
                   bcast + "; direction LEFT or RIGHT, logical; shifts of 32 or more give 0"});
    out.push_back({"Mod", f, "f32, f16, i32",
                   bcast +
                       "; fmod 1: C fmod (dividend's sign); fmod 0: divisor's sign, for floats too "
                       "(ONNX asks fmod 1 there); fp32 math, exact" +
                       fused});
    out.push_back({"PRelu", f, "f32, f16", "slope broadcast unidirectionally to X; " + add16 + fused});
    for (const char* cmp : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
        out.push_back({cmp, f, "f32, f16, i32, u8 -> u8", bcast});
    for (const char* logic : {"And", "Or", "Xor"}) out.push_back({logic, f, "u8 (bool)", bcast});
    // Folding through the output means an f16 Sum/Mean rounds its partial sums to f16 (N-2 extra
    // roundings); Max and Min are exact.
    const std::string variadic = "1+ inputs broadcast together; N-1 dispatches folding into the output";
    out.push_back({"Max", f, "f32, f16, i32", variadic + "; " + exact16 + fused});
    out.push_back({"Min", f, "f32, f16, i32", variadic + "; " + exact16 + fused});
    out.push_back(
        {"Sum", f, "f32, f16, i32", variadic + " (f16: partial sums stored in f16); " + add16 + fused});
    out.push_back({"Mean", f, "f32, f16",
                   variadic + " (f16: partial sums stored in f16); " + math +
                       " (the last step, (sum + x) / N, could overflow f16 before the division)" + fused});
    out.push_back({"Where", f, "f32, f16, i32, u8", "bool (u8) condition; three-way " + bcast});
    out.push_back(
        {"Cast", f, "f32, f16, i32, i64, u8",
         "every pair; float -> int truncates and saturates (NaN -> 0; ONNX leaves it undefined); "
         "int -> narrower int wraps; to_bool for ONNX BOOL (nonzero -> 1); i64 as 32-bit word pairs"});
}

} // namespace vkml::ops::detail
