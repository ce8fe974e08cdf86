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
    bool coopmat_nv = false;
    std::vector<std::string> extensions;
    bool has_extension(const char* name) const;
};

FeatureSupport query_feature_support(VkPhysicalDevice phys);

// Fills everything in Capabilities that does not depend on what was enabled; the feature flags
// are left for the caller to set from what it enabled.
Capabilities query_capabilities(VkInstance instance, VkPhysicalDevice phys, bool memory_budget);

// Heap sizes, budgets and usage, refreshed on each call (VK_EXT_memory_budget when enabled).
std::vector<MemoryHeapInfo> query_memory_heaps(VkPhysicalDevice phys, bool memory_budget);

// Parses "123", "64K", "512M", "2G"; 0 on an empty or malformed string.
uint64_t parse_byte_size(const std::string& text);

std::string env_string(const char* name);

} // namespace vkml::gpu::detail
