#include "vkml/ops/conv.hpp"

#include <algorithm>
#include <climits>

#include "conv_common.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/pipeline.hpp"

namespace vkml::ops {

const char* conv_kernel_name(ConvKernel kernel) {
    switch (kernel) {
    case ConvKernel::Auto:
        return "auto";
    case ConvKernel::Direct:
        return "direct";
    case ConvKernel::Gemm1x1:
        return "gemm1x1";
    case ConvKernel::ImplicitGemm:
        return "implicit_gemm";
    case ConvKernel::TensorCore:
        return "tensor_core";
    case ConvKernel::FewOutputs:
        return "few_outputs";
    }
    return "?";
}

bool tensor_cores_available(const gpu::Device& device, DType dtype) {
    return detail::conv::coop_available(device, dtype);
}

bool f16_accumulation_available(const gpu::Device& device, DType dtype) {
    return tensor_cores_available(device, dtype) && detail::conv::coop_f16_accumulators(device);
}

namespace {

constexpr const char* op_name = "Conv";

// Output size and (begin, end) pads of one spatial axis, per ONNX's auto_pad rules.
struct AxisOut {
    int64_t out, pad_begin, pad_end;
};

AxisOut conv_axis(detail::conv::AutoPad mode, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
                  int64_t pe, const char* axis) {
    const int64_t extent = (k - 1) * d + 1; // the dilated kernel
    switch (mode) {
    case detail::conv::AutoPad::SameUpper:
    case detail::conv::AutoPad::SameLower: {
        const int64_t out = (in + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
        // The odd pad goes at the end for SAME_UPPER, at the beginning for SAME_LOWER.
        const int64_t small = total / 2;
        return mode == detail::conv::AutoPad::SameUpper ? AxisOut{out, small, total - small}
                                                        : AxisOut{out, total - small, small};
    }
    case detail::conv::AutoPad::Valid:
        pb = pe = 0;
        [[fallthrough]];
    case detail::conv::AutoPad::NotSet:
        if (in + pb + pe < extent)
            fail(op_name, "input",
                 std::string(axis) + " size " + std::to_string(in) + " plus pads " + std::to_string(pb + pe) +
                     " is smaller than the dilated kernel's " + std::to_string(extent));
        return {(in + pb + pe - extent) / s + 1, pb, pe};
    }
    return {};
}

} // namespace

std::unique_ptr<Conv> Conv::create(gpu::Device& device, const ConvDesc& desc) {
    const char* op = op_name;
    const detail::conv::ConvGeometry g = detail::conv::conv_geometry(
        op, desc.input, desc.weight, desc.kernel_shape, desc.strides, desc.dilations);
    const size_t s = g.spatial;
    const int64_t m = desc.weight.shape[0];

    if (desc.group < 1) fail(op, "group", "must be at least 1, is " + std::to_string(desc.group));
    if (g.c % desc.group != 0)
        fail(op, "group",
             std::to_string(desc.group) + " does not divide the input's " + std::to_string(g.c) +
                 " channels");
    if (m % desc.group != 0)
        fail(op, "group",
             std::to_string(desc.group) + " does not divide the weight's " + std::to_string(m) +
                 " output channels");
    if (desc.weight.shape[1] != g.c / desc.group) // g.c % group == 0 was checked above
        fail(op, "weight",
             "channel mismatch: weight " + desc.weight.shape.str() + " with group " +
                 std::to_string(desc.group) + " takes " + std::to_string(desc.weight.shape[1]) +
                 " input channels per group, the input " + desc.input.shape.str() + " has " +
                 std::to_string(g.c / desc.group));
    if (desc.bias) {
        detail::conv::require_dtype(op, "bias", *desc.bias, desc.input);
        if (desc.bias->shape != Shape{m})
            fail(op, "bias", "expected [" + std::to_string(m) + "], got " + desc.bias->shape.str());
    }
    detail::conv::check_activation(op, desc.activation);

    const detail::conv::AutoPad mode = detail::conv::parse_auto_pad(op, desc.auto_pad);
    const auto pads = detail::conv::axis_attr(op, "pads", desc.pads, 2 * s, 0, 0);
    if (mode != detail::conv::AutoPad::NotSet &&
        std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
        fail(op, "pads", "must be empty or zero when auto_pad is " + desc.auto_pad);
    // pads are [x1_begin, x2_begin, x1_end, x2_end]; 1-D has only the W pair.
    const AxisOut ax_w = conv_axis(mode, g.w, g.kw, g.sw, g.dw, pads[s - 1], pads[2 * s - 1], "W");
    const AxisOut ax_h =
        s == 2 ? conv_axis(mode, g.h, g.kh, g.sh, g.dh, pads[0], pads[2], "H") : AxisOut{1, 0, 0};

    if (uint32_t(desc.pad_mode) > uint32_t(ConvPadMode::Edge))
        fail(op, "pad_mode", "unknown padding mode " + std::to_string(uint32_t(desc.pad_mode)));
    if (desc.pad_mode == ConvPadMode::Reflect) {
        // Mirroring reads position -p as p: each pad must stay inside the axis.
        auto check = [&](const AxisOut& ax, int64_t size, const char* axis) {
            if (ax.pad_begin >= size || ax.pad_end >= size)
                fail(op, "pads",
                     std::string("reflect padding needs pads below the input's ") + axis + " size " +
                         std::to_string(size) + ", got " + std::to_string(ax.pad_begin) + " and " +
                         std::to_string(ax.pad_end));
        };
        check(ax_w, g.w, "W");
        if (s == 2) check(ax_h, g.h, "H");
    }

    auto conv = std::unique_ptr<Conv>(new Conv(device));
    conv->pads_ = {ax_h.pad_begin, ax_w.pad_begin, ax_h.pad_end, ax_w.pad_end};
    conv->has_bias_ = desc.bias.has_value();
    conv->has_residual_ = desc.residual;
    const TensorDesc output{detail::conv::conv_output_shape(g, m, ax_h.out, ax_w.out), desc.input.dtype};
    detail::conv::require_dense(op, "output", output);
    conv->inputs_ = {desc.input, desc.weight};
    if (desc.bias) conv->inputs_.push_back(*desc.bias);
    if (desc.residual) conv->inputs_.push_back(output);
    conv->outputs_ = {output};

    // Kernel choice. The 1x1 GEMM needs every output pixel to read exactly its own input pixel.
    const bool pointwise =
        g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 &&
        std::all_of(conv->pads_.begin(), conv->pads_.end(), [](int64_t p) { return p == 0; });
    const bool gemm1x1_ok = pointwise && desc.group == 1;
    const bool igemm_ok = desc.group == 1;
    const bool coop_ok = igemm_ok && detail::conv::coop_available(device, desc.input.dtype);
    ConvKernel kernel = desc.kernel;
    if (uint32_t(kernel) > uint32_t(ConvKernel::FewOutputs))
        fail(op, "kernel", "unknown kernel " + std::to_string(uint32_t(kernel)));
    detail::conv::check_accumulation(op, desc.accumulation);
    if (desc.halo_rows != 0 && desc.halo_rows != 8 && desc.halo_rows != 16)
        fail(op, "halo_rows", "must be 0 (chosen by the grid), 8 or 16, not " + std::to_string(desc.halo_rows));
    // The implicit GEMM's workgroup computes 64 output channels at once: with fewer than 32 most of
    // its work is padding (Anime4K's 8-channel layers ran 8x slower on it than direct on lavapipe).
    // The same holds for the 1x1 GEMM (Anime4K's 56->4 output heads: 0.19 ms on it at 960x540 on
    // an H100). The tensor-core tiles come 16 channels high: below 12 channels the scalar kernels win.
    // The staged-window kernel (3x3 / 5x5 / 9x9 stride 1) also takes layers of few output
    // channels when they have many input channels: on an H100 at 960x540 a 64->4 3x3 layer ran
    // 0.21 ms direct and 0.18 ms on its 16-row tiles (12 rows padding), but Anime4K's 16->8 ones
    // ran slower than direct (its S and M networks 0.20 -> 0.28 and 0.36 -> 0.52 ms).
    // Small grids take it too (VKML_HALO_MIN_GROUPS: the fewest workgroups it needs, default 10):
    // once the stride-2 variants existed and the weights were packed once, NanoDet's 13x13 to 52x52
    // layers ran 1.045 -> 0.873 ms for the network on it, YOLOv8n's 1.47 -> 1.26 ms (an H200; with
    // a 256 minimum, as before, they stayed on the implicit GEMM's element-wise gathers); below 10
    // workgroups the split implicit GEMM wins (with the split threshold below: NanoDet 0.872 ->
    // 0.858 ms, resnet18 0.538 -> 0.506, YOLOv8n unchanged; 6, 8, 12 and 16 did worse). Where K is
    // split (a few tiles over a long K) the implicit GEMM still runs.
    static const int64_t halo_min_groups = detail::tuning_knob("VKML_HALO_MIN_GROUPS", 10, 0, INT64_MAX);
    auto halo_tiles = [&](const detail::conv::HaloTile& t) {
        return uint64_t(g.n) * ((uint64_t(ax_w.out) + 31) / 32) * ((uint64_t(ax_h.out) + t.tile_rows - 1) / t.tile_rows);
    };
    auto halo_blocks = [&](const detail::conv::HaloTile& t) { return (uint64_t(m) + t.rows - 1) / t.rows; };
    // The staged-window variant for this geometry where it runs (the unsplit tensor-core path
    // takes it below), or null.
    const detail::conv::HaloTile* halo_fit =
        coop_ok && desc.halo && !gemm1x1_ok
            ? detail::conv::halo_tile(device, detail::conv::conv_spec(g, m, ax_h.out, ax_w.out, ax_h.pad_begin,
                                                                      ax_w.pad_begin, desc.group, false, false,
                                                                      ActivationKind::None),
                                            desc.halo_rows)
            : nullptr;
    if (halo_fit && !desc.halo_small_grids &&
        halo_tiles(*halo_fit) * halo_blocks(*halo_fit) < uint64_t(halo_min_groups))
        halo_fit = nullptr;
    const bool halo_shape = halo_fit && g.c >= 32;
    // Few output channels (conv/few.comp): every output channel of a tile per workgroup, fp32
    // multiply-adds on staged windows; VKML_FEW_MAX_M (8) caps the M Auto gives it, 0 turns it off.
    static const int64_t few_max_m = detail::tuning_knob("VKML_FEW_MAX_M", 8, 0, 8);
    const bool few_ok = desc.group == 1 && m <= 8 && g.kh == g.kw && (g.kh == 1 || g.kh == 3 || g.kh == 5) &&
                        g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && ax_w.pad_begin <= 8;
    // Auto takes only the form checked on real hardware (an H200: esrgan's 64->4 and 12->3 3x3 layers
    // and their goldens): f16 storage, 3x3, up to 4 outputs, rows of whole 16-byte units. Every form
    // passes its tests on lavapipe and on the H200, but there the 5x5 pipelines take minutes to
    // compile (ConvTest.FewOutputs5x5: 279 s for two), the others 5-20 s.
    // (Its work grows with KH * KW * M where the tensor cores' does not; on an H200 a 64->4 3x3 layer
    // ran 130 us on it against 171 us on the tensor cores' 16-row tiles.)
    const bool few_checked = desc.input.dtype == DType::f16 && g.kh == 3 && m <= 4 && g.w % 8 == 0;
    // On tensor cores (conv/few_mma.comp): f16 storage, 3x3, at least 32 input channels, where
    // cooperative matrices run; VKML_FEW_MMA=0 keeps few.comp. Auto gives it every M up to 8 (its
    // cost does not grow with M). On an H200 esrgan's 64->4 layers ran 130 -> 123 and 123 -> 114 us
    // on it, but its 12->3 layer at 1080p 94 -> 201 us: its staging gathers 8 channels of a pixel
    // element by element, which only pays where many channels share each window.
    static const int64_t few_mma_knob = detail::tuning_knob("VKML_FEW_MMA", 1, 0, 1);
    const bool few_mma = few_ok && few_mma_knob && coop_ok && g.kh == 3 && g.c >= 32 && m <= 8;
    const bool few_auto = few_ok && (few_checked || few_mma) && m <= few_max_m;
    if (kernel == ConvKernel::Auto)
        kernel = few_auto ? ConvKernel::FewOutputs
                 : coop_ok && (uint64_t(m) >= detail::conv::coop_min_rows() || halo_shape) ? ConvKernel::TensorCore
                 : gemm1x1_ok && m >= 32                               ? ConvKernel::Gemm1x1
                 : igemm_ok && g.kh * g.kw >= 9 && m >= 32             ? ConvKernel::ImplicitGemm
                                                                       : ConvKernel::Direct;
    if (kernel == ConvKernel::Gemm1x1 && !gemm1x1_ok)
        fail(op, "kernel", "gemm1x1 needs a 1x1 kernel, stride 1, no padding and group 1");
    if (kernel == ConvKernel::ImplicitGemm && !igemm_ok) fail(op, "kernel", "implicit_gemm needs group 1");
    if (kernel == ConvKernel::FewOutputs && !few_ok)
        fail(op, "kernel",
             "few_outputs needs group 1, at most 8 output channels, a square 1x1, 3x3 or 5x5 kernel, "
             "stride 1, dilation 1 and a left pad of at most 8");
    if (kernel == ConvKernel::TensorCore && !coop_ok)
        unsupported(op, igemm_ok ? std::string("tensor_core needs f16 storage and cooperative matrices "
                                               "(VK_NV_cooperative_matrix, 16x16x16 f16 -> f32), which ") +
                                       device.caps().device_name + " or this dtype lacks"
                                 : std::string("tensor_core needs group 1"));
    conv->kernel_ = kernel;

    const ActivationKind act = desc.activation.kind;
    const uint32_t oh = uint32_t(ax_h.out), ow = uint32_t(ax_w.out);
    const detail::conv::CoopTile* coop =
        kernel == ConvKernel::TensorCore
            ? &detail::conv::coop_tile(uint64_t(m), !gemm1x1_ok || uint64_t(g.n) * oh * ow >= 32768)
            : nullptr;
    // The tensor-core kernels' variant: f16 accumulators where asked and offered.
    const char* variant = coop ? detail::conv::coop_variant(device, desc.accumulation, conv->accumulation_) : "f16";
    // 1x1 layers of one or two tiles with a long K (at least 256 channels) take the implicit GEMM
    // below, where K splits over more workgroups; the GEMM form does not split. On an H200
    // NanoDet's 512->128 layer at 13x13 ran 37 -> 23 us split (the network 0.827 -> 0.811 ms);
    // on 8-tile grids it lost (YOLOv8n's 20x20 ones: the network 1.12 -> 1.20 ms).
    // VKML_1X1_IGEMM=0 keeps every 1x1 layer on the GEMM form.
    static const bool pointwise_igemm = detail::tuning_knob("VKML_1X1_IGEMM", 1, 0, 1) == 1;
    bool small_pointwise = false;
    if (coop && gemm1x1_ok && pointwise_igemm && g.c >= 256) {
        // (the implicit GEMM's grid, as its split rule below counts it)
        const auto grid = detail::conv::tile_groups(device, op, uint64_t(m), uint64_t(g.n) * oh * ow, 1,
                                                    coop->rows, coop->cols);
        small_pointwise = uint64_t(grid[0]) * grid[1] <= 2;
    }
    conv->gemm_form_ = kernel == ConvKernel::Gemm1x1 || (coop && gemm1x1_ok && !small_pointwise);
    if (conv->gemm_form_) {
        // Y[n] = W[M, C] x X[n][C, H*W] + bias broadcast along the pixels.
        detail::conv::GemmSpec spec;
        spec.m = uint32_t(m);
        spec.n = oh * ow;
        spec.k = uint32_t(g.c);
        spec.a_si = uint32_t(g.c);
        spec.a_sk = 1;
        spec.b_sk = oh * ow;
        spec.b_sj = 1;
        spec.c_si = 1;
        spec.c_sj = 0;
        spec.has_c = conv->has_bias_;
        spec.has_residual = desc.residual;
        spec.act = act;
        spec.batch = {1, 1, 1, uint32_t(g.n)};
        spec.b_batch = {0, 0, 0, uint32_t(g.c) * oh * ow};
        if (coop && g.c % 8 != 0) {
            // Weight rows padded with zeros to whole 16-byte units (conv/pack_taps.comp with one
            // folded column), so the tensor-core tile loads them as units: RDN's local and global
            // fusion layers read 64 + 4 and 2 x 64 + 4 channels (esrgan-slim's LFF and GFF_1).
            const uint32_t cp = (uint32_t(g.c) + 7) / 8 * 8;
            spec.a_si = cp;
            spec.a_padded = true;
            conv->pack_pipeline_ =
                &device.pipeline({.shader = detail::shader_for(device, op, "conv_pack_taps", desc.input.dtype),
                                  .bindings = 2,
                                  .specialization = {uint32_t(m), uint32_t(g.c), 1, 1, cp, 0}});
            conv->packed_bytes_ = uint64_t(m) * cp * gpu::dtype_size(desc.weight.dtype);
            conv->scratch_bytes_ = conv->packed_bytes_;
        }
        conv->pipeline_ = &detail::conv::gemm_pipeline(device, op, desc.input.dtype, spec, coop, variant);
        conv->groups_ = detail::conv::gemm_groups(device, op, spec, coop);
        conv->push_ = {1.f, 1.f, desc.activation.alpha, desc.activation.beta};
        return conv;
    }

    for (int64_t p : conv->pads_)
        if (p > INT32_MAX) fail(op, "pads", std::to_string(p) + " exceeds the kernels' 32-bit offsets");
    detail::conv::ConvSpec spec = detail::conv::conv_spec(
        g, m, oh, ow, ax_h.pad_begin, ax_w.pad_begin, desc.group, conv->has_bias_, desc.residual, act);
    spec.pad_mode = uint32_t(desc.pad_mode);
    if (kernel == ConvKernel::FewOutputs) {
        // 16 x 64 output tiles of 128 invocations (shaders/conv/few.comp), or 8 x 64 of 256 on the
        // tensor cores (conv/few_mma.comp); one workgroup per tile and image.
        const uint64_t rows = few_mma ? 8 : 16;
        const uint64_t tiles = ((uint64_t(oh) + rows - 1) / rows) * ((uint64_t(ow) + 63) / 64);
        const auto& limits = device.caps().max_workgroup_count;
        if (tiles > limits[0] || uint64_t(g.n) > limits[1])
            fail(op, "input", desc.input.shape.str() + " needs more workgroups than the device's grid allows");
        const std::string shader = few_mma ? std::string("conv_few3_mma")
                                           : "conv_few" + std::to_string(g.kh) + (m > 4 ? "_m8" : "");
        conv->groups_ = {uint32_t(tiles), uint32_t(g.n), 1};
        conv->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, op, shader, desc.input.dtype),
                                            .bindings = 5,
                                            .push_constant_bytes = 8,
                                            .workgroup = {few_mma ? 256u : 128u, 1, 1},
                                            .specialization = spec.values()});
        conv->push_ = {desc.activation.alpha, desc.activation.beta, 0.f, 0.f};
        return conv;
    }
    // The tensor cores read the weights tap-major: a small re-pack into scratch before each run.
    // fold_kw: [M][KH][C * KW padded to 8] for the staged-window kernel's folded variants;
    // fold_m: [M * KW][KH][C] for its output-folded ones (same size as the weights).
    auto pack_taps = [&](uint32_t fold_kw = 0, uint32_t fold_m = 0) {
        spec.packed_w = true;
        const uint32_t cp = (spec.c * spec.kw + 7) / 8 * 8;
        conv->pack_pipeline_ = &device.pipeline({.shader = detail::shader_for(device, op, "conv_pack_taps", desc.input.dtype),
                                                 .bindings = 2,
                                                 .specialization = {spec.m, spec.c, spec.kh * spec.kw, fold_kw, cp, fold_m}});
        const uint64_t elements = fold_kw ? uint64_t(spec.m) * spec.kh * cp : uint64_t(desc.weight.shape.elements());
        conv->packed_bytes_ = elements * gpu::dtype_size(desc.weight.dtype);
        conv->scratch_bytes_ = conv->packed_bytes_;
    };
    if (coop && detail::conv::coop_tap_major(spec)) pack_taps();
    const bool tiled = kernel == ConvKernel::ImplicitGemm || coop;
    // The direct kernel computes up to 8 output channels per invocation at group 1 (each input
    // element loaded once for all of them).
    // ... and up to 4 pixels of a row (each weight loaded once for all of them); 1 turns either off.
    static const int64_t max_ob = detail::tuning_knob("VKML_DIRECT_OB", 8, 1, 16);
    static const int64_t max_px = detail::tuning_knob("VKML_DIRECT_PX", 4, 1, 8);
    if (!tiled && desc.group == 1) spec.direct_ob = uint32_t(std::min<int64_t>(m, max_ob));
    if (!tiled) spec.direct_px = uint32_t(std::min<int64_t>(ow, max_px));
    conv->direct_invocations_ = uint64_t(g.n) * ((uint64_t(m) + spec.direct_ob - 1) / spec.direct_ob) * oh *
                                ((ow + spec.direct_px - 1) / spec.direct_px);
    if (tiled)
        conv->groups_ = detail::conv::tile_groups(device, op, uint64_t(m), uint64_t(g.n) * oh * ow, 1,
                                                  coop ? coop->rows : detail::conv::tile_rows,
                                                  coop ? coop->cols : detail::conv::tile_cols);
    if (coop) {
        // Split K where the output grid leaves most of the GPU idle and K is long (a detector's
        // 20x20 heads, resnet's 7x7 stage: 1-4 workgroups, each walking thousands of K): each chunk
        // of 64-deep slices (below) is a workgroup, and a second pass adds the fp32 partials.
        // Up to 16 tiles (VKML_SPLIT_TARGET / 16): on an H100, YOLOv8n's 40x40 and 20x20 layers
        // (7-13 tiles) ran 1.5-4x faster split, its 80x80 ones (25 tiles) 1.4x slower.
        // Where the staged-window kernel fits, only grids of up to 4 tiles split
        // (VKML_SPLIT_TARGET_HALO, 64 / 16): on an H200 YOLOv8n's 40x40 3x3 layers (7 tiles of
        // 64 x 256) ran 33-36 us split and 19-23 unsplit on the staged window, its 20x20 ones
        // (2 tiles) 22-29 split and 29-41 unsplit.
        static const auto halo_target = uint64_t(detail::tuning_knob("VKML_SPLIT_TARGET_HALO", 64, 0, INT64_MAX));
        const uint64_t tiles = uint64_t(conv->groups_[0]) * conv->groups_[1];
        const uint64_t k = uint64_t(g.c) * g.kh * g.kw, slices = (k + 63) / 64;
        const uint64_t target = halo_fit ? halo_target : detail::conv::split_target();
        // Chunks of at least two slices, or one on grids of one or two tiles (on an H200
        // NanoDet's 13x13 3x3 layers, 2 tiles: 36 chunks of one slice made the network 0.857 ->
        // 0.827 ms; chunks of one everywhere made resnet18, whose split grids have 4 and 7 tiles,
        // 0.509 -> 0.575 ms). VKML_SPLIT_MIN_CHUNK=N: N slices at least everywhere (tuning).
        static const auto chunk_knob = uint64_t(detail::tuning_knob("VKML_SPLIT_MIN_CHUNK", 0, 0, 64));
        const uint64_t min_chunk = chunk_knob ? chunk_knob : tiles <= 2 ? 1 : 2;
        uint64_t want = 1;
        if (desc.split_k > 1)
            want = std::min<uint64_t>(desc.split_k, slices);
        else if (desc.split_k == 0 && tiles * 16 <= target && slices >= 2 * min_chunk)
            want = std::min<uint64_t>({(target + tiles - 1) / tiles, slices / min_chunk, 64});
        if (want > 1) {
            const uint64_t chunk = (slices + want - 1) / want;
            spec.split = uint32_t((slices + chunk - 1) / chunk);
            spec.split_chunk = uint32_t(chunk * 64);
        }
        if (spec.split > 1) {
            conv->split_ = spec.split;
            conv->groups_[2] = spec.split;
            conv->split_outputs_ = uint64_t(m) * g.n * oh * ow;
            conv->partial_offset_ = (conv->packed_bytes_ + 255) / 256 * 256;
            conv->partial_bytes_ = uint64_t(spec.split) * conv->split_outputs_ * 4;
            conv->scratch_bytes_ = conv->partial_offset_ + conv->partial_bytes_;
            conv->reduce_pipeline_ = &device.pipeline(
                {.shader = detail::shader_for(device, op, "conv_split_reduce", desc.input.dtype),
                 .bindings = 5,
                 .push_constant_bytes = 8,
                 .workgroup = {64, 1, 1},
                 .specialization = spec.values()});
        }
    }
    if (coop) conv->groups_ = detail::conv::coop_persistent(device, conv->groups_);
    const detail::conv::HaloTile* halo = coop && spec.split == 1 ? halo_fit : nullptr;
    if (halo) {
        // 3x3, 5x5 and 9x9 stride 1 (3x3 and 5x5 stride 2): the staged-window kernel, 16/32/64
        // channels x 8 (stride 2: 4) rows of 32 pixels a workgroup; the tiles are walked
        // grid-stride (VKML_HALO_GROUPS caps the workgroups).
        conv->halo_ = true;
        conv->halo_shader_ = halo->shader;
        if (halo->fold || halo->mfold) // (replaces a tap-major pack: 64 virtual rows or channels at most)
            pack_taps(halo->fold ? spec.kw : 0, halo->mfold ? spec.kw : 0);
        else if (!spec.packed_w)
            pack_taps(); // it reads the weights tap-major whatever the geometry
        const uint64_t tiles = halo_tiles(*halo), blocks = halo_blocks(*halo);
        static const int64_t cap = detail::tuning_knob("VKML_HALO_GROUPS", 0, 0, INT64_MAX);
        const auto& limits = device.caps().max_workgroup_count;
        uint64_t gx = std::min<uint64_t>(tiles, limits[0]);
        if (cap > 0) gx = std::min<uint64_t>(gx, uint64_t(cap));
        if (blocks > limits[1])
            fail(op, "weight", std::to_string(m) + " output channels exceed the device's workgroup grid");
        conv->groups_ = {uint32_t(gx), uint32_t(blocks), 1};
        conv->pipeline_ = &device.pipeline(
            {.shader = detail::shader_for(device, op, halo->shader, std::string_view(variant)),
             .bindings = 5,
             .push_constant_bytes = 8,
             .workgroup = {halo->threads, 1, 1},
             .specialization = spec.values()});
        conv->push_ = {desc.activation.alpha, desc.activation.beta, 0.f, 0.f};
        return conv;
    }
    const std::string shader = coop ? std::string("conv_igemm") + coop->suffix : tiled ? "conv_igemm" : "conv_direct";
    conv->pipeline_ = &device.pipeline(
        {.shader = coop ? detail::shader_for(device, op, shader, std::string_view(variant))
                        : detail::shader_for(device, op, shader, desc.input.dtype),
         .bindings = 5,
         .push_constant_bytes = 8,
         .workgroup = coop    ? std::array<uint32_t, 3>{coop->threads, 1, 1}
                      : tiled ? detail::conv::tile_workgroup
                              : std::array<uint32_t, 3>{64, 1, 1},
         .specialization = spec.values()});
    conv->push_ = {desc.activation.alpha, desc.activation.beta, 0.f, 0.f};
    return conv;
}

void Conv::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                       std::span<const Tensor> outputs, const gpu::BufferRange& scratch) const {
    record_with(cmd, inputs, outputs, scratch, nullptr);
}

void Conv::record_prepacked_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                 std::span<const Tensor> outputs, const gpu::BufferRange& scratch,
                                 const gpu::BufferRange& prepacked) const {
    record_with(cmd, inputs, outputs, scratch, &prepacked);
}

void Conv::record_prepack_impl(gpu::CommandBuffer& cmd, const Tensor& input, const gpu::BufferRange& packed) const {
    const gpu::BufferRange pack_bufs[] = {input.range(), {packed.buffer, packed.offset, packed_bytes_}};
    cmd.dispatch(*pack_pipeline_, pack_bufs, nullptr, 0,
                 cmd.groups_for(*pack_pipeline_, packed_bytes_ / gpu::dtype_size(input.dtype())));
}

void Conv::record_with(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                       const gpu::BufferRange& scratch, const gpu::BufferRange* prepacked) const {
    const gpu::BufferRange x = inputs[0].range(), w = inputs[1].range();
    // Absent optional inputs bind a read-only tensor the kernel never reads (its flag is off).
    const gpu::BufferRange b = has_bias_ ? inputs[2].range() : w;
    const gpu::BufferRange r = has_residual_ ? inputs[has_bias_ ? 3 : 2].range() : x;
    const gpu::BufferRange y = outputs[0].range();
    gpu::BufferRange wk = w;
    if (prepacked) {
        wk = {prepacked->buffer, prepacked->offset, packed_bytes_};
    } else if (pack_pipeline_) {
        wk = {scratch.buffer, scratch.offset, packed_bytes_};
        record_prepack_impl(cmd, inputs[1], wk);
        gpu::barrier::compute_to_compute(cmd);
    }
    if (gemm_form_) {
        const gpu::BufferRange bufs[] = {wk, x, b, r, y};
        cmd.dispatch(*pipeline_, bufs, push_, groups_);
        return;
    }
    const std::array<float, 2> push{push_[0], push_[1]};
    if (reduce_pipeline_) {
        const gpu::BufferRange part{scratch.buffer, scratch.offset + partial_offset_, partial_bytes_};
        const gpu::BufferRange bufs[] = {x, wk, b, r, part};
        cmd.dispatch(*pipeline_, bufs, push, groups_);
        gpu::barrier::compute_to_compute(cmd);
        const gpu::BufferRange sum_bufs[] = {part, wk, b, r, y};
        detail::dispatch_1d(cmd, *reduce_pipeline_, sum_bufs, push, split_outputs_);
        return;
    }
    const gpu::BufferRange bufs[] = {x, wk, b, r, y};
    if (kernel_ == ConvKernel::Direct) // (Gemm1x1 took the GEMM form above)
        detail::dispatch_1d(cmd, *pipeline_, bufs, push, direct_invocations_);
    else
        cmd.dispatch(*pipeline_, bufs, push, groups_);
}

} // namespace vkml::ops
