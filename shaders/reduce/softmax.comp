#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce/util.glsl"
// Softmax / LogSoftmax along one axis of an input seen as [outer, n, inner] (opset 13). A row's
// maximum and sum of exp(x - max) come from the online form in util.glsl, so exp() never
// overflows, then the row is written as exp(x - m) / s or x - m - log(s).
//   REDUCE_WG=0: one invocation per row.
//   REDUCE_WG=1: one workgroup per row; the (max, sum) pairs are combined in shared memory.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint LOG = 0;

layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Out { sfloat data[]; } dst;
layout(push_constant) uniform Params {
    uint rows;
    uint n;
    uint inner;
} pc;

uint row_base(uint r) {
    return (r / pc.inner) * pc.n * pc.inner + r % pc.inner;
}

float normalized(float x, vec2 state, float log_sum) {
    return LOG != 0 ? (x - state.x) - log_sum : exp(x - state.x) / state.y;
}

#if REDUCE_WG
shared vec2 partial[gl_WorkGroupSize.x];

void main() {
    const uint r = reduce_group_id();
    if (r >= pc.rows) return; // uniform across the workgroup
    const uint base = row_base(r);
    const uint tid = gl_LocalInvocationID.x;
    vec2 state = lse_empty();
    for (uint j = tid; j < pc.n; j += gl_WorkGroupSize.x)
        state = lse_add(state, float(src.data[base + j * pc.inner]));
    partial[tid] = state;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (tid < s) partial[tid] = lse_merge(partial[tid], partial[tid + s]);
        barrier();
    }
    state = partial[0];
    const float log_sum = log(state.y);
    for (uint j = tid; j < pc.n; j += gl_WorkGroupSize.x) {
        const uint i = base + j * pc.inner;
        dst.data[i] = sfloat(normalized(float(src.data[i]), state, log_sum));
    }
}
#else
void main() {
    const uint r = vkml_linear_id();
    if (r >= pc.rows) return;
    const uint base = row_base(r);
    vec2 state = lse_empty();
    for (uint j = 0; j < pc.n; ++j) state = lse_add(state, float(src.data[base + j * pc.inner]));
    const float log_sum = log(state.y);
    for (uint j = 0; j < pc.n; ++j) {
        const uint i = base + j * pc.inner;
        dst.data[i] = sfloat(normalized(float(src.data[i]), state, log_sum));
    }
}
#endif
