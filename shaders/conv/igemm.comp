#version 450
#extension GL_GOOGLE_include_directive : require
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

float tile_load_a(uint m, uint k) { return float(w.data[m * TILE_K + k]); }

float tile_load_b(uint k, uint j) {
    const uint c = k / (KH * KW);
    const uint kh = (k / KW) % KH;
    const uint kw = k % KW;
    const uint ow = j % OW;
    const uint oh = (j / OW) % OH;
    const uint n = j / (OW * OH);
    const int ih = int(oh * SH + kh * DH) - int(PT);
    const int iw = int(ow * SW + kw * DW) - int(PL);
    if (ih < 0 || ih >= int(H) || iw < 0 || iw >= int(W)) return 0.0;
    return float(x.data[((n * C + c) * H + uint(ih)) * W + uint(iw)]);
}

void tile_store(uint m, uint j, float acc) {
    const uint pix = j % (OH * OW);
    const uint n = j / (OH * OW);
    conv_store((n * M + m) * OH * OW + pix, m, acc);
}

#include "conv/gemm_tile.glsl"

void main() {
    const uint col_blocks = (TILE_N + BN - 1) / BN;
    for (uint jb = gl_WorkGroupID.x; jb < col_blocks; jb += gl_NumWorkGroups.x)
        tile_compute(gl_WorkGroupID.y * BM, jb * BN);
}
