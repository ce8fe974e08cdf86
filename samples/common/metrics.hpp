#pragma once
// Image quality against a reference, on 8-bit RGB(A) pixels, in double precision:
//   PSNR = 10 log10(255^2 / MSE) over the R, G and B values (alpha ignored); +infinity when equal.
//   SSIM: Wang et al. 2004 on the luma Y = 0.299 R + 0.587 G + 0.114 B, 8x8 windows stepping by
//         4 pixels plus a last one flush with the far edge (the whole image when smaller than 8),
//         uniform weights, C1 = (0.01 * 255)^2,
//         C2 = (0.03 * 255)^2, population statistics; the mean over windows. 1 when equal.
#include <cstdint>
#include <span>

namespace vkml::samples {

// Interleaved 8-bit pixels, rows tightly packed; `channels` 3 or 4.
struct ImageView8 {
    const uint8_t* pixels = nullptr;
    int width = 0, height = 0, channels = 4;
};

// Both images must have the same size (throws vkml::Error(InvalidArgument) otherwise).
double mse(const ImageView8& a, const ImageView8& b);
double psnr(const ImageView8& a, const ImageView8& b);
double ssim(const ImageView8& a, const ImageView8& b);

} // namespace vkml::samples
