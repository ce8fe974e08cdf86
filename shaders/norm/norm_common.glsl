// Shared by the grouped-normalization kernels (Instance, Layer, Group normalization): the push
// constants, Welford moments and their workgroup reduction, and the per-element scale/bias index.
//
// A "group" is a contiguous run of `spec_m` elements normalized together (an (n, c) plane, a
// layer-norm row, the channels of one (n, group)). Moments are accumulated relative to the group's
// first element (`shift`): inputs such as 100 +- 1 then lose nothing to the fp32 mean, which is
// what makes the variance stable, not only the Welford update.
//
// Include it after VKML_LOCAL_SIZE: glslang folds a gl_WorkGroupSize read before the layout
// declaration to its default (1), which silently turns the reductions below into no-ops.
#ifndef VKML_NORM_COMMON_GLSL
#define VKML_NORM_COMMON_GLSL

layout(push_constant) uniform Params {
    float epsilon;
    float alpha; // fused activation parameters
    float beta;
    uint groups;       // number of groups
    uint dims[6];      // X's shape, padded in front with ones (broadcast indexing only)
    uint scale_str[6]; // element strides of scale and bias read as X's shape (0 on broadcast dims)
    uint bias_str[6];
} p;

// Linear workgroup index: grids larger than maxComputeWorkGroupCount[0] fold into y.
uint norm_workgroup_id() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

// Welford moments of n values: their mean and the sum of squared deviations m2.
struct Moments {
    float n;
    float mean;
    float m2;
};

void moments_add(inout Moments a, float v) {
    a.n += 1.0;
    float d = v - a.mean;
    a.mean += d / a.n;
    a.m2 += d * (v - a.mean);
}

// Chan et al.'s pairwise combination; either side may be empty.
Moments moments_merge(Moments a, Moments b) {
    float n = a.n + b.n;
    if (b.n == 0.0) return a;
    float d = b.mean - a.mean;
    float f = b.n / n;
    return Moments(n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f);
}

shared float sh_n[gl_WorkGroupSize.x];
shared float sh_mean[gl_WorkGroupSize.x];
shared float sh_m2[gl_WorkGroupSize.x];

#if NORM_SUBGROUP
shared float sh_total_n, sh_total_mean, sh_total_m2;

// Workgroup moments by subgroup arithmetic (the device has it): the count and the mean first
// (sums of n and n * mean), then each invocation's m2 plus n (mean - M)^2 summed: four barriers
// and no division but the mean's, where the tree below merges seven partial moments (a division
// each) per level on its busiest invocations.
Moments moments_reduce(Moments m) {
    const uint sg = gl_SubgroupID;
    const float n = subgroupAdd(m.n), s = subgroupAdd(m.n * m.mean);
    if (subgroupElect()) {
        sh_n[sg] = n;
        sh_mean[sg] = s;
    }
    barrier();
    if (sg == 0) {
        float tn = 0.0, ts = 0.0;
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) {
            tn += sh_n[i];
            ts += sh_mean[i];
        }
        tn = subgroupAdd(tn);
        ts = subgroupAdd(ts);
        if (subgroupElect()) {
            sh_total_n = tn;
            sh_total_mean = tn > 0.0 ? ts / tn : 0.0;
        }
    }
    barrier();
    const float total_n = sh_total_n, total_mean = sh_total_mean;
    const float d = m.mean - total_mean;
    const float q = subgroupAdd(m.n > 0.0 ? m.m2 + m.n * d * d : 0.0);
    if (subgroupElect()) sh_m2[sg] = q;
    barrier();
    if (sg == 0) {
        float t = 0.0;
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) t += sh_m2[i];
        t = subgroupAdd(t);
        if (subgroupElect()) sh_total_m2 = t;
    }
    barrier();
    return Moments(total_n, total_mean, sh_total_m2);
}
#else

// Reduction over the workgroup in levels of eight: at each level the first ceil(n / 8)
// invocations each merge (Chan) eight of the n partial moments, strided so that neighbouring
// invocations read neighbouring entries (256 -> 32 -> 4 -> 1: four barriers where a pairwise tree
// takes nine). Every invocation gets the total.
Moments moments_reduce(Moments m) {
    uint lid = gl_LocalInvocationID.x;
    sh_n[lid] = m.n;
    sh_mean[lid] = m.mean;
    sh_m2[lid] = m.m2;
    barrier();
    for (uint n = gl_WorkGroupSize.x; n > 1; n = (n + 7) / 8) {
        const uint next = (n + 7) / 8;
        if (lid < next) {
            // Entry lid is this invocation's own; the others (lid + k next) no invocation writes at
            // this level.
            Moments a = Moments(sh_n[lid], sh_mean[lid], sh_m2[lid]);
            for (uint k = 1; k < 8; ++k) {
                const uint j = lid + k * next;
                if (j < n) a = moments_merge(a, Moments(sh_n[j], sh_mean[j], sh_m2[j]));
            }
            sh_n[lid] = a.n;
            sh_mean[lid] = a.mean;
            sh_m2[lid] = a.m2;
        }
        barrier();
    }
    return Moments(sh_n[0], sh_mean[0], sh_m2[0]);
}
#endif

#endif
