#include "host_renderer.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "vkml/fg/ml_pass.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::fg::test {

namespace {

void check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw std::runtime_error(std::string("host renderer: ") + what + " failed");
}

std::mutex messages_mutex;
std::vector<std::string> messages;

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                        VkDebugUtilsMessageTypeFlagsEXT,
                                        const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
    std::lock_guard lock(messages_mutex);
    messages.emplace_back(data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

bool has_layer(const char* name) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> layers(n);
    vkEnumerateInstanceLayerProperties(&n, layers.data());
    return std::any_of(layers.begin(), layers.end(),
                       [&](const auto& l) { return std::strcmp(l.layerName, name) == 0; });
}

int score(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return 2;
    default:
        return 1;
    }
}

} // namespace

Host::Host(const HostDesc& desc) {
    const char* env = std::getenv("VKML_VALIDATION");
    const bool validation =
        (desc.validation || (env && std::string(env) == "1")) && has_layer("VK_LAYER_KHRONOS_validation");
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkml fg host";
    app.apiVersion = VK_API_VERSION_1_3;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, validation ? &features : nullptr};
    ici.pApplicationInfo = &app;
    ici.enabledLayerCount = validation ? 1 : 0;
    ici.ppEnabledLayerNames = &layer;
    ici.enabledExtensionCount = 1;
    ici.ppEnabledExtensionNames = &ext;
    check(vkCreateInstance(&ici, nullptr, &instance_), "vkCreateInstance");
    if (validation) {
        VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        mi.messageSeverity =
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mi.messageType =
            VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
        mi.pfnUserCallback = on_debug;
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
        check(create(instance_, &mi, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
    }

    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance_, &n, nullptr);
    std::vector<VkPhysicalDevice> devices(n);
    vkEnumeratePhysicalDevices(instance_, &n, devices.data());
    const char* select_env = std::getenv("VKML_DEVICE");
    const std::string select = !desc.select.empty() ? desc.select : select_env ? select_env : "";
    int best = -1;
    for (VkPhysicalDevice d : devices) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(d, &p);
        if (p.apiVersion < VK_API_VERSION_1_3) continue;
        if (!select.empty() && std::string(p.deviceName).find(select) == std::string::npos) continue;
        if (score(p.deviceType) > best) {
            best = score(p.deviceType);
            phys_ = d;
        }
    }
    if (!phys_) throw std::runtime_error("host renderer: no Vulkan 1.3 device");

    vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, nullptr);
    std::vector<VkQueueFamilyProperties> families(n);
    vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, families.data());
    for (uint32_t i = 0; i < n; ++i)
        if ((families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) &&
            (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) {
            graphics_family_ = i;
            break;
        }
    if (desc.async_compute)
        for (uint32_t i = 0; i < n; ++i)
            if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
                !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
                compute_family_ = i;
                break;
            }

    const float priority = 1.f;
    std::vector<VkDeviceQueueCreateInfo> queues{
        {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, graphics_family_, 1, &priority}};
    if (compute_family_ != VK_QUEUE_FAMILY_IGNORED)
        queues.push_back(
            {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, compute_family_, 1, &priority});
    static VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    static VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &f13};
    static VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12};
    f13.synchronization2 = VK_TRUE;
    f13.dynamicRendering = VK_TRUE;
    f12.timelineSemaphore = VK_TRUE;
    const char* device_exts[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f2};
    dci.queueCreateInfoCount = uint32_t(queues.size());
    dci.pQueueCreateInfos = queues.data();
    dci.enabledExtensionCount = 1;
    dci.ppEnabledExtensionNames = device_exts;
    check(vkCreateDevice(phys_, &dci, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, graphics_family_, 0, &graphics_);
    if (compute_family_ != VK_QUEUE_FAMILY_IGNORED) vkGetDeviceQueue(device_, compute_family_, 0, &compute_);

    gpu::HostHandles h;
    h.instance = instance_;
    h.physical_device = phys_;
    h.device = device_;
    h.graphics = {graphics_, graphics_family_};
    if (compute_) h.compute = {compute_, compute_family_};
    h.enabled_features = &f2;
    h.enabled_extensions = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    h.debug_utils = true;
    gpu::DeviceDesc dd;
    dd.on_message = desc.on_message;
    dd.use_push_descriptors = desc.vkml_push_descriptors;
    vkml_ = gpu::Device::from_host(h, dd);
}

Host::~Host() {
    vkml_.reset();
    if (device_) vkDestroyDevice(device_, nullptr);
    if (messenger_) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
        destroy(instance_, messenger_, nullptr);
    }
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

std::vector<std::string> Host::take_messages() {
    std::lock_guard lock(messages_mutex);
    return std::exchange(messages, {});
}

// --- the ML operator -----------------------------------------------------------------------------

namespace {
struct MixPush {
    uint32_t plane;
    float w[9];
    float b[3];
};
} // namespace

ChannelMix::ChannelMix(gpu::Device& device, uint32_t width, uint32_t height)
    : Op(device), plane_(width * height) {
    const gpu::Shape shape{1, 3, int64_t(height), int64_t(width)};
    inputs_ = {{shape, gpu::DType::f32}};
    outputs_ = {{shape, gpu::DType::f32}};
    pipeline_ = &device.pipeline(
        {.shader = gpu::ShaderId::fg_channel_mix_f32, .bindings = 2, .push_constant_bytes = sizeof(MixPush)});
}

namespace {
// A colour grade: a little channel crosstalk, a lift, the result clamped at 0 by the ReLU.
constexpr float mix_w[9] = {0.9f, 0.2f, -0.1f, 0.1f, 0.8f, 0.1f, -0.2f, 0.3f, 1.1f};
constexpr float mix_b[3] = {0.05f, -0.02f, 0.1f};
} // namespace

void ChannelMix::record_impl(gpu::CommandBuffer& cmd, std::span<const gpu::Tensor> inputs,
                             std::span<const gpu::Tensor> outputs, const gpu::BufferRange&) const {
    record_raw(cmd, inputs[0].range(), outputs[0].range());
}

void ChannelMix::record_raw(gpu::CommandBuffer& cmd, const gpu::BufferRange& x,
                            const gpu::BufferRange& y) const {
    MixPush push{plane_, {}, {}};
    std::copy(std::begin(mix_w), std::end(mix_w), push.w);
    std::copy(std::begin(mix_b), std::end(mix_b), push.b);
    const gpu::BufferRange buffers[] = {x, y};
    cmd.dispatch(*pipeline_, buffers, push, cmd.groups_for(*pipeline_, plane_));
}

void ChannelMix::reference(const float* x, float* y, uint32_t plane) {
    for (uint32_t i = 0; i < plane; ++i)
        for (uint32_t c = 0; c < 3; ++c) {
            float r = mix_b[c];
            for (uint32_t k = 0; k < 3; ++k) r += mix_w[3 * c + k] * x[k * plane + i];
            y[c * plane + i] = std::max(r, 0.f);
        }
}

namespace {
struct UpscalePush {
    uint32_t in_w, in_h, out_w, out_h, work;
};
} // namespace

Upscale::Upscale(gpu::Device& device, VkExtent2D in, VkExtent2D out, uint32_t work)
    : Op(device), in_(in), out_(out), work_(work) {
    inputs_ = {{gpu::Shape{1, 3, int64_t(in.height), int64_t(in.width)}, gpu::DType::f32}};
    outputs_ = {{gpu::Shape{1, 3, int64_t(out.height), int64_t(out.width)}, gpu::DType::f32}};
    pipeline_ = &device.pipeline({.shader = gpu::ShaderId::fg_upscale_f32,
                                  .bindings = 2,
                                  .push_constant_bytes = sizeof(UpscalePush),
                                  .workgroup = {256, 1, 1}});
}

void Upscale::record_impl(gpu::CommandBuffer& cmd, std::span<const gpu::Tensor> inputs,
                          std::span<const gpu::Tensor> outputs, const gpu::BufferRange&) const {
    const UpscalePush push{in_.width, in_.height, out_.width, out_.height, work_};
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    cmd.dispatch(*pipeline_, buffers, push, cmd.groups_for(*pipeline_, uint64_t(out_.width) * out_.height));
}

// --- pipelines -----------------------------------------------------------------------------------

namespace {

struct ScenePush {
    float shift;
};
struct CompositePush {
    int32_t width, height;
};
struct UpscaleCompositePush {
    int32_t width, height, taps;
};

uint32_t groups(uint32_t n) {
    return (n + 7) / 8;
}

void set_viewport(VkCommandBuffer cmd, VkExtent2D extent) {
    const VkViewport vp{0, 0, float(extent.width), float(extent.height), 0, 1};
    const VkRect2D sc{{0, 0}, extent};
    vkCmdSetViewport(cmd, 0, 1, &vp);
    vkCmdSetScissor(cmd, 0, 1, &sc);
}

} // namespace

Pipelines::Pipelines(gpu::Device& device) : device_(device) {
    const VkDevice d = device.vk();
    VkSamplerCreateInfo si{VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO};
    si.addressModeU = si.addressModeV = si.addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
    check(vkCreateSampler(d, &si, nullptr, &sampler_), "vkCreateSampler");
    si.magFilter = si.minFilter = VK_FILTER_LINEAR;
    check(vkCreateSampler(d, &si, nullptr, &linear_), "vkCreateSampler");
    using gpu::BindingType;
    using gpu::ShaderId;
    const std::vector<BindingType> image_and_buffer = {BindingType::SampledImageSampler,
                                                       BindingType::StorageBuffer};
    scene_ = &device.pipeline(gpu::GraphicsPipelineDesc{.vertex = ShaderId::fg_scene_vs_f32,
                                                        .fragment = ShaderId::fg_scene_fs_f32,
                                                        .push_constant_bytes = sizeof(ScenePush),
                                                        .color_formats = {color_format},
                                                        .depth_format = depth_format,
                                                        .name = "host scene"});
    composite_ = &device.pipeline(gpu::GraphicsPipelineDesc{.vertex = ShaderId::fg_fullscreen_vs_f32,
                                                            .fragment = ShaderId::fg_composite_fs_f32,
                                                            .binding_types = image_and_buffer,
                                                            .push_constant_bytes = sizeof(CompositePush),
                                                            .color_formats = {color_format},
                                                            .name = "host composite"});
    upscale_composite_ =
        &device.pipeline(gpu::GraphicsPipelineDesc{.vertex = ShaderId::fg_fullscreen_vs_f32,
                                                   .fragment = ShaderId::fg_upscale_composite_fs_f32,
                                                   .binding_types = image_and_buffer,
                                                   .push_constant_bytes = sizeof(UpscaleCompositePush),
                                                   .color_formats = {color_format},
                                                   .name = "host upscale composite"});
    to_tensor_ = &device.pipeline(gpu::ComputePipelineDesc{.shader = ShaderId::fg_to_tensor_f32,
                                                           .binding_types = image_and_buffer,
                                                           .workgroup = {8, 8, 1},
                                                           .name = "host to tensor"});
    post_ = &device.pipeline(
        gpu::ComputePipelineDesc{.shader = ShaderId::fg_post_f32,
                                 .binding_types = {BindingType::StorageImage, BindingType::StorageImage},
                                 .workgroup = {8, 8, 1},
                                 .name = "host post"});
}

Pipelines::~Pipelines() {
    vkDestroySampler(device_.vk(), sampler_, nullptr);
    vkDestroySampler(device_.vk(), linear_, nullptr);
}

void Pipelines::scene(gpu::CommandBuffer& cmd, VkExtent2D extent, float shift) const {
    set_viewport(cmd.vk(), extent);
    cmd.draw(*scene_, {}, ScenePush{shift}, 6);
}

void Pipelines::to_tensor(gpu::CommandBuffer& cmd, VkImageView src, VkImageLayout src_layout,
                          const gpu::BufferRange& dst, VkExtent2D extent) const {
    const gpu::Binding bindings[] = {gpu::Binding::sampled_image(src, src_layout, sampler_),
                                     gpu::Binding::storage_buffer(dst)};
    cmd.dispatch(*to_tensor_, bindings, nullptr, 0, {groups(extent.width), groups(extent.height), 1});
}

void Pipelines::composite(gpu::CommandBuffer& cmd, VkImageView scene, VkImageLayout scene_layout,
                          const gpu::BufferRange& features, VkExtent2D extent) const {
    const gpu::Binding bindings[] = {gpu::Binding::sampled_image(scene, scene_layout, sampler_),
                                     gpu::Binding::storage_buffer(features)};
    set_viewport(cmd.vk(), extent);
    cmd.draw(*composite_, bindings, CompositePush{int32_t(extent.width), int32_t(extent.height)}, 3);
}

void Pipelines::post(gpu::CommandBuffer& cmd, VkImageView src, VkImageView dst, VkExtent2D extent) const {
    const gpu::Binding bindings[] = {gpu::Binding::storage_image(src), gpu::Binding::storage_image(dst)};
    cmd.dispatch(*post_, bindings, nullptr, 0, {groups(extent.width), groups(extent.height), 1});
}

void Pipelines::upscale_composite(gpu::CommandBuffer& cmd, VkImageView scene, VkImageLayout scene_layout,
                                  const gpu::BufferRange& features, VkExtent2D extent, int taps) const {
    const gpu::Binding bindings[] = {gpu::Binding::sampled_image(scene, scene_layout, linear_),
                                     gpu::Binding::storage_buffer(features)};
    cmd.draw(*upscale_composite_, bindings,
             UpscaleCompositePush{int32_t(extent.width), int32_t(extent.height), taps}, 3);
}

// --- the frame as a graph --------------------------------------------------------------------------

BufferHandle import_readback(FrameGraph& graph, const gpu::Buffer& readback) {
    // The readback buffer was last written by a copy, and the host reads it when the frame is done.
    return graph.import_buffer("readback", {.buffer = readback.vk(),
                                            .size = readback.size(),
                                            .incoming = {.stages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
                                                         .access = VK_ACCESS_2_TRANSFER_WRITE_BIT},
                                            .outgoing = ResourceState{.stages = VK_PIPELINE_STAGE_2_HOST_BIT,
                                                                      .access = VK_ACCESS_2_HOST_READ_BIT}});
}

ImageHandle add_scene_pass(FrameGraph& graph, const Pipelines& pipelines, const float* shift) {
    ImageHandle scene = graph.create_image("scene", {.format = Pipelines::color_format});
    ImageHandle depth = graph.create_image("depth", {.format = Pipelines::depth_format});
    PassBuilder draw = graph.add_raster_pass("scene");
    scene = draw.color(scene, {.load = LoadOp::Clear, .clear = {{0.1f, 0.1f, 0.15f, 1.f}}});
    depth = draw.depth(depth, {.store = false});
    draw.record([&pipelines, shift](PassContext& ctx) {
        pipelines.scene(ctx.cmd(), ctx.render_area().extent, shift ? *shift : 0.f);
    });
    return scene;
}

Frame build_frame(const Pipelines& pipelines, const ChannelMix& op, const gpu::Image& output,
                  const gpu::Buffer& readback, const FrameOptions& o) {
    Frame f{FrameGraph({.name = "test frame", .output_width = o.width, .output_height = o.height}), {}, {}};
    FrameGraph& g = f.graph;
    const Queue tensor_queue = o.async_compute ? Queue::AsyncCompute : Queue::Graphics;
    const ImageHandle scene = add_scene_pass(g, pipelines, o.shift); // creates "scene" and "depth" first
    BufferHandle x = g.create_buffer("x", {.bytes_per_pixel = 3 * sizeof(float)});
    BufferHandle y = g.create_buffer("y", {.bytes_per_pixel = 3 * sizeof(float)});
    ImageHandle composite = g.create_image("composite", {.format = Pipelines::color_format});
    // The output was last read by the previous frame's copy; its contents are not needed.
    f.output = g.import_image("output", {.image = output.vk(),
                                         .view = output.view(),
                                         .format = output.format(),
                                         .width = output.width(),
                                         .height = output.height(),
                                         .incoming = {.stages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT}});
    f.readback = import_readback(g, readback);

    PassBuilder tensor = g.add_compute_pass("to tensor");
    tensor.read(scene); // sampled, like the composite below: on two queues both share one transition
    x = tensor.write(x);
    tensor.queue(tensor_queue).record([&pipelines, scene, x](PassContext& ctx) {
        pipelines.to_tensor(ctx.cmd(), ctx.view(scene), ctx.layout(scene), ctx.buffer(x), ctx.extent(scene));
    });

    const BufferHandle in[] = {x}, out[] = {y};
    y = add_op_pass(g, "channel mix", op, in, out, {.queue = tensor_queue})[0];

    PassBuilder comp = g.add_raster_pass("composite");
    comp.read(scene);
    comp.read(y, BufferRead::Storage);
    composite = comp.color(composite, {.load = LoadOp::DontCare});
    comp.record([&pipelines, scene, y](PassContext& ctx) {
        pipelines.composite(ctx.cmd(), ctx.view(scene), ctx.layout(scene), ctx.buffer(y),
                            ctx.render_area().extent);
    });

    PassBuilder post = g.add_compute_pass("post");
    post.read(composite, ImageRead::Storage);
    const ImageHandle output_in = f.output;
    f.output = post.write(f.output);
    post.record([&pipelines, composite, out_img = f.output](PassContext& ctx) {
        pipelines.post(ctx.cmd(), ctx.view(composite), ctx.view(out_img), ctx.extent(composite));
    });
    (void)output_in;

    PassBuilder copy = g.add_transfer_pass("readback");
    copy.read(f.output, ImageRead::TransferSrc);
    f.readback = copy.write(f.readback, BufferWrite::TransferDst);
    copy.record([out_img = f.output, rb = f.readback](PassContext& ctx) {
        VkBufferImageCopy region{};
        region.bufferOffset = ctx.buffer(rb).offset;
        region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        region.imageExtent = {ctx.extent(out_img).width, ctx.extent(out_img).height, 1};
        vkCmdCopyImageToBuffer(ctx.vk(), ctx.image(out_img), ctx.layout(out_img), ctx.buffer(rb).buffer, 1,
                               &region);
    });
    return f;
}

// --- the same frame, step by step ------------------------------------------------------------------

namespace {

// An image with a view of the right aspect (gpu::Image only makes colour views).
struct RawImage {
    gpu::Device& device;
    VkImage image = VK_NULL_HANDLE;
    VkImageView view = VK_NULL_HANDLE;
    gpu::AllocationPtr memory;
    RawImage(gpu::Device& d, VkFormat format, VkExtent2D extent, VkImageUsageFlags usage) : device(d) {
        VkImageCreateInfo ci{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
        ci.imageType = VK_IMAGE_TYPE_2D;
        ci.format = format;
        ci.extent = {extent.width, extent.height, 1};
        ci.mipLevels = ci.arrayLayers = 1;
        ci.samples = VK_SAMPLE_COUNT_1_BIT;
        ci.usage = usage;
        check(vkCreateImage(d.vk(), &ci, nullptr, &image), "vkCreateImage");
        VkMemoryRequirements req;
        vkGetImageMemoryRequirements(d.vk(), image, &req);
        memory = d.allocator().allocate(req, gpu::MemoryUsage::DeviceLocal, gpu::ResourceTiling::Optimal);
        check(vkBindImageMemory(d.vk(), image, memory->memory(), memory->offset()), "vkBindImageMemory");
        VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
        vi.image = image;
        vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
        vi.format = format;
        vi.subresourceRange = {format_aspect(format), 0, 1, 0, 1};
        check(vkCreateImageView(d.vk(), &vi, nullptr, &view), "vkCreateImageView");
    }
    ~RawImage() {
        vkDestroyImageView(device.vk(), view, nullptr);
        vkDestroyImage(device.vk(), image, nullptr);
    }
};

// A full barrier with a layout change: the step-by-step path does not try to be clever.
void full(gpu::CommandBuffer& cmd, VkImage image, VkFormat format, VkImageLayout from, VkImageLayout to) {
    VkImageMemoryBarrier2 b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2};
    b.srcStageMask = b.dstStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
    b.srcAccessMask = b.dstAccessMask = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT;
    b.oldLayout = from;
    b.newLayout = to;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image;
    b.subresourceRange = {format_aspect(format), 0, 1, 0, 1};
    VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
    dep.imageMemoryBarrierCount = 1;
    dep.pImageMemoryBarriers = &b;
    vkCmdPipelineBarrier2(cmd.vk(), &dep);
}

VkRenderingAttachmentInfo attachment(VkImageView view, VkImageLayout layout, VkAttachmentLoadOp load,
                                     VkClearValue clear = {}) {
    VkRenderingAttachmentInfo a{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
    a.imageView = view;
    a.imageLayout = layout;
    a.loadOp = load;
    a.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    a.clearValue = clear;
    return a;
}

} // namespace

std::vector<uint8_t> reference_frame(gpu::Device& device, const Pipelines& pipelines, const ChannelMix& op,
                                     const FrameOptions& o, float shift) {
    const VkExtent2D extent{o.width, o.height};
    const VkFormat color = Pipelines::color_format;
    RawImage scene(device, color, extent,
                   VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_STORAGE_BIT |
                       VK_IMAGE_USAGE_SAMPLED_BIT);
    RawImage depth(device, Pipelines::depth_format, extent, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT);
    RawImage composite(device, color, extent,
                       VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_STORAGE_BIT);
    gpu::Image output(device,
                      {.width = o.width, .height = o.height, .format = color, .name = "reference output"});
    const gpu::Shape shape{1, 3, int64_t(o.height), int64_t(o.width)};
    gpu::Tensor x(device, shape, gpu::DType::f32, "reference x"),
        y(device, shape, gpu::DType::f32, "reference y");
    gpu::Buffer readback(device, {.size = uint64_t(o.width) * o.height * 4,
                                  .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                  .memory = gpu::MemoryUsage::Readback,
                                  .name = "reference readback"});
    const auto graphics = gpu::QueueRole::Graphics;
    device.run_now(graphics, [&](gpu::CommandBuffer& cmd) { // scene
        full(cmd, scene.image, color, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
        full(cmd, depth.image, Pipelines::depth_format, VK_IMAGE_LAYOUT_UNDEFINED,
             VK_IMAGE_LAYOUT_ATTACHMENT_OPTIMAL);
        VkRenderingAttachmentInfo c =
            attachment(scene.view, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_ATTACHMENT_LOAD_OP_CLEAR,
                       {.color = {{0.1f, 0.1f, 0.15f, 1.f}}});
        VkRenderingAttachmentInfo d = attachment(depth.view, VK_IMAGE_LAYOUT_ATTACHMENT_OPTIMAL,
                                                 VK_ATTACHMENT_LOAD_OP_CLEAR, {.depthStencil = {1.f, 0}});
        VkRenderingInfo ri{VK_STRUCTURE_TYPE_RENDERING_INFO};
        ri.renderArea = {{0, 0}, extent};
        ri.layerCount = 1;
        ri.colorAttachmentCount = 1;
        ri.pColorAttachments = &c;
        ri.pDepthAttachment = &d;
        vkCmdBeginRendering(cmd.vk(), &ri);
        pipelines.scene(cmd, extent, shift);
        vkCmdEndRendering(cmd.vk());
    });
    device.run_now(graphics, [&](gpu::CommandBuffer& cmd) { // to tensor
        full(cmd, scene.image, color, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
             VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
        pipelines.to_tensor(cmd, scene.view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, x.range(), extent);
    });
    device.run_now(graphics, [&](gpu::CommandBuffer& cmd) { // the ML operator
        const gpu::Tensor in[] = {x}, out[] = {y};
        op.record(cmd, in, out);
    });
    device.run_now(graphics, [&](gpu::CommandBuffer& cmd) { // composite
        full(cmd, composite.image, color, VK_IMAGE_LAYOUT_UNDEFINED,
             VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
        VkRenderingAttachmentInfo c = attachment(composite.view, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                                                 VK_ATTACHMENT_LOAD_OP_DONT_CARE);
        VkRenderingInfo ri{VK_STRUCTURE_TYPE_RENDERING_INFO};
        ri.renderArea = {{0, 0}, extent};
        ri.layerCount = 1;
        ri.colorAttachmentCount = 1;
        ri.pColorAttachments = &c;
        vkCmdBeginRendering(cmd.vk(), &ri);
        pipelines.composite(cmd, scene.view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, y.range(), extent);
        vkCmdEndRendering(cmd.vk());
    });
    device.run_now(graphics, [&](gpu::CommandBuffer& cmd) { // post, then the copy out
        full(cmd, composite.image, color, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_IMAGE_LAYOUT_GENERAL);
        full(cmd, output.vk(), color, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL);
        pipelines.post(cmd, composite.view, output.view(), extent);
        full(cmd, output.vk(), color, VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
        cmd.copy(output, readback.range());
        gpu::barrier::to_host(cmd);
    });
    const auto* bytes = reinterpret_cast<const uint8_t*>(readback.mapped());
    return {bytes, bytes + readback.size()};
}

} // namespace vkml::fg::test
