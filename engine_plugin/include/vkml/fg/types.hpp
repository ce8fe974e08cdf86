#pragma once
// The vocabulary of the frame graph: versioned resource handles, queues, pass kinds, the typed ways
// a pass may use an image or a buffer, and the descriptions of transient and imported resources.
// Nothing here touches a device, so graphs can be declared and compiled in unit tests.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <vulkan/vulkan_core.h>

namespace vkml::gpu {
class Buffer;
}

namespace vkml::fg {

inline constexpr uint32_t no_index = ~0u;

// A resource at one version. Every write() returns the next version; declaring a pass with an
// older version than the latest is an error that names the pass which wrote the newer one
// (Frostbite-style: a stale handle fails loudly instead of silently reading the wrong data).
template <class Tag>
struct Handle {
    uint32_t index = no_index;
    uint32_t version = 0;
    bool valid() const { return index != no_index; }
    explicit operator bool() const { return valid(); }
    bool operator==(const Handle&) const = default;
};
struct ImageTag {};
struct BufferTag {};
using ImageHandle = Handle<ImageTag>;
using BufferHandle = Handle<BufferTag>;

// The queue a pass runs on. AsyncCompute is a request: on a device without a separate compute
// queue (or with async compute turned off) the pass runs on the graphics queue.
enum class Queue : uint8_t { Graphics, AsyncCompute };
inline constexpr size_t queue_count = 2;
const char* queue_name(Queue queue);

// Raster passes get dynamic rendering begun and ended around their callback; ML passes are
// compute passes that record vkml operators (an ops::Op, a Session or a chunk of one), kept apart
// so diagnostics can tell them from hand-written compute.
enum class PassKind : uint8_t { Raster, Compute, Ml, Transfer };
const char* pass_kind_name(PassKind kind);

enum class ResourceKind : uint8_t { Image, Buffer };

// Typed uses. Reads never create a version; writes do. Stages default to the pass kind's shader
// stage (fragment for raster, compute for compute and ML) and may be overridden per use.
enum class ImageRead : uint8_t {
    Sampled,     // through a sampler or texelFetch
    Storage,     // imageLoad
    TransferSrc, // copy or blit source
    DepthTest,   // read-only depth attachment of a raster pass
};
enum class ImageWrite : uint8_t {
    Storage,          // imageStore of every texel: earlier contents are not needed
    StorageReadWrite, // read-modify-write: the previous version is an input too
    TransferDst,      // copy, blit or clear destination
};
enum class BufferRead : uint8_t { Storage, Uniform, TransferSrc, Vertex, Index, Indirect };
enum class BufferWrite : uint8_t { Storage, StorageReadWrite, TransferDst };

enum class LoadOp : uint8_t { Load, Clear, DontCare };

struct ColorAttachment {
    LoadOp load = LoadOp::Clear;
    VkClearColorValue clear{};
    bool store = true;
};

struct DepthAttachment {
    LoadOp load = LoadOp::Clear;
    float clear_depth = 1.f;
    uint32_t clear_stencil = 0;
    bool store = true;
};

// Transient resources are created (and their memory aliased) by the graph. Images are sized
// absolutely when width and height are set, else `scale` times the graph's output extent.
struct TransientImageDesc {
    VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
    uint32_t width = 0, height = 0;
    float scale = 1.f;
};

// Buffers hold `size` bytes, or when it is 0, `bytes_per_pixel` times the pixels of `scale` times
// the output extent (a tensor that follows the resolution).
struct TransientBufferDesc {
    uint64_t size = 0;
    uint64_t bytes_per_pixel = 0;
    float scale = 1.f;
};

// How an imported resource arrives (what the host did to it last, on which queue) or must leave.
struct ResourceState {
    VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_NONE;
    VkAccessFlags2 access = VK_ACCESS_2_NONE;
    VkImageLayout layout = VK_IMAGE_LAYOUT_UNDEFINED; // images only; UNDEFINED discards contents
    Queue queue = Queue::Graphics;
    // Exclusive resources only: the queue family that owns it, when not `queue`'s family. The host
    // then does the other half of the ownership transfer (its release before, its acquire after).
    uint32_t family = VK_QUEUE_FAMILY_IGNORED;
};

// Imported resources belong to the host (a swapchain image, its own textures and buffers). The
// graph transitions them from `incoming` and, when `outgoing` is set, to `outgoing` at the end of
// the frame; otherwise they stay as the last pass left them. `exclusive` means
// VK_SHARING_MODE_EXCLUSIVE: the graph then transfers queue-family ownership (release/acquire
// pairs) whenever a pass on another family's queue uses it.
struct ImportedImageDesc {
    VkImage image = VK_NULL_HANDLE;
    VkImageView view = VK_NULL_HANDLE;
    VkFormat format = VK_FORMAT_UNDEFINED;
    uint32_t width = 0, height = 0;
    bool exclusive = false;
    ResourceState incoming;
    std::optional<ResourceState> outgoing;
};

struct ImportedBufferDesc {
    VkBuffer buffer = VK_NULL_HANDLE;
    uint64_t offset = 0;
    uint64_t size = VK_WHOLE_SIZE;
    // A vkml buffer instead of a raw one: ML passes can then view it as tensors.
    std::shared_ptr<gpu::Buffer> vkml_buffer;
    bool exclusive = false;
    ResourceState incoming;
    std::optional<ResourceState> outgoing;
};

// Image aspects of a format: depth and/or stencil for depth formats, colour otherwise.
VkImageAspectFlags format_aspect(VkFormat format);

struct PlannedResource; // a resource as the compiled plan sees it (internal)

// How FrameGraph::compile() plans.
struct CompileOptions {
    // Queue families of the graphics and async compute queues, and whether the async compute queue
    // is a queue of its own. Without one every pass runs on the graphics queue.
    uint32_t graphics_family = 0;
    uint32_t compute_family = 0;
    bool separate_compute_queue = false;
    // Honour passes' async compute requests (when a separate queue exists).
    bool async_compute = true;
    // Let transients with disjoint lifetimes share memory.
    bool alias_memory = true;
    // Memory requirements of a transient. Unset: an estimate from size and format (for tests);
    // the executor asks the device.
    std::function<VkMemoryRequirements(const PlannedResource&)> memory_requirements;
};

} // namespace vkml::fg
