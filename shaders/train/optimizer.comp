#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// One optimizer step on one tensor (ml/ops/train_optimizer.cpp), as ONNX's
// ai.onnx.preview.training defines it, in fp32. mode 0 Adagrad (s1 = H), 1 Momentum, 2 Nesterov
// momentum (s1 = V), 3 Adam (s1 = V, s2 = H). Without a second state s2 and s2n alias s1 and s1n
// and are not touched.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer R { float data[]; } r;
layout(std430, set = 0, binding = 1) readonly buffer T { int data[]; } t;
layout(std430, set = 0, binding = 2) readonly buffer X { float data[]; } x;
layout(std430, set = 0, binding = 3) readonly buffer G { float data[]; } g;
layout(std430, set = 0, binding = 4) readonly buffer S1 { float data[]; } s1;
layout(std430, set = 0, binding = 5) readonly buffer S2 { float data[]; } s2;
layout(std430, set = 0, binding = 6) writeonly buffer XN { float data[]; } xn;
layout(std430, set = 0, binding = 7) writeonly buffer S1N { float data[]; } s1n;
layout(std430, set = 0, binding = 8) writeonly buffer S2N { float data[]; } s2n;
layout(push_constant) uniform Params {
    uint n; uint mode;
    float decay_factor; float epsilon; float norm_coefficient; float norm_coefficient_post; float alpha; float beta;
} p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.n) return;
    float R = r.data[0];
    float T = float(t.data[0]);
    float X = x.data[i];
    float G = p.norm_coefficient * X + g.data[i]; // regularized gradient
    if (p.mode == 0u) {
        float rate = R / (1.0 + T * p.decay_factor);
        float H = s1.data[i] + G * G;
        xn.data[i] = X - rate * G / (sqrt(H) + p.epsilon);
        s1n.data[i] = H;
    } else if (p.mode <= 2u) {
        float b = T > 0.0 ? p.beta : 1.0;
        float V = p.alpha * s1.data[i] + b * G;
        xn.data[i] = p.mode == 1u ? X - R * V : X - R * (G + p.alpha * V);
        s1n.data[i] = V;
    } else {
        float V = p.alpha * s1.data[i] + (1.0 - p.alpha) * G;
        float H = p.beta * s2.data[i] + (1.0 - p.beta) * G * G;
        float rate = T > 0.0 ? R * sqrt(1.0 - pow(p.beta, T)) / (1.0 - pow(p.alpha, T)) : R;
        float Xnew = X - rate * (V / (sqrt(H) + p.epsilon));
        xn.data[i] = (1.0 - p.norm_coefficient_post) * Xnew;
        s1n.data[i] = V;
        s2n.data[i] = H;
    }
}
