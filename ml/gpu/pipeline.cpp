#include "vkml/gpu/pipeline.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>
#include <unistd.h>

#include "internal.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"

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

std::string key_of(const ComputePipelineDesc& d) {
    std::string k = std::to_string(uint32_t(d.shader)) + "|" + std::to_string(d.bindings) + "|" +
                    std::to_string(d.push_constant_bytes) + "|" + std::to_string(d.workgroup[0]) + "," +
                    std::to_string(d.workgroup[1]) + "," + std::to_string(d.workgroup[2]) + "|";
    for (uint32_t v : d.specialization) k += std::to_string(v) + ",";
    return k;
}

} // namespace

std::filesystem::path default_cache_dir() {
    if (const char* d = std::getenv("VKML_CACHE_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "vkml";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::filesystem::path(home) / ".cache" / "vkml";
    return {};
}

PipelineCache::PipelineCache(Device& device, const std::filesystem::path& dir) : device_(device) {
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

const Pipeline& PipelineCache::get(const ComputePipelineDesc& desc) {
    const std::string key = key_of(desc);
    std::lock_guard lock(mutex_);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) {
        ++stats_.lookups_hit;
        return *it->second;
    }
    if (uint32_t(desc.shader) >= shader_count)
        throw Error(ErrorCode::InvalidArgument, "unknown shader id " + std::to_string(uint32_t(desc.shader)));
    const ShaderInfo& info = shader_info(desc.shader);
    const Capabilities& caps = device_.caps();
    const std::string name = desc.name.empty() ? std::string(info.id) : desc.name;
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
    // Tensor-core shaders run in the form of the extension the device enabled: their NV SPIR-V, or
    // its KHR twin made at build time (tools/coopmat_khr).
    const std::span<const uint32_t> code =
        (info.requires_bits & shader_requires_coopmat_nv) && caps.coopmat_api == CoopMatApi::khr ? info.code_khr
                                                                                                  : info.code;
    if (code.empty())
        throw Error(ErrorCode::Unsupported, "shader " + std::string(info.id) + " has no VK_KHR_cooperative_matrix form");
    const auto& wg = desc.workgroup;
    if (uint64_t(wg[0]) * wg[1] * wg[2] > caps.max_workgroup_invocations || wg[0] == 0 || wg[1] == 0 ||
        wg[2] == 0 || wg[0] > caps.max_workgroup_size[0] || wg[1] > caps.max_workgroup_size[1] ||
        wg[2] > caps.max_workgroup_size[2])
        throw Error(ErrorCode::InvalidArgument,
                    "pipeline " + name + ": workgroup size " + std::to_string(wg[0]) + "x" +
                        std::to_string(wg[1]) + "x" + std::to_string(wg[2]) + " exceeds the device's limits");
    if (desc.push_constant_bytes > caps.max_push_constants)
        throw Error(ErrorCode::InvalidArgument,
                    "pipeline " + name + ": push constants exceed the device's limit");

    auto p = std::make_unique<Pipeline>();
    p->bindings_ = desc.bindings;
    p->push_bytes_ = desc.push_constant_bytes;
    p->workgroup_ = wg;
    p->name_ = name;
    VkDevice dev = device_.vk();
    VkShaderModule module = VK_NULL_HANDLE;
    try {
        std::vector<VkDescriptorSetLayoutBinding> bindings;
        for (uint32_t b = 0; b < desc.bindings; ++b)
            bindings.push_back(
                {b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
        VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
        sl.flags = caps.push_descriptors ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
        sl.bindingCount = uint32_t(bindings.size());
        sl.pBindings = bindings.data();
        check_vk(vkCreateDescriptorSetLayout(dev, &sl, nullptr, &p->set_layout_),
                 "vkCreateDescriptorSetLayout");

        VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, desc.push_constant_bytes};
        VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
        pl.setLayoutCount = 1;
        pl.pSetLayouts = &p->set_layout_;
        pl.pushConstantRangeCount = desc.push_constant_bytes ? 1 : 0;
        pl.pPushConstantRanges = &range;
        check_vk(vkCreatePipelineLayout(dev, &pl, nullptr, &p->layout_), "vkCreatePipelineLayout");

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
        check_vk(vkCreateComputePipelines(dev, cache_, 1, &ci, nullptr, &p->pipeline_),
                 "vkCreateComputePipelines");
    } catch (...) {
        if (module) vkDestroyShaderModule(dev, module, nullptr);
        destroy(*p);
        throw;
    }
    vkDestroyShaderModule(dev, module, nullptr);
    device_.set_debug_name(VK_OBJECT_TYPE_PIPELINE, p->pipeline_, name);
    ++stats_.pipelines;
    return *pipelines_.emplace(key, std::move(p)).first->second;
}

} // namespace vkml::gpu
