#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "activation.glsl"
// Grouped normalization output: y = (x - mean) / sqrt(var + epsilon) * scale[k] + bias[k], then the
// fused activation, for every element of a group.
//   single-pass (default): one workgroup per group computes the group's moments, then writes it;
//     where the group is whole units and fits the workgroup's registers (spec_cached), it is read
//     once: each invocation keeps its units between the two.
//   NORM_SPLIT: stage 2 of the split kernel; workgroup w merges the partial moments moments.comp
//     stored for group (w / partials) and writes chunk (w % partials).
//   NORM_STATS: also stores the group's mean and 1 / sqrt(var + epsilon) (LayerNormalization's
//     optional outputs, always fp32).
// The scale/bias index k of element i of group g is ((g % spec_param_groups) * m + i) / spec_param_div,
// which covers per-channel (Instance, Group), per-group (opset-18 Group) and per-element (Layer)
// parameters; spec_broadcast instead derives it from X's coordinates and the push-constant
// strides (Layer with Scale or B broadcast over some dimensions).
VKML_LOCAL_SIZE;
// After the workgroup-size declaration: glslang folds gl_WorkGroupSize used before it to 1.
#include "norm/norm_common.glsl"
layout(constant_id = 0) const uint spec_m = 1;
layout(constant_id = 1) const uint spec_param_groups = 1;
layout(constant_id = 2) const uint spec_param_div = 1;
layout(constant_id = 3) const bool spec_has_bias = true;
layout(constant_id = 4) const uint spec_activation = 0;
layout(constant_id = 5) const uint spec_partials = 1;
layout(constant_id = 6) const uint spec_chunk = 1;
layout(constant_id = 7) const bool spec_broadcast = false;
// Elements per load and store: 8 (f16, 16 bytes of packed halves), 4 or 1; spec_m and
// spec_chunk multiples of it, X and Y on 16 bytes, no broadcast parameters.
layout(constant_id = 8) const uint spec_vec = 1;
// Single pass, spec_vec > 1: units per invocation held in registers between the moments and the
// output (the group read once), at most NORM_MAX_CACHED vec4 slices; 0 reads the group twice.
layout(constant_id = 9) const uint spec_cached = 0;
#define NORM_MAX_CACHED 8
#include "norm/norm_units.glsl"
layout(std430, set = 0, binding = 1) readonly buffer Scale { sfloat data[]; } scale;
layout(std430, set = 0, binding = 2) readonly buffer Bias { sfloat data[]; } bias;
layout(std430, set = 0, binding = 3) writeonly buffer Y { sfloat data[]; } y;
layout(std430, set = 0, binding = 3) writeonly buffer Y4 { sfloat4 data[]; } y4;
layout(std430, set = 0, binding = 3) writeonly buffer Y16 { uvec4 data[]; } y16;
#if NORM_SPLIT
layout(std430, set = 0, binding = 4) readonly buffer Partials { float data[]; } partials;
#define NORM_STATS_BINDING 5
#else
#define NORM_STATS_BINDING 4
#endif
#if NORM_STATS
layout(std430, set = 0, binding = NORM_STATS_BINDING) writeonly buffer Mean { float data[]; } mean_out;
layout(std430, set = 0, binding = NORM_STATS_BINDING + 1) writeonly buffer InvStd { float data[]; } inv_std_out;
#endif

// Four consecutive elements of a group (the first's parameter index before the division is
// `at`), normalized, scaled, shifted and activated.
vec4 normalize4(vec4 xv, float shift, float mean, float inv_std, uint at, bool group_param, float gscale,
                float gbias) {
    const vec4 v = (xv - shift - mean) * inv_std;
    vec4 o;
    for (uint e = 0; e < 4; ++e) {
        float a;
        if (group_param) {
            a = v[e] * gscale + gbias;
        } else {
            const uint si = (at + e) / spec_param_div;
            a = v[e] * float(scale.data[si]);
            if (spec_has_bias) a += float(bias.data[si]);
        }
        o[e] = vkml_activate(spec_activation, a, p.alpha, p.beta);
    }
    return o;
}

// Unit u of Y (spec_vec > 1) from the unit of X in lo (and hi), the first element's parameter index
// before the division `at`.
void store_y_unit(uint u, vec4 lo, vec4 hi, float shift, float mean, float inv_std, uint at, bool group_param,
                  float gscale, float gbias) {
    const vec4 a = normalize4(lo, shift, mean, inv_std, at, group_param, gscale, gbias);
    if (spec_vec == 8) {
        const vec4 c = normalize4(hi, shift, mean, inv_std, at + 4, group_param, gscale, gbias);
        y16.data[u] = uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(c.xy), packHalf2x16(c.zw));
    } else {
        y4.data[u] = sfloat4(a);
    }
}

void main() {
    uint w = norm_workgroup_id();
    if (w >= p.groups * spec_partials) return; // whole workgroups only: no barrier is skipped by half of one
#if NORM_SPLIT
    // Chunks in the reverse of the moments pass's order: the first workgroups re-read the chunks
    // read last, the likeliest still in the L2 cache.
    w = p.groups * spec_partials - 1 - w;
#endif
    uint group = w / spec_partials;
    uint part = w % spec_partials;
    uint base = group * spec_m;
    float shift = float(x.data[base]);
    uint lid = gl_LocalInvocationID.x;

#if NORM_SPLIT
    // The group's partials: merged in order by every invocation where they are few (no barrier,
    // no shared memory; the same loads in every invocation, broadcast), else one per invocation
    // and the tree (the host keeps partials <= workgroup size).
    Moments m = Moments(0.0, 0.0, 0.0);
    if (spec_partials <= 16) {
        for (uint k = 0; k < spec_partials; ++k) {
            const uint at = 3 * (group * spec_partials + k);
            m = moments_merge(m, Moments(partials.data[at], partials.data[at + 1], partials.data[at + 2]));
        }
    } else {
        if (lid < spec_partials) {
            uint at = 3 * (group * spec_partials + lid);
            m = Moments(partials.data[at], partials.data[at + 1], partials.data[at + 2]);
        }
        m = moments_reduce(m);
    }
    uint begin = part * spec_chunk;
    uint end = min(begin + spec_chunk, spec_m);
#else
    // The cached form: every unit of the invocation loaded first, its own moments exactly in two
    // passes over the registers (relative to the shift), then merged over the workgroup.
    const uint slices = spec_vec == 8 ? 2 : 1;
    vec4 cached[NORM_MAX_CACHED];
    Moments m;
    if (spec_cached > 0) {
        const uint wg = gl_WorkGroupSize.x, last = spec_m / spec_vec;
        float n = 0.0, sum = 0.0;
        [[unroll]] for (uint k = 0; k < NORM_MAX_CACHED; ++k) {
            if (k >= spec_cached) break;
            const uint u = lid + k * wg;
            vec4 lo = vec4(0.0), hi = vec4(0.0);
            if (u < last) {
                load_x_unit(base / spec_vec + u, lo, hi);
                lo -= shift;
                hi -= shift;
                n += float(spec_vec);
                sum += dot(lo, vec4(1.0)) + (spec_vec == 8 ? dot(hi, vec4(1.0)) : 0.0);
            }
            cached[k * slices] = lo;
            if (spec_vec == 8) cached[k * slices + 1] = hi;
        }
        const float mean = n > 0.0 ? sum / n : 0.0;
        float m2 = 0.0;
        [[unroll]] for (uint k = 0; k < NORM_MAX_CACHED; ++k) {
            if (k >= spec_cached) break;
            if (lid + k * wg >= last) break;
            [[unroll]] for (uint h = 0; h < slices; ++h) {
                const vec4 d = cached[k * slices + h] - mean;
                m2 += dot(d, d);
            }
        }
        m = moments_reduce(Moments(n, mean, m2));
    } else {
        m = chunk_moments(base, 0, spec_m, shift);
    }
    uint begin = 0;
    uint end = spec_m;
#endif
    // 1 / sqrt rather than inversesqrt: the latter may be 2 ulp off on some drivers.
    float inv_std = 1.0 / sqrt(m.m2 / m.n + p.epsilon);
#if NORM_STATS
    if (lid == 0 && part == 0) {
        mean_out.data[group] = shift + m.mean;
        inv_std_out.data[group] = inv_std;
    }
#endif

    uint param_base = (group % spec_param_groups) * spec_m;
    if (spec_vec > 1) {
        // One scale and bias for the whole group (Instance, Group normalization): loaded once.
        const bool group_param = spec_param_div == spec_m;
        const uint gsi = param_base / spec_param_div;
        const float gscale = group_param ? float(scale.data[gsi]) : 0.0;
        const float gbias = group_param && spec_has_bias ? float(bias.data[gsi]) : 0.0;
        const uint wg = gl_WorkGroupSize.x, b = base / spec_vec, last = end / spec_vec;
#if !NORM_SPLIT
        if (spec_cached > 0) {
            // From the registers (already relative to the shift): no second read.
            [[unroll]] for (uint k = 0; k < NORM_MAX_CACHED; ++k) {
                if (k >= spec_cached) break;
                const uint u = lid + k * wg;
                if (u >= last) break;
                store_y_unit(b + u, cached[k * slices], spec_vec == 8 ? cached[k * slices + 1] : vec4(0.0), 0.0,
                             m.mean, inv_std, param_base + spec_vec * u, group_param, gscale, gbias);
            }
            return;
        }
#endif
        // Four units per step (workgroup-strided), loaded before any is stored.
        uint i = begin / spec_vec + lid;
        for (; i < last; i += 4 * wg) {
            vec4 lo[4], hi[4];
            for (uint k = 0; k < 4; ++k)
                if (i + k * wg < last) load_x_unit(b + i + k * wg, lo[k], hi[k]);
            for (uint k = 0; k < 4; ++k) {
                const uint u = i + k * wg;
                if (u >= last) break;
                store_y_unit(b + u, lo[k], hi[k], shift, m.mean, inv_std, param_base + spec_vec * u, group_param,
                             gscale, gbias);
            }
        }
        return;
    }
    for (uint i = begin + lid; i < end; i += gl_WorkGroupSize.x) {
        uint si, bi;
        if (spec_broadcast) {
            uint rest = base + i;
            si = 0;
            bi = 0;
            for (int d = 5; d >= 0; --d) {
                uint c = rest % p.dims[d];
                rest /= p.dims[d];
                si += c * p.scale_str[d];
                bi += c * p.bias_str[d];
            }
        } else {
            si = (param_base + i) / spec_param_div;
            bi = si;
        }
        // (x - shift) is exact for x near the shift, so the centring loses nothing to large offsets.
        float v = (float(x.data[base + i]) - shift - m.mean) * inv_std * float(scale.data[si]);
        if (spec_has_bias) v += float(bias.data[bi]);
        y.data[base + i] = sfloat(vkml_activate(spec_activation, v, p.alpha, p.beta));
    }
}
