// `vkml info`: what the Vulkan devices here can do, for people (text) and scripts (--json).
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/version.hpp"

namespace vkml::tool {
namespace {

std::string gib(uint64_t bytes) {
    char buf[32];
    if (bytes >= (1ull << 30))
        std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(1ull << 30));
    else
        std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1ull << 20));
    return buf;
}

std::string queue_flags(VkQueueFlags f) {
    std::string s;
    if (f & VK_QUEUE_GRAPHICS_BIT) s += "graphics ";
    if (f & VK_QUEUE_COMPUTE_BIT) s += "compute ";
    if (f & VK_QUEUE_TRANSFER_BIT) s += "transfer ";
    if (f & VK_QUEUE_SPARSE_BINDING_BIT) s += "sparse ";
    if (f & VK_QUEUE_VIDEO_DECODE_BIT_KHR) s += "video-decode ";
    if (f & 0x40) // VK_QUEUE_VIDEO_ENCODE_BIT_KHR, a beta extension in these headers
        s += "video-encode ";
    if (!s.empty()) s.pop_back();
    return s;
}

std::string memory_flags(VkMemoryPropertyFlags f) {
    std::string s;
    if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) s += "device-local ";
    if (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) s += "host-visible ";
    if (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) s += "coherent ";
    if (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) s += "cached ";
    if (f & VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT) s += "lazy ";
    if (f & VK_MEMORY_PROPERTY_PROTECTED_BIT) s += "protected ";
    if (!s.empty()) s.pop_back();
    return s.empty() ? "none" : s;
}

const char* component_name(VkComponentTypeNV t) {
    switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_NV:
        return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_NV:
        return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_NV:
        return "f64";
    case VK_COMPONENT_TYPE_SINT8_NV:
        return "s8";
    case VK_COMPONENT_TYPE_UINT8_NV:
        return "u8";
    case VK_COMPONENT_TYPE_SINT32_NV:
        return "s32";
    case VK_COMPONENT_TYPE_UINT32_NV:
        return "u32";
    default:
        return "?";
    }
}

const char* yes(bool b) {
    return b ? "yes" : "no";
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    return out + "\"";
}

void print_text(const std::vector<gpu::Capabilities>& devices) {
    std::printf("vkml %s, %zu Vulkan device%s\n", VKML_VERSION_STRING, devices.size(),
                devices.size() == 1 ? "" : "s");
    for (size_t i = 0; i < devices.size(); ++i) {
        const gpu::Capabilities& c = devices[i];
        std::printf("\n[%zu] %s\n", i, c.device_name.c_str());
        std::printf("  type           %s, Vulkan %s, vendor 0x%04x, device 0x%04x\n",
                    gpu::device_type_name(c.device_type), gpu::version_string(c.api_version).c_str(),
                    c.vendor_id, c.device_id);
        std::printf("  driver         %s %s\n", c.driver_name.c_str(), c.driver_info.c_str());
        std::printf("  uuids          device %s, driver %s\n", gpu::uuid_string(c.device_uuid).c_str(),
                    gpu::uuid_string(c.driver_uuid).c_str());
        std::printf("  fp16           storage %s, arithmetic %s; int8 %s\n", yes(c.storage16), yes(c.float16),
                    yes(c.int8));
        std::printf("  subgroups      %u (min %u, max %u, size control %s, arithmetic %s)\n", c.subgroup_size,
                    c.min_subgroup_size, c.max_subgroup_size, yes(c.subgroup_size_control),
                    yes(c.subgroup_arithmetic));
        std::printf("  descriptors    push descriptors %s\n", yes(c.push_descriptors));
        std::printf("  coopmat        %s (offered: NV %s, KHR %s; VKML_COOPMAT=nv|khr|off)",
                    gpu::coopmat_api_name(c.coopmat_api), yes(c.coopmat_nv_offered),
                    yes(c.coopmat_khr_offered));
        for (const auto& m : c.coopmat_shapes)
            std::printf("%s %ux%ux%u %s*%s+%s", &m == &c.coopmat_shapes.front() ? ":" : ",", m.m, m.n, m.k,
                        component_name(m.a_type), component_name(m.b_type), component_name(m.c_type));
        std::printf("\n");
        std::printf("  timestamps     %s, %.3f ns per tick\n", yes(c.timestamps),
                    double(c.timestamp_period_ns));
        std::printf(
            "  workgroups     %u invocations, size %ux%ux%u, %u KiB shared memory, %u B push constants\n",
            c.max_workgroup_invocations, c.max_workgroup_size[0], c.max_workgroup_size[1],
            c.max_workgroup_size[2], c.max_shared_memory / 1024, c.max_push_constants);
        if (c.multiprocessors) std::printf("  multiprocessors %u\n", c.multiprocessors);
        std::printf("  queue families\n");
        for (size_t q = 0; q < c.queue_families.size(); ++q) {
            const auto& f = c.queue_families[q];
            std::printf("    %zu: %-40s x%u, timestamps %u bits\n", q, queue_flags(f.flags).c_str(), f.count,
                        f.timestamp_valid_bits);
        }
        std::printf("  memory heaps   (budget from %s)\n",
                    c.memory_budget ? "VK_EXT_memory_budget" : "80% of size");
        for (size_t h = 0; h < c.memory_heaps.size(); ++h) {
            const auto& m = c.memory_heaps[h];
            std::printf("    %zu: %10s%s, budget %s, in use %s\n", h, gib(m.size).c_str(),
                        m.device_local ? " device-local" : "", gib(m.budget).c_str(), gib(m.usage).c_str());
        }
        std::printf("  memory types\n");
        for (size_t t = 0; t < c.memory_types.size(); ++t)
            std::printf("    %zu: heap %u, %s\n", t, c.memory_types[t].heapIndex,
                        memory_flags(c.memory_types[t].propertyFlags).c_str());
    }
}

void print_json(const std::vector<gpu::Capabilities>& devices) {
    std::printf("{\"vkml_version\": \"%s\", \"devices\": [", VKML_VERSION_STRING);
    for (size_t i = 0; i < devices.size(); ++i) {
        const gpu::Capabilities& c = devices[i];
        std::printf(
            "%s\n  {\"index\": %zu, \"name\": %s, \"type\": \"%s\", \"api_version\": \"%s\", "
            "\"vendor_id\": %u, \"device_id\": %u, \"driver_name\": %s, \"driver_info\": %s, "
            "\"device_uuid\": \"%s\", \"driver_uuid\": \"%s\",\n   \"fp16_storage\": %s, "
            "\"fp16_arithmetic\": %s, "
            "\"int8\": %s, \"push_descriptors\": %s, \"memory_budget\": %s, \"subgroup_size\": %u, "
            "\"min_subgroup_size\": %u, \"max_subgroup_size\": %u, \"subgroup_arithmetic\": %s, "
            "\"coopmat_nv\": %s, \"coopmat_api\": \"%s\", \"timestamps\": %s, "
            "\"timestamp_period_ns\": %.6f, \"max_workgroup_invocations\": %u, \"max_shared_memory\": %u,\n",
            i ? "," : "", i, json_string(c.device_name).c_str(), gpu::device_type_name(c.device_type),
            gpu::version_string(c.api_version).c_str(), c.vendor_id, c.device_id,
            json_string(c.driver_name).c_str(), json_string(c.driver_info).c_str(),
            gpu::uuid_string(c.device_uuid).c_str(), gpu::uuid_string(c.driver_uuid).c_str(),
            c.storage16 ? "true" : "false", c.float16 ? "true" : "false", c.int8 ? "true" : "false",
            c.push_descriptors ? "true" : "false", c.memory_budget ? "true" : "false", c.subgroup_size,
            c.min_subgroup_size, c.max_subgroup_size, c.subgroup_arithmetic ? "true" : "false",
            c.coopmat_nv ? "true" : "false", gpu::coopmat_api_name(c.coopmat_api),
            c.timestamps ? "true" : "false", double(c.timestamp_period_ns), c.max_workgroup_invocations,
            c.max_shared_memory);
        std::printf("   \"coopmat_shapes\": [");
        for (size_t m = 0; m < c.coopmat_shapes.size(); ++m) {
            const auto& s = c.coopmat_shapes[m];
            std::printf("%s{\"m\": %u, \"n\": %u, \"k\": %u, \"a\": \"%s\", \"b\": \"%s\", \"c\": \"%s\", "
                        "\"d\": \"%s\"}",
                        m ? ", " : "", s.m, s.n, s.k, component_name(s.a_type), component_name(s.b_type),
                        component_name(s.c_type), component_name(s.d_type));
        }
        std::printf("],\n   \"queue_families\": [");
        for (size_t q = 0; q < c.queue_families.size(); ++q) {
            const auto& f = c.queue_families[q];
            std::printf("%s{\"flags\": \"%s\", \"count\": %u, \"timestamp_bits\": %u}", q ? ", " : "",
                        queue_flags(f.flags).c_str(), f.count, f.timestamp_valid_bits);
        }
        std::printf("],\n   \"memory_heaps\": [");
        for (size_t h = 0; h < c.memory_heaps.size(); ++h) {
            const auto& m = c.memory_heaps[h];
            std::printf("%s{\"size\": %llu, \"budget\": %llu, \"usage\": %llu, \"device_local\": %s}",
                        h ? ", " : "", (unsigned long long)m.size, (unsigned long long)m.budget,
                        (unsigned long long)m.usage, m.device_local ? "true" : "false");
        }
        std::printf("],\n   \"memory_types\": [");
        for (size_t t = 0; t < c.memory_types.size(); ++t)
            std::printf("%s{\"heap\": %u, \"flags\": \"%s\"}", t ? ", " : "", c.memory_types[t].heapIndex,
                        memory_flags(c.memory_types[t].propertyFlags).c_str());
        std::printf("]}");
    }
    std::printf("\n]}\n");
}

} // namespace

int info_main(Args args) {
    bool json = false;
    for (std::string_view a : args) {
        if (a == "--json") {
            json = true;
        } else if (a == "--help" || a == "-h") {
            std::printf(
                "usage: vkml info [--json]\n"
                "  Lists the Vulkan devices with their queues, fp16/int8/subgroup/cooperative-matrix\n"
                "  support and memory heaps; --json prints the same as JSON.\n");
            return 0;
        } else {
            std::fprintf(stderr, "vkml info: unknown option '%.*s' (try --json)\n", int(a.size()), a.data());
            return 2;
        }
    }
    const auto devices = gpu::Device::enumerate();
    if (json)
        print_json(devices);
    else
        print_text(devices);
    return devices.empty() ? 1 : 0;
}

} // namespace vkml::tool
