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

#include "conv/gemm_spec.glsl"

#if VKML_TILE_COOPMAT
// The tensor-core tile's loaders (conv/coopmat_tile.glsl): 8 consecutive elements at a time.
layout(std430, set = 0, binding = 0) readonly buffer A8 { uvec4 data[]; } a8;
layout(std430, set = 0, binding = 1) readonly buffer B8 { uvec4 data[]; } b8;
layout(std430, set = 0, binding = 3) readonly buffer R8 { uvec4 data[]; } r8;
layout(std430, set = 0, binding = 4) writeonly buffer Y8 { uvec4 data[]; } y8;

#include "conv/halves.glsl"

// Rows of A (and of B) are 16-byte aligned when they are contiguous and every stride to a row
// start is a multiple of 8 elements; with A_PADDED (a 1x1 convolution's weights re-packed with
// zeros up to A_SI) a row's last unit may reach past K (B's rows there load as zeros).
layout(constant_id = 24) const uint A_PADDED = 0;
const bool TILE_A_VEC = A_SK == 1 && A_SI % 8 == 0 && (TILE_K % 8 == 0 || (A_PADDED != 0 && A_SI >= TILE_K)) &&
                        AB0 % 8 == 0 && AB1 % 8 == 0 && AB2 % 8 == 0 && AB3 % 8 == 0;
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
uvec4 tile_residual8(uint i, uint j) { return HAS_R != 0 ? r8.data[(y_base + i * TILE_N + j) / 8] : uvec4(0); }
void tile_store8(uint i, uint j, vec4 lo, vec4 hi, uvec4 rr) {
    const uint o = y_base + i * TILE_N + j;
    float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
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

#include "conv/gemm_tile.glsl"

void main() {
    const uint batches = BD0 * BD1 * BD2 * BD3;
    for (uint bt = gl_WorkGroupID.z; bt < batches; bt += gl_NumWorkGroups.z) {
        set_batch(bt);
        const uint col_blocks = (TILE_N + BN - 1) / BN;
        for (uint jb = gl_WorkGroupID.x; jb < col_blocks; jb += gl_NumWorkGroups.x) {
#if VKML_TILE_COOPMAT
            // (not across batches: the epilogue reads the batch's offsets)
            cm_next_j0 = jb + gl_NumWorkGroups.x < col_blocks ? (jb + gl_NumWorkGroups.x) * BN : ~0u;
#endif
            tile_compute(gl_WorkGroupID.y * BM, jb * BN);
        }
    }
}
