#include "vkml/gpu/pipeline.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>
#include <unistd.h>

#include "internal.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/image.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::gpu {

namespace {

// Our header in front of the driver's VkPipelineCache data. The driver checks its own header too,
// but some drivers crash on damaged data, so vkml refuses a file whose identity or checksum is
// wrong before the driver sees it.
struct FileHeader {
    char magic[8];
    uint32_t version;
    uint32_t vendor_id;
    uint32_t device_id;
    uint32_t driver_version;
    uint8_t pipeline_cache_uuid[VK_UUID_SIZE];
    uint8_t device_uuid[VK_UUID_SIZE];
    uint8_t driver_uuid[VK_UUID_SIZE];
    uint64_t data_size;
    uint64_t checksum;
};
constexpr char file_magic[8] = {'V', 'K', 'M', 'L', 'P', 'C', 'A', 'C'};
constexpr uint32_t file_version = 1;

uint64_t fnv1a(const std::byte* data, size_t size) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; ++i) {
        h ^= uint64_t(data[i]);
        h *= 1099511628211ull;
    }
    return h;
}

FileHeader header_for(const Capabilities& c) {
    FileHeader h{};
    std::memcpy(h.magic, file_magic, sizeof h.magic);
    h.version = file_version;
    h.vendor_id = c.vendor_id;
    h.device_id = c.device_id;
    h.driver_version = c.driver_version;
    std::memcpy(h.pipeline_cache_uuid, c.pipeline_cache_uuid.data(), VK_UUID_SIZE);
    std::memcpy(h.device_uuid, c.device_uuid.data(), VK_UUID_SIZE);
    std::memcpy(h.driver_uuid, c.driver_uuid.data(), VK_UUID_SIZE);
    return h;
}

// The binding types a description asks for (`bindings` storage buffers, or `binding_types`).
std::vector<BindingType> binding_types_of(const ComputePipelineDesc& d) {
    if (d.binding_types.empty()) return std::vector<BindingType>(d.bindings, BindingType::StorageBuffer);
    return d.binding_types;
}

std::string key_of(const ComputePipelineDesc& d) {
    std::string types;
    for (BindingType t : binding_types_of(d)) types += char('a' + int(t));
    std::string k = std::to_string(uint32_t(d.shader)) + "|" + types + "|" +
                    std::to_string(d.push_constant_bytes) + "|" + std::to_string(d.workgroup[0]) + "," +
                    std::to_string(d.workgroup[1]) + "," + std::to_string(d.workgroup[2]) + "|";
    for (uint32_t v : d.specialization) k += std::to_string(v) + ",";
    return k;
}

} // namespace

const char* binding_type_name(BindingType type) {
    switch (type) {
    case BindingType::StorageBuffer:
        return "storage buffer";
    case BindingType::UniformBuffer:
        return "uniform buffer";
    case BindingType::StorageImage:
        return "storage image";
    case BindingType::SampledImage:
        return "sampled image";
    case BindingType::SampledImageSampler:
        return "sampled image with sampler";
    }
    return "?";
}

VkDescriptorType descriptor_type(BindingType type) {
    switch (type) {
    case BindingType::StorageBuffer:
        return VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    case BindingType::UniformBuffer:
        return VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    case BindingType::StorageImage:
        return VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
    case BindingType::SampledImage:
        return VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE;
    case BindingType::SampledImageSampler:
        return VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
    }
    return VK_DESCRIPTOR_TYPE_MAX_ENUM;
}

std::filesystem::path default_cache_dir() {
    if (const char* d = std::getenv("VKML_CACHE_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "vkml";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::filesystem::path(home) / ".cache" / "vkml";
    return {};
}

PipelineCache::PipelineCache(Device& device, const std::filesystem::path& dir) : device_(device) {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    // densenet121 with cold caches on an H200 (16 CPU threads): 52 s one pipeline at a time, 8.4 s
    // on 8 workers, 5.0 s on 16.
    unsigned threads = std::min(hw, 16u);
    if (const char* v = std::getenv("VKML_PIPELINE_THREADS"))
        threads = unsigned(std::clamp<long long>(std::strtoll(v, nullptr, 10), 0, 64));
    threads_ = threads > 1 ? threads : 0;
    if (!dir.empty()) {
        const Capabilities& c = device.caps();
        char name[96];
        std::snprintf(name, sizeof name, "pipelines-%04x-%04x-%08x.vkpc", c.vendor_id, c.device_id,
                      c.driver_version);
        file_ = dir / name;
        stats_.file = file_;
    }
    load();
}

PipelineCache::~PipelineCache() {
    {
        std::lock_guard lock(job_mutex_);
        stopping_ = true;
    }
    job_cv_.notify_all();
    for (std::thread& t : workers_) t.join(); // (they finish the queued jobs first)
    save();
    for (auto& [key, p] : pipelines_) destroy(*p);
    if (cache_) vkDestroyPipelineCache(device_.vk(), cache_, nullptr);
}

void PipelineCache::load() {
    std::vector<std::byte> data;
    if (!file_.empty() && std::filesystem::exists(file_)) {
        auto reject = [&](const std::string& why) {
            device_.message(Severity::Warning, "ignoring pipeline cache " + file_.string() + ": " + why);
            stats_.file_rejected = true;
            data.clear();
        };
        std::ifstream in(file_, std::ios::binary);
        FileHeader h{};
        const FileHeader want = header_for(device_.caps());
        if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) {
            reject("file is shorter than its header");
        } else if (std::memcmp(h.magic, file_magic, sizeof h.magic) != 0 || h.version != file_version) {
            reject("not a vkml pipeline cache");
        } else if (h.vendor_id != want.vendor_id || h.device_id != want.device_id ||
                   h.driver_version != want.driver_version ||
                   std::memcmp(h.pipeline_cache_uuid, want.pipeline_cache_uuid, VK_UUID_SIZE) != 0 ||
                   std::memcmp(h.device_uuid, want.device_uuid, VK_UUID_SIZE) != 0 ||
                   std::memcmp(h.driver_uuid, want.driver_uuid, VK_UUID_SIZE) != 0) {
            reject("written by another device or driver version");
        } else if (h.data_size > (256ull << 20)) {
            reject("implausible size");
        } else {
            data.resize(h.data_size);
            if (!in.read(reinterpret_cast<char*>(data.data()), std::streamsize(data.size())) ||
                in.peek() != EOF)
                reject("size does not match its header (truncated or extended)");
            else if (fnv1a(data.data(), data.size()) != h.checksum)
                reject("checksum mismatch (corrupt)");
        }
    }
    VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    ci.initialDataSize = data.size();
    ci.pInitialData = data.empty() ? nullptr : data.data();
    check_vk(vkCreatePipelineCache(device_.vk(), &ci, nullptr, &cache_), "vkCreatePipelineCache");
    stats_.loaded_bytes = data.size();
}

void PipelineCache::save() {
    std::lock_guard lock(mutex_);
    if (file_.empty() || !cache_ || stats_.pipelines == 0) return; // nothing new to keep
    size_t size = 0;
    if (vkGetPipelineCacheData(device_.vk(), cache_, &size, nullptr) != VK_SUCCESS) return;
    std::vector<std::byte> data(size);
    if (vkGetPipelineCacheData(device_.vk(), cache_, &size, data.data()) != VK_SUCCESS) return;
    data.resize(size);
    FileHeader h = header_for(device_.caps());
    h.data_size = data.size();
    h.checksum = fnv1a(data.data(), data.size());
    // Written beside the target and renamed, so a crash or a concurrent process never leaves a
    // half-written cache under the real name.
    std::error_code ec;
    std::filesystem::create_directories(file_.parent_path(), ec);
    const auto tmp = file_.string() + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(&h), sizeof h);
        out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
        if (!out) {
            out.close();
            std::filesystem::remove(tmp, ec);
            device_.message(Severity::Warning, "could not write pipeline cache " + tmp);
            return;
        }
    }
    std::filesystem::rename(tmp, file_, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        device_.message(Severity::Warning, "could not write pipeline cache " + file_.string());
    }
}

void PipelineCache::worker() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(job_mutex_);
            job_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        job();
    }
}

void PipelineCache::begin_batch() {
    std::lock_guard lock(mutex_);
    ++batch_depth_;
    if (threads_ > 1 && workers_.empty())
        for (unsigned i = 0; i < threads_; ++i) workers_.emplace_back([this] { worker(); });
}

void PipelineCache::end_batch(bool rethrow) {
    std::vector<std::shared_future<void>> pending;
    std::vector<std::pair<Pipeline*, std::string>> names;
    {
        std::lock_guard lock(mutex_);
        if (--batch_depth_ == 0) {
            pending.swap(batch_pending_);
            names.swap(batch_names_);
        }
    }
    for (const auto& f : pending) f.wait();
    // Named here, on the batch's thread, after their jobs: vkSetDebugUtilsObjectNameEXT from the
    // workers, beside the thread recording and submitting, raced the validation layer's object-name
    // map (Vulkan-ValidationLayers issue 6802: inserts locked, lookups not; fixed in late 2023,
    // after the 1.3.239 layer Debian bookworm ships). A pipeline that failed has no handle.
    for (const auto& [p, name] : names)
        if (p->pipeline_) device_.set_debug_name(VK_OBJECT_TYPE_PIPELINE, p->pipeline_, name);
    if (rethrow)
        for (const auto& f : pending) f.get(); // the first creation error
}

PipelineCacheStats PipelineCache::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void PipelineCache::destroy(Pipeline& p) {
    VkDevice d = device_.vk();
    if (p.pipeline_) vkDestroyPipeline(d, p.pipeline_, nullptr);
    if (p.layout_) vkDestroyPipelineLayout(d, p.layout_, nullptr);
    if (p.set_layout_) vkDestroyDescriptorSetLayout(d, p.set_layout_, nullptr);
}

void PipelineCache::check_shader(ShaderId id) const {
    if (uint32_t(id) >= shader_count)
        throw Error(ErrorCode::InvalidArgument, "unknown shader id " + std::to_string(uint32_t(id)));
    const ShaderInfo& info = shader_info(id);
    const Capabilities& caps = device_.caps();
    auto unsupported = [&](const char* what) {
        return Error(ErrorCode::Unsupported, "shader " + std::string(info.id) + " needs " + what +
                                                 ", which " + caps.device_name + " does not offer");
    };
    if ((info.requires_bits & shader_requires_storage16) && !caps.storage16)
        throw unsupported("16-bit storage");
    if ((info.requires_bits & shader_requires_float16) && !caps.float16)
        throw unsupported("float16 arithmetic");
    if ((info.requires_bits & shader_requires_coopmat_nv) && !caps.coopmat_nv)
        throw unsupported("cooperative matrices (VK_NV_cooperative_matrix or VK_KHR_cooperative_matrix)");
}

void PipelineCache::capture_statistics(Pipeline& p, const std::vector<uint32_t>& specialization) const {
    const ExtFunctions& ext = device_.ext();
    const VkDevice dev = device_.vk();
    VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
    info.pipeline = p.pipeline_;
    uint32_t count = 0;
    if (ext.get_pipeline_executable_properties(dev, &info, &count, nullptr) != VK_SUCCESS) return;
    std::vector<VkPipelineExecutablePropertiesKHR> executables(
        count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
    if (ext.get_pipeline_executable_properties(dev, &info, &count, executables.data()) != VK_SUCCESS) return;
    for (uint32_t e = 0; e < count; ++e) {
        VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
        ei.pipeline = p.pipeline_;
        ei.executableIndex = e;
        uint32_t n = 0;
        if (ext.get_pipeline_executable_statistics(dev, &ei, &n, nullptr) != VK_SUCCESS) continue;
        std::vector<VkPipelineExecutableStatisticKHR> stats(
            n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
        if (ext.get_pipeline_executable_statistics(dev, &ei, &n, stats.data()) != VK_SUCCESS) continue;
        for (const auto& st : stats) {
            double v = 0;
            switch (st.format) {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
                v = st.value.b32 ? 1 : 0;
                break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
                v = double(st.value.i64);
                break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
                v = double(st.value.u64);
                break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
                v = st.value.f64;
                break;
            default:
                continue;
            }
            p.statistics_.push_back({executables[e].name, st.name, st.description, v});
        }
    }
    if (detail::env_string("VKML_PIPELINE_STATS") != "1") return;
    std::string line = "vkml pipeline " + p.name_ + " [";
    for (size_t i = 0; i < specialization.size(); ++i)
        line += (i ? "," : "") + std::to_string(specialization[i]);
    line += "] wg " + std::to_string(p.workgroup_[0]) + "x" + std::to_string(p.workgroup_[1]) + "x" +
            std::to_string(p.workgroup_[2]) + ":";
    for (const auto& st : p.statistics_) {
        char value[32];
        std::snprintf(value, sizeof value, "%g", st.value);
        line += " " + st.name + "=" + value + ";";
    }
    std::fprintf(stderr, "%s\n", line.c_str());
}

void PipelineCache::create_layouts(Pipeline& p, const std::vector<BindingType>& types, uint32_t push_bytes,
                                   VkShaderStageFlags stages) {
    const VkDevice dev = device_.vk();
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (uint32_t b = 0; b < types.size(); ++b)
        bindings.push_back({b, descriptor_type(types[b]), 1, stages, nullptr});
    VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    sl.flags = device_.caps().push_descriptors ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
    sl.bindingCount = uint32_t(bindings.size());
    sl.pBindings = bindings.data();
    check_vk(vkCreateDescriptorSetLayout(dev, &sl, nullptr, &p.set_layout_), "vkCreateDescriptorSetLayout");

    VkPushConstantRange range{stages, 0, push_bytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &p.set_layout_;
    pl.pushConstantRangeCount = push_bytes ? 1 : 0;
    pl.pPushConstantRanges = &range;
    check_vk(vkCreatePipelineLayout(dev, &pl, nullptr, &p.layout_), "vkCreatePipelineLayout");
    p.stages_ = stages;
}

const Pipeline& PipelineCache::get(const ComputePipelineDesc& desc) {
    const std::string key = key_of(desc);
    std::lock_guard lock(mutex_);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) {
        ++stats_.lookups_hit;
        return *it->second;
    }
    check_shader(desc.shader);
    const ShaderInfo& info = shader_info(desc.shader);
    const Capabilities& caps = device_.caps();
    const std::string name = desc.name.empty() ? std::string(info.id) : desc.name;
    // Tensor-core shaders run in the form of the extension the device enabled: their NV SPIR-V, or
    // its KHR twin made at build time (tools/coopmat_khr).
    const std::span<const uint32_t> code =
        (info.requires_bits & shader_requires_coopmat_nv) && caps.coopmat_api == CoopMatApi::khr
            ? info.code_khr
            : info.code;
    if (code.empty())
        throw Error(ErrorCode::Unsupported,
                    "shader " + std::string(info.id) + " has no VK_KHR_cooperative_matrix form");
    const auto& wg = desc.workgroup;
    if (uint64_t(wg[0]) * wg[1] * wg[2] > caps.max_workgroup_invocations || wg[0] == 0 || wg[1] == 0 ||
        wg[2] == 0 || wg[0] > caps.max_workgroup_size[0] || wg[1] > caps.max_workgroup_size[1] ||
        wg[2] > caps.max_workgroup_size[2])
        throw Error(ErrorCode::InvalidArgument,
                    "pipeline " + name + ": workgroup size " + std::to_string(wg[0]) + "x" +
                        std::to_string(wg[1]) + "x" + std::to_string(wg[2]) + " exceeds the device's limits");
    if (!desc.binding_types.empty() && desc.bindings != 0 && desc.bindings != desc.binding_types.size())
        throw Error(ErrorCode::InvalidArgument,
                    "pipeline " + name + ": " + std::to_string(desc.bindings) + " bindings but " +
                        std::to_string(desc.binding_types.size()) + " binding types");
    if (desc.push_constant_bytes > caps.max_push_constants)
        throw Error(ErrorCode::InvalidArgument,
                    "pipeline " + name + ": push constants exceed the device's limit");

    auto p = std::make_unique<Pipeline>();
    p->binding_types_ = binding_types_of(desc);
    p->buffers_only_ = std::all_of(p->binding_types_.begin(), p->binding_types_.end(),
                                   [](BindingType t) { return t == BindingType::StorageBuffer; });
    p->push_bytes_ = desc.push_constant_bytes;
    p->workgroup_ = wg;
    p->name_ = name;
    VkDevice dev = device_.vk();
    VkShaderModule module = VK_NULL_HANDLE;
    try {
        create_layouts(*p, p->binding_types_, desc.push_constant_bytes, VK_SHADER_STAGE_COMPUTE_BIT);

        VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        mi.codeSize = code.size_bytes();
        mi.pCode = code.data();
        check_vk(vkCreateShaderModule(dev, &mi, nullptr, &module), "vkCreateShaderModule");

        std::vector<VkSpecializationMapEntry> entries;
        std::vector<uint32_t> values;
        for (uint32_t i = 0; i < desc.specialization.size(); ++i) {
            entries.push_back({i, uint32_t(values.size() * 4), 4});
            values.push_back(desc.specialization[i]);
        }
        for (uint32_t i = 0; i < 3; ++i) {
            entries.push_back({100 + i, uint32_t(values.size() * 4), 4});
            values.push_back(wg[i]);
        }
        VkSpecializationInfo spec{uint32_t(entries.size()), entries.data(), values.size() * 4, values.data()};

        VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
        ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
        ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        ci.stage.module = module;
        ci.stage.pName = "main";
        ci.stage.pSpecializationInfo = &spec;
        ci.layout = p->layout_;
        if (caps.pipeline_statistics) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
        if (batch_depth_ > 0 && !workers_.empty()) {
            // Compiled on a worker (VkPipelineCache is internally synchronized); the job owns the
            // module and the specialization data until the driver is done with them.
            Pipeline* raw = p.get();
            const std::vector<uint32_t> specialization = desc.specialization;
            auto task = std::make_shared<std::packaged_task<void()>>(
                [this, raw, dev, module, entries = std::move(entries), values = std::move(values), ci,
                 specialization]() mutable {
                    VkSpecializationInfo job_spec{uint32_t(entries.size()), entries.data(), values.size() * 4,
                                                  values.data()};
                    ci.stage.pSpecializationInfo = &job_spec;
                    const VkResult r =
                        vkCreateComputePipelines(dev, cache_, 1, &ci, nullptr, &raw->pipeline_);
                    vkDestroyShaderModule(dev, module, nullptr);
                    check_vk(r, "vkCreateComputePipelines");
                    if (device_.caps().pipeline_statistics) capture_statistics(*raw, specialization);
                    std::lock_guard stats_lock(mutex_);
                    ++stats_.pipelines;
                });
            p->ready_ = task->get_future().share();
            batch_pending_.push_back(p->ready_);
            batch_names_.emplace_back(raw, name);
            module = VK_NULL_HANDLE; // the job's now
            {
                std::lock_guard queue_lock(job_mutex_);
                jobs_.emplace_back([task] { (*task)(); });
            }
            job_cv_.notify_one();
            return *pipelines_.emplace(key, std::move(p)).first->second;
        }
        check_vk(vkCreateComputePipelines(dev, cache_, 1, &ci, nullptr, &p->pipeline_),
                 "vkCreateComputePipelines");
    } catch (...) {
        if (module) vkDestroyShaderModule(dev, module, nullptr);
        destroy(*p);
        throw;
    }
    vkDestroyShaderModule(dev, module, nullptr);
    device_.set_debug_name(VK_OBJECT_TYPE_PIPELINE, p->pipeline_, name);
    if (caps.pipeline_statistics) capture_statistics(*p, desc.specialization);
    ++stats_.pipelines;
    return *pipelines_.emplace(key, std::move(p)).first->second;
}

namespace {

std::string key_of(const GraphicsPipelineDesc& d) {
    std::string k =
        "g|" + std::to_string(uint32_t(d.vertex)) + "," + std::to_string(uint32_t(d.fragment)) + "|";
    for (BindingType t : d.binding_types) k += char('a' + int(t));
    k += "|" + std::to_string(d.push_constant_bytes) + "|";
    for (VkFormat f : d.color_formats) k += std::to_string(int(f)) + ",";
    k += "|" + std::to_string(int(d.blend)) + "|" + std::to_string(int(d.depth_format)) + "|" +
         std::to_string(int(d.topology)) + "|" + std::to_string(d.cull) + "|" +
         std::to_string(int(d.samples)) + "|" + std::to_string(int(d.alpha_to_coverage)) + "|";
    for (const auto& b : d.vertex_bindings)
        k += std::to_string(b.binding) + ":" + std::to_string(b.stride) + ":" +
             std::to_string(int(b.inputRate)) + ",";
    k += "|";
    for (const auto& a : d.vertex_attributes)
        k += std::to_string(a.location) + ":" + std::to_string(a.binding) + ":" +
             std::to_string(int(a.format)) + ":" + std::to_string(a.offset) + ",";
    k += "|";
    for (uint32_t v : d.specialization) k += std::to_string(v) + ",";
    return k;
}

VkPipelineColorBlendAttachmentState blend_state(Blend blend) {
    VkPipelineColorBlendAttachmentState s{};
    s.colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT |
                       VK_COLOR_COMPONENT_A_BIT;
    s.colorBlendOp = s.alphaBlendOp = VK_BLEND_OP_ADD;
    switch (blend) {
    case Blend::None:
        break;
    case Blend::Alpha:
        s.blendEnable = VK_TRUE;
        s.srcColorBlendFactor = VK_BLEND_FACTOR_SRC_ALPHA;
        s.dstColorBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
        s.srcAlphaBlendFactor = VK_BLEND_FACTOR_ONE;
        s.dstAlphaBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
        break;
    case Blend::Premultiplied:
        s.blendEnable = VK_TRUE;
        s.srcColorBlendFactor = s.srcAlphaBlendFactor = VK_BLEND_FACTOR_ONE;
        s.dstColorBlendFactor = s.dstAlphaBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
        break;
    case Blend::Additive:
        s.blendEnable = VK_TRUE;
        s.srcColorBlendFactor = s.srcAlphaBlendFactor = VK_BLEND_FACTOR_ONE;
        s.dstColorBlendFactor = s.dstAlphaBlendFactor = VK_BLEND_FACTOR_ONE;
        break;
    }
    return s;
}

} // namespace

const Pipeline& PipelineCache::get(const GraphicsPipelineDesc& desc) {
    const std::string key = key_of(desc);
    std::lock_guard lock(mutex_);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) {
        ++stats_.lookups_hit;
        return *it->second;
    }
    check_shader(desc.vertex);
    check_shader(desc.fragment);
    const ShaderInfo& vs = shader_info(desc.vertex);
    const ShaderInfo& fs = shader_info(desc.fragment);
    const std::string name = desc.name.empty() ? std::string(fs.id) : desc.name;
    if (desc.push_constant_bytes > device_.caps().max_push_constants)
        throw Error(ErrorCode::InvalidArgument,
                    "pipeline " + name + ": push constants exceed the device's limit");
    if (desc.color_formats.empty() && desc.depth_format == VK_FORMAT_UNDEFINED)
        throw Error(ErrorCode::InvalidArgument, "pipeline " + name + ": no colour or depth attachment");

    auto p = std::make_unique<Pipeline>();
    p->binding_types_ = desc.binding_types;
    p->buffers_only_ = std::all_of(p->binding_types_.begin(), p->binding_types_.end(),
                                   [](BindingType t) { return t == BindingType::StorageBuffer; });
    p->push_bytes_ = desc.push_constant_bytes;
    p->name_ = name;
    p->bind_point_ = VK_PIPELINE_BIND_POINT_GRAPHICS;
    VkDevice dev = device_.vk();
    std::array<VkShaderModule, 2> modules{};
    try {
        create_layouts(*p, desc.binding_types, desc.push_constant_bytes,
                       VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT);
        const ShaderInfo* infos[2] = {&vs, &fs};
        for (size_t i = 0; i < 2; ++i) {
            VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
            mi.codeSize = infos[i]->code.size_bytes();
            mi.pCode = infos[i]->code.data();
            check_vk(vkCreateShaderModule(dev, &mi, nullptr, &modules[i]), "vkCreateShaderModule");
        }
        std::vector<VkSpecializationMapEntry> entries;
        for (uint32_t i = 0; i < desc.specialization.size(); ++i) entries.push_back({i, i * 4, 4});
        const VkSpecializationInfo spec{uint32_t(entries.size()), entries.data(),
                                        desc.specialization.size() * 4, desc.specialization.data()};
        VkPipelineShaderStageCreateInfo stages[2];
        for (size_t i = 0; i < 2; ++i) {
            stages[i] = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
            stages[i].stage = i == 0 ? VK_SHADER_STAGE_VERTEX_BIT : VK_SHADER_STAGE_FRAGMENT_BIT;
            stages[i].module = modules[i];
            stages[i].pName = "main";
            stages[i].pSpecializationInfo = entries.empty() ? nullptr : &spec;
        }
        VkPipelineVertexInputStateCreateInfo vertex{
            VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
        vertex.vertexBindingDescriptionCount = uint32_t(desc.vertex_bindings.size());
        vertex.pVertexBindingDescriptions = desc.vertex_bindings.data();
        vertex.vertexAttributeDescriptionCount = uint32_t(desc.vertex_attributes.size());
        vertex.pVertexAttributeDescriptions = desc.vertex_attributes.data();
        VkPipelineInputAssemblyStateCreateInfo assembly{
            VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
        assembly.topology = desc.topology;
        VkPipelineViewportStateCreateInfo viewport{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
        viewport.viewportCount = viewport.scissorCount = 1;
        VkPipelineRasterizationStateCreateInfo raster{
            VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
        raster.cullMode = desc.cull;
        raster.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
        raster.lineWidth = 1.f;
        VkPipelineMultisampleStateCreateInfo ms{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
        ms.rasterizationSamples = desc.samples;
        ms.alphaToCoverageEnable = desc.alpha_to_coverage;
        VkPipelineDepthStencilStateCreateInfo ds{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
        ds.depthTestEnable = ds.depthWriteEnable = VK_TRUE;
        ds.depthCompareOp = VK_COMPARE_OP_LESS;
        const std::vector<VkPipelineColorBlendAttachmentState> blends(desc.color_formats.size(),
                                                                      blend_state(desc.blend));
        VkPipelineColorBlendStateCreateInfo cb{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
        cb.attachmentCount = uint32_t(blends.size());
        cb.pAttachments = blends.data();
        const VkDynamicState dyn[] = {VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
        VkPipelineDynamicStateCreateInfo dynamic{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
        dynamic.dynamicStateCount = 2;
        dynamic.pDynamicStates = dyn;
        VkPipelineRenderingCreateInfo rendering{VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO};
        rendering.colorAttachmentCount = uint32_t(desc.color_formats.size());
        rendering.pColorAttachmentFormats = desc.color_formats.data();
        rendering.depthAttachmentFormat = desc.depth_format;
        if (image_aspect(desc.depth_format) & VK_IMAGE_ASPECT_STENCIL_BIT)
            rendering.stencilAttachmentFormat = desc.depth_format;
        VkGraphicsPipelineCreateInfo ci{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO, &rendering};
        ci.stageCount = 2;
        ci.pStages = stages;
        ci.pVertexInputState = &vertex;
        ci.pInputAssemblyState = &assembly;
        ci.pViewportState = &viewport;
        ci.pRasterizationState = &raster;
        ci.pMultisampleState = &ms;
        ci.pDepthStencilState = desc.depth_format != VK_FORMAT_UNDEFINED ? &ds : nullptr;
        ci.pColorBlendState = &cb;
        ci.pDynamicState = &dynamic;
        ci.layout = p->layout_;
        check_vk(vkCreateGraphicsPipelines(dev, cache_, 1, &ci, nullptr, &p->pipeline_),
                 "vkCreateGraphicsPipelines");
    } catch (...) {
        for (VkShaderModule m : modules)
            if (m) vkDestroyShaderModule(dev, m, nullptr);
        destroy(*p);
        throw;
    }
    for (VkShaderModule m : modules) vkDestroyShaderModule(dev, m, nullptr);
    device_.set_debug_name(VK_OBJECT_TYPE_PIPELINE, p->pipeline_, name);
    ++stats_.pipelines;
    return *pipelines_.emplace(key, std::move(p)).first->second;
}

} // namespace vkml::gpu
