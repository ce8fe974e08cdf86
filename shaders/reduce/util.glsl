// Helpers shared by the reduction-family shaders (shaders/reduce/*.comp).
#ifndef VKML_REDUCE_UTIL_GLSL
#define VKML_REDUCE_UTIL_GLSL

float reduce_inf() { return uintBitsToFloat(0x7f800000u); }

// Online log-sum-exp: state (m, s) stands for s * exp(m), the sum of exp(v) over the values seen,
// with m their running maximum, so no exp() ever sees a positive argument (no overflow) and the
// largest term contributes exactly 1. s == 0 marks the empty state; it is tested instead of doing
// arithmetic on the -inf that m starts at.
vec2 lse_empty() { return vec2(-reduce_inf(), 0.0); }
vec2 lse_add(vec2 state, float v) {
    if (state.y == 0.0) return vec2(v, 1.0);
    if (v > state.x) return vec2(v, state.y * exp(state.x - v) + 1.0);
    return vec2(state.x, state.y + exp(v - state.x));
}
vec2 lse_merge(vec2 a, vec2 b) {
    if (a.y == 0.0) return b;
    if (b.y == 0.0) return a;
    float m = max(a.x, b.x);
    return vec2(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

// Index of this workgroup when the host dispatches one workgroup per item, folded into y when
// the count exceeds maxComputeWorkGroupCount[0] (see groups_per_item() in reduce_common.hpp).
uint reduce_group_id() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

#endif
