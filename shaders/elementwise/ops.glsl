// Operation codes of the element-wise shaders (specialization constant 0). The unary codes are the
// values of vkml::ops::UnaryKind; the binary codes are private to ml/ops/elementwise_kernels.hpp,
// which mirrors this file.
#ifndef VKML_ELEMENTWISE_OPS_GLSL
#define VKML_ELEMENTWISE_OPS_GLSL

#define EW_ABS 0
#define EW_NEG 1
#define EW_EXP 2
#define EW_LOG 3
#define EW_SQRT 4
#define EW_RECIPROCAL 5
#define EW_FLOOR 6
#define EW_CEIL 7
#define EW_ROUND 8
#define EW_SIN 9
#define EW_COS 10
#define EW_ERF 11
#define EW_SIGN 12
#define EW_NOT 13
#define EW_RELU 14
#define EW_LEAKY_RELU 15
#define EW_ELU 16
#define EW_SELU 17
#define EW_CELU 18
#define EW_SIGMOID 19
#define EW_HARD_SIGMOID 20
#define EW_HARD_SWISH 21
#define EW_TANH 22
#define EW_SOFTPLUS 23
#define EW_SOFTSIGN 24
#define EW_MISH 25
#define EW_GELU 26
#define EW_SWISH 27
#define EW_TAN 28
#define EW_ASIN 29
#define EW_ACOS 30
#define EW_ATAN 31
#define EW_SINH 32
#define EW_COSH 33
#define EW_ASINH 34
#define EW_ACOSH 35
#define EW_ATANH 36
#define EW_THRESHOLDED_RELU 37
#define EW_SHRINK 38
#define EW_ISNAN 39
#define EW_ISINF 40 // alpha: detect_negative, beta: detect_positive (0 or 1)
#define EW_GELU_TANH 64 // Gelu with approximate = "tanh"

#define EW_ADD 0
#define EW_SUB 1
#define EW_MUL 2
#define EW_DIV 3
#define EW_POW 4
#define EW_MOD 5  // fmod = 0: the result takes the divisor's sign
#define EW_FMOD 6 // fmod = 1: the result takes the dividend's sign (C fmod)
#define EW_PRELU 7
#define EW_MAX 8
#define EW_MIN 9
#define EW_ADD_SCALE 10 // (a + b) * scale: the last step of Mean
#define EW_FIRST 11     // a: variadic ops with a single input
#define EW_SHL 12       // i32: a << b as unsigned bits
#define EW_SHR 13       // i32: a >> b as unsigned bits (logical)

#define EW_EQUAL 0
#define EW_LESS 1
#define EW_LESS_EQUAL 2
#define EW_GREATER 3
#define EW_GREATER_EQUAL 4
#define EW_AND 5
#define EW_OR 6
#define EW_XOR 7

#endif
