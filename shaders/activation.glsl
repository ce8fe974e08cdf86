// Activations that operators apply to their result before storing it (fused, so no extra pass over
// memory). The kind is a specialization constant so each pipeline compiles to just its own
// activation. Values match vkml::ops::ActivationKind; parameters follow ONNX (alpha, beta).
#ifndef VKML_ACTIVATION_GLSL
#define VKML_ACTIVATION_GLSL

#define VKML_ACT_NONE 0
#define VKML_ACT_RELU 1
#define VKML_ACT_LEAKY_RELU 2
#define VKML_ACT_CLIP 3
#define VKML_ACT_SIGMOID 4
#define VKML_ACT_HARD_SIGMOID 5
#define VKML_ACT_HARD_SWISH 6
#define VKML_ACT_TANH 7
#define VKML_ACT_SILU 8
#define VKML_ACT_GELU 9
#define VKML_ACT_ELU 10
#define VKML_ACT_MISH 11

float vkml_erf(float x) {
    // Abramowitz-Stegun 7.1.26 is too coarse for f32 tests; use a rational approximation with
    // |error| < 1.2e-7 (Numerical Recipes' erfc form).
    float z = abs(x);
    float t = 1.0 / (1.0 + 0.5 * z);
    float r = t * exp(-z * z - 1.26551223 +
                      t * (1.00002368 +
                           t * (0.37409196 +
                                t * (0.09678418 +
                                     t * (-0.18628806 +
                                          t * (0.27886807 +
                                               t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return x >= 0.0 ? 1.0 - r : r - 1.0;
}

float vkml_softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

float vkml_activate(uint kind, float x, float alpha, float beta) {
    switch (kind) {
    case VKML_ACT_RELU: return max(x, 0.0);
    case VKML_ACT_LEAKY_RELU: return x >= 0.0 ? x : alpha * x;
    case VKML_ACT_CLIP: return min(max(x, alpha), beta); // clamp() is undefined when min > max
    case VKML_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case VKML_ACT_HARD_SIGMOID: return clamp(alpha * x + beta, 0.0, 1.0);
    case VKML_ACT_HARD_SWISH: return x * clamp(x / 6.0 + 0.5, 0.0, 1.0);
    case VKML_ACT_TANH: return tanh(clamp(x, -15.0, 15.0)); // tanh of large |x| overflows exp on some drivers
    case VKML_ACT_SILU: return x / (1.0 + exp(-x));
    case VKML_ACT_GELU: return 0.5 * x * (1.0 + vkml_erf(x * 0.70710678118654752));
    case VKML_ACT_ELU: return x >= 0.0 ? x : alpha * (exp(x) - 1.0);
    case VKML_ACT_MISH: return x * tanh(clamp(vkml_softplus(x), -15.0, 15.0));
    default: return x;
    }
}

#endif
