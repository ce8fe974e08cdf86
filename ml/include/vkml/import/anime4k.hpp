#pragma once
// Anime4K CNN weights as @websr/websr ships them (weights/anime4k/*.json: {"name", "layers": {...}}
// with "conv" layers holding WGSL mat4x4 weight blocks and a final "pixel_shuffle" or a residual
// output "MAIN"), rebuilt as an ordinary graph: Conv, CReLU (Relu of x and of -x, concatenated),
// DepthToSpace and a bilinear Resize of the input, so the common executor runs it.
//
// How the JSON maps to the graph (read from websr's WGSL layers, src/layers/anime4k/*.ts):
// - Features are 4-channel blocks. The first layer reads the RGBA input with a 3x3 kernel; its
//   alpha weights are zero in every shipped file and are folded into the bias (alpha = 1).
// - A conv layer reading feature layers sees CReLU of them: for each group of `width` inputs
//   (width = 1 for the S and M networks, 2 for L, whose features are 8 channels split into two
//   buffers) the blocks are [in0+, in1+, ..., in0-, in1-, ...]. Weights are mat4x4 blocks in
//   column-major order, block index = input block * taps + tap, with taps = 9 (3x3, offsets in
//   x-major order) or 1 (1x1).
// - pixel_shuffle: the 1 or 3 last feature layers hold, per output colour (1 = luma added to all
//   three), the 2x2 sub-pixel residuals (channel = 2 * dy + dx): DepthToSpace in CRD mode, added
//   to the input upscaled bilinearly (half-pixel centres).
// - "restore" networks end in a layer whose output is "MAIN": the input plus the first three
//   channels of that layer's result.
// Deviation, on purpose: convolutions pad with zeros, where the shaders clamp to the edge, so the
// outermost pixel ring can differ slightly.
// Input "input_image": f32[batch,3,height,width], RGB in [0, 1]; output "output", same range.
#include <filesystem>

#include "vkml/graph/graph.hpp"

namespace vkml::import {

graph::Graph load_anime4k(const std::filesystem::path& json);

} // namespace vkml::import
