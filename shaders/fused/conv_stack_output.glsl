// The output stage both FusedConvStack kernels share (fused/conv_stack.comp, conv_stack_mma.comp):
// a tile pixel's head values plus the skip connection into the output. The includer declares the
// src and dst buffers (sfloat), CIN, K, OC, H, W, MODE and KMAX.
#ifndef VKML_FUSED_CONV_STACK_OUTPUT_GLSL
#define VKML_FUSED_CONV_STACK_OUTPUT_GLSL

float input_at(int n, int c, int y, int x) {
    return float(src.data[((n * CIN + c) * H + y) * W + x]);
}

// The output at pixel (gx, gy) of image n from its head values hv: MODE 0, DepthToSpace(2, CRD)
// rows 2gy + i for i in [i0, i1) plus the input upsampled 2x (Resize linear, half_pixel, edges
// clamped); MODE 1 (only for i0 == 0), the input plus the head's first OC channels.
void emit(int n, int gx, int gy, float hv[KMAX], int i0, int i1) {
    if (MODE == 0) {
        // Output 2g + i samples g - 0.25 (i = 0) or g + 0.25 (i = 1): taps (g - 1, g) with weights
        // (0.25, 0.75), or (g, g + 1) with (0.75, 0.25). Input rows i0 .. i1 of the 3 x 3 around
        // the pixel are read.
        const int xs[3] = int[3](max(gx - 1, 0), gx, min(gx + 1, W - 1));
        const int ys[3] = int[3](max(gy - 1, 0), gy, min(gy + 1, H - 1));
        const int H2 = 2 * H, W2 = 2 * W;
        [[unroll]] for (int c = 0; c < 4; ++c) {
            if (c >= OC) continue;
            const int ic = CIN == 1 ? 0 : c;
            const int hc = K / 4 == 1 ? 0 : c;
            float v[3][3];
            [[unroll]] for (int a = 0; a < 3; ++a) {
                [[unroll]] for (int b = 0; b < 3; ++b) v[a][b] = a < i0 || a > i1 ? 0.0 : input_at(n, ic, ys[a], xs[b]);
            }
            [[unroll]] for (int i = 0; i < 2; ++i) {
                if (i < i0 || i >= i1) continue;
                const float wy0 = i == 0 ? 0.25 : 0.75, wy1 = 1.0 - wy0;
                [[unroll]] for (int j = 0; j < 2; ++j) {
                    const float wx0 = j == 0 ? 0.25 : 0.75, wx1 = 1.0 - wx0;
                    const float row0 = wx0 * v[i][j] + wx1 * v[i][j + 1];
                    const float row1 = wx0 * v[i + 1][j] + wx1 * v[i + 1][j + 1];
                    dst.data[((n * OC + c) * H2 + 2 * gy + i) * W2 + 2 * gx + j] =
                        sfloat(wy0 * row0 + wy1 * row1 + hv[hc * 4 + i * 2 + j]);
                }
            }
        }
    } else if (i0 == 0) {
        [[unroll]] for (int c = 0; c < 4; ++c) {
            if (c >= OC) continue;
            dst.data[((n * OC + c) * H + gy) * W + gx] = sfloat(input_at(n, c, gy, gx) + hv[c]);
        }
    }
}

#endif
