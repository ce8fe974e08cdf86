#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "detect/nms_common.glsl"
// NonMaxSuppression for a score threshold, one workgroup per (batch, class) group and one
// dispatch for what the sort and selection kernels do in several: the group's candidates (score
// strictly above the threshold if there is one, not NaN) are gathered into shared memory, sorted
// there by a bitonic network over their count rounded up to a power of two, their boxes copied
// beside them, and swept by the greedy selection of nms_sweep.glsl, whose every step then reads
// shared memory only. A threshold usually leaves a few dozen of thousands of boxes, so the sort
// is a few rounds in shared memory where the whole-array sort is ten dispatches.
// More candidates than the shared arrays hold (CAP): they are sorted in the group's scratch keys
// in global memory by the same workgroup instead, and the sweep reads their boxes from global
// memory (correct, slower; a threshold that keeps thousands of boxes).
// Writes the selected box indices, in selection order, to slots[group * K ...] and their number
// to counts[group], as nms_select.comp does. With DIRECT (a single group), it also writes the
// outputs themselves, as nms_offsets.comp and nms_scatter.comp would: the K rows of
// selected_indices (the selected ones, then -1) and the count.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint N = 1;      // boxes per batch
layout(constant_id = 1) const uint P = 2;      // scratch keys per group (N rounded up to 2^k)
layout(constant_id = 2) const uint C = 1;      // classes
layout(constant_id = 3) const uint K = 1;      // boxes to select per group at most (<= N)
layout(constant_id = 4) const uint CENTER = 0; // center_point_box
layout(constant_id = 5) const float IOU_THRESHOLD = 0.0;
layout(constant_id = 6) const uint WORDS = 1;  // ceil(P / 32)
layout(constant_id = 7) const uint CAP = 2;    // keys sorted in shared memory (a power of two)
layout(constant_id = 8) const uint HAS_THRESHOLD = 1;
layout(constant_id = 9) const float SCORE_THRESHOLD = 0.0;
layout(constant_id = 10) const uint DIRECT = 0;  // one group: write the outputs too
layout(constant_id = 11) const uint INDEX64 = 1; // the outputs' index dtype (DIRECT)

layout(std430, set = 0, binding = 0) readonly buffer Boxes { sfloat data[]; } boxes;
layout(std430, set = 0, binding = 1) readonly buffer Scores { sfloat data[]; } scores;
layout(std430, set = 0, binding = 2) coherent buffer Keys { uvec2 data[]; } keys;
layout(std430, set = 0, binding = 3) coherent buffer Slots { uint data[]; } slots;
layout(std430, set = 0, binding = 4) writeonly buffer Counts { uint data[]; } counts;
layout(std430, set = 0, binding = 5) writeonly buffer Out { uint data[]; } dst;
layout(std430, set = 0, binding = 6) writeonly buffer Total { uint data[]; } total;

// Keys while gathering and sorting (two to an element: key i in sbig[i / 2].xy or .zw), then the
// sorted candidates' boxes (one to an element) beside their box indices in sidx: 20 bytes a
// candidate.
shared uvec4 sbig[CAP];
shared uint sidx[CAP];
shared uint suppressed[WORDS];
shared uint found;
shared uint next_pos;

// Whether the candidates overflowed the shared arrays (uniform), and the group's first key.
bool spilled;
uint key0;

uvec2 skey(uint i) {
    return (i & 1u) == 0u ? sbig[i >> 1].xy : sbig[i >> 1].zw;
}

void set_skey(uint i, uvec2 key) {
    if ((i & 1u) == 0u) sbig[i >> 1].xy = key;
    else sbig[i >> 1].zw = key;
}

// The key at position i while sorting: in shared memory, or in global memory after a spill.
uvec2 key_at(uint i) {
    return spilled ? keys.data[key0 + i] : skey(i);
}

// Once sorted: the box index of the candidate at position pos.
uint sorted_index(uint pos) {
    return spilled ? ~keys.data[key0 + pos].y : sidx[pos];
}

#include "detect/nms_sweep.glsl"
#include "detect/nms_store.glsl"

vec4 sorted_box(uint batch, uint pos) {
    return spilled ? load_box(batch, sorted_index(pos)) : uintBitsToFloat(sbig[pos]);
}

void compare_exchange(uint lo, uint hi, bool descending) {
    uvec2 a = key_at(lo), b = key_at(hi);
    if (descending ? nms_key_less(a, b) : nms_key_less(b, a)) {
        if (spilled) {
            keys.data[key0 + lo] = b;
            keys.data[key0 + hi] = a;
        } else {
            set_skey(lo, b);
            set_skey(hi, a);
        }
    }
}

void main() {
    uint group = gl_WorkGroupID.x;
    uint batch = group / C;
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    key0 = group * P;
    for (uint w = t; w < WORDS; w += wg) suppressed[w] = 0u;
    if (t == 0u) found = 0u;
    barrier();

    // 1. Gather the candidates: shared slots first, global scratch for any beyond CAP.
    for (uint i = t; i < N; i += wg) {
        float s = float(scores.data[group * N + i]);
        // ONNX keeps boxes whose score is strictly above the threshold; NaN never qualifies.
        if (!isnan(s) && (HAS_THRESHOLD == 0 || s > SCORE_THRESHOLD)) {
            uint at = atomicAdd(found, 1u);
            uvec2 key = nms_key(s, i);
            if (at < CAP) set_skey(at, key);
            else keys.data[key0 + at] = key;
        }
    }
    barrier();
    uint m = found;
    spilled = m > CAP;
    // The network's width: m rounded up to a power of two (2 at least), sentinels after m.
    uint width = max(2u, 1u << findMSB(max(m, 1u) * 2u - 1u));
    if (spilled) {
        for (uint i = t; i < CAP; i += wg) keys.data[key0 + i] = skey(i);
        for (uint i = m + t; i < width; i += wg) keys.data[key0 + i] = nms_sentinel;
        memoryBarrierBuffer();
    } else {
        for (uint i = m + t; i < width; i += wg) set_skey(i, nms_sentinel);
    }
    barrier();

    // 2. Bitonic sort of `width` keys, largest first (the direction of a pair comes from bit k
    //    of its lower position, as in nms_sort_local.comp); then the boxes beside their keys.
    for (uint k = 2u; k <= width; k <<= 1) {
        for (uint j = k >> 1; j > 0u; j >>= 1) {
            for (uint p = t; p < width / 2u; p += wg) {
                uint lo = 2u * j * (p / j) + (p % j);
                compare_exchange(lo, lo + j, (lo & k) == 0u);
            }
            if (spilled) memoryBarrierBuffer();
            barrier();
        }
    }
    if (!spilled) {
        for (uint i = t; i < m; i += wg) sidx[i] = ~skey(i).y;
        barrier(); // every key read before the boxes overwrite them
        for (uint i = t; i < m; i += wg) sbig[i] = floatBitsToUint(load_box(batch, sidx[i]));
        barrier();
    }

    // 3. The greedy sweep over the m sorted candidates.
    uint selected = sweep(group, batch, m);
    if (t == 0u) counts.data[group] = selected;
    if (DIRECT != 0) {
        // Invocation 0 wrote the slots: visible to the others after the barrier.
        memoryBarrierBuffer();
        barrier();
        for (uint k = t; k < K; k += wg) {
            bool used = k < selected;
            uint box = used ? slots.data[k] : 0xffffffffu;
            store(k, 0u, used ? 0u : 0xffffffffu, !used);
            store(k, 1u, used ? 0u : 0xffffffffu, !used);
            store(k, 2u, box, !used);
        }
        if (t == 0u) {
            total.data[0] = selected;
            if (INDEX64 != 0) total.data[1] = 0u;
        }
    }
}
