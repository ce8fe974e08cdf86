#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce/util.glsl"
// Reduces the input over a set of axes (ReduceSum ... ReduceSumSquare, the global pools). The host
// drops size-1 dimensions and merges neighbours that are both kept or both reduced, which leaves
// at most three kept and three reduced dimension groups (size-1 groups pad the rest). Outputs are
// numbered in input order of the kept groups, which is the output's own order.
//   REDUCE_WG=0: one invocation per output loops over its reduced elements.
//   REDUCE_WG=1: one workgroup per output; each invocation reduces a strided share, then the
//                partial results are combined in shared memory (a tree, which also keeps sums of
//                many terms more accurate than one long running sum).
// Accumulation is always fp32; LogSumExp uses the online max-subtracting form of util.glsl.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint MODE = 0;

const uint SUM = 0, MEAN = 1, MAX = 2, MIN = 3, PROD = 4, L1 = 5, L2 = 6, LSE = 7, SUMSQ = 8, LP = 9, LOGSUM = 10;

layout(std430, set = 0, binding = 0) readonly buffer In { sfloat data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Out { sfloat data[]; } dst;
layout(push_constant) uniform Params {
    uint outputs;
    uint count; // reduced elements per output
    uint kept_size[3];
    uint kept_stride[3];
    uint red_size[3];
    uint red_stride[3];
    float p; // LP's exponent
} pc;

// Accumulator: x is the running value; LSE keeps its (max, scaled sum) pair in (x, y).
vec2 acc_init() {
    if (MODE == LSE) return lse_empty();
    if (MODE == MAX) return vec2(-reduce_inf(), 0.0);
    if (MODE == MIN) return vec2(reduce_inf(), 0.0);
    if (MODE == PROD) return vec2(1.0, 0.0);
    return vec2(0.0);
}

vec2 acc_add(vec2 a, float v) {
    switch (MODE) {
    case MAX:
        return vec2(max(a.x, v), 0.0);
    case MIN:
        return vec2(min(a.x, v), 0.0);
    case PROD:
        return vec2(a.x * v, 0.0);
    case L1:
        return vec2(a.x + abs(v), 0.0);
    case L2:
    case SUMSQ:
        return vec2(fma(v, v, a.x), 0.0);
    case LP:
        return vec2(a.x + pow(abs(v), pc.p), 0.0);
    case LSE:
        return lse_add(a, v);
    default:
        return vec2(a.x + v, 0.0);
    }
}

vec2 acc_merge(vec2 a, vec2 b) {
    switch (MODE) {
    case MAX:
        return vec2(max(a.x, b.x), 0.0);
    case MIN:
        return vec2(min(a.x, b.x), 0.0);
    case PROD:
        return vec2(a.x * b.x, 0.0);
    case LSE:
        return lse_merge(a, b);
    default:
        return vec2(a.x + b.x, 0.0);
    }
}

float acc_final(vec2 a) {
    switch (MODE) {
    case MEAN:
        return a.x / float(pc.count);
    case L2:
        return sqrt(a.x);
    case LP:
        return pow(a.x, 1.0 / pc.p);
    case LSE:
        return a.x + log(a.y);
    case LOGSUM:
        return log(a.x);
    default:
        return a.x;
    }
}

uint input_base(uint o) {
    const uint c2 = o % pc.kept_size[2];
    o /= pc.kept_size[2];
    const uint c1 = o % pc.kept_size[1];
    const uint c0 = o / pc.kept_size[1];
    return c0 * pc.kept_stride[0] + c1 * pc.kept_stride[1] + c2 * pc.kept_stride[2];
}

#if REDUCE_WG
shared vec2 partial[gl_WorkGroupSize.x];

void main() {
    const uint o = reduce_group_id();
    if (o >= pc.outputs) return; // uniform across the workgroup
    const uint base = input_base(o);
    const uint tid = gl_LocalInvocationID.x;
    vec2 acc = acc_init();
    for (uint r = tid; r < pc.count; r += gl_WorkGroupSize.x) {
        const uint i2 = r % pc.red_size[2];
        const uint t = r / pc.red_size[2];
        const uint i1 = t % pc.red_size[1];
        const uint i0 = t / pc.red_size[1];
        acc = acc_add(
            acc,
            float(src.data[base + i0 * pc.red_stride[0] + i1 * pc.red_stride[1] + i2 * pc.red_stride[2]]));
    }
    partial[tid] = acc;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (tid < s) partial[tid] = acc_merge(partial[tid], partial[tid + s]);
        barrier();
    }
    if (tid == 0) dst.data[o] = sfloat(acc_final(partial[0]));
}
#else
void main() {
    const uint o = vkml_linear_id();
    if (o >= pc.outputs) return;
    const uint base = input_base(o);
    vec2 acc = acc_init();
    for (uint i0 = 0; i0 < pc.red_size[0]; ++i0) {
        for (uint i1 = 0; i1 < pc.red_size[1]; ++i1) {
            const uint off = base + i0 * pc.red_stride[0] + i1 * pc.red_stride[1];
            for (uint i2 = 0; i2 < pc.red_size[2]; ++i2)
                acc = acc_add(acc, float(src.data[off + i2 * pc.red_stride[2]]));
        }
    }
    dst.data[o] = sfloat(acc_final(acc));
}
#endif
