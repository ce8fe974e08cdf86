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
#include "conv/conv_spec.glsl"
// Implicit-GEMM convolution (group 1, any kernel size, stride, dilation and padding):
//   Y[m][(n, oh, ow)] = sum over k = (c, kh, kw) of Wt[m][k] * X[n][c][oh*SH - PT + kh*DH][ow*SW - PL + kw*DW]
// The weights are already the [M][C*KH*KW] matrix A; B is the im2col matrix, never built: its
// elements are gathered from X straight into shared memory while staging each K slice (padding
// reads as 0). Rows are output channels, columns are output pixels of every image, so small
// feature maps of a batch still fill the tiles.
VKML_LOCAL_SIZE;

const uint TILE_M = M;
const uint TILE_N = N * OH * OW;
const uint TILE_K = C * KH * KW;

#if VKML_TILE_COOPMAT
layout(constant_id = 19) const uint PACKED_W = 0; // weights re-packed tap-major (conv/pack_taps.comp)
// The tensor-core tile walks K tap-major, k = (kh * KW + kw) * C + c, when every BK-deep slice then
// holds whole 32-channel runs of one tap (C a multiple of 32, 16-byte rows): a run's window offset
// is one per invocation and its rows are whole input planes apart (see tile_b_step).
// (Conditions are folded as integers: glslang emits && and || of specialization constants as
// run-time branches, which a later specialization-constant expression cannot use.)
const uint TAP_MAJOR_MISS = (OW % 8) | (SW - 1) | (DW - 1) | (W % 8) | (C % 32);
const bool TAP_MAJOR = TAP_MAJOR_MISS == 0;
sfloat tile_load_a(uint m, uint k) {
    if (TAP_MAJOR && PACKED_W == 0) return w.data[m * TILE_K + (k % C) * (KH * KW) + k / C];
    return w.data[m * TILE_K + k];
}
#else
sfloat tile_load_a(uint m, uint k) { return w.data[m * TILE_K + k]; }
#endif

sfloat tile_load_b(uint k, uint j) {
    const uint c = k / (KH * KW);
    const uint kh = (k / KW) % KH;
    const uint kw = k % KW;
    const uint ow = j % OW;
    const uint oh = (j / OW) % OH;
    const uint n = j / (OW * OH);
    const int ih = conv_src(int(oh * SH + kh * DH) - int(PT), H);
    const int iw = conv_src(int(ow * SW + kw * DW) - int(PL), W);
    if (ih < 0 || ih >= int(H) || iw < 0 || iw >= int(W)) return sfloat(0.0);
    return x.data[((n * C + c) * H + uint(ih)) * W + uint(iw)];
}

// The output element of row m (channel), column j (image j / (OH * OW), its pixel j % (OH * OW)).
uint out_offset(uint m, uint j) { return (j / (OH * OW) * M + m) * OH * OW + j % (OH * OW); }

#if VKML_TILE_COOPMAT
// The tensor-core tile's loaders (conv/coopmat_tile.glsl): 8 consecutive elements at a time.
layout(std430, set = 0, binding = 0) readonly buffer X8 { uvec4 data[]; } x8;
layout(std430, set = 0, binding = 1) readonly buffer Wt8 { uvec4 data[]; } w8;
layout(std430, set = 0, binding = 3) readonly buffer Res8 { uvec4 data[]; } res8;
layout(std430, set = 0, binding = 4) writeonly buffer Y8 { uvec4 data[]; } y8;

// Weight rows start on 16 bytes when K is a multiple of 8 (tap-major K gathers them).
// Re-packed tap-major weights (PACKED_W) are as contiguous as the plain ones.
const bool TILE_A_VEC = ((TILE_K % 8) | (TAP_MAJOR_MISS == 0 && PACKED_W == 0 ? 1u : 0u)) == 0;
uvec4 tile_load_a8(uint m, uint k) { return w8.data[(m * TILE_K + k) / 8]; }

// Eight columns of one output row (OW a multiple of 8) share their decode and, at stride 1 and
// dilation 1, read eight consecutive input elements: one 16-byte load, or two and a shift, when
// the window lies inside the row (W a multiple of 8 keeps rows aligned).
const bool COL_ROW8 = OW % 8 == 0;
const bool COL_VEC = COL_ROW8 && SW == 1 && DW == 1 && W % 8 == 0;
uint col_j = 0, col_base = 0;      // the first column; its image's first element (~0 past TILE_N)
int col_ih = 0, col_iw = 0;        // the top-left input position of its window

void tile_b_column(uint j) {
    col_j = j;
    const uint ow = j % OW, oh = (j / OW) % OH, n = j / (OW * OH);
    col_base = j < TILE_N ? n * C * H * W : ~0u;
    col_ih = int(oh * SH) - int(PT);
    col_iw = int(ow * SW) - int(PL);
}

#include "conv/halves.glsl"

// Tap-major slices: this invocation's rows of the slice are channels step_c, step_c + rows, ... of
// one tap, so their windows are one plane apart; whether the window is inside the image, its shift
// and its first aligned unit are worked out once per slice.
uint step_k = 0, step_unit = 0, step_shift = 0;
bool step_vec = false;
int step_ih = 0, step_iw = 0;

void tile_b_step(uint k) {
    if (TAP_MAJOR) {
        const uint tap = k / C, c = k % C;
        step_k = k;
        step_ih = conv_src(col_ih + int(tap / KW), H); // a padding row of reflect / edge reads a real one
        step_iw = col_iw + int(tap % KW);
        step_vec = col_base != ~0u && uint(step_ih) < H && step_iw >= 0 && step_iw + 8 <= int(W);
        step_shift = uint(step_iw) & 7u;
        step_unit = (col_base + (c * H + uint(step_ih)) * W + uint(step_iw) - step_shift) / 8;
    }
}

uvec4 tile_load_b8(uint k) {
    uint h[8];
    if (TAP_MAJOR) {
        if (C % 64 != 0 && k / C != step_k / C) tile_b_step(k); // a 32-channel run of the next tap
        if (step_vec) {
            const uint u = step_unit + (k - step_k) * (H * W / 8);
            const uvec4 lo = x8.data[u];
            return step_shift == 0 ? lo : shift_halves(lo, x8.data[u + 1], step_shift);
        }
        // A window crossing the image's edge (or a column past the end): element by element.
        const uint ih = uint(conv_src(step_ih, H));
        if (col_base == ~0u || ih >= H) return uvec4(0);
        const uint row = col_base + ((k % C) * H + ih) * W;
        [[unroll]] for (uint e = 0; e < 8; ++e) {
            const uint iw = uint(conv_src(step_iw + int(e), W));
            h[e] = iw < W ? half_bits(x.data[row + iw]) : 0u;
        }
        return pack8(h);
    }
    const uint c = k / (KH * KW), kh = (k / KW) % KH, kw = k % KW;
    if (COL_ROW8) {
        // Negative positions wrap to huge unsigned values: one comparison checks both ends.
        const uint ih = uint(conv_src(col_ih + int(kh * DH), H));
        if (col_base == ~0u || ih >= H) return uvec4(0);
        const int iw0 = col_iw + int(kw * DW);
        const uint row = col_base + (c * H + ih) * W;
        if (COL_VEC && iw0 >= 0 && iw0 + 8 <= int(W)) {
            const uint s = uint(iw0) & 7u, u = (row + uint(iw0) - s) / 8;
            const uvec4 lo = x8.data[u];
            return s == 0 ? lo : shift_halves(lo, x8.data[u + 1], s);
        }
        [[unroll]] for (uint e = 0; e < 8; ++e) {
            const uint iw = uint(conv_src(iw0 + int(e * SW), W));
            h[e] = iw < W ? half_bits(x.data[row + iw]) : 0u;
        }
        return pack8(h);
    }
    [[unroll]] for (uint e = 0; e < 8; ++e) {
        const uint j = col_j + e;
        const uint ow = j % OW, oh = (j / OW) % OH, n = j / (OW * OH);
        const uint ih = uint(conv_src(int(oh * SH + kh * DH) - int(PT), H)); // wraps when negative
        const uint iw = uint(conv_src(int(ow * SW + kw * DW) - int(PL), W));
        h[e] = j < TILE_N && ih < H && iw < W ? half_bits(x.data[((n * C + c) * H + ih) * W + iw]) : 0u;
    }
    return pack8(h);
}

// Eight consecutive columns of one image are eight consecutive pixels of its output planes.
const bool TILE_STORE_VEC = (OH * OW) % 8 == 0;
uvec4 tile_residual8(uint m, uint j) { return HAS_RES != 0 ? res8.data[out_offset(m, j) / 8] : uvec4(0); }
void tile_store8(uint m, uint j, vec4 lo, vec4 hi, uvec4 r) {
    const uint o = out_offset(m, j);
    float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
    const float b = HAS_BIAS != 0 ? float(bias.data[m]) : 0.0;
    uint h[8];
    [[unroll]] for (uint e = 0; e < 8; ++e) {
        float a = v[e] + b;
        if (HAS_RES != 0) a += unpack_half(r, e);
        h[e] = half_bits(sfloat(vkml_activate(ACT, a, p.act_alpha, p.act_beta)));
    }
    y8.data[o / 8] = pack8(h);
}
#endif

void tile_store(uint m, uint j, float acc) { conv_store(out_offset(m, j), m, acc); }

#if VKML_TILE_COOPMAT
// Split K (small output grids with long K, such as a detector's 20x20 heads or resnet's last
// stage): workgroup z sums K range [z * SPLIT_CHUNK, (z + 1) * SPLIT_CHUNK) into fp32 partials
// [z][m][j] in the Y binding, and conv/split_reduce.comp adds them up with bias, residual and
// activation.
layout(constant_id = 22) const uint SPLIT = 1;
layout(constant_id = 23) const uint SPLIT_CHUNK = 1; // a multiple of the tile's BK
layout(std430, set = 0, binding = 4) writeonly buffer Part { float data[]; } part;
#define CM_SPLIT_K SPLIT
void tile_store_partial(uint m, uint j, float v) { part.data[(gl_WorkGroupID.z * TILE_M + m) * TILE_N + j] = v; }
#endif

#include "conv/gemm_tile.glsl"

void main() {
#if VKML_TILE_COOPMAT
    if (SPLIT > 1) {
        cm_k_begin = gl_WorkGroupID.z * SPLIT_CHUNK;
        cm_k_end = min(TILE_K, cm_k_begin + SPLIT_CHUNK);
    }
#endif
    const uint col_blocks = (TILE_N + BN - 1) / BN;
    for (uint jb = gl_WorkGroupID.x; jb < col_blocks; jb += gl_NumWorkGroups.x) {
#if VKML_TILE_COOPMAT
        cm_next_j0 = jb + gl_NumWorkGroups.x < col_blocks ? (jb + gl_NumWorkGroups.x) * BN : ~0u;
#endif
        tile_compute(gl_WorkGroupID.y * BM, jb * BN);
    }
}
