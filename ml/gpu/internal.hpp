#pragma once
// Declarations shared between ml/gpu's sources and not part of the public API.
#include <cstdint>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/gpu/capabilities.hpp"

namespace vkml::gpu::detail {

// What the physical device supports, as far as vkml cares.
struct FeatureSupport {
    bool storage16 = false, float16 = false, int8 = false, storage8 = false;
    bool int16 = false, int64 = false;
    bool timeline = false, sync2 = false, subgroup_size_control = false, dynamic_rendering = false;
    bool vulkan_memory_model = false; // the tensor-core shaders declare VulkanMemoryModel
    bool coopmat_nv = false;  // VK_NV_cooperative_matrix with cooperativeMatrix
    bool coopmat_khr = false; // VK_KHR_cooperative_matrix with cooperativeMatrix, in compute shaders
    bool pipeline_executable_info = false; // VK_KHR_pipeline_executable_properties
    std::vector<std::string> extensions;
    bool has_extension(const char* name) const;
};

FeatureSupport query_feature_support(VkPhysicalDevice phys);

// VK_KHR_cooperative_matrix (Vulkan 1.3.255). Bookworm's Vulkan headers (1.3.239) predate it, so
// its structures are declared here under vkml's own names, laid out as the registry's.
inline constexpr const char* khr_coopmat_extension = "VK_KHR_cooperative_matrix";
inline constexpr VkStructureType stype_coopmat_features_khr = VkStructureType(1000506000);
inline constexpr VkStructureType stype_coopmat_properties_khr = VkStructureType(1000506001);
inline constexpr VkStructureType stype_physical_coopmat_properties_khr = VkStructureType(1000506002);
struct CoopmatFeaturesKhr { // VkPhysicalDeviceCooperativeMatrixFeaturesKHR
    VkStructureType sType = stype_coopmat_features_khr;
    void* pNext = nullptr;
    VkBool32 cooperativeMatrix = VK_FALSE;
    VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};
struct CoopmatPropertiesKhr { // VkCooperativeMatrixPropertiesKHR
    VkStructureType sType = stype_coopmat_properties_khr;
    void* pNext = nullptr;
    uint32_t MSize = 0, NSize = 0, KSize = 0;
    uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0; // VkComponentTypeKHR: NV's values
    VkBool32 saturatingAccumulation = VK_FALSE;
    uint32_t scope = 0; // VkScopeKHR: NV's values
};
struct PhysicalCoopmatPropertiesKhr { // VkPhysicalDeviceCooperativeMatrixPropertiesKHR
    VkStructureType sType = stype_physical_coopmat_properties_khr;
    void* pNext = nullptr;
    VkShaderStageFlags cooperativeMatrixSupportedStages = 0;
};
using PfnCoopmatPropertiesKhr = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CoopmatPropertiesKhr*);

// The cooperative-matrix API vkml enables, from what the device offers (`nv`, `khr`) and the
// environment: VKML_COOPMAT (`coopmat_env`) auto or empty: KHR where offered, else NV; nv or khr:
// that one or none; off: none. VKML_DISABLE_COOPMAT=1 (`disable_env`) is off whatever
// VKML_COOPMAT says. When an API asked for by name is not offered, `note` (if given) says so.
// Throws Error(InvalidArgument) on another VKML_COOPMAT value.
CoopMatApi choose_coopmat(bool nv, bool khr, const std::string& coopmat_env, const std::string& disable_env,
                          std::string* note = nullptr);
CoopMatApi choose_coopmat_from_env(bool nv, bool khr, std::string* note = nullptr);

// The subgroup-scope shapes of `api`'s properties (empty for none, or when not offered).
std::vector<CoopMatShape> query_coopmat_shapes(VkInstance instance, VkPhysicalDevice phys, CoopMatApi api);

// Fills everything in Capabilities that does not depend on what was enabled; the feature flags
// are left for the caller to set from what it enabled.
Capabilities query_capabilities(VkInstance instance, VkPhysicalDevice phys, bool memory_budget);

// Heap sizes, budgets and usage, refreshed on each call (VK_EXT_memory_budget when enabled).
std::vector<MemoryHeapInfo> query_memory_heaps(VkPhysicalDevice phys, bool memory_budget);

// Parses "123", "64K", "512M", "2G"; 0 on an empty or malformed string.
uint64_t parse_byte_size(const std::string& text);

std::string env_string(const char* name);

} // namespace vkml::gpu::detail
