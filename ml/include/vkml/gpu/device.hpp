#pragma once
// gpu::Device: vkml's handle on one Vulkan device. Either vkml creates everything itself (picking
// the best physical device), or a renderer hands over its own instance, device and queues and
// vkml records and submits into them without owning any of them.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "vkml/error.hpp"
#include "vkml/gpu/capabilities.hpp"

namespace vkml::gpu {

class MemoryAllocator;
class PipelineCache;
class CommandBuffer;
struct ComputePipelineDesc;
struct GraphicsPipelineDesc;
class Pipeline;

enum class QueueRole : uint8_t { Graphics = 0, Compute = 1, Transfer = 2 };
inline constexpr size_t queue_role_count = 3;
const char* queue_role_name(QueueRole role);

enum class Severity : uint8_t { Info, Warning, Error };

struct Message {
    Severity severity = Severity::Info;
    std::string_view source; // "validation" or "vkml"
    std::string_view text;
};
using MessageCallback = std::function<void(const Message&)>;

struct DeviceDesc {
    // Index or name substring of the physical device. Empty: $VKML_DEVICE, else the best one
    // (discrete > integrated > virtual > CPU).
    std::string select;
    // Khronos validation with synchronization validation. Also turned on by VKML_VALIDATION=1.
    bool validation = false;
    // Receives validation messages and vkml's own warnings. Default: warnings and errors to stderr.
    MessageCallback on_message;
    bool use_async_compute = true;  // a separate compute-only family when the device has one
    bool use_transfer_queue = true; // a separate transfer-only family when the device has one
    // VK_KHR_push_descriptor when present; off makes vkml write pooled descriptor sets instead
    // (as on a device without the extension). Also off with VKML_DISABLE_PUSH_DESCRIPTOR=1. On a
    // host device the host may still use the extension itself; vkml then does not.
    bool use_push_descriptors = true;
    // Capture the driver compiler's statistics of every pipeline (registers, shared memory,
    // spills...: VK_KHR_pipeline_executable_properties, where offered): Pipeline::statistics().
    // Also on with VKML_PIPELINE_STATS=1, which prints them to stderr as pipelines are created.
    // Devices vkml creates only (a host device has the features its host enabled).
    bool pipeline_statistics = false;
    // Cap on the device-local memory vkml may allocate, below the driver's budget (0 = none).
    // Also set by VKML_MEMORY_LIMIT=<bytes, or with K/M/G suffix>.
    uint64_t memory_limit = 0;
    // Directory of the persistent pipeline cache. Empty: $VKML_CACHE_DIR, else
    // $XDG_CACHE_HOME/vkml, else ~/.cache/vkml. "-" disables the persistent cache.
    std::string cache_dir;
    std::string app_name = "vkml";
    // How long Device::wait keeps waiting while none of vkml's queues completes anything before
    // it decides the device is hung and throws ErrorCode::Timeout, in seconds. A device that
    // makes progress is waited for as long as it works, and a lost device (VK_ERROR_DEVICE_LOST)
    // is reported at once. Negative: $VKML_WAIT_TIMEOUT (seconds, 0 for no limit), else 600.
    // 0: no limit.
    double wait_timeout = -1;
};

struct HostQueue {
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = VK_QUEUE_FAMILY_IGNORED;
};

// Handles a renderer passes to share its device. vkml destroys none of them. The host must not
// submit to these queues from another thread while vkml submits (Vulkan's external
// synchronisation rule); `queue_lock` lets it share its own queue mutex.
struct HostHandles {
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical_device = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    uint32_t api_version = VK_API_VERSION_1_3; // as passed in VkApplicationInfo
    HostQueue graphics;                        // required (any queue with compute support)
    HostQueue compute;                         // optional async compute queue
    HostQueue transfer;                        // optional transfer queue
    // The VkPhysicalDeviceFeatures2 chain the device was created with (may be null: then only the
    // Vulkan 1.3 features vkml requires are assumed) and the device extensions enabled.
    const VkPhysicalDeviceFeatures2* enabled_features = nullptr;
    std::vector<std::string> enabled_extensions;
    bool debug_utils = false; // the instance has VK_EXT_debug_utils enabled: vkml names its objects
    std::function<void(bool lock)> queue_lock;
};

struct SemaphoreWait {
    QueueRole role = QueueRole::Compute;
    uint64_t value = 0;
    VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
};

// Extension entry points loaded at creation (null when the extension is absent).
struct ExtFunctions {
    PFN_vkCmdPushDescriptorSetKHR cmd_push_descriptor_set = nullptr;
    PFN_vkSetDebugUtilsObjectNameEXT set_debug_utils_object_name = nullptr;
    PFN_vkCmdBeginDebugUtilsLabelEXT cmd_begin_debug_label = nullptr;
    PFN_vkCmdEndDebugUtilsLabelEXT cmd_end_debug_label = nullptr;
    PFN_vkGetPipelineExecutablePropertiesKHR get_pipeline_executable_properties = nullptr;
    PFN_vkGetPipelineExecutableStatisticsKHR get_pipeline_executable_statistics = nullptr;
};

class Device {
public:
    static std::unique_ptr<Device> create(const DeviceDesc& desc = {});
    static std::unique_ptr<Device> from_host(const HostHandles& host, const DeviceDesc& desc = {});
    // Capabilities of every physical device the loader sees, for `vkml info`.
    static std::vector<Capabilities> enumerate(const DeviceDesc& desc = {});

    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    VkInstance instance() const;
    VkPhysicalDevice physical_device() const;
    VkDevice vk() const;
    bool owns_device() const;
    const Capabilities& caps() const;
    const ExtFunctions& ext() const;

    VkQueue queue(QueueRole role) const;
    uint32_t queue_family(QueueRole role) const;
    // Whether the role has a queue of its own (an async compute family, a transfer family) rather
    // than falling back to the graphics queue.
    bool has_dedicated_queue(QueueRole role) const;
    // Queue families that vkml's resources are shared between (concurrent sharing mode).
    std::span<const uint32_t> shared_queue_families() const;

    MemoryAllocator& allocator();
    PipelineCache& pipelines();
    const Pipeline& pipeline(const ComputePipelineDesc& desc);
    const Pipeline& pipeline(const GraphicsPipelineDesc& desc);

    // Submits command buffers to the role's queue and returns the value its timeline semaphore
    // reaches when they complete. `waits` are other queues' timeline values to wait for.
    uint64_t submit(QueueRole role, std::span<CommandBuffer* const> cmds,
                    std::span<const SemaphoreWait> waits = {});
    uint64_t submit(QueueRole role, CommandBuffer& cmd, std::span<const SemaphoreWait> waits = {});
    // Blocks until the role's timeline reaches `value`. There is no fixed time limit: it waits as
    // long as the device completes work on some queue, and throws ErrorCode::Timeout only after
    // DeviceDesc::wait_timeout seconds in which nothing completed (a hung device), or
    // ErrorCode::DeviceLost when the driver reports the device lost. Either way, what the GPU may
    // still run stays alive: see retire().
    void wait(QueueRole role, uint64_t value);
    // Waits at most `timeout_ns`: false when the value was not reached by then. Throws on a lost
    // device.
    bool try_wait(QueueRole role, uint64_t value, uint64_t timeout_ns);
    bool is_complete(QueueRole role, uint64_t value) const;
    // The timeline value of the role's latest submission (0 before any).
    uint64_t last_submitted(QueueRole role) const;
    VkSemaphore timeline(QueueRole role) const;
    // Waits (as wait() does) for everything vkml submitted so far, then frees what was retired.
    void wait_idle();
    // The no-progress limit of wait(), in seconds (0: none).
    double wait_timeout() const;

    // Lifetimes. Nothing vkml frees may still be in use by the GPU, on any path (normal, an
    // exception, Ctrl-C). Objects that record GPU work (buffers, images, command buffers, query
    // and descriptor pools) hand their destruction to retire() instead of destroying at once:
    // `destroy` runs right away when the GPU has finished everything vkml submitted so far, else
    // once it has (checked at later submits, waits and collect(), and at the Device's destruction,
    // which waits for all of vkml's work first; if that wait fails short of a lost device, what is
    // retired is left allocated rather than freed under the GPU). Work a host submits itself is
    // not tracked: the host must know it finished before destroying what it recorded with vkml.
    void retire(std::function<void()> destroy);
    // The same, once `role`'s timeline reaches `value` (for objects that know their last use).
    void retire(QueueRole role, uint64_t value, std::function<void()> destroy);
    // For objects last used by work the host submits without telling vkml when it finishes (a
    // host command buffer's descriptor sets that nobody closed, see DescriptorArena): `destroy`
    // runs when the Device goes, which the host must do after its work is done.
    void retire_at_teardown(std::function<void()> destroy);
    // Runs the retired destructions whose work is complete; with `wait`, waits for the rest first.
    void collect(bool wait = false);
    // Retired destructions still waiting for the GPU.
    size_t retired_pending() const;

    // Records with `fn` into a fresh command buffer for `role`, submits it after all of vkml's
    // earlier submissions on every queue, and waits for it.
    void run_now(QueueRole role, const std::function<void(CommandBuffer&)>& fn);

    void set_debug_name(VkObjectType type, uint64_t handle, std::string_view name) const;
    template <class Handle>
    void set_debug_name(VkObjectType type, Handle handle, std::string_view name) const {
        set_debug_name(type, reinterpret_cast<uint64_t>(handle), name);
    }

    // Sends a message to the DeviceDesc callback.
    void message(Severity severity, std::string_view text) const;

    struct Impl;

private:
    explicit Device(std::unique_ptr<Impl> impl);
    void retire_when(const std::array<uint64_t, queue_role_count>& values, std::function<void()> destroy);
    std::unique_ptr<Impl> impl_;
};

} // namespace vkml::gpu
