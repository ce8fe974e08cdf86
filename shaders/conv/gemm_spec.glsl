// Specialization constants, bindings and the scalar load/store of the strided, batched GEMM,
// shared by conv/gemm.comp (the tiles) and conv/gemv.comp (one to four rows):
//   Y[b][i][j] = act(alpha * sum_k A[b][i][k] * B[b][k][j] + beta * C[i][j] + R[b][i][j])
// The C++ side fills them from GemmSpec::values() (ml/ops/conv_common.cpp).
#ifndef VKML_GEMM_SPEC_GLSL
#define VKML_GEMM_SPEC_GLSL

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

// y = act(alpha * acc + beta * C + R) at row i, column j of the current batch.
void tile_store(uint i, uint j, float acc) {
    const uint o = y_base + i * TILE_N + j;
    float v = p.alpha * acc;
    if (HAS_C != 0) v += p.beta * float(c.data[i * C_SI + j * C_SJ]);
    if (HAS_R != 0) v += float(r.data[o]);
    y.data[o] = sfloat(vkml_activate(ACT, v, p.act_alpha, p.act_beta));
}

#endif
