#pragma once
// The declared graph, as FrameGraph's setup calls record it. Shared by compile, the executor and
// the Graphviz dump; not part of the public API.
#include <optional>
#include <string>
#include <vector>

#include "plan.hpp"
#include "vkml/fg/frame_graph.hpp"

namespace vkml::fg {

enum class AttachmentRole : uint8_t { None, Color, Depth };

// Everything one pass does to one resource (several declarations of the same resource in a pass
// are merged into one use).
struct Use {
    uint32_t resource = no_index;
    uint32_t version_in = 0;         // the version the pass sees
    uint32_t version_out = no_index; // the version it writes, or no_index
    bool reads_contents = false;     // needs version_in's contents (so its writer must run)
    VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_NONE;
    VkAccessFlags2 access = VK_ACCESS_2_NONE;
    VkImageLayout layout = VK_IMAGE_LAYOUT_UNDEFINED;
    VkImageUsageFlags image_usage = 0;
    VkBufferUsageFlags buffer_usage = 0;
    AttachmentRole attachment = AttachmentRole::None;
    uint32_t color_slot = 0;
    ColorAttachment color;
    DepthAttachment depth;
};

struct PassDecl {
    std::string name;
    PassKind kind = PassKind::Compute;
    Queue queue = Queue::Graphics; // as requested
    bool side_effect = false;
    uint32_t color_count = 0;
    std::vector<Use> uses;
    RecordFn record;

    const Use* find(uint32_t resource) const {
        for (const Use& u : uses)
            if (u.resource == resource) return &u;
        return nullptr;
    }
};

struct ResourceDecl {
    std::string name;
    ResourceKind kind = ResourceKind::Image;
    bool imported = false;
    TransientImageDesc image;
    TransientBufferDesc buffer;
    ImportedImageDesc imported_image;
    ImportedBufferDesc imported_buffer;
    std::vector<uint32_t> writers{no_index}; // writers[v]: the pass that wrote version v

    uint32_t version() const { return uint32_t(writers.size() - 1); }
    VkFormat format() const { return imported ? imported_image.format : image.format; }
    bool exclusive() const {
        return imported &&
               (kind == ResourceKind::Image ? imported_image.exclusive : imported_buffer.exclusive);
    }
    const ResourceState& incoming() const {
        return kind == ResourceKind::Image ? imported_image.incoming : imported_buffer.incoming;
    }
    const std::optional<ResourceState>& outgoing() const {
        return kind == ResourceKind::Image ? imported_image.outgoing : imported_buffer.outgoing;
    }
};

struct FrameGraph::Impl {
    FrameGraphDesc desc;
    std::vector<ResourceDecl> resources;
    std::vector<PassDecl> passes;
    std::optional<Plan> plan;
    uint64_t generation = 0; // bumped by every declaration, so executors know to recompile
    uint64_t compiled_generation = ~0ull;
    uint64_t serial = 0; // unique per compile() across all graphs, so executors spot other plans

    // Declares that `pass` uses the resource behind `handle`; returns the use (merged with an
    // earlier declaration of the same resource in the pass) after checking the handle is current.
    Use& declare(uint32_t pass, ResourceKind kind, uint32_t index, uint32_t version, bool reads, bool writes,
                 const char* what);
    // "pass 'x'" for messages.
    std::string pass_label(uint32_t pass) const { return "pass '" + passes[pass].name + "'"; }
};

// The extent a transient image gets for the graph's output extent (0x0 when it cannot be known).
VkExtent2D resolve_extent(const ResourceDecl& resource, const FrameGraphDesc& desc);
uint64_t resolve_size(const ResourceDecl& resource, const FrameGraphDesc& desc);

} // namespace vkml::fg
