#include "conv_common.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "vkml/gpu/device.hpp"

namespace vkml::ops::detail::conv {

AutoPad parse_auto_pad(const char* op, const std::string& value) {
    if (value == "NOTSET" || value.empty()) return AutoPad::NotSet;
    if (value == "SAME_UPPER") return AutoPad::SameUpper;
    if (value == "SAME_LOWER") return AutoPad::SameLower;
    if (value == "VALID") return AutoPad::Valid;
    fail(op, "auto_pad", "unknown value '" + value + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
}

std::vector<int64_t> axis_attr(const char* op, const char* field, const std::vector<int64_t>& values,
                               size_t count, int64_t fallback, int64_t min) {
    if (values.empty()) return std::vector<int64_t>(count, fallback);
    if (values.size() != count)
        fail(op, field,
             "expected " + std::to_string(count) + " values, got " + std::to_string(values.size()));
    for (int64_t v : values) {
        if (v < min)
            fail(op, field, "value " + std::to_string(v) + " is below the minimum " + std::to_string(min));
        // 32-bit, as the kernels' sizes and offsets are; this also keeps the output-size arithmetic
        // (dilated kernel extents, padded sizes) far from 64-bit overflow.
        if (v > INT32_MAX)
            fail(op, field, "value " + std::to_string(v) + " exceeds the kernels' 32-bit range");
    }
    return values;
}

void require_dense(const char* op, const std::string& field, const TensorDesc& desc) {
    for (int64_t d : desc.shape.dims())
        if (d < 1) fail(op, field, "shape " + desc.shape.str() + " has an empty or unknown dimension");
    to_u32(op, field, desc.shape.elements());
}

void require_dtype(const char* op, const std::string& field, const TensorDesc& desc, const TensorDesc& like) {
    require_float(op, field, desc);
    if (desc.dtype != like.dtype)
        fail(op, field,
             std::string("is ") + gpu::dtype_name(desc.dtype) + ", the input is " +
                 gpu::dtype_name(like.dtype) + " (every input shares one dtype)");
}

void check_activation(const char* op, const Activation& activation) {
    if (uint32_t(activation.kind) > uint32_t(ActivationKind::Mish))
        fail(op, "activation", "unknown kind " + std::to_string(uint32_t(activation.kind)));
    if (activation.kind == ActivationKind::Clip && activation.alpha > activation.beta)
        fail(op, "activation", "Clip min (alpha) exceeds max (beta)");
}

ConvGeometry conv_geometry(const char* op, const TensorDesc& input, const TensorDesc& weight,
                           const std::vector<int64_t>& kernel_shape, const std::vector<int64_t>& strides,
                           const std::vector<int64_t>& dilations) {
    const size_t rank = input.shape.rank();
    if (rank == 5) unsupported(op, "3-D convolution (input " + input.shape.str() + ") is not implemented");
    if (rank != 3 && rank != 4)
        fail(op, "input", "expected [N, C, H, W] or [N, C, W], got " + to_string(input));
    if (weight.shape.rank() != rank)
        fail(op, "weight",
             "rank " + std::to_string(weight.shape.rank()) + " differs from the input's " +
                 std::to_string(rank));
    require_float(op, "input", input);
    require_dtype(op, "weight", weight, input);
    require_dense(op, "input", input);
    require_dense(op, "weight", weight);

    ConvGeometry g;
    g.spatial = rank - 2;
    g.n = input.shape[0];
    g.c = input.shape[1];
    const size_t s = g.spatial;
    const auto ks = axis_attr(op, "kernel_shape", kernel_shape, s, 0, 1);
    for (size_t i = 0; i < s && !kernel_shape.empty(); ++i)
        if (ks[i] != weight.shape[2 + i])
            fail(op, "kernel_shape",
                 "[" + std::to_string(ks[0]) + (s == 2 ? ", " + std::to_string(ks[1]) : "") +
                     "] does not match the weight " + weight.shape.str());
    const auto st = axis_attr(op, "strides", strides, s, 1, 1);
    const auto di = axis_attr(op, "dilations", dilations, s, 1, 1);
    // Map the last spatial axis to W; a 1-D op keeps H = 1 with unit kernel, stride and dilation.
    g.w = input.shape[rank - 1];
    g.kw = weight.shape[rank - 1];
    g.sw = st[s - 1];
    g.dw = di[s - 1];
    if (s == 2) {
        g.h = input.shape[2];
        g.kh = weight.shape[2];
        g.sh = st[0];
        g.dh = di[0];
    }
    for (int64_t v : {g.sh, g.sw, g.dh, g.dw, g.kh, g.kw}) to_u32(op, "strides/dilations/kernel", v);
    return g;
}

Shape conv_output_shape(const ConvGeometry& g, int64_t channels, int64_t oh, int64_t ow) {
    return g.spatial == 2 ? Shape{g.n, channels, oh, ow} : Shape{g.n, channels, ow};
}

std::vector<uint32_t> ConvSpec::values() const {
    return {n,
            c,
            h,
            w,
            m,
            oh,
            ow,
            kh,
            kw,
            sh,
            sw,
            dh,
            dw,
            uint32_t(pt),
            uint32_t(pl),
            group,
            has_bias ? 1u : 0u,
            has_residual ? 1u : 0u,
            uint32_t(act),
            packed_w ? 1u : 0u,
            direct_ob,
            direct_px,
            split,
            split_chunk,
            pad_mode};
}

ConvSpec conv_spec(const ConvGeometry& g, int64_t m, int64_t oh, int64_t ow, int64_t pad_top,
                   int64_t pad_left, int64_t group, bool has_bias, bool has_residual, ActivationKind act) {
    // Every size was checked against 32 bits by require_dense / conv_geometry, pads by the caller.
    ConvSpec s{};
    s.n = uint32_t(g.n);
    s.c = uint32_t(g.c);
    s.h = uint32_t(g.h);
    s.w = uint32_t(g.w);
    s.m = uint32_t(m);
    s.oh = uint32_t(oh);
    s.ow = uint32_t(ow);
    s.kh = uint32_t(g.kh);
    s.kw = uint32_t(g.kw);
    s.sh = uint32_t(g.sh);
    s.sw = uint32_t(g.sw);
    s.dh = uint32_t(g.dh);
    s.dw = uint32_t(g.dw);
    s.pt = int32_t(pad_top);
    s.pl = int32_t(pad_left);
    s.group = uint32_t(group);
    s.has_bias = has_bias;
    s.has_residual = has_residual;
    s.act = act;
    return s;
}

std::vector<uint32_t> GemmSpec::values() const {
    std::vector<uint32_t> v{
        m, n, k, a_si, a_sk, b_sk, b_sj, c_si, c_sj, has_c ? 1u : 0u, has_residual ? 1u : 0u, uint32_t(act)};
    v.insert(v.end(), batch.begin(), batch.end());
    v.insert(v.end(), a_batch.begin(), a_batch.end());
    v.insert(v.end(), b_batch.begin(), b_batch.end());
    v.push_back(a_padded ? 1u : 0u);
    return v;
}

std::array<uint32_t, 3> tile_groups(gpu::Device& device, const char* op, uint64_t rows, uint64_t cols,
                                    uint64_t batches, uint32_t block_rows, uint32_t block_cols) {
    const auto& max = device.caps().max_workgroup_count;
    const uint64_t row_blocks = (rows + block_rows - 1) / block_rows;
    const uint64_t col_blocks = (cols + block_cols - 1) / block_cols;
    if (row_blocks > max[1])
        unsupported(op, std::to_string(rows) +
                            " output rows need more workgroups than the device's limit of " +
                            std::to_string(max[1]));
    return {uint32_t(std::min<uint64_t>(col_blocks, max[0])), uint32_t(row_blocks),
            uint32_t(std::min<uint64_t>(batches, max[2]))};
}

namespace {

// Whether the device lists 16x16x16 f16 x f16 cooperative matrices accumulating in `acc`.
bool has_f16_shape(const gpu::Device& device, VkComponentTypeNV acc) {
    for (const gpu::CoopMatShape& s : device.caps().coopmat_shapes)
        if (s.m == 16 && s.n == 16 && s.k == 16 && s.a_type == VK_COMPONENT_TYPE_FLOAT16_NV &&
            s.b_type == VK_COMPONENT_TYPE_FLOAT16_NV && s.c_type == acc && s.d_type == acc)
            return true;
    return false;
}

} // namespace

bool coop_available(const gpu::Device& device, DType dtype) {
    const gpu::Capabilities& caps = device.caps();
    if (dtype != DType::f16 || !caps.coopmat_nv || !caps.float16 || !caps.storage16) return false;
    if (caps.subgroup_size != 32 || caps.max_workgroup_invocations < 256) return false;
    // The largest tile stages 29 KiB (conv/coopmat_tile.glsl: A, B and the epilogue fragments).
    if (caps.max_shared_memory < 32 * 1024) return false;
    return has_f16_shape(device, VK_COMPONENT_TYPE_FLOAT32_NV);
}

void check_accumulation(const char* op, Accumulation accumulation) {
    if (accumulation != Accumulation::F32 && accumulation != Accumulation::F16)
        fail(op, "accumulation", "unknown accumulation " + std::to_string(uint32_t(accumulation)));
}

bool coop_f16_accumulators(const gpu::Device& device) {
    return has_f16_shape(device, VK_COMPONENT_TYPE_FLOAT16_NV);
}

const char* coop_variant(const gpu::Device& device, Accumulation want, Accumulation& got) {
    got = want == Accumulation::F16 && coop_f16_accumulators(device) ? Accumulation::F16 : Accumulation::F32;
    return got == Accumulation::F16 ? "f16c" : "f16";
}

bool coop_tap_major(const ConvSpec& s) {
    return s.ow % 8 == 0 && s.sw == 1 && s.dw == 1 && s.w % 8 == 0 && s.c % 32 == 0;
}

const HaloTile* halo_tile(const gpu::Device& device, const ConvSpec& s, uint32_t rows) {
    static const bool disabled = [] {
        const char* v = std::getenv("VKML_DISABLE_CONV_HALO");
        return v && *v && std::string(v) != "0";
    }();
    static const std::string forced = [] {
        const char* v = std::getenv("VKML_HALO_TILE");
        return v ? std::string("_") + v : std::string();
    }();
    // Must match the conv_halo lines of shaders/conv.list.
    static const HaloTile tiles[] = {
        {"conv_halo_h16", 16, 256, 8, 3},   {"conv_halo_h32", 32, 256, 8, 3},   {"conv_halo_h64", 64, 256, 8, 3},
        {"conv_halo_h64f", 64, 128, 8, 3},  {"conv_halo_h64s", 64, 128, 4, 3},  {"conv_halo5_h16", 16, 256, 8, 5},
        {"conv_halo5_h32", 32, 256, 8, 5},  {"conv_halo5_h64", 64, 256, 8, 5},  {"conv_halo9_h16", 16, 256, 8, 9},
        {"conv_halo9_h32", 32, 256, 8, 9},  {"conv_halo3f_h16", 16, 256, 8, 3, true},
        {"conv_halo3f_h32", 32, 256, 8, 3, true}, {"conv_halo3f_h64", 64, 256, 8, 3, true},
        {"conv_halo9f_h16", 16, 256, 8, 9, true}, {"conv_halo9f_h32", 32, 256, 8, 9, true},
        {"conv_halo9m_h32", 32, 256, 8, 9, false, true}, {"conv_halo3m_h16", 16, 256, 8, 3, false, true},
        // Stride 2: tiles of 4 rows of 32 outputs.
        {"conv_halo_s2_h16", 16, 128, 4, 3, false, false, 2}, {"conv_halo_s2_h32", 32, 256, 4, 3, false, false, 2},
        {"conv_halo_s2_h64", 64, 256, 4, 3, false, false, 2, 1}, {"conv_halo_s2_h32s", 32, 128, 4, 3, false, false, 2},
        {"conv_halo_s2_h64s", 64, 128, 4, 3, false, false, 2, 1},
        {"conv_halo5_s2_h32", 32, 256, 4, 5, false, false, 2, 1},
        // 16-row tiles (two 8-row tiles' work a workgroup: each window row and weight staged once for
        // twice the pixels; 64x64 subgroup tiles at 64 rows, unpadded pixels where the window would
        // not fit 48 KiB padded): Auto's choice on large maps (below), after the defaults.
        {"conv_halo_h16w", 16, 256, 16, 3}, {"conv_halo_h32t", 32, 256, 16, 3, false, false, 1, 0, true},
        {"conv_halo_h64t", 64, 256, 16, 3, false, false, 1, 0, true},
        {"conv_halo5_h64t", 64, 256, 16, 5, false, false, 1, 0, true}};
    if (disabled || s.kh != s.kw || (s.kh != 3 && s.kh != 5 && s.kh != 9)) return nullptr;
    if (s.sh != s.sw || (s.sh != 1 && s.sh != 2) || s.dh != 1 || s.dw != 1 || s.group != 1) return nullptr;
    const uint32_t stride = s.sh;
    if (s.pt < 0 || s.pt >= int32_t(s.kh) || s.pl < 0 || s.pl >= int32_t(s.kw)) return nullptr;
    // Few input channels (an RGB first layer): the kernel's columns become channels, where they
    // fill 3/4 of their 16-deep fragments (a 9x9 RGB layer: 27 of 32; a 3x3 one, 9 of 16, ran
    // slower than the implicit GEMM on an H100: 120 against 95 us for 3->64 at 960x540).
    const bool fold = s.c % 8 != 0;
    const uint64_t virt = uint64_t(s.c) * s.kw;
    if (fold && (stride != 1 || virt > 64 || virt * 4 < (virt + 15) / 16 * 16 * 3)) return nullptr;
    // Few output channels (a 9x9 32->3 last layer): the kernel's columns become output rows.
    bool mfold = false;
    for (const HaloTile& t : tiles)
        mfold |= !fold && t.mfold && t.ks == s.kh && t.stride == stride && uint64_t(s.m) * s.kw <= t.rows;
    const HaloTile* pick = nullptr;
    const HaloTile* largest = nullptr;
    for (const HaloTile& t : tiles) {
        if (t.ks != s.kh || t.stride != stride || t.fold != fold || t.mfold != mfold) continue;
        if (!forced.empty()) {
            if (std::string(t.shader).ends_with(forced)) pick = &t;
        } else if (!pick && t.rows >= std::min<uint32_t>(s.m, 64)) {
            pick = &t;
        }
        if (t.threads == 256 && (!largest || t.rows > largest->rows)) largest = &t;
    }
    // 9x9 (and 5x5 stride 2) comes with at most 32 rows (a style network's first and last layers,
    // 3 -> 32 and 32 -> 3): more take the largest tile in several row blocks.
    if (!pick && forced.empty() && (s.kh == 9 || stride == 2)) pick = largest;
    // The window: (tile rows - 1) x stride + KS rows by 48 columns (32 folded; at stride 2 72, or
    // 80 at 5x5) of 16 channels (3 units of 16 bytes a pixel, 2 unpadded); the weights: rows x
    // (taps of KG kernel rows x 16 channels + 1 unit of padding).
    auto fits = [&](const HaloTile& t) {
        const bool folded = t.fold || t.mfold;
        const uint32_t kg = t.kg ? t.kg : (folded || t.ks == 3 ? t.ks : 1);
        const uint32_t kwv = folded ? 1 : t.ks;
        const uint32_t window_rows = (t.tile_rows - 1) * t.stride + t.ks;
        const uint32_t window_cols = t.fold ? 32 : t.stride == 2 ? 64 + (t.ks <= 3 ? 8 : 16) : 48;
        const uint32_t bytes = (window_rows * window_cols * (t.unpadded ? 2 : 3) + t.rows * (kg * kwv * 2 + 1)) * 16;
        return device.caps().max_shared_memory >= bytes;
    };
    // Large maps take the 16-row tiles: at 960x540 on an H200 esrgan-slim's 3x3 64->64 layers ran
    // 254 -> 200 and 274 -> 229 us, its 5x5 64->64 one 564 -> 406, 64->32 214 -> 158 and 32->12
    // 103 -> 66 us (VKML_HALO_TALL_MIN: the fewest 16-row tiles, times row blocks, that take them;
    // small maps keep the 8-row tiles' finer grid).
    static const auto tall_min = uint64_t(tuning_knob("VKML_HALO_TALL_MIN", 512, 0, INT64_MAX));
    if (pick && forced.empty() && stride == 1 && !fold && !mfold && rows != 8 && (tall_min > 0 || rows == 16)) {
        for (const HaloTile& t : tiles) {
            if (t.tile_rows != 16 || t.ks != s.kh || t.stride != 1 || t.fold || t.mfold ||
                t.rows < std::min<uint32_t>(s.m, 64) || (s.m <= 64 && t.rows >= 2 * s.m) || !fits(t))
                continue;
            const uint64_t count = uint64_t(s.n) * ((s.ow + 31) / 32) * ((s.oh + 15) / 16) * ((s.m + t.rows - 1) / t.rows);
            if (count >= tall_min || rows == 16) pick = &t;
            break;
        }
    }
    return pick && fits(*pick) ? pick : nullptr;
}

uint64_t coop_min_rows() {
    // Below 12 output channels the scalar kernels win: a 3x3 64->4 conv at 960x540 took 0.77 ms
    // direct and 3.9 ms on 16-row tensor-core tiles (H100), each tile gathering all of K for 4 rows.
    static const auto rows = uint64_t(tuning_knob("VKML_COOP_MIN_ROWS", 12, 1, INT64_MAX));
    return rows;
}

uint64_t split_target() {
    // About two workgroups per streaming multiprocessor of an H100 (132).
    static const auto target = uint64_t(tuning_knob("VKML_SPLIT_TARGET", 256, 0, INT64_MAX));
    return target;
}

namespace {
// Must match the -DCM_* lines of shaders/conv.list.
const CoopTile coop_tiles[] = {{"_cm16", 16, 128, 64},
                               {"_cm32", 32, 128, 128},
                               {"_cm64", 64, 128, 128},
                               {"_cm128", 128, 128, 256},
                               {"_cm64w", 64, 256, 256},
                               // GEMM only (coop_for):
                               {"_cm128q", 128, 128, 128},
                               {"_cm256", 128, 256, 256}};

// VKML_COOP_TILE=cm16|cm32|cm64|cm64w|cm128 (or, for GEMMs, cm128q|cm256) forces one tile (for
// tuning with vkml bench ops); "" where unset.
const std::string& forced_tile() {
    static const std::string forced = [] {
        const char* v = std::getenv("VKML_COOP_TILE");
        return v ? std::string("_") + v : std::string();
    }();
    return forced;
}

const CoopTile& coop_tile_named(std::string_view suffix) {
    for (const CoopTile& t : coop_tiles)
        if (suffix == t.suffix) return t;
    throw Error(ErrorCode::Generic, "no tensor-core tile " + std::string(suffix));
}
} // namespace

const CoopTile& coop_tile(uint64_t rows, bool wide) {
    const auto& tiles = coop_tiles;
    for (const CoopTile& t : tiles)
        if (forced_tile() == t.suffix) return t;
    // Wide: the 256-column 64-row tile (fewer, longer tiles): the implicit GEMM's gathers (0.97
    // against 1.17 ms for a 3x3 64->64 conv at 960x540 on an H100) and 1x1 convolutions over many
    // pixels (64->64 at 960x540: 80 against 110 us); other plain GEMMs the 128-column one.
    if (wide && rows > 32 && rows <= 64) return tiles[4];
    for (int i = 0; i < 4; ++i)
        if (rows <= tiles[i].rows) return tiles[i];
    return tiles[3];
}

const CoopTile* coop_for(const gpu::Device& device, DType dtype, uint64_t rows, uint64_t cols,
                         uint64_t batches) {
    if (rows < coop_min_rows() || !coop_available(device, dtype)) return nullptr;
    // GEMMs of 128 rows or more take 4x4 fragments a subgroup (64 x 64: half the shared-memory
    // loads per product of the 2x4 fragments of cm128) where the tile count still fills the device
    // (a workgroup per multiprocessor): cm256 (128 x 256, one workgroup a multiprocessor at 215
    // registers) first, else cm128q (128 x 128, 2x2 subgroups, two a multiprocessor). H200, f16,
    // us, cm128 / cm128q / cm256: MatMul 2048^3 86 / 72 / - (128 tiles of cm256: too few),
    // 4096^3 755 / 656 / 566, 4096x512x4096 101 / 88 / 82. VKML_GEMM_BIG_TILE=cm128q (not
    // cm256) or none (cm128) for tuning.
    static const std::string big = [] {
        const char* v = std::getenv("VKML_GEMM_BIG_TILE");
        return v ? std::string(v) : std::string("cm256");
    }();
    if (rows >= 128 && forced_tile().empty() && big != "none") {
        const uint64_t sms = std::max<uint64_t>(device.caps().multiprocessors, 1);
        auto fills = [&](const CoopTile& b) {
            return (rows + b.rows - 1) / b.rows * ((cols + b.cols - 1) / b.cols) * batches >= sms;
        };
        const CoopTile &wide = coop_tile_named("_cm256"), &square = coop_tile_named("_cm128q");
        if (big != "cm128q" && fills(wide)) return &wide;
        if (fills(square)) return &square;
    }
    return &coop_tile(rows);
}

const gpu::Pipeline& gemm_pipeline(gpu::Device& device, const char* op, DType dtype, const GemmSpec& spec,
                                   const CoopTile* coop, const char* variant) {
    return device.pipeline(
        {.shader = coop ? shader_for(device, op, std::string("conv_gemm") + coop->suffix, std::string_view(variant))
                        : shader_for(device, op, "conv_gemm", dtype),
         .bindings = 5,
         .push_constant_bytes = 16,
         .workgroup = coop ? std::array<uint32_t, 3>{coop->threads, 1, 1} : tile_workgroup,
         .specialization = spec.values()});
}

std::array<uint32_t, 3> gemm_groups(gpu::Device& device, const char* op, const GemmSpec& spec,
                                    const CoopTile* coop) {
    uint64_t batches = 1;
    for (uint32_t b : spec.batch) batches *= b;
    return coop ? coop_persistent(device, tile_groups(device, op, spec.m, spec.n, batches, coop->rows, coop->cols))
                : tile_groups(device, op, spec.m, spec.n, batches);
}

std::array<uint32_t, 3> coop_persistent(const gpu::Device& device, std::array<uint32_t, 3> groups) {
    // Two workgroups a multiprocessor where the device reports them: on an H200 (132) esrgan-slim's
    // 1x1 layers and its implicit-GEMM first layer ran 2-8 us faster each (VKML_COOP_GROUPS=264;
    // 132: 1-7 us, 396: as 264).
    static const int64_t knob = tuning_knob("VKML_COOP_GROUPS", -1, -1, INT64_MAX);
    const uint64_t cap = knob >= 0 ? uint64_t(knob) : 2 * uint64_t(device.caps().multiprocessors);
    if (cap > 0)
        groups[0] = uint32_t(std::clamp<uint64_t>(cap / (uint64_t(groups[1]) * groups[2]), 1, groups[0]));
    return groups;
}

} // namespace vkml::ops::detail::conv
