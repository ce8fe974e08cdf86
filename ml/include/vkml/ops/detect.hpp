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

namespace detail {
class DetectImagePipeline;
}

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
// minStorageBufferOffsetAlignment. record() issues 4 dispatches plus the sort's (1 when P <= 512,
// else about log2(P / 512)^2 / 2 + 2 log2(P / 512) more), with barriers between them.
//
// Semantics, as ONNX Runtime: a box is a candidate when its score is strictly greater than
// score_threshold (all boxes when there is none; NaN scores never are); candidates are taken by
// descending score, equal scores by ascending box index; a candidate is suppressed when its IoU
// with an already selected box of the same batch and class is strictly greater than
// iou_threshold; boxes with zero or negative area, and pairs without overlap, never suppress.
// center_point_box 0: [y1, x1, y2, x2], any diagonal pair of corners; 1: [x_center, y_center,
// width, height]. IoU is computed in f32.
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

private:
    void record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const gpu::BufferRange& scratch) const override;

    uint32_t groups_ = 0; // B * C
    uint32_t slots_ = 0;  // min(max_output_boxes_per_class, N)
    uint32_t padded_ = 0; // P: N rounded up to a power of two (at least 2)
    uint32_t block_ = 0;  // keys a sort workgroup holds
    uint64_t keys_offset_ = 0, slots_offset_ = 0, counts_offset_ = 0, offsets_offset_ = 0;
    uint64_t keys_bytes_ = 0, slots_bytes_ = 0, counts_bytes_ = 0;
    const gpu::Pipeline* sort_local_ = nullptr;
    const gpu::Pipeline* sort_merge_ = nullptr;
    const gpu::Pipeline* sort_global_ = nullptr;
    const gpu::Pipeline* select_ = nullptr;
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
    std::unique_ptr<detail::DetectImagePipeline> pipeline_;
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
    std::unique_ptr<detail::DetectImagePipeline> pipeline_;
};

} // namespace vkml::ops
