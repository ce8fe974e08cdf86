#include "families.hpp"

namespace vkml::ops::detail {

void add_layout_ops(std::vector<OpInfo>& out) {
    const char* family = "Resampling and layout";
    const char* all = "f32, f16, i32, i64, u8";
    // Shared words for the kernels that move bits.
    const std::string exact = " Moves bits (exact); i64 as 32-bit word pairs, u8 needs 8-bit storage.";
    out.push_back(
        {"Resize", family, "f32, f16",
         "opset 19: mode nearest (any dims, up to rank 6; round_prefer_floor/ceil, floor, ceil), linear and "
         "cubic (cubic_coeff_a, exclude_outside) over the last two dims only (others must be unchanged); "
         "coordinate_transformation_mode half_pixel, half_pixel_symmetric, pytorch_half_pixel, "
         "align_corners, "
         "asymmetric, tf_crop_and_resize (roi, extrapolation_value); scales or sizes with "
         "keep_aspect_ratio_policy stretch/not_larger/not_smaller; axes. roi/scales/sizes are descriptor "
         "constants. Coordinates in fp32 (length_resized = integer output length); antialias not "
         "supported."});
    out.push_back({"DepthToSpace", family, all,
                   "blocksize, mode DCR and CRD; rank-4 input. One dispatch: whole 16-, 8- or 4-byte units of "
                   "rows for blocksizes 2 to 4 and 8/16/32-bit dtypes where W allows, else the strided copy." +
                       exact});
    out.push_back(
        {"SpaceToDepth", family, all, "blocksize; rank-4 input. One strided-copy dispatch." + exact});
    out.push_back({"Concat", family, all,
                   "axis (negative allowed), any number of inputs: one dispatch per 8 inputs." + exact});
    out.push_back(
        {"Split", family, all,
         "axis, split sizes or num_outputs (last chunk smaller); one strided-copy dispatch per output." +
             exact});
    out.push_back({"Slice", family, all,
                   "starts, ends, axes, steps as descriptor constants: negative axes, indices and steps, "
                   "clamping as ONNX. One strided-copy dispatch." +
                       exact});
    out.push_back(
        {"Transpose", family, all,
         "perm (default reversed), rank <= 6. One strided-copy dispatch; an element-wise activation before "
         "it is applied by it (f32, f16)." +
             exact});
    out.push_back(
        {"Pad", family, all,
         "modes constant (constant_value), reflect, edge, wrap; negative pads crop; axes. reflect and wrap "
         "repeat like numpy.pad when pads exceed the input." +
             exact});
    out.push_back(
        {"Gather", family, all,
         "axis, i32 or i64 indices (negative count from the end; out-of-range give 0), output rank <= 6." +
             exact});
    out.push_back({"GatherElements", family, all,
                   "axis, i32 or i64 indices (negative count from the end; out-of-range give 0)." + exact});
    out.push_back({"Expand", family, all, "bidirectional numpy broadcast to shape." + exact});
    const std::string scatter =
        "reduction none (parallel; duplicates: one wins), add, mul, max, min (f32, f16, i32; applied in order by "
        "one invocation: simple, not fast); i32 or i64 indices, negative count from the end, out-of-range "
        "skipped. A copy of data, then the updates.";
    out.push_back({"ScatterElements", family, all, "axis; " + scatter});
    out.push_back({"Scatter", family, all, "opsets 9-10: ScatterElements without reduction."});
    out.push_back({"ScatterND", family, all, scatter});
    out.push_back({"GatherND", family, all,
                   "batch_dims; i32 or i64 indices (negative count from the end; out-of-range give 0)." + exact});
    out.push_back({"OneHot", family, all,
                   "axis; depth a constant; i32, i64 or float indices (truncated; negative count from depth); values [off, on]." +
                       exact});
    out.push_back({"GridSample", family, "f32, f16",
                   "2-D; mode bilinear/linear, nearest, bicubic/cubic (opsets 16 and 20); padding_mode zeros, "
                   "border, reflection; align_corners; fp32 arithmetic."});
    out.push_back({"ReverseSequence", family, all,
                   "time_axis, batch_axis (0 and 1); sequence_lens a tensor (i32; lengths clamped to [0, T])"});
    out.push_back({"MaxUnpool", family, "f32, f16",
                   "2-D; kernel_shape, strides, pads, output_shape (a constant input); indices outside Y skipped"});
    out.push_back({"RoiAlign", family, "f32, f16",
                   "opsets 10 and 16: mode avg/max (max as ONNX Runtime), output_height/width, sampling_ratio "
                   "(adaptive grids capped at 1024 a side), spatial_scale, coordinate_transformation_mode; fp32"});
    out.push_back({"Trilu", family, all,
                   "upper, k (a constant); zeroes outside the triangle of the last two dims." + exact});
    out.push_back({"Tile", family, all, "repeats (0 allowed). One strided-copy dispatch." + exact});
    out.push_back({"Reshape", family, all,
                   "view, no kernel: reshape_shape/reshape_view with 0 (copy), -1 (infer) and allowzero."});
    out.push_back({"Flatten", family, all, "view, no kernel: flatten_shape/flatten_view, axis in [-r, r]."});
    out.push_back(
        {"Squeeze", family, all, "view, no kernel: squeeze_shape/squeeze_view, axes (empty: all 1s)."});
    out.push_back(
        {"Unsqueeze", family, all, "view, no kernel: unsqueeze_shape/unsqueeze_view, axes of the output."});
}

} // namespace vkml::ops::detail
