// ImageToTensor and TensorToImage: one dispatch each, 8x8 pixels per workgroup, of a core
// pipeline whose set 0 is the image (sampled or storage) beside the tensor's storage buffer.
#include <cmath>
#include <string>

#include "detect_common.hpp"
#include "util.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/detect.hpp"

namespace vkml::ops {

namespace detail {

namespace {

const char* format_name(VkFormat format) {
    switch (format) {
    case VK_FORMAT_R8G8B8A8_UNORM:
        return "R8G8B8A8_UNORM";
    case VK_FORMAT_R8G8B8A8_SRGB:
        return "R8G8B8A8_SRGB";
    case VK_FORMAT_B8G8R8A8_UNORM:
        return "B8G8R8A8_UNORM";
    case VK_FORMAT_B8G8R8A8_SRGB:
        return "B8G8R8A8_SRGB";
    case VK_FORMAT_R16G16B16A16_SFLOAT:
        return "R16G16B16A16_SFLOAT";
    default:
        return nullptr;
    }
}

} // namespace

std::string describe(VkFormat format) {
    const char* n = format_name(format);
    return n ? std::string(n) : "VkFormat " + std::to_string(int(format));
}

VkFormatFeatureFlags2 format_features(const gpu::Device& device, VkFormat format) {
    VkFormatProperties3 p3{VK_STRUCTURE_TYPE_FORMAT_PROPERTIES_3};
    VkFormatProperties2 p2{VK_STRUCTURE_TYPE_FORMAT_PROPERTIES_2, &p3};
    vkGetPhysicalDeviceFormatProperties2(device.physical_device(), format, &p2);
    return p3.optimalTilingFeatures;
}

std::array<float, 12> pack_transform(const char* op, const PixelTransform& t, uint32_t channels) {
    std::array<float, 12> out{1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
    auto put = [&](const std::vector<float>& v, const char* field, size_t at, bool nonzero) {
        if (v.size() != 1 && v.size() != channels)
            fail(op, std::string("transform.") + field,
                 "has " + std::to_string(v.size()) + " values, expected 1 or " + std::to_string(channels));
        for (uint32_t c = 0; c < channels; ++c) {
            const float x = v.size() == 1 ? v[0] : v[c];
            if (!std::isfinite(x)) fail(op, std::string("transform.") + field, "value is not finite");
            if (nonzero && x == 0.f) fail(op, std::string("transform.") + field, "value is 0");
            out[at + c] = x;
        }
    };
    put(t.scale, "scale", 0, true);
    put(t.mean, "mean", 4, false);
    put(t.std, "std", 8, true);
    return out;
}

void check_tensor(const Op& op, const gpu::Device& device, const char* field, const Tensor& given,
                  const TensorDesc& want) {
    if (!given) fail(op.type(), field, "no tensor bound");
    if (given.shape() != want.shape || given.dtype() != want.dtype)
        fail(op.type(), field,
             "is " + to_string({given.shape(), given.dtype()}) + ", the op was created for " +
                 to_string(want));
    if (!given.contiguous()) fail(op.type(), field, "is not contiguous");
    const uint64_t align = device.caps().min_storage_buffer_offset_alignment;
    if (align > 1 && given.byte_offset() % align != 0)
        fail(op.type(), field,
             "starts at byte " + std::to_string(given.byte_offset()) +
                 ", not a multiple of the device's storage-buffer alignment " + std::to_string(align));
}

void check_image(const Op& op, const ImageRef& image, VkFormat format, uint32_t width, uint32_t height) {
    if (!image.view) fail(op.type(), "image", "no image view bound");
    if (image.format != format)
        fail(op.type(), "image",
             "has format " + describe(image.format) + ", the op was created for " + describe(format));
    if (image.width != width || image.height != height)
        fail(op.type(), "image",
             "is " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                 ", the op was created for " + std::to_string(width) + "x" + std::to_string(height));
}

void check_sampled_source(const char* op, const gpu::Device& device, VkFormat format, VkImageLayout layout) {
    if (format != VK_FORMAT_R8G8B8A8_UNORM && format != VK_FORMAT_R8G8B8A8_SRGB &&
        format != VK_FORMAT_B8G8R8A8_UNORM && format != VK_FORMAT_R16G16B16A16_SFLOAT)
        fail(op, "format",
             describe(format) +
                 " is not one of R8G8B8A8_UNORM, R8G8B8A8_SRGB, B8G8R8A8_UNORM, R16G16B16A16_SFLOAT");
    if (layout != VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL && layout != VK_IMAGE_LAYOUT_GENERAL)
        fail(op, "layout",
             "VkImageLayout " + std::to_string(int(layout)) +
                 " is neither SHADER_READ_ONLY_OPTIMAL nor GENERAL");
    if (!(format_features(device, format) & VK_FORMAT_FEATURE_2_SAMPLED_IMAGE_BIT))
        unsupported(op, describe(format) + " images cannot be sampled on " + device.caps().device_name);
}

std::array<uint32_t, 3> pixel_groups(const gpu::Device& device, const char* op, uint32_t width,
                                     uint32_t height) {
    const std::array<uint32_t, 3> groups{(width + 7) / 8, (height + 7) / 8, 1};
    if (groups[0] > device.caps().max_workgroup_count[0] || groups[1] > device.caps().max_workgroup_count[1])
        unsupported(op, std::to_string(width) + "x" + std::to_string(height) +
                            " pixels exceed the device's workgroup grid");
    return groups;
}

} // namespace detail

using detail::check_image;
using detail::check_tensor;
using detail::describe;
using detail::format_features;
using detail::pack_transform;
using detail::pixel_groups;

// ---------------------------------------------------------------------------------------------

std::unique_ptr<ImageToTensor> ImageToTensor::create(gpu::Device& device, const ImageToTensorDesc& desc) {
    return std::make_unique<ImageToTensor>(device, desc);
}

ImageToTensor::ImageToTensor(gpu::Device& device, const ImageToTensorDesc& desc) : Op(device), desc_(desc) {
    const char* op = "ImageToTensor";
    if (desc.width == 0) fail(op, "width", "is 0");
    if (desc.height == 0) fail(op, "height", "is 0");
    const VkFormat f = desc.format;
    detail::check_sampled_source(op, device, f, desc.layout);
    detail::require_float(op, "dtype", {{1}, desc.dtype});
    if (desc.channels != 3 && desc.channels != 4)
        fail(op, "channels", std::to_string(desc.channels) + " is neither 3 nor 4");
    push_ = pack_transform(op, desc.transform, desc.channels);
    detail::to_u32(op, "width", int64_t(desc.width) * desc.height * desc.channels);
    pixel_groups(device, op, desc.width, desc.height);

    const bool encode = f == VK_FORMAT_R8G8B8A8_SRGB && !desc.linearize_srgb;
    pipeline_ =
        &device.pipeline({.shader = detail::shader_for(device, op, "image_to_tensor", desc.dtype),
                          .binding_types = {gpu::BindingType::SampledImage, gpu::BindingType::StorageBuffer},
                          .push_constant_bytes = sizeof push_,
                          .workgroup = {8, 8, 1},
                          .specialization = {desc.width, desc.height, desc.channels,
                                             desc.order == ChannelOrder::BGR ? 1u : 0u, encode ? 1u : 0u},
                          .name = "ImageToTensor"});
    outputs_ = {{{1, int64_t(desc.channels), int64_t(desc.height), int64_t(desc.width)}, desc.dtype}};
}

ImageToTensor::~ImageToTensor() = default;

void ImageToTensor::record(gpu::CommandBuffer& cmd, const ImageRef& image, const Tensor& output) const {
    check_image(*this, image, desc_.format, desc_.width, desc_.height);
    check_tensor(*this, device_, "output", output, outputs_[0]);
    const gpu::Binding bindings[] = {gpu::Binding::sampled_image(image.view, desc_.layout),
                                     gpu::Binding::storage_buffer(output.range())};
    cmd.dispatch(*pipeline_, bindings, push_, pixel_groups(device_, type(), desc_.width, desc_.height));
}

void ImageToTensor::record_impl(gpu::CommandBuffer&, std::span<const Tensor>, std::span<const Tensor>,
                                const gpu::BufferRange&) const {
    fail(type(), "inputs", "the op reads a gpu::Image: record it with record(cmd, image, output)");
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<TensorToImage> TensorToImage::create(gpu::Device& device, const TensorToImageDesc& desc) {
    return std::make_unique<TensorToImage>(device, desc);
}

TensorToImage::TensorToImage(gpu::Device& device, const TensorToImageDesc& desc) : Op(device), desc_(desc) {
    const char* op = "TensorToImage";
    const auto& in = desc.input;
    detail::require_float(op, "input", in);
    if (in.shape.rank() != 4 || in.shape[0] != 1 || (in.shape[1] != 3 && in.shape[1] != 4) ||
        in.shape[2] < 1 || in.shape[3] < 1)
        fail(op, "input", "must be [1, 3 or 4, height, width], is " + in.shape.str());
    const uint32_t channels = uint32_t(in.shape[1]);
    height_ = detail::to_u32(op, "input", in.shape[2]);
    width_ = detail::to_u32(op, "input", in.shape[3]);
    detail::to_u32(op, "input", in.shape.elements());
    const VkFormat f = desc.format;
    const char* shader = nullptr;
    VkFormatFeatureFlags2 need = VK_FORMAT_FEATURE_2_STORAGE_IMAGE_BIT;
    switch (f) {
    case VK_FORMAT_R8G8B8A8_UNORM:
        shader = "tensor_to_image_rgba8";
        break;
    case VK_FORMAT_R16G16B16A16_SFLOAT:
        shader = "tensor_to_image_rgba16f";
        break;
    case VK_FORMAT_B8G8R8A8_UNORM:
        // GLSL has no format qualifier for BGRA8: the shader writes without one.
        shader = "tensor_to_image_unknown";
        need |= VK_FORMAT_FEATURE_2_STORAGE_WRITE_WITHOUT_FORMAT_BIT;
        break;
    case VK_FORMAT_R8G8B8A8_SRGB:
    case VK_FORMAT_B8G8R8A8_SRGB:
        fail(op, "format",
             describe(f) + " cannot be written as a storage image on most devices; write an " +
                 "R8G8B8A8_UNORM image (values are stored as given, without sRGB encoding)");
    default:
        fail(op, "format",
             describe(f) + " is not one of R8G8B8A8_UNORM, B8G8R8A8_UNORM, R16G16B16A16_SFLOAT");
    }
    if ((format_features(device, f) & need) != need)
        unsupported(op, describe(f) + " images cannot be written by compute shaders on " +
                            device.caps().device_name);
    push_ = pack_transform(op, desc.transform, channels);
    pixel_groups(device, op, width_, height_);

    pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, op, shader, in.dtype),
         .binding_types = {gpu::BindingType::StorageImage, gpu::BindingType::StorageBuffer},
         .push_constant_bytes = sizeof push_,
         .workgroup = {8, 8, 1},
         .specialization = {width_, height_, channels, desc.order == ChannelOrder::BGR ? 1u : 0u,
                            f == VK_FORMAT_R16G16B16A16_SFLOAT ? 0u : 1u},
         .name = "TensorToImage"});
    inputs_ = {in};
}

TensorToImage::~TensorToImage() = default;

void TensorToImage::record(gpu::CommandBuffer& cmd, const Tensor& input, const ImageRef& image) const {
    check_tensor(*this, device_, "input", input, inputs_[0]);
    check_image(*this, image, desc_.format, width_, height_);
    const gpu::Binding bindings[] = {gpu::Binding::storage_image(image.view, VK_IMAGE_LAYOUT_GENERAL),
                                     gpu::Binding::storage_buffer(input.range())};
    cmd.dispatch(*pipeline_, bindings, push_, pixel_groups(device_, type(), width_, height_));
}

void TensorToImage::record_impl(gpu::CommandBuffer&, std::span<const Tensor>, std::span<const Tensor>,
                                const gpu::BufferRange&) const {
    fail(type(), "outputs", "the op writes a gpu::Image: record it with record(cmd, input, image)");
}

} // namespace vkml::ops
