#pragma once
// Operator family "detect": NonMaxSuppression on the GPU, and the conversions between images
// (render targets, textures) and NCHW tensors that put a detector or any image model next to a
// renderer without a trip through host memory.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/gpu/image.hpp"
#include "vkml/ops/op.hpp"

namespace vkml::ops {

// ---------------------------------------------------------------------------------------------
// NonMaxSuppression (ONNX opset 11+). Inputs: boxes [B, N, 4] and scores [B, C, N], both f32 or
// both f16. ONNX's optional inputs max_output_boxes_per_class, iou_threshold and score_threshold
// are descriptor values here, fixed at create().
//
// ONNX's output has a data-dependent first dimension; vkml's has a fixed capacity instead:
//   outputs[0] selected_indices [B * C * min(max_output_boxes_per_class, N), 3], rows
//              (batch, class, box) in ONNX Runtime's order (batch, then class, then descending
//              score), followed by rows of -1 up to the capacity;
//   outputs[1] count [1], the number of valid rows.
// Both have dtype `index_dtype` (i64 as in ONNX, or i32).
// Scratch: scratch_bytes() (about 8 * B * C * P + 4 * B * C * (K + 2), P = N rounded up to a power
// of two, K = min(max_output_boxes_per_class, N)), at an offset aligned to the device's
// minStorageBufferOffsetAlignment. With a score threshold (NmsSort::Auto, N not too large), record() issues 3
// dispatches: one workgroup per group gathers its candidates, sorts them in shared memory and
// sweeps them, then the scan and the scatter (for B * C = 1, the first writes the outputs: one
// dispatch). Without one (or NmsSort::Global) every box is
// sorted: 4 dispatches plus the sort's (1 when P <= 512, else about
// log2(P / 512)^2 / 2 + 2 log2(P / 512) more). Barriers separate the dispatches.
//
// Semantics, as ONNX Runtime: a box is a candidate when its score is strictly greater than
// score_threshold (all boxes when there is none; NaN scores never are); candidates are taken by
// descending score, equal scores by ascending box index; a candidate is suppressed when its IoU
// with an already selected box of the same batch and class is strictly greater than
// iou_threshold; boxes with zero or negative area, and pairs without overlap, never suppress.
// center_point_box 0: [y1, x1, y2, x2], any diagonal pair of corners; 1: [x_center, y_center,
// width, height]. IoU is computed in f32.
// How NonMaxSuppression orders a group's candidates. Global: every box's key (non-candidates as
// sentinels) by a bitonic sort over all workgroups of the grid; Compact: one workgroup per group
// gathers the candidates and sorts only them, in shared memory while they fit (see
// NonMaxSuppressionDesc::compact_capacity), else in the group's scratch keys (slowly, by that one
// workgroup). Auto: Compact where there is a score threshold (which leaves few candidates of many
// boxes) and N is at most twice the candidates shared memory holds, else Global.
enum class NmsSort : uint8_t { Auto, Global, Compact };

struct NonMaxSuppressionDesc {
    TensorDesc boxes;  // [B, N, 4]
    TensorDesc scores; // [B, C, N]
    // ONNX's default 0 means "select nothing"; vkml needs at least 1 (an empty output has no
    // tensor). Values above N are clamped to N.
    int64_t max_output_boxes_per_class = 0;
    float iou_threshold = 0.f; // in [0, 1]
    std::optional<float> score_threshold;
    int64_t center_point_box = 0;   // 0 or 1
    DType index_dtype = DType::i64; // i64 or i32, for both outputs
    NmsSort sort = NmsSort::Auto;
    // Candidates the compact sort holds in shared memory (a power of two, at least 2); 0: as many
    // as the device's shared memory allows, at most 2048. Tests make it small to cover the spill.
    uint32_t compact_capacity = 0;
};

class NonMaxSuppression final : public Op {
public:
    static std::unique_ptr<NonMaxSuppression> create(gpu::Device& device, const NonMaxSuppressionDesc& desc);
    const char* type() const override { return "NonMaxSuppression"; }
    // Rows of selected_indices (B * C * min(max_output_boxes_per_class, N)).
    uint32_t capacity() const { return groups_ * slots_; }
    // Largest N the selection kernel's shared-memory bitmask allows on `device`.
    static int64_t max_boxes(const gpu::Device& device);

    NonMaxSuppression(gpu::Device& device, const NonMaxSuppressionDesc& desc); // use create()

    // Keys one sort workgroup orders in shared memory; above it (N rounded up to a power of
    // two), global bitonic passes run between the block sorts.
    uint32_t sort_block() const { return block_; }
    // Whether the compact sort runs (NmsSort::Compact, asked for or chosen), and the candidates it
    // sorts in shared memory.
    bool compact() const { return compact_ != nullptr; }
    uint32_t compact_capacity() const { return compact_keys_; }

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    uint32_t groups_ = 0; // B * C
    uint32_t slots_ = 0;  // min(max_output_boxes_per_class, N)
    uint32_t padded_ = 0; // P: N rounded up to a power of two (at least 2)
    uint32_t block_ = 0;  // keys a sort workgroup holds
    uint32_t compact_keys_ = 0; // keys the compact sort holds in shared memory
    uint64_t keys_offset_ = 0, slots_offset_ = 0, counts_offset_ = 0, offsets_offset_ = 0;
    uint64_t keys_bytes_ = 0, slots_bytes_ = 0, counts_bytes_ = 0;
    const gpu::Pipeline* sort_local_ = nullptr;
    const gpu::Pipeline* sort_merge_ = nullptr;
    const gpu::Pipeline* sort_global_ = nullptr;
    const gpu::Pipeline* select_ = nullptr;
    const gpu::Pipeline* compact_ = nullptr; // set when the compact sort runs
    bool direct_ = false;                    // it writes the outputs too (one group)
    const gpu::Pipeline* offsets_ = nullptr;
    const gpu::Pipeline* scatter_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Image <-> tensor conversions. Channel order of the tensor: RGB(A) or BGR(A) (alpha stays last).
enum class ChannelOrder : uint8_t { RGB, BGR };

// The image an image op records with: a 2-D colour image view, its format and size. Not owning,
// so a renderer's own images (render targets, swapchain-sized textures) work as well as a
// gpu::Image, which converts implicitly. The view's first mip level is the one read or written.
// Descriptors for it are pushed (VK_KHR_push_descriptor); on devices without push descriptors
// each op rewrites one of 64 descriptor sets it preallocated, round robin, so at most 64 records
// of one image op may be pending (recorded and not yet completed) at a time.
struct ImageRef {
    VkImageView view = VK_NULL_HANDLE;
    VkFormat format = VK_FORMAT_UNDEFINED;
    uint32_t width = 0, height = 0;

    ImageRef() = default;
    ImageRef(VkImageView view_, VkFormat format_, uint32_t width_, uint32_t height_)
        : view(view_), format(format_), width(width_), height(height_) {}
    ImageRef(const gpu::Image& image) // NOLINT(google-explicit-constructor): converts by design
        : view(image.view()), format(image.format()), width(image.width()), height(image.height()) {}
};

// Per-channel transform, indexed by *tensor* channel (after reordering): each vector holds one
// value for every channel or one per tensor channel. ImageToTensor computes
//     tensor = (pixel * scale - mean) / std
// where pixel is the image's value (UNORM: [0, 1]); TensorToImage applies the inverse.
// E.g. ImageNet in RGB: scale {1}, mean {0.485, 0.456, 0.406}, std {0.229, 0.224, 0.225};
// a model wanting 0..255: scale {255}.
struct PixelTransform {
    std::vector<float> scale{1.f};
    std::vector<float> mean{0.f};
    std::vector<float> std{1.f};
};

// ImageToTensor: reads mip level 0 of a 2-D colour image into an NCHW tensor [1, C, H, W].
// Formats: R8G8B8A8_UNORM, R8G8B8A8_SRGB, B8G8R8A8_UNORM, R16G16B16A16_SFLOAT. The image is read
// as a sampled image (texelFetch without a sampler), so it needs VK_IMAGE_USAGE_SAMPLED_BIT and
// must be in `layout` (SHADER_READ_ONLY_OPTIMAL or GENERAL) when the command runs; the caller
// transitions it (gpu::barrier::image) and makes earlier writes visible to compute-shader
// sampled reads (VK_ACCESS_2_SHADER_SAMPLED_READ_BIT).
// Colour: sRGB images yield linear values by default, as the hardware decodes them on read (at
// the hardware's precision: llvmpipe's decode is an approximation within about 0.3 of an 8-bit
// step); linearize_srgb = false re-encodes them and rounds to the nearest 1/255, giving exactly
// the stored (gamma-encoded) byte / 255 that a model trained on PNG/JPEG pixels expects. UNORM
// formats yield byte / 255, RGBA16F its values as stored.
struct ImageToTensorDesc {
    uint32_t width = 0, height = 0;
    VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
    VkImageLayout layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
    DType dtype = DType::f32; // of the output tensor: f32 or f16
    uint32_t channels = 3;    // 3 (RGB) or 4 (RGBA)
    ChannelOrder order = ChannelOrder::RGB;
    PixelTransform transform;
    bool linearize_srgb = true;
};

class ImageToTensor final : public Op {
public:
    static std::unique_ptr<ImageToTensor> create(gpu::Device& device, const ImageToTensorDesc& desc);
    ~ImageToTensor() override;
    const char* type() const override { return "ImageToTensor"; }

    // Records the conversion of `image` (format and size as created) into `output`.
    void record(gpu::CommandBuffer& cmd, const ImageRef& image, const Tensor& output) const;
    // Op's tensor-only record() cannot name an image: it fails with a message pointing here.
    using Op::record;

    ImageToTensor(gpu::Device& device, const ImageToTensorDesc& desc); // use create()

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    ImageToTensorDesc desc_;
    std::array<float, 12> push_{}; // scale, mean, std as vec4s
    const gpu::Pipeline* pipeline_ = nullptr; // set 0: the image, the tensor
};

// TensorToImage: writes an NCHW tensor [1, C, H, W] (C = 3 or 4, f32 or f16) into mip level 0 of a
// 2-D colour image of H x W: pixel = (tensor * std + mean) / scale per channel, colour channels
// reversed for BGR, alpha from tensor channel 3 or 1.0, clamped to [0, 1] for the UNORM formats
// (the hardware then rounds to the nearest byte); RGBA16F stores the values unclamped.
// Formats: R8G8B8A8_UNORM, B8G8R8A8_UNORM, R16G16B16A16_SFLOAT (sRGB formats cannot be storage
// images on most devices and are refused). The image is written as a storage image: it needs
// VK_IMAGE_USAGE_STORAGE_BIT and must be in VK_IMAGE_LAYOUT_GENERAL when the command runs; the
// caller transitions it and orders later reads after VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT.
struct TensorToImageDesc {
    TensorDesc input; // [1, C, H, W]
    VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
    ChannelOrder order = ChannelOrder::RGB;
    PixelTransform transform;
};

class TensorToImage final : public Op {
public:
    static std::unique_ptr<TensorToImage> create(gpu::Device& device, const TensorToImageDesc& desc);
    ~TensorToImage() override;
    const char* type() const override { return "TensorToImage"; }

    // Records the conversion of `input` into `image` (format and size as created).
    void record(gpu::CommandBuffer& cmd, const Tensor& input, const ImageRef& image) const;
    using Op::record; // fails: see ImageToTensor

    TensorToImage(gpu::Device& device, const TensorToImageDesc& desc); // use create()

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    TensorToImageDesc desc_;
    uint32_t width_ = 0, height_ = 0;
    std::array<float, 12> push_{};
    const gpu::Pipeline* pipeline_ = nullptr; // set 0: the image, the tensor
};

// ---------------------------------------------------------------------------------------------
// Detector pre- and post-processing: letterbox an image into a model's input, decode a model's
// raw outputs into candidate boxes, and gather NMS's selection into a small list of detections,
// so that a detector runs from pixels to final boxes on the GPU and only those boxes are read back:
//
//     Letterbox -> model (Session) -> YoloDecode / NanoDetDecode -> NonMaxSuppression
//               -> GatherDetections
//
// Decoders write three f32 tensors (f32 always: box coordinates are pixels, up to thousands, and
// the class offset below exceeds f16's range):
//   candidates [B, N, 6]: x0, y0, x1, y1 (model-input pixels), score, class index (as a float);
//   nms_boxes  [B, N, 4]: the candidate's box moved by class * class_offset along both axes, so
//              that one NonMaxSuppression group (C = 1, center_point_box 0) never lets boxes of
//              different classes suppress each other: class-aware NMS with a single sort;
//   scores     [B, 1, N]: the candidate's score (the best class's), NonMaxSuppression's scores.
// A box keeps only its best class (as YOLOv5/v8's own non-max suppression without multi-label).

// Where a letterboxed source lies in the model's input: content scaled by (scale_x, scale_y) (the
// same aspect up to rounding) at (left, top), content_width x content_height pixels, the rest
// padding. As YOLOv5/v8 letterbox: scale = min(dst_w / src_w, dst_h / src_h), content size rounded
// to the nearest pixel, padding split evenly with the odd pixel going right / bottom.
struct LetterboxGeometry {
    uint32_t src_width = 0, src_height = 0;
    uint32_t dst_width = 0, dst_height = 0;
    uint32_t content_width = 0, content_height = 0;
    uint32_t left = 0, top = 0;
    float scale_x = 1.f, scale_y = 1.f; // content / source
};
LetterboxGeometry letterbox_geometry(uint32_t src_width, uint32_t src_height, uint32_t dst_width,
                                     uint32_t dst_height);

// Letterbox (vkml op): resizes a [1, 3, H, W] image tensor into the content rectangle of a
// [1, 3, height, width] output with bilinear interpolation (half-pixel centres, edges clamped, no
// antialiasing: OpenCV's INTER_LINEAR, as YOLO tool chains letterbox), fills the rest with
// pad_value, then applies `transform` (per output channel, as ImageToTensor) to every value.
// Input: NCHW f32 or f16 [1, 3, H, W] (values as the pixels: 0..1), or packed u8 pixels
// [1, H, W, 3 or 4] (NHWC, byte / 255; the fourth channel is ignored), which is what image files
// decode to. The output dtype is `dtype` (f32 or f16), independent of the input's.
// Or a 2-D colour image (`image` set, `input` left empty): its mip level 0 is read as ImageToTensor
// reads it (texelFetch; the formats, layouts and usage ImageToTensor accepts; sRGB images give their
// stored values, as linearize_srgb = false), so a renderer's frame goes into a detector's input in
// one dispatch. Record it with record(cmd, image, output).
struct LetterboxImage {
    uint32_t width = 0, height = 0;
    VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
    VkImageLayout layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
};

struct LetterboxDesc {
    TensorDesc input;
    std::optional<LetterboxImage> image;
    uint32_t width = 0, height = 0; // of the output
    DType dtype = DType::f32;
    float pad_value = 114.f / 255.f; // in pixel units (before the transform)
    ChannelOrder order = ChannelOrder::RGB;
    PixelTransform transform;
};

class Letterbox final : public Op {
public:
    static std::unique_ptr<Letterbox> create(gpu::Device& device, const LetterboxDesc& desc);
    const char* type() const override { return "Letterbox"; }
    const LetterboxGeometry& geometry() const { return geometry_; }

    // An image source (LetterboxDesc::image): records the letterbox of `image` (format and size
    // as created) into `output`. Op's tensor record() is for tensor sources.
    void record(gpu::CommandBuffer& cmd, const ImageRef& image, const Tensor& output) const;
    using Op::record;

    Letterbox(gpu::Device& device, const LetterboxDesc& desc); // use create()

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    std::optional<LetterboxImage> image_;
    LetterboxGeometry geometry_;
    std::array<float, 12> push_{};
    const gpu::Pipeline* pipeline_ = nullptr;
};

// YoloDecode (vkml op): the output of a YOLO-format ONNX export into candidates (see above).
//   V5: [B, N, 5 + C] rows (cx, cy, w, h, objectness, C class scores): score = objectness * best;
//   V8: [B, 4 + C, N] columns (cx, cy, w, h, C class scores): score = best class score.
// Boxes are centre/size in model-input pixels; scores are probabilities (the exports' own sigmoid).
enum class YoloFormat : uint8_t { V5, V8 };

struct YoloDecodeDesc {
    TensorDesc input; // f32 or f16
    YoloFormat format = YoloFormat::V8;
    // Per-class shift of nms_boxes: more than any box coordinate's range (4096 suits inputs up to
    // about 1500 pixels, whose decoded boxes may reach past the borders).
    float class_offset = 4096.f;
};

class YoloDecode final : public Op {
public:
    static std::unique_ptr<YoloDecode> create(gpu::Device& device, const YoloDecodeDesc& desc);
    const char* type() const override { return "YoloDecode"; }
    YoloDecode(gpu::Device& device, const YoloDecodeDesc& desc); // use create()

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    uint32_t boxes_ = 0;
    const gpu::Pipeline* pipeline_ = nullptr;
};

// NanoDetDecode (vkml op): NanoDet's (GFL) heads into candidates (see above). Per level l with
// stride s_l over a width x height input: class scores [B, N_l, C] (after the model's sigmoid) and
// box distributions [B, N_l, 4 * bins] (left, top, right, bottom: each side's distance, in strides,
// is the expectation of a softmax over bins 0 .. bins - 1). Cell i sits at column i % G, row
// i / G of a G = ceil(width / s_l) wide grid; its centre is ((column + center_offset) * s,
// (row + center_offset) * s). Inputs: every level's scores, then every level's boxes, in the order
// of `strides`; N = sum N_l.
struct NanoDetDecodeDesc {
    std::vector<TensorDesc> scores;
    std::vector<TensorDesc> boxes;
    std::vector<uint32_t> strides = {8, 16, 32};
    uint32_t width = 0, height = 0; // the model's input
    float center_offset = 0.f;
    float class_offset = 4096.f;
};

class NanoDetDecode final : public Op {
public:
    static std::unique_ptr<NanoDetDecode> create(gpu::Device& device, const NanoDetDecodeDesc& desc);
    const char* type() const override { return "NanoDetDecode"; }
    NanoDetDecode(gpu::Device& device, const NanoDetDecodeDesc& desc); // use create()

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    struct Level {
        uint32_t cells = 0, base = 0;
        const gpu::Pipeline* pipeline = nullptr;
    };
    std::vector<Level> levels_;
};

// GatherDetections (vkml op): NonMaxSuppression's selection (C = 1) into the final detections.
// Inputs: candidates [1, N, 6] f32, selected_indices [K, 3] and count [1] (i64 or i32, as NMS
// wrote them). Outputs: detections [K, 6] f32, rows in selection order (best first): x0, y0, x1,
// y1 mapped to source pixels, x = (x_model - offset_x) / scale_x (y likewise) clipped to
// [0, clip_width] x [0, clip_height] when those are set, then score and class; rows past the
// count are zero; and count [1] i32. Both small enough to read back every frame.
struct GatherDetectionsDesc {
    TensorDesc candidates;       // [1, N, 6] f32
    TensorDesc selected_indices; // [K, 3] i64 or i32
    float scale_x = 1.f, scale_y = 1.f;
    float offset_x = 0.f, offset_y = 0.f;
    float clip_width = 0.f, clip_height = 0.f; // 0: no clipping on that axis
};
// The mapping that undoes a letterbox.
void set_mapping(GatherDetectionsDesc& desc, const LetterboxGeometry& geometry);

class GatherDetections final : public Op {
public:
    static std::unique_ptr<GatherDetections> create(gpu::Device& device, const GatherDetectionsDesc& desc);
    const char* type() const override { return "GatherDetections"; }
    GatherDetections(gpu::Device& device, const GatherDetectionsDesc& desc); // use create()

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    uint32_t rows_ = 0;
    std::array<float, 6> push_{};
    const gpu::Pipeline* pipeline_ = nullptr;
};

// CompositeOver (vkml op): an 8-bit premultiplied RGBA overlay [1, H, W, 4] (u8, as CPU drawing
// onto a transparent canvas leaves it: text.hpp's blending over (0, 0, 0, 0)) composited over an
// image tensor [1, 3, H, W] (f32 or f16, values 0..1): out = image * (1 - a) + rgb, with a and
// rgb the overlay's bytes / 255. For boxes and labels drawn on the CPU and put onto video frames
// on the GPU. The overlay is read as 32-bit words (its size is a multiple of 4 bytes).
struct CompositeOverDesc {
    TensorDesc image;   // [1, 3, H, W] f32 or f16; the output has the same shape and dtype
    TensorDesc overlay; // [1, H, W, 4] u8
};

class CompositeOver final : public Op {
public:
    static std::unique_ptr<CompositeOver> create(gpu::Device& device, const CompositeOverDesc& desc);
    const char* type() const override { return "CompositeOver"; }
    CompositeOver(gpu::Device& device, const CompositeOverDesc& desc); // use create()

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;
    uint32_t pixels_ = 0;
    const gpu::Pipeline* pipeline_ = nullptr;
};

} // namespace vkml::ops
