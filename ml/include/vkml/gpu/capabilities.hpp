#pragma once
// What a device can do, recorded once at Device creation, so operators pick shader variants
// (fp16, cooperative matrix) and tile sizes without querying Vulkan again.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

namespace vkml::gpu {

// The cooperative-matrix extension the tensor-core shaders run on (VKML_COOPMAT=nv|khr|off): their
// SPIR-V is written against VK_NV_cooperative_matrix, and each has a VK_KHR_cooperative_matrix twin
// made at build time (tools/coopmat_khr) for devices with KHR's only (AMD, Intel).
enum class CoopMatApi : uint8_t { none, nv, khr };
const char* coopmat_api_name(CoopMatApi api); // "none", "NV", "KHR"

struct CoopMatShape {
    uint32_t m = 0, n = 0, k = 0;
    VkComponentTypeNV a_type{}, b_type{}, c_type{}, d_type{};
};

struct MemoryHeapInfo {
    uint64_t size = 0;
    uint64_t budget = 0; // VK_EXT_memory_budget's budget, else 80% of size
    uint64_t usage = 0;  // whole-process usage from VK_EXT_memory_budget, else what vkml allocated
    bool device_local = false;
};

struct QueueFamilyInfo {
    VkQueueFlags flags = 0;
    uint32_t count = 0;
    uint32_t timestamp_valid_bits = 0;
};

struct Capabilities {
    std::string device_name;
    std::string driver_name;
    std::string driver_info;
    VkPhysicalDeviceType device_type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
    uint32_t vendor_id = 0, device_id = 0, api_version = 0, driver_version = 0;
    std::array<uint8_t, VK_UUID_SIZE> pipeline_cache_uuid{};
    std::array<uint8_t, VK_UUID_SIZE> device_uuid{};
    std::array<uint8_t, VK_UUID_SIZE> driver_uuid{};

    // Features vkml enabled (supported by the device and, for host devices, enabled by the host).
    bool storage16 = false;         // 16-bit storage buffers: f16 tensors
    bool float16 = false;           // f16 arithmetic in shaders
    bool int8 = false;              // 8-bit storage and int8 arithmetic
    bool storage8 = false;          // 8-bit storage buffers: u8 tensors, bool outputs
    bool int64 = false;             // 64-bit integers in shaders
    bool dynamic_rendering = false; // raster passes without render-pass objects (frame graph)
    bool push_descriptors = false;
    // VK_KHR_pipeline_executable_properties (DeviceDesc::pipeline_statistics)
    bool pipeline_statistics = false;
    bool memory_budget = false;
    bool subgroup_size_control = false;
    // The tensor-core (cooperative-matrix) shaders may run: vkml enabled VK_NV_cooperative_matrix
    // or VK_KHR_cooperative_matrix, as coopmat_api says (the flag's name predates KHR support).
    bool coopmat_nv = false;
    CoopMatApi coopmat_api = CoopMatApi::none;
    // Subgroup-scope shapes of coopmat_api's extension (with none: NV's where offered, else KHR's);
    // KHR's component types and scopes carry the same values as NV's.
    std::vector<CoopMatShape> coopmat_shapes;
    bool coopmat_nv_offered = false, coopmat_khr_offered = false; // what the device offers

    uint32_t subgroup_size = 0, min_subgroup_size = 0, max_subgroup_size = 0;
    bool subgroup_arithmetic = false; // subgroup add/min/max in compute shaders
    uint32_t max_workgroup_invocations = 0;
    std::array<uint32_t, 3> max_workgroup_count{};
    std::array<uint32_t, 3> max_workgroup_size{};
    uint32_t max_shared_memory = 0;
    // Streaming multiprocessors (VK_NV_shader_sm_builtins' shaderSMCount; 0 where not reported):
    // sizes the persistent grids of the tensor-core tiles.
    uint32_t multiprocessors = 0;
    uint32_t max_push_constants = 0;
    uint64_t max_storage_buffer_range = 0;
    uint64_t min_storage_buffer_offset_alignment = 0;
    uint64_t buffer_image_granularity = 0;
    uint64_t non_coherent_atom_size = 0;

    bool timestamps = false;       // timestampComputeAndGraphics
    float timestamp_period_ns = 0; // nanoseconds per tick

    std::vector<QueueFamilyInfo> queue_families;
    std::vector<MemoryHeapInfo> memory_heaps;
    std::vector<VkMemoryType> memory_types;
};

const char* device_type_name(VkPhysicalDeviceType type);
std::string version_string(uint32_t api_version);
std::string uuid_string(const std::array<uint8_t, VK_UUID_SIZE>& uuid);

} // namespace vkml::gpu
