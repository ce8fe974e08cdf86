#pragma once
// Compute and raster pipelines, created once and keyed by (shader, specialization constants, workgroup size,
// binding types, push-constant size), so operators share them. Specialization constants 0.. carry shape
// values when known at creation (0 tells the shader to read the push constant instead); 100..102
// carry the workgroup size. The persistent VkPipelineCache lives in PipelineCache.
#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

namespace vkml::gpu {

// A built-in shader variant. Its enumerators are generated from shaders/shaders.list into a header
// that is not part of the API (vkml/shader_ids.hpp, for vkml's own operators and passes).
enum class ShaderId : uint32_t;

class Device;

// What one binding of set 0 holds (CommandBuffer::dispatch's gpu::Binding gives the descriptor).
enum class BindingType : uint8_t {
    StorageBuffer,       // a BufferRange
    UniformBuffer,       // a BufferRange
    StorageImage,        // an image view (imageLoad/imageStore)
    SampledImage,        // an image view read without a sampler (texelFetch of a texture2D)
    SampledImageSampler, // an image view with its sampler (a combined image sampler, sampler2D)
};
const char* binding_type_name(BindingType type);
VkDescriptorType descriptor_type(BindingType type);

struct ComputePipelineDesc {
    ShaderId shader{};
    uint32_t bindings = 0; // storage buffers at set 0, bindings 0..n-1 (when `binding_types` is empty)
    // Otherwise binding i of set 0 holds binding_types[i] (and `bindings` is 0 or its size).
    std::vector<BindingType> binding_types;
    uint32_t push_constant_bytes = 0;
    std::array<uint32_t, 3> workgroup{64, 1, 1};
    std::vector<uint32_t> specialization; // values of constant_id 0, 1, ...
    std::string name;                     // debug name; defaults to the shader id
};

// How a raster pipeline's colour output combines with the attachment.
enum class Blend : uint8_t {
    None,          // overwrite
    Alpha,         // rgb = src * a + dst * (1 - a); alpha = a + dst_a * (1 - a)
    Premultiplied, // rgb = src + dst * (1 - a); alpha likewise
    Additive,      // dst + src
};

// Raster pipelines for dynamic rendering (VK_KHR_dynamic_rendering, core in 1.3), built and cached
// by the same PipelineCache: a vertex and a fragment shader, set 0 of `binding_types` visible to
// both stages, push constants for both, one blend for every colour attachment, an optional depth
// test (less, with writes), viewport and scissor dynamic (the frame graph sets them). No vertex
// input means a vertex-less draw (positions from gl_VertexIndex, as a fullscreen triangle).
struct GraphicsPipelineDesc {
    ShaderId vertex{}, fragment{};
    std::vector<BindingType> binding_types;
    uint32_t push_constant_bytes = 0;
    std::vector<VkFormat> color_formats;
    Blend blend = Blend::None;
    VkFormat depth_format = VK_FORMAT_UNDEFINED; // UNDEFINED: no depth attachment
    VkPrimitiveTopology topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
    VkCullModeFlags cull = VK_CULL_MODE_NONE;
    VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT;
    bool alpha_to_coverage = false;
    std::vector<VkVertexInputBindingDescription> vertex_bindings;
    std::vector<VkVertexInputAttributeDescription> vertex_attributes;
    std::vector<uint32_t> specialization; // constant_id 0, 1, ... of both stages
    std::string name;                     // debug name; defaults to the fragment shader's id
};

// One compiler statistic of a pipeline's executable (VK_KHR_pipeline_executable_properties),
// e.g. {"compute", "Register Count", ..., 128}; booleans are 0 or 1.
struct PipelineStatistic {
    std::string executable; // the executable's name as the driver gives it (a shader stage)
    std::string name;
    std::string description;
    double value = 0;
};

class Pipeline {
public:
    // The VkPipeline; a pipeline still compiling (PipelineBatch) is waited for first, and its
    // creation error, if any, is thrown here.
    VkPipeline vk() const {
        if (ready_.valid()) ready_.get();
        return pipeline_;
    }
    VkPipelineLayout layout() const { return layout_; }
    VkDescriptorSetLayout set_layout() const { return set_layout_; }
    uint32_t bindings() const { return uint32_t(binding_types_.size()); }
    const std::vector<BindingType>& binding_types() const { return binding_types_; }
    // Whether every binding is a storage buffer (dispatch with BufferRanges).
    bool buffers_only() const { return buffers_only_; }
    uint32_t push_constant_bytes() const { return push_bytes_; }
    const std::array<uint32_t, 3>& workgroup() const { return workgroup_; }
    const std::string& name() const { return name_; }
    VkPipelineBindPoint bind_point() const { return bind_point_; }
    VkShaderStageFlags stages() const { return stages_; } // of the descriptors and push constants
    // The driver's compiler statistics, captured when the device has
    // Capabilities::pipeline_statistics (DeviceDesc::pipeline_statistics, VKML_PIPELINE_STATS=1);
    // empty otherwise.
    const std::vector<PipelineStatistic>& statistics() const {
        if (ready_.valid()) ready_.get();
        return statistics_;
    }

private:
    friend class PipelineCache;
    std::shared_future<void> ready_; // valid while (or since) a worker thread compiled it
    VkPipeline pipeline_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    std::vector<BindingType> binding_types_;
    bool buffers_only_ = true;
    uint32_t push_bytes_ = 0;
    std::array<uint32_t, 3> workgroup_{};
    std::string name_;
    VkPipelineBindPoint bind_point_ = VK_PIPELINE_BIND_POINT_COMPUTE;
    VkShaderStageFlags stages_ = VK_SHADER_STAGE_COMPUTE_BIT;
    std::vector<PipelineStatistic> statistics_;
};

struct PipelineCacheStats {
    uint64_t pipelines = 0;     // pipelines created in this process
    uint64_t lookups_hit = 0;   // get() served from the in-memory map
    uint64_t loaded_bytes = 0;  // VkPipelineCache data loaded from disk at start
    bool file_rejected = false; // a cache file existed but was corrupt or from another device
    std::filesystem::path file; // empty when the persistent cache is off
};

class PipelineCache {
public:
    // Loads the persistent cache from `dir` (empty path: no persistent cache).
    PipelineCache(Device& device, const std::filesystem::path& dir);
    ~PipelineCache(); // saves
    PipelineCache(const PipelineCache&) = delete;
    PipelineCache& operator=(const PipelineCache&) = delete;

    // Thread-safe. Throws vkml::Error(Unsupported) if the shader variant needs a missing feature.
    // Inside a PipelineBatch a new compute pipeline compiles on a worker thread: get() returns at
    // once, and Pipeline::vk() waits for it.
    const Pipeline& get(const ComputePipelineDesc& desc);
    const Pipeline& get(const GraphicsPipelineDesc& desc);
    // Writes the VkPipelineCache to disk (atomically: a temporary file renamed into place).
    void save();
    PipelineCacheStats stats() const;
    VkPipelineCache vk() const { return cache_; }
    // Worker threads that compile the pipelines of a PipelineBatch (VKML_PIPELINE_THREADS, default
    // the hardware threads up to 16; 0 or 1: none, every pipeline compiles in get()).
    unsigned worker_threads() const { return threads_; }

private:
    friend class PipelineBatch;
    // A batch counts the pipelines it started; end_batch waits for them and throws the first error.
    void begin_batch();
    void end_batch(bool rethrow);
    void worker();
    void load();
    void destroy(Pipeline& p);
    // The set layout and pipeline layout of `types` and push constants for `stages`, into `p`.
    void create_layouts(Pipeline& p, const std::vector<BindingType>& types, uint32_t push_bytes,
                        VkShaderStageFlags stages);
    void check_shader(ShaderId id) const;
    // Reads the driver's statistics of p (Capabilities::pipeline_statistics); prints them with
    // the specialization constants when VKML_PIPELINE_STATS=1.
    void capture_statistics(Pipeline& p, const std::vector<uint32_t>& specialization) const;
    Device& device_;
    std::filesystem::path file_;
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, std::unique_ptr<Pipeline>> pipelines_;
    PipelineCacheStats stats_;
    // The compile workers: jobs_ under job_mutex_; batch_ (under mutex_) the open batches' depth and
    // the futures of the pipelines they started.
    unsigned threads_ = 0;
    std::vector<std::thread> workers_;
    std::deque<std::function<void()>> jobs_;
    std::mutex job_mutex_;
    std::condition_variable job_cv_;
    bool stopping_ = false;
    int batch_depth_ = 0;
    std::vector<std::shared_future<void>> batch_pending_;
    // The debug names of the pipelines the open batches compile on workers, applied by end_batch
    // on the batch's own thread once their jobs are done (under mutex_).
    std::vector<std::pair<Pipeline*, std::string>> batch_names_;
};

// While one exists (a Session's build), new compute pipelines of `device` compile on the cache's
// worker threads, overlapping each other and the op planning that requests them. finish() (or the
// destructor, which does not throw) waits for them; finish() throws the first creation error.
class PipelineBatch {
public:
    explicit PipelineBatch(PipelineCache& cache) : cache_(&cache) { cache_->begin_batch(); }
    ~PipelineBatch() {
        if (cache_) cache_->end_batch(false);
    }
    PipelineBatch(const PipelineBatch&) = delete;
    PipelineBatch& operator=(const PipelineBatch&) = delete;
    void finish() {
        PipelineCache* c = cache_;
        cache_ = nullptr;
        if (c) c->end_batch(true);
    }

private:
    PipelineCache* cache_;
};

// The default persistent-cache directory: $VKML_CACHE_DIR, $XDG_CACHE_HOME/vkml, ~/.cache/vkml.
std::filesystem::path default_cache_dir();

} // namespace vkml::gpu
