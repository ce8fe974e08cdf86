#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// BatchNormalization, training mode (ml/ops/norm_batch_training.cpp): invocation c takes the mean
// and population variance of channel c over N x inner elements (fp32, two passes), normalizes
// them, and updates the running statistics with momentum.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 1) readonly buffer Scale { stype data[]; } scale;
layout(std430, set = 0, binding = 2) readonly buffer Bias { stype data[]; } bias;
layout(std430, set = 0, binding = 3) readonly buffer Mean { stype data[]; } in_mean;
layout(std430, set = 0, binding = 4) readonly buffer Var { stype data[]; } in_var;
layout(std430, set = 0, binding = 5) writeonly buffer Y { stype data[]; } y;
layout(std430, set = 0, binding = 6) writeonly buffer RMean { stype data[]; } run_mean;
layout(std430, set = 0, binding = 7) writeonly buffer RVar { stype data[]; } run_var;
layout(push_constant) uniform Params { uint C; uint N; uint inner; float epsilon; float momentum; } p;

void main() {
    uint c = vkml_linear_id();
    if (c >= p.C) return;
    const float count = float(p.N) * float(p.inner);
    float sum = 0.0;
    for (uint n = 0u; n < p.N; ++n)
        for (uint i = 0u; i < p.inner; ++i) sum += float(x.data[(n * p.C + c) * p.inner + i]);
    const float mean = count > 0.0 ? sum / count : 0.0;
    float sq = 0.0;
    for (uint n = 0u; n < p.N; ++n)
        for (uint i = 0u; i < p.inner; ++i) {
            float d = float(x.data[(n * p.C + c) * p.inner + i]) - mean;
            sq += d * d;
        }
    const float var = count > 0.0 ? sq / count : 0.0;
    const float k = float(scale.data[c]) / sqrt(var + p.epsilon), b = float(bias.data[c]);
    for (uint n = 0u; n < p.N; ++n)
        for (uint i = 0u; i < p.inner; ++i) {
            uint at = (n * p.C + c) * p.inner + i;
            y.data[at] = stype((float(x.data[at]) - mean) * k + b);
        }
    run_mean.data[c] = stype(float(in_mean.data[c]) * p.momentum + mean * (1.0 - p.momentum));
    run_var.data[c] = stype(float(in_var.data[c]) * p.momentum + var * (1.0 - p.momentum));
}
