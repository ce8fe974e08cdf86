#version 450
#extension GL_GOOGLE_include_directive : require
#if VKML_TILE_COOPMAT
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "common.glsl"
#include "activation.glsl"
// Strided, batched GEMM with a fused epilogue, for Gemm, MatMul and the 1x1 Conv path:
//   Y[b][i][j] = act(alpha * sum_k A[b][i][k] * B[b][k][j] + beta * C[i][j] + R[b][i][j])
// A and B are addressed through element strides (transposes are strides), batches through up to
// four broadcast batch dimensions (stride 0 on a broadcast one). C is broadcast through its own
// strides (0 along broadcast axes): Gemm's C, or a Conv's bias with strides (1, 0). Y and R are
// contiguous [batch][M][N]. Shapes are specialization constants: the op is created for them.
VKML_LOCAL_SIZE;

layout(constant_id = 0) const uint TILE_M = 1;
layout(constant_id = 1) const uint TILE_N = 1;
layout(constant_id = 2) const uint TILE_K = 1;
layout(constant_id = 3) const uint A_SI = 0; // element strides of A along i and k
layout(constant_id = 4) const uint A_SK = 0;
layout(constant_id = 5) const uint B_SK = 0; // ... of B along k and j
layout(constant_id = 6) const uint B_SJ = 0;
layout(constant_id = 7) const uint C_SI = 0; // ... of C along i and j (0: broadcast)
layout(constant_id = 8) const uint C_SJ = 0;
layout(constant_id = 9) const uint HAS_C = 0;
layout(constant_id = 10) const uint HAS_R = 0;
layout(constant_id = 11) const uint ACT = 0;
// Batch dimensions, outermost first (1 when unused), and A's and B's strides along them.
layout(constant_id = 12) const uint BD0 = 1;
layout(constant_id = 13) const uint BD1 = 1;
layout(constant_id = 14) const uint BD2 = 1;
layout(constant_id = 15) const uint BD3 = 1;
layout(constant_id = 16) const uint AB0 = 0;
layout(constant_id = 17) const uint AB1 = 0;
layout(constant_id = 18) const uint AB2 = 0;
layout(constant_id = 19) const uint AB3 = 0;
layout(constant_id = 20) const uint BB0 = 0;
layout(constant_id = 21) const uint BB1 = 0;
layout(constant_id = 22) const uint BB2 = 0;
layout(constant_id = 23) const uint BB3 = 0;

layout(std430, set = 0, binding = 0) readonly buffer A { sfloat data[]; } a;
layout(std430, set = 0, binding = 1) readonly buffer B { sfloat data[]; } b;
layout(std430, set = 0, binding = 2) readonly buffer C { sfloat data[]; } c;
layout(std430, set = 0, binding = 3) readonly buffer R { sfloat data[]; } r;
layout(std430, set = 0, binding = 4) writeonly buffer Y { sfloat data[]; } y;
layout(push_constant) uniform Params {
    float alpha;
    float beta;
    float act_alpha;
    float act_beta;
} p;

// The current batch's offsets into A, B and Y (see set_batch).
uint a_base = 0, b_base = 0, y_base = 0;

void set_batch(uint batch) {
    uint rest = batch;
    const uint d3 = rest % BD3;
    rest /= BD3;
    const uint d2 = rest % BD2;
    rest /= BD2;
    const uint d1 = rest % BD1;
    const uint d0 = rest / BD1;
    a_base = d0 * AB0 + d1 * AB1 + d2 * AB2 + d3 * AB3;
    b_base = d0 * BB0 + d1 * BB1 + d2 * BB2 + d3 * BB3;
    y_base = batch * TILE_M * TILE_N;
}

sfloat tile_load_a(uint i, uint k) { return a.data[a_base + i * A_SI + k * A_SK]; }
sfloat tile_load_b(uint k, uint j) { return b.data[b_base + k * B_SK + j * B_SJ]; }

#if VKML_TILE_COOPMAT
// The tensor-core tile's loaders (conv/coopmat_tile.glsl): 8 consecutive elements at a time.
layout(std430, set = 0, binding = 0) readonly buffer A8 { uvec4 data[]; } a8;
layout(std430, set = 0, binding = 1) readonly buffer B8 { uvec4 data[]; } b8;
layout(std430, set = 0, binding = 3) readonly buffer R8 { uvec4 data[]; } r8;
layout(std430, set = 0, binding = 4) writeonly buffer Y8 { uvec4 data[]; } y8;

#include "conv/halves.glsl"

// Rows of A (and of B) are 16-byte aligned when they are contiguous and every stride to a row
// start is a multiple of 8 elements.
const bool TILE_A_VEC = A_SK == 1 && A_SI % 8 == 0 && TILE_K % 8 == 0 && AB0 % 8 == 0 && AB1 % 8 == 0 &&
                        AB2 % 8 == 0 && AB3 % 8 == 0;
uvec4 tile_load_a8(uint i, uint k) { return a8.data[(a_base + i * A_SI + k) / 8]; }

const bool B_VEC = B_SJ == 1 && B_SK % 8 == 0 && TILE_N % 8 == 0 && BB0 % 8 == 0 && BB1 % 8 == 0 &&
                   BB2 % 8 == 0 && BB3 % 8 == 0;
uint col_j = 0;
void tile_b_column(uint j) { col_j = j; }
void tile_b_step(uint k) {}
uvec4 tile_load_b8(uint k) {
    if (B_VEC) return col_j < TILE_N ? b8.data[(b_base + k * B_SK + col_j) / 8] : uvec4(0);
    uint h[8];
    [[unroll]] for (uint e = 0; e < 8; ++e)
        h[e] = col_j + e < TILE_N ? half_bits(b.data[b_base + k * B_SK + (col_j + e) * B_SJ]) : 0u;
    return pack8(h);
}

const bool TILE_STORE_VEC = TILE_N % 8 == 0;
void tile_store8(uint i, uint j, vec4 lo, vec4 hi) {
    const uint o = y_base + i * TILE_N + j;
    float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
    uvec4 rr = uvec4(0);
    if (HAS_R != 0) rr = r8.data[o / 8];
    uint h[8];
    [[unroll]] for (uint e = 0; e < 8; ++e) {
        float t = p.alpha * v[e];
        if (HAS_C != 0) t += p.beta * float(c.data[i * C_SI + (j + e) * C_SJ]);
        if (HAS_R != 0) t += unpack_half(rr, e);
        h[e] = half_bits(sfloat(vkml_activate(ACT, t, p.act_alpha, p.act_beta)));
    }
    y8.data[o / 8] = pack8(h);
}
#endif

void tile_store(uint i, uint j, float acc) {
    const uint o = y_base + i * TILE_N + j;
    float v = p.alpha * acc;
    if (HAS_C != 0) v += p.beta * float(c.data[i * C_SI + j * C_SJ]);
    if (HAS_R != 0) v += float(r.data[o]);
    y.data[o] = sfloat(vkml_activate(ACT, v, p.act_alpha, p.act_beta));
}

#include "conv/gemm_tile.glsl"

void main() {
    const uint batches = BD0 * BD1 * BD2 * BD3;
    for (uint bt = gl_WorkGroupID.z; bt < batches; bt += gl_NumWorkGroups.z) {
        set_batch(bt);
        const uint col_blocks = (TILE_N + BN - 1) / BN;
        for (uint jb = gl_WorkGroupID.x; jb < col_blocks; jb += gl_NumWorkGroups.x)
            tile_compute(gl_WorkGroupID.y * BM, jb * BN);
    }
}
