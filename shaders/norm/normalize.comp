#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if NORM_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
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
//   NORM_COOP: the split in one dispatch. The workgroup with ticket w (taken in start order)
//     computes the moments of chunk (w % partials) of group (w / partials), publishes them and
//     waits for the group's other workgroups to publish theirs, then writes its chunk: read again
//     from X while it is in the L2 cache (streamed, spec_cached 0), or from registers (held,
//     spec_cached > 0: the input read once). Vulkan promises no concurrency between the
//     workgroups of a dispatch, so the wait is bounded (spec_spins polls): past it the workgroup
//     computes every chunk's moments itself, from X, in the same order and by the same code as
//     their owners, so the result does not depend on which path a workgroup took.
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
// Single pass (and NORM_COOP), spec_vec > 1: units per invocation held in registers between the
// moments and the output (the group, or the chunk, read once), at most NORM_MAX_CACHED, one uvec4
// each; 0 reads it twice.
layout(constant_id = 9) const uint spec_cached = 0;
// NORM_COOP: polls of the group's arrival counter before a workgroup stops waiting.
layout(constant_id = 10) const uint spec_spins = 16384;
// NORM_COOP: chunks by ticket (start order); false: by workgroup index (the whole grid resident).
layout(constant_id = 11) const bool spec_ticket = true;
#include "norm/norm_units.glsl"
layout(std430, set = 0, binding = 1) readonly buffer Scale { sfloat data[]; } scale;
layout(std430, set = 0, binding = 2) readonly buffer Bias { sfloat data[]; } bias;
layout(std430, set = 0, binding = 3) writeonly buffer Y { sfloat data[]; } y;
layout(std430, set = 0, binding = 3) writeonly buffer Y4 { sfloat4 data[]; } y4;
layout(std430, set = 0, binding = 3) writeonly buffer Y16 { uvec4 data[]; } y16;
#if NORM_COOP
// The op's own buffer, zero between runs: a ticket counter and a departure counter for the whole
// dispatch (0, 1), per group an arrival and a departure counter (2 + 2 g, 3 + 2 g), then per
// workgroup its chunk's (n, mean, m2) as float bits (at 2 + 2 groups + 3 w). The last workgroup
// of a group to leave puts the group's counters back to zero, the dispatch's last the first two.
layout(std430, set = 0, binding = 4) coherent buffer Sync { uint data[]; } sync_buf;
#define NORM_STATS_BINDING 5
#elif NORM_SPLIT
layout(std430, set = 0, binding = 4) readonly buffer Partials { float data[]; } partials;
#define NORM_STATS_BINDING 5
#else
#define NORM_STATS_BINDING 4
#endif
#if NORM_STATS
layout(std430, set = 0, binding = NORM_STATS_BINDING) writeonly buffer Mean { float data[]; } mean_out;
layout(std430, set = 0, binding = NORM_STATS_BINDING + 1) writeonly buffer InvStd { float data[]; } inv_std_out;
#endif

// A group's scale and bias (vector paths): the parameter index of its first element before the
// division (base) and, where one scale and bias serve the whole group (Instance, Group
// normalization: `per_group`), those, loaded once.
struct GroupParams {
    uint base;
    bool per_group;
    float scale, bias;
};

GroupParams group_params(uint param_base) {
    const bool per_group = spec_param_div == spec_m;
    const uint gsi = param_base / spec_param_div;
    return GroupParams(param_base, per_group, per_group ? float(scale.data[gsi]) : 0.0,
                       per_group && spec_has_bias ? float(bias.data[gsi]) : 0.0);
}

// Four consecutive elements of a group (the first's parameter index before the division is
// `at`), normalized, scaled, shifted and activated.
vec4 normalize4(vec4 xv, float shift, float mean, float inv_std, uint at, GroupParams gp) {
    const vec4 v = (xv - shift - mean) * inv_std;
    vec4 o;
    for (uint e = 0; e < 4; ++e) {
        float a;
        if (gp.per_group) {
            a = v[e] * gp.scale + gp.bias;
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
void store_y_unit(uint u, vec4 lo, vec4 hi, float shift, float mean, float inv_std, uint at, GroupParams gp) {
    const vec4 a = normalize4(lo, shift, mean, inv_std, at, gp);
    if (spec_vec == 8) {
        const vec4 c = normalize4(hi, shift, mean, inv_std, at + 4, gp);
        y16.data[u] = uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(c.xy), packHalf2x16(c.zw));
    } else {
        y4.data[u] = sfloat4(a);
    }
}

// The cached form: units first + lid + k wg (k < spec_cached, below `last`) of the group whose
// first unit is b, one register slot (uvec4) each, as loaded: 8 packed halves (spec_vec 8) or the
// fp32 bits of a 4-vector; each invocation's own moments exactly in two passes over its registers
// (relative to `shift`), then merged over the workgroup (every invocation gets them).
Moments cached_moments(uint b, uint first, uint last, float shift, inout uvec4 cached[NORM_MAX_CACHED]) {
    const uint wg = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
    const uint count = units_below(first + lid, last, spec_cached);
    [[unroll]] for (uint k = 0; k < NORM_MAX_CACHED; ++k) {
        if (k >= spec_cached) break;
        cached[k] = k < count ? load_x_raw(b + first + lid + k * wg) : uvec4(0);
    }
    return moments_reduce(held_moments(cached, count, shift));
}

// Units first + lid + k wg (below `last`) of Y from `cached`.
void store_cached(uint b, uint first, uint last, uvec4 cached[NORM_MAX_CACHED], float shift, float mean,
                  float inv_std, GroupParams gp) {
    const uint wg = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
    [[unroll]] for (uint k = 0; k < NORM_MAX_CACHED; ++k) {
        if (k >= spec_cached) break;
        const uint u = first + lid + k * wg;
        if (u >= last) break;
        vec4 lo, hi;
        raw_values(cached[k], lo, hi);
        store_y_unit(b + u, lo, hi, shift, mean, inv_std, gp.base + spec_vec * u, gp);
    }
}

// Units first .. last - 1 of Y from X, read again: four units per step (workgroup-strided), loaded
// before any is stored, last units first (the moments pass read them last: the likeliest still in
// the L2 cache; neighbouring invocations still take neighbouring units).
void store_from_x(uint b, uint first, uint last, float shift, float mean, float inv_std, GroupParams gp) {
    const uint wg = gl_WorkGroupSize.x, n = last - first;
    for (uint j = gl_LocalInvocationID.x; j < n; j += 4 * wg) {
        vec4 lo[4], hi[4];
        for (uint k = 0; k < 4; ++k)
            if (j + k * wg < n) load_x_unit(b + last - 1 - (j + k * wg), lo[k], hi[k]);
        for (uint k = 0; k < 4; ++k) {
            if (j + k * wg >= n) break;
            const uint u = last - 1 - (j + k * wg);
            store_y_unit(b + u, lo[k], hi[k], shift, mean, inv_std, gp.base + spec_vec * u, gp);
        }
    }
}

#if NORM_COOP
// Chunk k's moments: from the registers (spec_cached > 0, which also fills `cached`) or a
// streaming pass over X.
Moments coop_chunk(uint b, uint k, float shift, inout uvec4 cached[NORM_MAX_CACHED]) {
    const uint chunk_units = spec_chunk / spec_vec, last_unit = spec_m / spec_vec;
    const uint first = k * chunk_units, last = min(first + chunk_units, last_unit);
    if (spec_cached > 0) return cached_moments(b, first, last, shift, cached);
    return chunk_moments(b * spec_vec, first * spec_vec, last * spec_vec, shift);
}

shared bool sh_waited; // the group's moments came from its workgroups (not computed here)
shared Moments sh_total;
shared uint sh_ticket;

// Leaving the dispatch: the last workgroup of the grid to leave makes the tickets start at 0 again.
void depart_dispatch() {
    const uint launched = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    if (atomicAdd(sync_buf.data[1], 1u) == launched - 1) {
        atomicExchange(sync_buf.data[0], 0u);
        atomicExchange(sync_buf.data[1], 0u);
    }
}

void main() {
    // Chunks by ticket, in the order workgroups start: a waiting workgroup's group-mates started
    // before it or take the next tickets, so the wait needs only as many workgroups side by side
    // as a group has, whatever order the device launches the grid in.
    const uint lid = gl_LocalInvocationID.x;
    if (lid == 0) sh_ticket = spec_ticket ? atomicAdd(sync_buf.data[0], 1u) : norm_workgroup_id();
    barrier();
    const uint w = sh_ticket;
    if (w >= p.groups * spec_partials) { // the grid's spare workgroups (folded into y)
        if (lid == 0) depart_dispatch();
        return;
    }
    const uint group = w / spec_partials, part = w % spec_partials;
    const uint base = group * spec_m, b = base / spec_vec, chunk_units = spec_chunk / spec_vec;
    const uint last_unit = spec_m / spec_vec;
    const float shift = float(x.data[base]);
    const uint first = part * chunk_units, last = min(first + chunk_units, last_unit);
    uvec4 cached[NORM_MAX_CACHED];
    const Moments own = coop_chunk(b, part, shift, cached);

    const uint counters = 2 + 2 * group, slots = 2 + 2 * p.groups + 3 * group * spec_partials;
    if (lid == 0) {
        sync_buf.data[slots + 3 * part] = floatBitsToUint(own.n);
        sync_buf.data[slots + 3 * part + 1] = floatBitsToUint(own.mean);
        sync_buf.data[slots + 3 * part + 2] = floatBitsToUint(own.m2);
        memoryBarrierBuffer(); // the moments before the arrival
        atomicAdd(sync_buf.data[counters], 1u);
        uint arrived = 0;
        for (uint i = 0; i < spec_spins; ++i) {
            arrived = atomicAdd(sync_buf.data[counters], 0u);
            if (arrived >= spec_partials) break;
        }
        const bool waited = arrived >= spec_partials;
        sh_waited = waited;
        if (waited) {
            memoryBarrierBuffer(); // the arrivals before the moments they publish
            // Merged in chunk order: the same total in every workgroup of the group.
            Moments t = Moments(0.0, 0.0, 0.0);
            for (uint k = 0; k < spec_partials; ++k)
                t = moments_merge(t, Moments(uintBitsToFloat(sync_buf.data[slots + 3 * k]),
                                             uintBitsToFloat(sync_buf.data[slots + 3 * k + 1]),
                                             uintBitsToFloat(sync_buf.data[slots + 3 * k + 2])));
            sh_total = t;
        }
        // Leaving: this workgroup reads the group's slots and counters no more. The last to leave
        // (every one has arrived, none polls any longer) makes the group's counters zero again.
        if (atomicAdd(sync_buf.data[counters + 1], 1u) == spec_partials - 1) {
            atomicExchange(sync_buf.data[counters], 0u);
            atomicExchange(sync_buf.data[counters + 1], 0u);
        }
        depart_dispatch();
    }
    barrier();
    Moments m;
    if (sh_waited) {
        m = sh_total;
    } else {
        // Not all of the group's workgroups ran beside this one: every chunk's moments from X,
        // as their owners computed them, merged in the same order; then this chunk again.
        // (A barrier after each: moments_reduce's result is read from shared memory that its next
        // call overwrites.)
        m = Moments(0.0, 0.0, 0.0);
        for (uint k = 0; k < spec_partials; ++k) {
            m = moments_merge(m, coop_chunk(b, k, shift, cached));
            barrier();
        }
        if (spec_cached > 0) coop_chunk(b, part, shift, cached);
    }
    const float inv_std = 1.0 / sqrt(m.m2 / m.n + p.epsilon);
    const GroupParams gp = group_params((group % spec_param_groups) * spec_m);
    if (spec_cached > 0)
        store_cached(b, first, last, cached, shift, m.mean, inv_std, gp);
    else
        store_from_x(b, first, last, shift, m.mean, inv_std, gp);
}
#else
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
    // The cached form: the group read once, held in registers between the moments and the output.
    uvec4 cached[NORM_MAX_CACHED];
    Moments m;
    if (spec_cached > 0) {
        m = cached_moments(base / spec_vec, 0, spec_m / spec_vec, shift, cached);
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
        const GroupParams gp = group_params(param_base);
        const uint b = base / spec_vec, last = end / spec_vec;
#if !NORM_SPLIT
        if (spec_cached > 0) {
            // From the registers: no second read.
            store_cached(b, 0, last, cached, shift, m.mean, inv_std, gp);
            return;
        }
#endif
        store_from_x(b, begin / spec_vec, last, shift, m.mean, inv_std, gp);
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
#endif
