#pragma once
// Validation and kernel plumbing shared by the convolution family (Conv, ConvTranspose, Gemm,
// MatMul). Not public API.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/conv.hpp"

namespace vkml::ops::detail::conv {

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };
AutoPad parse_auto_pad(const char* op, const std::string& value);

// A per-spatial-axis attribute: `count` copies of `fallback` when empty, else exactly `count`
// values, each >= `min`.
std::vector<int64_t> axis_attr(const char* op, const char* field, const std::vector<int64_t>& values,
                               size_t count, int64_t fallback, int64_t min);

// Every dimension >= 1 and the element count within 32-bit indices.
void require_dense(const char* op, const std::string& field, const TensorDesc& desc);
// f32/f16, and the same dtype as `like` (ONNX's T is shared by every input of these ops).
void require_dtype(const char* op, const std::string& field, const TensorDesc& desc, const TensorDesc& like);
void check_activation(const char* op, const Activation& activation);

// The input/weight geometry common to Conv and ConvTranspose, as 2-D (a 1-D op has h = kh = 1).
struct ConvGeometry {
    size_t spatial = 2; // 1 or 2: the op's own spatial rank
    int64_t n = 1, c = 1, h = 1, w = 1;
    int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
};
// Checks X's and W's ranks, dtypes and sizes, kernel_shape against W, and strides/dilations.
ConvGeometry conv_geometry(const char* op, const TensorDesc& input, const TensorDesc& weight,
                           const std::vector<int64_t>& kernel_shape, const std::vector<int64_t>& strides,
                           const std::vector<int64_t>& dilations);
// [N, channels, oh, ow] in the op's own rank (ow only for 1-D).
Shape conv_output_shape(const ConvGeometry& g, int64_t channels, int64_t oh, int64_t ow);

// Specialization constants of the direct, implicit-GEMM and transposed kernels (conv_spec.glsl).
struct ConvSpec {
    uint32_t n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw;
    int32_t pt, pl; // may be negative for ConvTranspose pads derived from output_shape
    uint32_t group;
    bool has_bias, has_residual;
    ActivationKind act;
    bool packed_w = false; // weights re-packed tap-major (conv/pack_taps.comp) for the tensor cores
    uint32_t direct_ob = 1; // conv/direct.comp: output channels per invocation (group 1)
    uint32_t direct_px = 1; // conv/direct.comp: output pixels of a row per invocation
    uint32_t split = 1, split_chunk = 1; // tensor-core igemm: K chunks (conv/split_reduce.comp adds them)
    uint32_t pad_mode = 0; // ConvPadMode: what the padding reads (conv_src in conv/conv_spec.glsl)
    std::vector<uint32_t> values() const;
};
// Whether the tensor-core implicit GEMM walks K tap by tap for this geometry (mirrors TAP_MAJOR in
// shaders/conv/igemm.comp): stride 1, dilation 1, rows of 8-element multiples, 32-channel runs.
bool coop_tap_major(const ConvSpec& spec);
// A variant of the staged-window tensor-core kernel (shaders/conv/halo.comp, the conv_halo lines of
// shaders/conv.list): shader name, output channels and invocations per workgroup, output rows of
// its 32-column pixel tile, kernel size.
struct HaloTile {
    const char* shader;
    uint32_t rows, threads, tile_rows, ks;
    bool fold = false;   // the kernel's columns folded into the channels (few input channels)
    bool mfold = false;  // ... into the output rows (few output channels)
    uint32_t stride = 1; // STRIDE: 1, or 2 in both axes
    uint32_t kg = 0;     // KG, kernel rows whose weights are staged at a time (0: the shader's default)
    bool unpadded = false; // PIX_PAD=0: a staged pixel is 2 units, not 3 (room for 16-row tiles)
};
// The variant for this geometry on this device, or nullptr: 3x3, 5x5 or 9x9, stride 1, or 3x3 and
// 5x5 stride 2 (C a multiple of 8), dilation 1, group 1, pads top/left below the kernel size, C a
// multiple of 8 (or, at 3x3 and 9x9 stride 1, C * KW up to 64: the folded variants; M * KW up to the
// tile's rows: the output-folded ones), the shared memory within the device's limit, and
// VKML_DISABLE_CONV_HALO unset. VKML_HALO_TILE=h64f|h64s|... forces one (the tile of that name
// among the variants of the layer's kernel size and stride: h32s picks conv_halo_s2_h32s for a
// stride-2 layer).
// `rows` (ConvDesc::halo_rows): 0 lets the grid choose the tile height, 8 or 16 prefer it.
const HaloTile* halo_tile(const gpu::Device& device, const ConvSpec& spec, uint32_t rows = 0);
ConvSpec conv_spec(const ConvGeometry& g, int64_t m, int64_t oh, int64_t ow, int64_t pad_top,
                   int64_t pad_left, int64_t group, bool has_bias, bool has_residual, ActivationKind act);

// Specialization constants of conv/gemm.comp: a strided batched GEMM with a fused epilogue.
struct GemmSpec {
    uint32_t m = 1, n = 1, k = 1;
    uint32_t a_si = 0, a_sk = 0, b_sk = 0, b_sj = 0, c_si = 0, c_sj = 0;
    bool has_c = false, has_residual = false;
    ActivationKind act = ActivationKind::None;
    std::array<uint32_t, 4> batch{1, 1, 1, 1}; // outermost first
    std::array<uint32_t, 4> a_batch{}, b_batch{};
    // A's rows are zero from column k up to a_si (a multiple of 8 at least k rounded up to 8): the
    // tensor-core tile then loads them as 16-byte units although k is not a multiple of 8.
    bool a_padded = false;
    std::vector<uint32_t> values() const;
};

// Workgroup size of the tiled kernels (gemm_tile.glsl: 16 x 16 invocations, 64 x 64 tiles).
inline constexpr std::array<uint32_t, 3> tile_workgroup{16, 16, 1};
inline constexpr uint32_t tile_rows = 64, tile_cols = 64;
// Workgroups for a tiled kernel over rows x cols per batch; the shaders walk column blocks and
// batches grid-stride, so those are capped at the device's limits. Fails when the row blocks
// alone exceed them.
std::array<uint32_t, 3> tile_groups(gpu::Device& device, const char* op, uint64_t rows, uint64_t cols,
                                    uint64_t batches, uint32_t block_rows = tile_rows,
                                    uint32_t block_cols = tile_cols);

// A tensor-core tile of conv/coopmat_tile.glsl: shader name suffix, workgroup tile and size.
struct CoopTile {
    const char* suffix; // conv_gemm<suffix> / conv_igemm<suffix>
    uint32_t rows, cols, threads;
};
// Whether the device runs the tensor-core tiles on `dtype` tensors: f16 storage, float16 shaders,
// VK_NV_cooperative_matrix with a 16x16x16 f16 x f16 -> f32 shape, 32-wide subgroups.
bool coop_available(const gpu::Device& device, DType dtype);
// ConvDesc / GemmDesc / MatMulDesc::accumulation is one of the enum's values.
void check_accumulation(const char* op, Accumulation accumulation);
// Whether the device multiplies 16x16x16 f16 x f16 + f16 cooperative matrices (the f16c variants).
bool coop_f16_accumulators(const gpu::Device& device);
// The shader variant of a tensor-core kernel for the accumulation asked for: "f16c" (f16
// accumulator fragments) where F16 is asked and the device has them, else "f16"; `got` is set to
// what that variant accumulates in.
const char* coop_variant(const gpu::Device& device, Accumulation want, Accumulation& got);
// The tile for an output of `rows` rows (channels): the smallest whose rows cover them, up to 128;
// `wide` prefers the 256-column tile at 33-64 rows (implicit GEMMs, 1x1 convolutions of many pixels).
const CoopTile& coop_tile(uint64_t rows, bool wide = false);
// The fewest output rows (channels) for which Auto takes the tensor cores (VKML_COOP_MIN_ROWS
// overrides it, for tuning with vkml bench ops).
uint64_t coop_min_rows();
// Split K until the tensor-core igemm has about this many workgroups (VKML_SPLIT_TARGET; 0: never).
uint64_t split_target();
// Auto's choice for a GEMM of rows x cols outputs in `batches`: the tile when the device has them
// and the output has enough rows, else nullptr (see conv_common.cpp).
const CoopTile* coop_for(const gpu::Device& device, DType dtype, uint64_t rows, uint64_t cols,
                         uint64_t batches);

// The conv_gemm pipeline specialized for `spec`: the scalar tile (workgroup tile_workgroup) or,
// with `coop`, that tensor-core tile in shader variant `variant` (coop_variant's). 16 bytes of push
// constants.
const gpu::Pipeline& gemm_pipeline(gpu::Device& device, const char* op, DType dtype, const GemmSpec& spec,
                                   const CoopTile* coop = nullptr, const char* variant = "f16");
// The tensor-core tiles' grid with its column blocks capped at about two workgroups per
// multiprocessor (VKML_COOP_GROUPS overrides the total, 0: no cap; no cap where the device does not
// report its multiprocessors); each then walks several tiles, fetching the next one's first slice
// during the current one's last (conv/coopmat_tile.glsl).
std::array<uint32_t, 3> coop_persistent(const gpu::Device& device, std::array<uint32_t, 3> groups);
// Workgroups for gemm_pipeline's kernel over spec's rows x columns x batches.
std::array<uint32_t, 3> gemm_groups(gpu::Device& device, const char* op, const GemmSpec& spec,
                                    const CoopTile* coop = nullptr);

} // namespace vkml::ops::detail::conv
