// Declaring a frame: resources, passes and their typed uses. Every mistake that can be seen at
// declaration time (a stale handle, a read of a transient nothing wrote, an attachment in a
// compute pass) is reported here, naming the pass and the resource.
#include <cmath>
#include <utility>

#include "graph_impl.hpp"
#include "vkml/error.hpp"
#include "vkml/fg/access.hpp"

namespace vkml::fg {

const char* queue_name(Queue queue) {
    return queue == Queue::Graphics ? "graphics" : "async compute";
}

const char* pass_kind_name(PassKind kind) {
    switch (kind) {
    case PassKind::Raster:
        return "raster";
    case PassKind::Compute:
        return "compute";
    case PassKind::Ml:
        return "ml";
    case PassKind::Transfer:
        return "transfer";
    }
    return "?";
}

VkImageAspectFlags format_aspect(VkFormat format) {
    switch (format) {
    case VK_FORMAT_D16_UNORM:
    case VK_FORMAT_X8_D24_UNORM_PACK32:
    case VK_FORMAT_D32_SFLOAT:
        return VK_IMAGE_ASPECT_DEPTH_BIT;
    case VK_FORMAT_S8_UINT:
        return VK_IMAGE_ASPECT_STENCIL_BIT;
    case VK_FORMAT_D16_UNORM_S8_UINT:
    case VK_FORMAT_D24_UNORM_S8_UINT:
    case VK_FORMAT_D32_SFLOAT_S8_UINT:
        return VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT;
    default:
        return VK_IMAGE_ASPECT_COLOR_BIT;
    }
}

namespace {

[[noreturn]] void invalid(const std::string& message) {
    throw Error(ErrorCode::InvalidArgument, "frame graph: " + message);
}

bool is_depth(VkFormat format) {
    return format_aspect(format) != VK_IMAGE_ASPECT_COLOR_BIT;
}

// Shader stages a use touches when the caller does not say.
VkPipelineStageFlags2 shader_stages(PassKind kind, VkPipelineStageFlags2 given) {
    if (given) return given;
    return kind == PassKind::Raster ? VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT
                                    : VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT;
}

struct UseInfo {
    VkPipelineStageFlags2 stages;
    VkAccessFlags2 access;
    VkImageLayout layout;
    uint32_t usage; // VkImageUsageFlags or VkBufferUsageFlags
};

constexpr VkPipelineStageFlags2 transfer_stage = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT;
constexpr VkPipelineStageFlags2 depth_stages =
    VK_PIPELINE_STAGE_2_EARLY_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_2_LATE_FRAGMENT_TESTS_BIT;

UseInfo image_read(ImageRead use, PassKind kind, VkPipelineStageFlags2 stages, VkFormat format) {
    // Depth images are read in the read-only layout that serves sampling and depth tests alike, so
    // a pass may do both and consecutive readers share one transition.
    const VkImageLayout sampled =
        is_depth(format) ? VK_IMAGE_LAYOUT_READ_ONLY_OPTIMAL : VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
    switch (use) {
    case ImageRead::Sampled:
        return {shader_stages(kind, stages), VK_ACCESS_2_SHADER_SAMPLED_READ_BIT, sampled,
                VK_IMAGE_USAGE_SAMPLED_BIT};
    case ImageRead::Storage:
        return {shader_stages(kind, stages), VK_ACCESS_2_SHADER_STORAGE_READ_BIT, VK_IMAGE_LAYOUT_GENERAL,
                VK_IMAGE_USAGE_STORAGE_BIT};
    case ImageRead::TransferSrc:
        return {stages ? stages : transfer_stage, VK_ACCESS_2_TRANSFER_READ_BIT,
                VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_IMAGE_USAGE_TRANSFER_SRC_BIT};
    case ImageRead::DepthTest:
        return {stages ? stages : depth_stages, VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_READ_BIT,
                VK_IMAGE_LAYOUT_READ_ONLY_OPTIMAL, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT};
    }
    return {};
}

UseInfo image_write(ImageWrite use, PassKind kind, VkPipelineStageFlags2 stages) {
    switch (use) {
    case ImageWrite::Storage:
        return {shader_stages(kind, stages), VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT, VK_IMAGE_LAYOUT_GENERAL,
                VK_IMAGE_USAGE_STORAGE_BIT};
    case ImageWrite::StorageReadWrite:
        return {shader_stages(kind, stages),
                VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_USAGE_STORAGE_BIT};
    case ImageWrite::TransferDst:
        return {stages ? stages : transfer_stage, VK_ACCESS_2_TRANSFER_WRITE_BIT,
                VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_USAGE_TRANSFER_DST_BIT};
    }
    return {};
}

UseInfo buffer_read(BufferRead use, PassKind kind, VkPipelineStageFlags2 stages) {
    switch (use) {
    case BufferRead::Storage:
        return {shader_stages(kind, stages),
                VK_ACCESS_2_SHADER_STORAGE_READ_BIT,
                {},
                VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    case BufferRead::Uniform: {
        const VkPipelineStageFlags2 raster =
            VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT;
        return {stages                     ? stages
                : kind == PassKind::Raster ? raster
                                           : VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                VK_ACCESS_2_UNIFORM_READ_BIT,
                {},
                VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT};
    }
    case BufferRead::TransferSrc:
        return {stages ? stages : transfer_stage,
                VK_ACCESS_2_TRANSFER_READ_BIT,
                {},
                VK_BUFFER_USAGE_TRANSFER_SRC_BIT};
    case BufferRead::Vertex:
        return {stages ? stages : VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT,
                VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT,
                {},
                VK_BUFFER_USAGE_VERTEX_BUFFER_BIT};
    case BufferRead::Index:
        return {stages ? stages : VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT,
                VK_ACCESS_2_INDEX_READ_BIT,
                {},
                VK_BUFFER_USAGE_INDEX_BUFFER_BIT};
    case BufferRead::Indirect:
        return {stages ? stages : VK_PIPELINE_STAGE_2_DRAW_INDIRECT_BIT,
                VK_ACCESS_2_INDIRECT_COMMAND_READ_BIT,
                {},
                VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT};
    }
    return {};
}

UseInfo buffer_write(BufferWrite use, PassKind kind, VkPipelineStageFlags2 stages) {
    switch (use) {
    case BufferWrite::Storage:
        return {shader_stages(kind, stages),
                VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                {},
                VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    case BufferWrite::StorageReadWrite:
        return {shader_stages(kind, stages),
                VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                {},
                VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    case BufferWrite::TransferDst:
        return {stages ? stages : transfer_stage,
                VK_ACCESS_2_TRANSFER_WRITE_BIT,
                {},
                VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    }
    return {};
}

bool is_transfer(const UseInfo& info) {
    return info.access == VK_ACCESS_2_TRANSFER_READ_BIT || info.access == VK_ACCESS_2_TRANSFER_WRITE_BIT;
}

void check_kind(const FrameGraph::Impl& g, uint32_t pass, const UseInfo& info, const std::string& resource,
                const char* what) {
    const PassDecl& p = g.passes[pass];
    if (p.kind == PassKind::Transfer && !is_transfer(info))
        invalid(g.pass_label(pass) + " is a transfer pass but uses '" + resource + "' as " + what +
                ": transfer passes may only copy, blit and clear");
}

Use& apply(Use& use, const UseInfo& info, bool image, bool reads) {
    use.stages |= info.stages;
    use.access |= info.access;
    if (image)
        use.image_usage |= info.usage;
    else
        use.buffer_usage |= info.usage;
    use.reads_contents |= reads;
    return use;
}

} // namespace

Use& FrameGraph::Impl::declare(uint32_t pass, ResourceKind kind, uint32_t index, uint32_t version, bool reads,
                               bool writes, const char* what) {
    const char* kind_name = kind == ResourceKind::Image ? "image" : "buffer";
    if (index == no_index || index >= resources.size() || resources[index].kind != kind)
        invalid(pass_label(pass) + " uses an invalid " + kind_name +
                " handle (default-constructed, or from another graph)");
    ResourceDecl& r = resources[index];
    PassDecl& p = passes[pass];
    Use* use = nullptr;
    for (Use& u : p.uses)
        if (u.resource == index) use = &u;
    const uint32_t current = use ? use->version_in : r.version();
    const bool ok = version == current || (use && version == use->version_out);
    if (!ok) {
        if (version > r.version())
            invalid(pass_label(pass) + " uses version " + std::to_string(version) + " of '" + r.name +
                    "', which does not exist (latest: " + std::to_string(r.version()) + ")");
        const uint32_t newer = version + 1;
        invalid(pass_label(pass) + " uses a stale handle to '" + r.name + "': version " +
                std::to_string(version) + ", but " + pass_label(r.writers[newer]) + " wrote version " +
                std::to_string(newer) + "; use the handle that write() returned");
    }
    if (reads && !r.imported && current == 0 && !(use && use->version_out != no_index))
        invalid(pass_label(pass) + " " + what + " '" + r.name +
                "' before any pass wrote it (a transient has no contents until written)");
    if (!use) {
        p.uses.push_back(Use{.resource = index, .version_in = current});
        use = &p.uses.back();
    }
    if (writes && use->version_out == no_index) {
        r.writers.push_back(pass);
        use->version_out = r.version();
    }
    ++generation;
    return *use;
}

VkExtent2D resolve_extent(const ResourceDecl& r, const FrameGraphDesc& desc) {
    if (r.kind != ResourceKind::Image) return {};
    if (r.imported) return {r.imported_image.width, r.imported_image.height};
    if (r.image.width && r.image.height) return {r.image.width, r.image.height};
    auto scaled = [&](uint32_t v) { return uint32_t(std::max(1.0, std::ceil(double(v) * r.image.scale))); };
    if (!desc.output_width || !desc.output_height) return {};
    return {scaled(desc.output_width), scaled(desc.output_height)};
}

uint64_t resolve_size(const ResourceDecl& r, const FrameGraphDesc& desc) {
    if (r.kind != ResourceKind::Buffer) return 0;
    if (r.imported) return r.imported_buffer.size;
    if (r.buffer.size) return r.buffer.size;
    const auto scaled = [&](uint32_t v) {
        return uint64_t(std::max(1.0, std::ceil(double(v) * r.buffer.scale)));
    };
    return r.buffer.bytes_per_pixel * scaled(desc.output_width) * scaled(desc.output_height);
}

// --- PassBuilder --------------------------------------------------------------------------------
// Each method checks what it can from the pass kind and the resource first, then declares the use.

namespace {
const ResourceDecl& resource_of(const FrameGraph::Impl& g, uint32_t pass, ResourceKind kind, uint32_t index) {
    if (index == no_index || index >= g.resources.size() || g.resources[index].kind != kind)
        invalid(g.pass_label(pass) + " uses an invalid " +
                (kind == ResourceKind::Image ? "image" : "buffer") +
                " handle (default-constructed, or from another graph)");
    return g.resources[index];
}

void check_layout(const FrameGraph::Impl& g, uint32_t pass, const ResourceDecl& r, const Use& u,
                  VkImageLayout layout) {
    if (u.layout != VK_IMAGE_LAYOUT_UNDEFINED && u.layout != layout)
        invalid(g.pass_label(pass) + " uses '" + r.name + "' in two layouts (" + layout_name(u.layout) +
                " and " + layout_name(layout) + ")");
}

// An attachment must be the pass's only use of its image.
void check_attachment(const FrameGraph::Impl& g, uint32_t pass, const ResourceDecl& r, uint32_t index,
                      const char* what) {
    if (g.passes[pass].find(index))
        invalid(g.pass_label(pass) + " uses '" + r.name + "' as a " + what +
                " attachment and in another way");
}
} // namespace

void PassBuilder::read(ImageHandle image, ImageRead use, VkPipelineStageFlags2 stages) {
    FrameGraph::Impl& g = *graph_->impl_;
    const PassKind kind = g.passes[pass_].kind;
    const ResourceDecl& r = resource_of(g, pass_, ResourceKind::Image, image.index);
    if (use == ImageRead::DepthTest && kind != PassKind::Raster)
        invalid(g.pass_label(pass_) + " reads a depth attachment but is not a raster pass");
    const UseInfo info = image_read(use, kind, stages, r.format());
    check_kind(g, pass_, info, r.name, "a shader resource");
    if (const Use* u = g.passes[pass_].find(image.index)) check_layout(g, pass_, r, *u, info.layout);
    if (use == ImageRead::DepthTest)
        for (const Use& other : g.passes[pass_].uses)
            if (other.attachment == AttachmentRole::Depth && other.resource != image.index)
                invalid(g.pass_label(pass_) + " has two depth attachments");
    Use& u = g.declare(pass_, ResourceKind::Image, image.index, image.version, true, false, "reads");
    u.layout = info.layout;
    if (use == ImageRead::DepthTest) u.attachment = AttachmentRole::Depth;
    apply(u, info, true, true);
}

ImageHandle PassBuilder::write(ImageHandle image, ImageWrite use, VkPipelineStageFlags2 stages) {
    FrameGraph::Impl& g = *graph_->impl_;
    const ResourceDecl& r = resource_of(g, pass_, ResourceKind::Image, image.index);
    const UseInfo info = image_write(use, g.passes[pass_].kind, stages);
    check_kind(g, pass_, info, r.name, "a storage image");
    if (const Use* u = g.passes[pass_].find(image.index)) check_layout(g, pass_, r, *u, info.layout);
    Use& u = g.declare(pass_, ResourceKind::Image, image.index, image.version, false, true, "writes");
    u.layout = info.layout;
    apply(u, info, true, use == ImageWrite::StorageReadWrite);
    return {image.index, u.version_out};
}

ImageHandle PassBuilder::color(ImageHandle image, const ColorAttachment& att) {
    FrameGraph::Impl& g = *graph_->impl_;
    PassDecl& p = g.passes[pass_];
    if (p.kind != PassKind::Raster)
        invalid(g.pass_label(pass_) + " has a colour attachment but is not a raster pass");
    const ResourceDecl& r = resource_of(g, pass_, ResourceKind::Image, image.index);
    if (is_depth(r.format()))
        invalid(g.pass_label(pass_) + " uses depth image '" + r.name + "' as a colour attachment");
    check_attachment(g, pass_, r, image.index, "colour");
    const bool load = att.load == LoadOp::Load;
    Use& u = g.declare(pass_, ResourceKind::Image, image.index, image.version, load, true,
                       "loads the colour attachment");
    u.attachment = AttachmentRole::Color;
    u.color_slot = p.color_count++;
    u.color = att;
    u.layout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
    const VkAccessFlags2 access = VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT |
                                  (load ? VK_ACCESS_2_COLOR_ATTACHMENT_READ_BIT : VK_ACCESS_2_NONE);
    apply(u,
          {VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT, access, u.layout,
           VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT},
          true, load);
    return {image.index, u.version_out};
}

ImageHandle PassBuilder::depth(ImageHandle image, const DepthAttachment& att) {
    FrameGraph::Impl& g = *graph_->impl_;
    if (g.passes[pass_].kind != PassKind::Raster)
        invalid(g.pass_label(pass_) + " has a depth attachment but is not a raster pass");
    const ResourceDecl& r = resource_of(g, pass_, ResourceKind::Image, image.index);
    if (!is_depth(r.format()))
        invalid(g.pass_label(pass_) + " uses colour image '" + r.name + "' as a depth attachment");
    check_attachment(g, pass_, r, image.index, "depth");
    for (const Use& other : g.passes[pass_].uses)
        if (other.attachment == AttachmentRole::Depth)
            invalid(g.pass_label(pass_) + " has two depth attachments");
    const bool load = att.load == LoadOp::Load;
    Use& u = g.declare(pass_, ResourceKind::Image, image.index, image.version, load, true,
                       "loads the depth attachment");
    u.attachment = AttachmentRole::Depth;
    u.depth = att;
    u.layout = VK_IMAGE_LAYOUT_ATTACHMENT_OPTIMAL;
    // Depth tests read the attachment whatever the load op.
    apply(u,
          {depth_stages,
           VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_READ_BIT | VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
           u.layout, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT},
          true, load);
    return {image.index, u.version_out};
}

void PassBuilder::read(BufferHandle buffer, BufferRead use, VkPipelineStageFlags2 stages) {
    FrameGraph::Impl& g = *graph_->impl_;
    const ResourceDecl& r = resource_of(g, pass_, ResourceKind::Buffer, buffer.index);
    const UseInfo info = buffer_read(use, g.passes[pass_].kind, stages);
    check_kind(g, pass_, info, r.name, "a shader resource");
    Use& u = g.declare(pass_, ResourceKind::Buffer, buffer.index, buffer.version, true, false, "reads");
    apply(u, info, false, true);
}

BufferHandle PassBuilder::write(BufferHandle buffer, BufferWrite use, VkPipelineStageFlags2 stages) {
    FrameGraph::Impl& g = *graph_->impl_;
    const ResourceDecl& r = resource_of(g, pass_, ResourceKind::Buffer, buffer.index);
    const UseInfo info = buffer_write(use, g.passes[pass_].kind, stages);
    check_kind(g, pass_, info, r.name, "a storage buffer");
    Use& u = g.declare(pass_, ResourceKind::Buffer, buffer.index, buffer.version, false, true, "writes");
    apply(u, info, false, use == BufferWrite::StorageReadWrite);
    return {buffer.index, u.version_out};
}

PassBuilder& PassBuilder::side_effect() {
    graph_->impl_->passes[pass_].side_effect = true;
    ++graph_->impl_->generation;
    return *this;
}

PassBuilder& PassBuilder::queue(Queue queue) {
    FrameGraph::Impl& g = *graph_->impl_;
    if (queue == Queue::AsyncCompute && g.passes[pass_].kind == PassKind::Raster)
        invalid(g.pass_label(pass_) +
                " is a raster pass: only compute, ML and transfer passes can run on the "
                "async compute queue");
    g.passes[pass_].queue = queue;
    ++g.generation;
    return *this;
}

PassBuilder& PassBuilder::record(RecordFn fn) {
    graph_->impl_->passes[pass_].record = std::move(fn);
    return *this;
}

// --- FrameGraph ---------------------------------------------------------------------------------

FrameGraph::FrameGraph(FrameGraphDesc desc) : impl_(std::make_unique<Impl>()) {
    impl_->desc = std::move(desc);
}
FrameGraph::~FrameGraph() = default;
FrameGraph::FrameGraph(FrameGraph&&) noexcept = default;
FrameGraph& FrameGraph::operator=(FrameGraph&&) noexcept = default;

const FrameGraphDesc& FrameGraph::desc() const {
    return impl_->desc;
}

namespace {
void check_name(const FrameGraph::Impl& g, const std::string& name) {
    if (name.empty()) invalid("resources need a name (it appears in errors, dumps and debug tools)");
    for (const ResourceDecl& r : g.resources)
        if (r.name == name) invalid("two resources are named '" + name + "'");
}
} // namespace

ImageHandle FrameGraph::create_image(std::string name, const TransientImageDesc& desc) {
    check_name(*impl_, name);
    if (desc.format == VK_FORMAT_UNDEFINED) invalid("image '" + name + "' has no format");
    if (bool(desc.width) != bool(desc.height))
        invalid("image '" + name +
                "' sets only one of width and height (set both, or neither to scale the output)");
    if (!desc.width && !(desc.scale > 0))
        invalid("image '" + name + "' has a scale of " + std::to_string(desc.scale));
    ResourceDecl r{.name = std::move(name), .kind = ResourceKind::Image, .image = desc};
    impl_->resources.push_back(std::move(r));
    ++impl_->generation;
    return {uint32_t(impl_->resources.size() - 1), 0};
}

BufferHandle FrameGraph::create_buffer(std::string name, const TransientBufferDesc& desc) {
    check_name(*impl_, name);
    if (!desc.size && !(desc.bytes_per_pixel && desc.scale > 0))
        invalid("buffer '" + name +
                "' has no size (set size, or bytes_per_pixel to follow the output extent)");
    ResourceDecl r{.name = std::move(name), .kind = ResourceKind::Buffer, .buffer = desc};
    impl_->resources.push_back(std::move(r));
    ++impl_->generation;
    return {uint32_t(impl_->resources.size() - 1), 0};
}

ImageHandle FrameGraph::import_image(std::string name, const ImportedImageDesc& desc) {
    check_name(*impl_, name);
    if (!desc.image || !desc.view || desc.format == VK_FORMAT_UNDEFINED || !desc.width || !desc.height)
        invalid("imported image '" + name + "' needs its image, view, format, width and height");
    ResourceDecl r{
        .name = std::move(name), .kind = ResourceKind::Image, .imported = true, .imported_image = desc};
    impl_->resources.push_back(std::move(r));
    ++impl_->generation;
    return {uint32_t(impl_->resources.size() - 1), 0};
}

BufferHandle FrameGraph::import_buffer(std::string name, const ImportedBufferDesc& desc) {
    check_name(*impl_, name);
    ImportedBufferDesc d = desc;
    if (d.vkml_buffer) {
        d.buffer = d.vkml_buffer->vk();
        if (d.size == VK_WHOLE_SIZE) d.size = d.vkml_buffer->size() - d.offset;
    }
    if (!d.buffer || d.size == 0 || d.size == VK_WHOLE_SIZE)
        invalid("imported buffer '" + name + "' needs its buffer and size");
    ResourceDecl r{
        .name = std::move(name), .kind = ResourceKind::Buffer, .imported = true, .imported_buffer = d};
    impl_->resources.push_back(std::move(r));
    ++impl_->generation;
    return {uint32_t(impl_->resources.size() - 1), 0};
}

void FrameGraph::rebind(ImageHandle image, VkImage vk_image, VkImageView view) {
    if (image.index >= impl_->resources.size() || !impl_->resources[image.index].imported ||
        impl_->resources[image.index].kind != ResourceKind::Image)
        invalid("rebind() needs the handle of an imported image");
    impl_->resources[image.index].imported_image.image = vk_image;
    impl_->resources[image.index].imported_image.view = view;
}

void FrameGraph::rebind(BufferHandle buffer, VkBuffer vk_buffer, uint64_t offset, uint64_t size) {
    if (buffer.index >= impl_->resources.size() || !impl_->resources[buffer.index].imported ||
        impl_->resources[buffer.index].kind != ResourceKind::Buffer)
        invalid("rebind() needs the handle of an imported buffer");
    ImportedBufferDesc& d = impl_->resources[buffer.index].imported_buffer;
    if (size != VK_WHOLE_SIZE && size != d.size)
        invalid("rebind() of '" + impl_->resources[buffer.index].name +
                "' changes its size: recompile instead");
    d.buffer = vk_buffer;
    d.offset = offset;
    d.vkml_buffer.reset();
}

void FrameGraph::rebind(BufferHandle buffer, std::shared_ptr<gpu::Buffer> vkml_buffer, uint64_t offset) {
    if (!vkml_buffer) invalid("rebind() needs a buffer");
    const uint64_t size = vkml_buffer->size() - offset;
    rebind(buffer, vkml_buffer->vk(), offset, size);
    impl_->resources[buffer.index].imported_buffer.vkml_buffer = std::move(vkml_buffer);
}

namespace {
uint32_t add_pass(FrameGraph::Impl& g, std::string name, PassKind kind) {
    if (name.empty()) invalid("passes need a name");
    for (const PassDecl& p : g.passes)
        if (p.name == name) invalid("two passes are named '" + name + "'");
    g.passes.push_back(PassDecl{.name = std::move(name), .kind = kind});
    ++g.generation;
    return uint32_t(g.passes.size() - 1);
}
} // namespace

PassBuilder FrameGraph::add_raster_pass(std::string name) {
    return PassBuilder(*this, add_pass(*impl_, std::move(name), PassKind::Raster));
}
PassBuilder FrameGraph::add_compute_pass(std::string name) {
    return PassBuilder(*this, add_pass(*impl_, std::move(name), PassKind::Compute));
}
PassBuilder FrameGraph::add_ml_pass(std::string name) {
    return PassBuilder(*this, add_pass(*impl_, std::move(name), PassKind::Ml));
}
PassBuilder FrameGraph::add_transfer_pass(std::string name) {
    return PassBuilder(*this, add_pass(*impl_, std::move(name), PassKind::Transfer));
}

bool FrameGraph::compiled() const {
    return impl_->plan.has_value();
}

const Plan& FrameGraph::plan() const {
    if (!impl_->plan) invalid("plan() before compile()");
    return *impl_->plan;
}

bool FrameGraph::uses_async_compute() const {
    return impl_->plan && impl_->plan->uses_async_compute;
}

} // namespace vkml::fg
