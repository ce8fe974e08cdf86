// Resize (opset 19): nearest over any dimensions (shaders/layout/resize_nearest.comp), linear and
// cubic over the last two (resize_interp.comp). Every shape and attribute is a specialization
// constant, so each Resize gets a pipeline with no per-element attribute branching.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <numeric>

#include "layout_common.hpp"

namespace vkml::ops {
namespace {

enum class Ctm : uint32_t {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfCropAndResize,
    TfHalfPixelForNn
};

template <class Enum, size_t N>
Enum parse(const char* field, const std::string& value, const std::array<const char*, N>& names) {
    for (size_t i = 0; i < N; ++i)
        if (value == names[i]) return Enum(i);
    std::string list;
    for (size_t i = 0; i < N; ++i) list += (i ? (i + 1 == N ? " or " : ", ") : "") + std::string(names[i]);
    fail("Resize", field, "'" + value + "' is not " + list);
}

uint32_t bits(float f) {
    return std::bit_cast<uint32_t>(f);
}

// One dimension's resampling: the scale as num / den (so sizes give the exact ratio) and the roi.
struct Axis {
    int64_t in = 1, out = 1;
    float num = 1.f, den = 1.f, roi0 = 0.f, roi1 = 1.f;
    bool identity = true;
    bool listed = false; // in `axes`
};

} // namespace

std::unique_ptr<Resize> Resize::create(gpu::Device& device, const ResizeDesc& desc) {
    detail::require_float("Resize", "input", desc.input);
    const Shape& in = desc.input.shape;
    const size_t r = in.rank();
    if (r == 0) fail("Resize", "input", "must have rank 1 or more");
    enum class Mode : uint32_t { Nearest, Linear, Cubic };
    enum class Policy : uint32_t { Stretch, NotLarger, NotSmaller };
    const Mode mode = parse<Mode>("mode", desc.mode, std::array{"nearest", "linear", "cubic"});
    const Ctm ctm = parse<Ctm>("coordinate_transformation_mode", desc.coordinate_transformation_mode,
                               std::array{"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                          "align_corners", "asymmetric", "tf_crop_and_resize",
                                          "tf_half_pixel_for_nn"});
    const uint32_t nearest =
        parse<uint32_t>("nearest_mode", desc.nearest_mode,
                        std::array{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
    const Policy policy = parse<Policy>("keep_aspect_ratio_policy", desc.keep_aspect_ratio_policy,
                                        std::array{"stretch", "not_larger", "not_smaller"});
    if (desc.antialias != 0) unsupported("Resize", "antialias is not supported");
    if (desc.exclude_outside != 0 && desc.exclude_outside != 1)
        fail("Resize", "exclude_outside", "must be 0 or 1, is " + std::to_string(desc.exclude_outside));

    std::vector<size_t> axes;
    std::vector<bool> seen(r, false);
    for (int64_t a : desc.axes) {
        const size_t i = detail::normalize_axis("Resize", "axes", a, r);
        if (seen[i])
            fail("Resize", "axes", detail::layout_list(desc.axes) + " repeats axis " + std::to_string(i));
        seen[i] = true;
        axes.push_back(i);
    }
    if (desc.axes.empty())
        for (size_t i = 0; i < r; ++i) axes.push_back(i);
    const size_t n = axes.size();
    if (desc.scales.empty() == desc.sizes.empty())
        fail("Resize", desc.scales.empty() ? "scales" : "sizes", "give exactly one of scales and sizes");
    if (!desc.scales.empty() && desc.scales.size() != n)
        fail("Resize", "scales",
             "has " + std::to_string(desc.scales.size()) + " values for " + std::to_string(n) + " axes");
    if (!desc.sizes.empty() && desc.sizes.size() != n)
        fail("Resize", "sizes",
             "has " + std::to_string(desc.sizes.size()) + " values for " + std::to_string(n) + " axes");
    if (!desc.scales.empty() && policy != Policy::Stretch)
        fail("Resize", "keep_aspect_ratio_policy", "applies to sizes only, not to scales");
    const bool crop = ctm == Ctm::TfCropAndResize;
    if (crop && !desc.roi.empty() && desc.roi.size() != 2 * n)
        fail("Resize", "roi",
             "has " + std::to_string(desc.roi.size()) + " values, expected " + std::to_string(2 * n) +
                 " (start and end per axis)");

    std::vector<Axis> dims(r);
    for (size_t i = 0; i < r; ++i) dims[i].in = dims[i].out = in[i];
    // not_larger / not_smaller: one scale for every axis, the ratio of the limiting one.
    size_t keep = 0;
    if (!desc.sizes.empty() && policy != Policy::Stretch) {
        for (size_t i = 0; i < n; ++i) {
            if (in[axes[i]] <= 0) fail("Resize", "input", "resized dimensions must not be empty");
            const double s = double(desc.sizes[i]) / double(in[axes[i]]);
            const double best = double(desc.sizes[keep]) / double(in[axes[keep]]);
            if (policy == Policy::NotLarger ? s < best : s > best) keep = i;
        }
    }
    for (size_t i = 0; i < n; ++i) {
        Axis& ax = dims[axes[i]];
        ax.listed = true;
        if (ax.in <= 0) fail("Resize", "input", "resized dimensions must not be empty");
        if (crop && !desc.roi.empty()) {
            ax.roi0 = desc.roi[i];
            ax.roi1 = desc.roi[i + n];
        }
        if (!desc.scales.empty()) {
            const float s = desc.scales[i];
            if (!(s > 0.f)) fail("Resize", "scales", "must be positive, got " + std::to_string(s));
            ax.num = s;
            const double extent = crop ? double(ax.roi1) - double(ax.roi0) : 1.0;
            ax.out = detail::floor_size("Resize", "scales", double(ax.in) * extent * double(s));
        } else {
            if (desc.sizes[i] <= 0)
                fail("Resize", "sizes", detail::layout_list(desc.sizes) + " must be positive");
            if (policy == Policy::Stretch) {
                ax.out = desc.sizes[i];
                ax.num = float(ax.out);
                ax.den = float(ax.in);
            } else {
                ax.num = float(desc.sizes[keep]);
                ax.den = float(in[axes[keep]]);
                // ONNX round_int: halfway rounds up.
                ax.out = detail::floor_size("Resize", "sizes",
                                            double(ax.num) / double(ax.den) * double(ax.in) + 0.5);
            }
        }
        if (ax.out <= 0)
            fail("Resize", desc.scales.empty() ? "sizes" : "scales",
                 "give an empty output dimension " + std::to_string(axes[i]));
    }
    // A dimension whose every output coordinate samples exactly its own input coordinate.
    for (Axis& ax : dims) {
        const bool same_len = ax.out == ax.in;
        switch (ctm) {
        case Ctm::AlignCorners: // scales: the resized length is in * scale, unrounded
            ax.identity = same_len && (ax.in == 1 || ax.num == ax.den * float(ax.out) / float(ax.in));
            break;
        case Ctm::TfHalfPixelForNn: // (x + 0.5) / scale moves even an unscaled axis (as ONNX's reference)
            ax.identity = !ax.listed || ax.in == 1;
            break;
        case Ctm::TfCropAndResize:
            ax.identity = same_len && (ax.in == 1 || (ax.roi0 == 0.f && ax.roi1 == 1.f));
            break;
        default:
            ax.identity = same_len && (ax.in == 1 || ax.num == ax.den);
            break;
        }
    }

    std::vector<int64_t> out;
    for (const Axis& ax : dims) out.push_back(ax.out);
    const Shape out_shape = detail::shape_of("Resize", desc.scales.empty() ? "sizes" : "scales", out);
    if (out_shape.elements() > int64_t(UINT32_MAX) || in.elements() > int64_t(UINT32_MAX))
        fail("Resize", "input", "has more elements than 32-bit indices reach");

    auto op = std::unique_ptr<Resize>(new Resize(device));
    op->count_ = uint32_t(out_shape.elements());
    op->extrapolation_ = desc.extrapolation_value;
    std::vector<uint32_t> spec;
    const char* shader = nullptr;
    // Nearest by whole factors over the last two dimensions, in a mode whose source coordinate
    // is then oh / KH (asymmetric floor; asymmetric round_prefer_floor at factors up to 2;
    // half_pixel and pytorch_half_pixel rounding (o + 0.5) / k - 0.5, which lies strictly within
    // half a step of oh / KH): layout/upsample.comp, eight outputs an invocation.
    auto whole = [&](const Axis& ax) -> int64_t {
        if (ax.identity) return 1;
        if (ax.out % ax.in != 0 || double(ax.num) != double(ax.den) * double(ax.out / ax.in)) return 0;
        return ax.out / ax.in;
    };
    const int64_t kh = r >= 2 ? whole(dims[r - 2]) : 1, kw = whole(dims[r - 1]);
    bool rest_identity = true;
    for (size_t d = 0; d + 2 < r; ++d) rest_identity = rest_identity && dims[d].identity;
    const bool round_mode = nearest == 0 || nearest == 1; // round_prefer_floor / _ceil
    const bool floors = (ctm == Ctm::Asymmetric && (nearest == 2 || (nearest == 0 && kh <= 2 && kw <= 2))) ||
                        ((ctm == Ctm::HalfPixel || ctm == Ctm::PytorchHalfPixel) && round_mode);
    if (mode == Mode::Nearest && rest_identity && kh > 0 && kw > 0 && floors && (kh > 1 || kw > 1) &&
        (r < 2 || dims[r - 2].out > 1) && dims[r - 1].out > 1) {
        op->upsample_groups_ = uint32_t((uint64_t(out_shape.elements()) + 7) / 8);
        op->upsample_pipeline_ = &device.pipeline(
            {.shader = detail::shader_for(device, "Resize", "layout_upsample", desc.input.dtype),
             .bindings = 2,
             .push_constant_bytes = sizeof(float),
             .workgroup = {64, 1, 1},
             .specialization = {op->upsample_groups_, uint32_t(out_shape.elements()),
                                uint32_t(r >= 2 ? dims[r - 2].in : 1), uint32_t(dims[r - 1].in), uint32_t(kh),
                                uint32_t(kw)}});
    }
    if (mode == Mode::Nearest) {
        shader = "layout_resize_nearest";
        spec = {op->count_, uint32_t(ctm), nearest};
        // Padded to 6 dimensions with leading 1s.
        for (size_t d = 0; d < gpu::max_rank; ++d) {
            const Axis ax = d + r < gpu::max_rank ? Axis{} : dims[d + r - gpu::max_rank];
            spec.insert(spec.end(), {uint32_t(ax.in), uint32_t(ax.out), bits(ax.num), bits(ax.den),
                                     bits(ax.roi0), bits(ax.roi1), ax.identity ? 0u : 1u});
        }
    } else {
        for (size_t d = 0; d + 2 < r; ++d)
            if (!dims[d].identity)
                unsupported("Resize", desc.mode + " resizes only the last two dimensions; dimension " +
                                          std::to_string(d) + " of " + in.str() + " changes");
        shader = "layout_resize_interp";
        const Axis h = r >= 2 ? dims[r - 2] : Axis{};
        const Axis& w = dims[r - 1];
        spec = {op->count_,
                uint32_t(ctm),
                mode == Mode::Cubic ? 1u : 0u,
                bits(desc.cubic_coeff_a),
                uint32_t(desc.exclude_outside),
                uint32_t(h.in),
                uint32_t(w.in),
                uint32_t(h.out),
                uint32_t(w.out)};
        for (const Axis* ax : {&h, &w})
            spec.insert(spec.end(), {bits(ax->num), bits(ax->den), bits(ax->roi0), bits(ax->roi1)});
        // Four outputs of a row per invocation where rows divide by four (Anime4K's x2 linear
        // upscale of the image: 62 us at 1920x1080 f16 on an H100 one output per invocation).
        const uint32_t per = w.out % 4 == 0 ? 4 : 1;
        op->count_ /= per;
        spec[0] = op->count_;
        spec.push_back(per);
        // Linear by whole factors 1, 2 or 4 (the x2 / x4 upsample of super-resolution networks),
        // rows of whole runs of 16 bytes (f32: 4 outputs; f16: 8, or 4 in 8 bytes where rows are
        // not whole 8-runs): layout/resize_up.comp. Each invocation writes its run in `strip`
        // consecutive output rows (neighbouring invocations neighbouring runs: coalesced stores)
        // and interpolates each input row the strip needs once along the row; those rows are all
        // loaded up front, the middle columns as vectors. (One output row per invocation, its two
        // input rows loaded and blended for each: x2 3ch 960x540 reached 31 % (f16) and 40 % (f32)
        // of the copy bandwidth on the H200; one output per invocation 19 % on an H100.)
        const int64_t fh = r >= 2 ? whole(dims[r - 2]) : 1, fw = whole(dims[r - 1]);
        const bool periodic = ctm == Ctm::HalfPixel || ctm == Ctm::HalfPixelSymmetric ||
                              ctm == Ctm::PytorchHalfPixel || ctm == Ctm::Asymmetric;
        const bool f16 = desc.input.dtype == DType::f16;
        const uint32_t run = f16 && w.out % 8 == 0 ? 8 : w.out % 4 == 0 ? 4 : 0;
        // Output rows per invocation, a multiple of fh: 8 where fh >= 2, else 4 (the kernel holds
        // at most six input rows, strip / fh + 2). H200, f16 3ch 960x540, us for 4 / 8 rows:
        // x2 7.5-7.7 / 7.4-7.6, align_corners 8.3-8.4 / 8.1-8.2; f32 the same either way.
        // VKML_RESIZE_STRIP=4: four rows throughout (tuning).
        static const int64_t strip_knob = detail::tuning_knob("VKML_RESIZE_STRIP", 8, 4, 8);
        const uint32_t strip = strip_knob == 8 && fh >= 2 ? 8 : 4;
        auto factor_ok = [](int64_t f) { return f == 1 || f == 2 || f == 4; };
        // align_corners: x (in - 1) den / (in num - den) as a reduced ratio of integers (sizes
        // and whole scales give one) whose numerator times x stays within 32 bits; the kernel
        // tells its taps by integer arithmetic on it (x2 3ch 960x540 f16 on an H200 took 12.7 us
        // with resize_coord.glsl's float search a tap, 9.5 with a division a run and a search of
        // the run's input window, 8.1-8.2 with the periodic modes' loads). {0, 0}: none.
        auto corner_ratio = [&](const Axis& ax) -> std::array<uint32_t, 2> {
            if (periodic || ax.in == 1) return {0, 1}; // (one input sample: every tap is 0)
            const double a = double(ax.in - 1) * double(ax.den), b = double(ax.in) * double(ax.num) - double(ax.den);
            if (a != std::floor(a) || b != std::floor(b) || a < 0 || b < 1 || a > 4294967295.0 || b > 4294967295.0)
                return {0, 0};
            const uint64_t g = std::gcd(uint64_t(a), uint64_t(b)), num = uint64_t(a) / g, den = uint64_t(b) / g; // (b >= 1)
            // (The kernel's o num - (o / k - 1) den lies below 2 den: den below 2^31 keeps it in
            // 32 bits.)
            if (uint64_t(ax.out) * num > 0xffffffffull || den > 0x7fffffffull) return {0, 0};
            return {uint32_t(num), uint32_t(den)};
        };
        const auto ac_h = corner_ratio(h), ac_w = corner_ratio(w);
        if (mode == Mode::Linear && desc.exclude_outside == 0 && (periodic || ctm == Ctm::AlignCorners) &&
            factor_ok(fh) && factor_ok(fw) && run != 0 && ac_h[1] != 0 && ac_w[1] != 0) {
            const uint32_t cols = run / uint32_t(fw); // input columns of a run
            const uint32_t vec_in = cols % 4 == 0 && w.in % 4 == 0   ? 4
                                    : cols % 2 == 0 && w.in % 2 == 0 ? 2
                                                                     : 0;
            const int64_t oh = h.out, planes = out_shape.elements() / (oh * w.out);
            op->linear_up_run_ = run;
            op->linear_up_count_ =
                detail::to_u32("Resize", "input", planes * ((oh + strip - 1) / strip) * (w.out / run));
            op->linear_up_pipeline_ = &device.pipeline(
                {.shader = detail::shader_for(device, "Resize", "layout_resize_up", desc.input.dtype),
                 .bindings = 2,
                 .workgroup = {64, 1, 1},
                 .specialization = {op->linear_up_count_, uint32_t(ctm), uint32_t(h.in), uint32_t(w.in),
                                    uint32_t(fh), uint32_t(fw), run, periodic ? 1u : 0u, vec_in, strip, ac_h[0],
                                    ac_h[1], ac_w[0], ac_w[1]}});
        }
    }
    op->pipeline_ =
        &device.pipeline({.shader = detail::shader_for(device, "Resize", shader, desc.input.dtype),
                          .bindings = 2,
                          .push_constant_bytes = sizeof(float),
                          .workgroup = {64, 1, 1},
                          .specialization = spec});
    op->inputs_ = {desc.input};
    op->outputs_ = {{out_shape, desc.input.dtype}};
    return op;
}

void Resize::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    // The upsample kernel stores 16-byte units (f16): at an output offset off that boundary the
    // general kernel runs (the Session's arena is aligned; a caller's tensor may not be).
    if (upsample_pipeline_ && buffers[1].offset % 16 == 0 && buffers[0].offset % 4 == 0)
        detail::dispatch_1d(cmd, *upsample_pipeline_, buffers, extrapolation_, upsample_groups_);
    else if (linear_up_pipeline_ && buffers[0].offset % 16 == 0 && buffers[1].offset % 16 == 0)
        cmd.dispatch(*linear_up_pipeline_, buffers, nullptr, 0, cmd.groups_for(*linear_up_pipeline_, linear_up_count_));
    else
        detail::dispatch_1d(cmd, *pipeline_, buffers, extrapolation_, count_);
}

} // namespace vkml::ops
