#include "vkml/gpu/capabilities.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "internal.hpp"
#include "vkml/error.hpp"

namespace vkml::gpu {

const char* device_type_name(VkPhysicalDeviceType type) {
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return "CPU";
    default:
        return "other";
    }
}

std::string version_string(uint32_t v) {
    return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
           std::to_string(VK_API_VERSION_PATCH(v));
}

const char* coopmat_api_name(CoopMatApi api) {
    switch (api) {
    case CoopMatApi::nv:
        return "NV";
    case CoopMatApi::khr:
        return "KHR";
    default:
        return "none";
    }
}

std::string uuid_string(const std::array<uint8_t, VK_UUID_SIZE>& uuid) {
    std::string s;
    char buf[4];
    for (size_t i = 0; i < uuid.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        std::snprintf(buf, sizeof buf, "%02x", uuid[i]);
        s += buf;
    }
    return s;
}

namespace detail {

bool FeatureSupport::has_extension(const char* name) const {
    return std::find(extensions.begin(), extensions.end(), name) != extensions.end();
}

FeatureSupport query_feature_support(VkPhysicalDevice phys) {
    FeatureSupport s;
    uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(phys, nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> exts(count);
    vkEnumerateDeviceExtensionProperties(phys, nullptr, &count, exts.data());
    for (const auto& e : exts) s.extensions.emplace_back(e.extensionName);

    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    CoopmatFeaturesKhr coop_khr;
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &f13};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
    const bool has_coop = s.has_extension(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    const bool has_coop_khr = s.has_extension(khr_coopmat_extension);
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pexec{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    const bool has_pexec = s.has_extension(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    void** tail = &f13.pNext;
    if (has_coop) *tail = &coop, tail = &coop.pNext;
    if (has_coop_khr) *tail = &coop_khr, tail = &coop_khr.pNext;
    if (has_pexec) *tail = &pexec;

    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(phys, &props);
    if (props.apiVersion < VK_API_VERSION_1_3) return s; // the 1.3 structs are not valid to query
    vkGetPhysicalDeviceFeatures2(phys, &f2);
    s.storage16 = f11.storageBuffer16BitAccess;
    s.float16 = f12.shaderFloat16;
    s.int8 = f12.shaderInt8;
    s.storage8 = f12.storageBuffer8BitAccess;
    s.int16 = f2.features.shaderInt16;
    s.int64 = f2.features.shaderInt64;
    s.timeline = f12.timelineSemaphore;
    s.sync2 = f13.synchronization2;
    s.subgroup_size_control = f13.subgroupSizeControl;
    s.dynamic_rendering = f13.dynamicRendering;
    s.vulkan_memory_model = f12.vulkanMemoryModel;
    s.coopmat_nv = has_coop && coop.cooperativeMatrix;
    s.pipeline_executable_info = has_pexec && pexec.pipelineExecutableInfo;
    if (has_coop_khr && coop_khr.cooperativeMatrix) {
        PhysicalCoopmatPropertiesKhr stages;
        VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &stages};
        vkGetPhysicalDeviceProperties2(phys, &p2);
        s.coopmat_khr = stages.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
    }
    return s;
}

CoopMatApi choose_coopmat(bool nv, bool khr, const std::string& coopmat_env, const std::string& disable_env,
                          std::string* note) {
    // A misspelt value is an error even where VKML_DISABLE_COOPMAT=1 makes it moot: it would
    // otherwise surface only on the next run without that switch.
    if (!coopmat_env.empty() && coopmat_env != "auto" && coopmat_env != "nv" && coopmat_env != "khr" &&
        coopmat_env != "off")
        throw Error(ErrorCode::InvalidArgument,
                    "VKML_COOPMAT=" + coopmat_env + ": expected auto, nv, khr or off");
    if (disable_env == "1" || coopmat_env == "off") return CoopMatApi::none;
    // auto: KHR where offered. On an H100 (driver 580) the same shaders ran faster as their KHR
    // twins: MatMul 2048^3 87 against 104 us, Conv 3x3 64->64 at 960x540 238 against 265 us.
    if (coopmat_env.empty() || coopmat_env == "auto")
        return khr ? CoopMatApi::khr : nv ? CoopMatApi::nv : CoopMatApi::none;
    if (coopmat_env == "nv" || coopmat_env == "khr") {
        const bool want_nv = coopmat_env == "nv";
        if (want_nv ? nv : khr) return want_nv ? CoopMatApi::nv : CoopMatApi::khr;
        if (note)
            *note = "VKML_COOPMAT=" + coopmat_env + ": the device does not offer " +
                    (want_nv ? VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME : khr_coopmat_extension) +
                    " for compute shaders; the tensor cores stay off";
    }
    return CoopMatApi::none;
}

CoopMatApi choose_coopmat_from_env(bool nv, bool khr, std::string* note) {
    return choose_coopmat(nv, khr, env_string("VKML_COOPMAT"), env_string("VKML_DISABLE_COOPMAT"), note);
}

std::vector<CoopMatShape> query_coopmat_shapes(VkInstance instance, VkPhysicalDevice phys, CoopMatApi api) {
    std::vector<CoopMatShape> shapes;
    if (api == CoopMatApi::nv) {
        auto fn = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
            vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
        if (!fn) return shapes;
        uint32_t n = 0;
        fn(phys, &n, nullptr);
        std::vector<VkCooperativeMatrixPropertiesNV> props(
            n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
        fn(phys, &n, props.data());
        for (const auto& m : props)
            if (m.scope == VK_SCOPE_SUBGROUP_NV)
                shapes.push_back({m.MSize, m.NSize, m.KSize, m.AType, m.BType, m.CType, m.DType});
    } else if (api == CoopMatApi::khr) {
        auto fn = reinterpret_cast<PfnCoopmatPropertiesKhr>(
            vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
        if (!fn) return shapes;
        uint32_t n = 0;
        fn(phys, &n, nullptr);
        std::vector<CoopmatPropertiesKhr> props(n);
        fn(phys, &n, props.data());
        for (const auto& m : props)
            if (m.scope == uint32_t(VK_SCOPE_SUBGROUP_NV) && !m.saturatingAccumulation)
                shapes.push_back({m.MSize, m.NSize, m.KSize, VkComponentTypeNV(m.AType),
                                  VkComponentTypeNV(m.BType), VkComponentTypeNV(m.CType),
                                  VkComponentTypeNV(m.ResultType)});
    }
    return shapes;
}

std::vector<MemoryHeapInfo> query_memory_heaps(VkPhysicalDevice phys, bool memory_budget) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mem{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    if (memory_budget) mem.pNext = &budget;
    vkGetPhysicalDeviceMemoryProperties2(phys, &mem);
    std::vector<MemoryHeapInfo> heaps;
    for (uint32_t i = 0; i < mem.memoryProperties.memoryHeapCount; ++i) {
        const VkMemoryHeap& h = mem.memoryProperties.memoryHeaps[i];
        MemoryHeapInfo info;
        info.size = h.size;
        info.device_local = h.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
        info.budget = memory_budget ? budget.heapBudget[i] : h.size / 10 * 8;
        info.usage = memory_budget ? budget.heapUsage[i] : 0;
        heaps.push_back(info);
    }
    return heaps;
}

Capabilities query_capabilities(VkInstance instance, VkPhysicalDevice phys, bool memory_budget) {
    Capabilities c;
    VkPhysicalDeviceVulkan13Properties p13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
    VkPhysicalDeviceVulkan12Properties p12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES, &p13};
    VkPhysicalDeviceVulkan11Properties p11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES, &p12};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &p11};
    VkPhysicalDeviceProperties base;
    vkGetPhysicalDeviceProperties(phys, &base);
    const bool v13 = base.apiVersion >= VK_API_VERSION_1_3;
    if (!v13) p11.pNext = nullptr; // only 1.1 properties are guaranteed below 1.3
    const FeatureSupport support = query_feature_support(phys);
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sms{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    if (support.has_extension(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
        sms.pNext = p2.pNext;
        p2.pNext = &sms;
    }
    vkGetPhysicalDeviceProperties2(phys, &p2);
    c.multiprocessors = sms.shaderSMCount;
    const VkPhysicalDeviceProperties& p = p2.properties;

    c.device_name = p.deviceName;
    c.device_type = p.deviceType;
    c.vendor_id = p.vendorID;
    c.device_id = p.deviceID;
    c.api_version = p.apiVersion;
    c.driver_version = p.driverVersion;
    std::memcpy(c.pipeline_cache_uuid.data(), p.pipelineCacheUUID, VK_UUID_SIZE);
    std::memcpy(c.device_uuid.data(), p11.deviceUUID, VK_UUID_SIZE);
    std::memcpy(c.driver_uuid.data(), p11.driverUUID, VK_UUID_SIZE);
    if (v13) {
        c.driver_name = p12.driverName;
        c.driver_info = p12.driverInfo;
        c.min_subgroup_size = p13.minSubgroupSize;
        c.max_subgroup_size = p13.maxSubgroupSize;
    }
    c.subgroup_size = p11.subgroupSize;
    c.subgroup_arithmetic = (p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                            (p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
    if (!v13) c.min_subgroup_size = c.max_subgroup_size = c.subgroup_size;

    const VkPhysicalDeviceLimits& l = p.limits;
    c.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; ++i) {
        c.max_workgroup_count[i] = l.maxComputeWorkGroupCount[i];
        c.max_workgroup_size[i] = l.maxComputeWorkGroupSize[i];
    }
    c.max_shared_memory = l.maxComputeSharedMemorySize;
    c.max_push_constants = l.maxPushConstantsSize;
    c.max_storage_buffer_range = l.maxStorageBufferRange;
    c.min_storage_buffer_offset_alignment = l.minStorageBufferOffsetAlignment;
    c.buffer_image_granularity = l.bufferImageGranularity;
    c.non_coherent_atom_size = l.nonCoherentAtomSize;
    c.timestamps = l.timestampComputeAndGraphics;
    c.timestamp_period_ns = l.timestampPeriod;

    uint32_t nfam = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nfam, nullptr);
    std::vector<VkQueueFamilyProperties> fams(nfam);
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nfam, fams.data());
    for (const auto& f : fams) c.queue_families.push_back({f.queueFlags, f.queueCount, f.timestampValidBits});

    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(phys, &mem);
    c.memory_types.assign(mem.memoryTypes, mem.memoryTypes + mem.memoryTypeCount);
    c.memory_budget = memory_budget;
    c.memory_heaps = query_memory_heaps(phys, memory_budget);

    // Cooperative-matrix shapes are listed whenever the device offers an extension (NV's first),
    // so `vkml info` shows them; the device replaces them with those of the API it enables.
    c.coopmat_nv_offered = support.coopmat_nv;
    c.coopmat_khr_offered = support.coopmat_khr;
    c.coopmat_shapes = query_coopmat_shapes(instance, phys,
                                            support.coopmat_nv    ? CoopMatApi::nv
                                            : support.coopmat_khr ? CoopMatApi::khr
                                                                  : CoopMatApi::none);
    return c;
}

uint64_t parse_byte_size(const std::string& text) {
    if (text.empty()) return 0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || !std::isfinite(v) || v < 0) return 0;
    double mult = 1;
    if (*end != '\0') {
        switch (std::toupper(static_cast<unsigned char>(*end))) {
        case 'K':
            mult = 1024.0;
            break;
        case 'M':
            mult = 1024.0 * 1024;
            break;
        case 'G':
            mult = 1024.0 * 1024 * 1024;
            break;
        default:
            return 0;
        }
        if (end[1] != '\0') return 0; // "64Kjunk", "1MM"
    }
    const double bytes = v * mult;
    if (bytes >= 18446744073709551615.0) return 0; // not representable in uint64_t
    return static_cast<uint64_t>(bytes);
}

std::string env_string(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

} // namespace detail
} // namespace vkml::gpu
