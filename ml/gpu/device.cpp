#include "vkml/gpu/device.hpp"
#include "vkml/gpu/instance.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <sstream>

#include "internal.hpp"
#include "vkml/gpu/allocator.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/pipeline.hpp"

namespace vkml::gpu {

using detail::env_string;
using detail::FeatureSupport;

const char* queue_role_name(QueueRole role) {
    switch (role) {
    case QueueRole::Graphics:
        return "graphics";
    case QueueRole::Compute:
        return "compute";
    case QueueRole::Transfer:
        return "transfer";
    }
    return "?";
}

namespace {

constexpr const char* validation_layer = "VK_LAYER_KHRONOS_validation";

struct QueueState {
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = VK_QUEUE_FAMILY_IGNORED;
    VkSemaphore timeline = VK_NULL_HANDLE;
    size_t index = 0;                   // in Device::Impl::queues
    const char* name = "";              // the first role that uses it, for messages
    std::atomic<uint64_t> submitted{0}; // last value handed out; written under mutex
    std::atomic<uint64_t> completed{0}; // the timeline's value when last read
    std::mutex mutex;
};

// What the retired destructions wait for: a timeline value per queue (0: nothing).
using QueueValues = std::array<uint64_t, queue_role_count>;

struct Retired {
    QueueValues values{};
    std::function<void()> destroy;
    bool at_teardown = false; // no timeline value says when: only the Device's destruction frees it
};

constexpr double default_wait_timeout_s = 600;
// A teardown after a wait already gave up looks this long for progress before leaving the work
// (and everything it uses) allocated: a device that was hung for the whole limit stays hung.
constexpr double teardown_after_timeout_s = 10;

double wait_timeout_from(double configured) {
    if (configured >= 0) return configured;
    const std::string text = env_string("VKML_WAIT_TIMEOUT");
    if (text.empty()) return default_wait_timeout_s;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end || !std::isfinite(v) || v < 0)
        throw Error(ErrorCode::InvalidArgument,
                    "VKML_WAIT_TIMEOUT='" + text +
                        "' is not a number of seconds (e.g. 600, or 0 to wait without a limit)");
    return v;
}

// VKML_MEMORY_LIMIT: a positive size ("512M", "2G", "1048576"); anything else is an error, not a
// silently ignored limit.
// VKML_DISABLE_PUSH_DESCRIPTOR=1: vkml behaves as on a device without VK_KHR_push_descriptor
// (pooled descriptor sets everywhere), so that path runs on every device, in CI included.
bool push_descriptors_wanted(const DeviceDesc& desc) {
    return desc.use_push_descriptors && env_string("VKML_DISABLE_PUSH_DESCRIPTOR") != "1";
}

// VKML_PIPELINE_STATS=1: capture (and print) the compiler statistics of every pipeline.
bool pipeline_statistics_wanted(const DeviceDesc& desc) {
    return desc.pipeline_statistics || env_string("VKML_PIPELINE_STATS") == "1";
}

uint64_t memory_limit_from_env() {
    const std::string text = env_string("VKML_MEMORY_LIMIT");
    if (text.empty()) return 0;
    const uint64_t v = detail::parse_byte_size(text);
    if (v == 0)
        throw Error(ErrorCode::InvalidArgument,
                    "VKML_MEMORY_LIMIT='" + text + "' is not a positive size (e.g. 512M, 2G or a number of bytes)");
    return v;
}

void default_message(const Message& m) {
    if (m.severity == Severity::Info) return;
    std::fprintf(stderr, "vkml %s [%.*s]: %.*s\n", m.severity == Severity::Error ? "error" : "warning",
                 int(m.source.size()), m.source.data(), int(m.text.size()), m.text.data());
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

int type_score(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return 1;
    default:
        return 0;
    }
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
    uint32_t n = 0;
    check_vk(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> devs(n);
    check_vk(vkEnumeratePhysicalDevices(instance, &n, devs.data()), "vkEnumeratePhysicalDevices");
    return devs;
}

// Chooses a physical device: `select` is an index or a case-insensitive name substring; empty picks
// the best Vulkan 1.3 device with a compute queue.
VkPhysicalDevice pick_physical_device(VkInstance instance, const std::string& select) {
    const auto devs = physical_devices(instance);
    std::vector<std::string> names;
    for (VkPhysicalDevice d : devs) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(d, &p);
        names.push_back(std::string(p.deviceName) + " (Vulkan " + version_string(p.apiVersion) + ")");
    }
    auto list = [&] {
        std::string s;
        for (size_t i = 0; i < names.size(); ++i) s += "\n  " + std::to_string(i) + ": " + names[i];
        return s.empty() ? std::string("\n  (none: is a Vulkan driver installed? try mesa-vulkan-drivers)")
                         : s;
    };
    auto usable = [](VkPhysicalDevice d) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(d, &p);
        return p.apiVersion >= VK_API_VERSION_1_3;
    };
    if (!select.empty()) {
        const bool numeric =
            std::all_of(select.begin(), select.end(), [](char c) { return std::isdigit((unsigned char)c); });
        for (size_t i = 0; i < devs.size(); ++i) {
            const bool match = numeric ? std::to_string(i) == select
                                       : lower(names[i]).find(lower(select)) != std::string::npos;
            if (!match) continue;
            if (!usable(devs[i]))
                throw Error(ErrorCode::Unsupported, "Vulkan device '" + names[i] + "' selected by '" +
                                                        select +
                                                        "' does not support Vulkan 1.3, which vkml needs");
            return devs[i];
        }
        throw Error(ErrorCode::InvalidArgument,
                    "no Vulkan device matches '" + select +
                        "' (VKML_DEVICE or DeviceDesc::select); devices:" + list());
    }
    VkPhysicalDevice best = VK_NULL_HANDLE;
    int best_score = -1;
    for (VkPhysicalDevice d : devs) {
        if (!usable(d)) continue;
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(d, &p);
        if (type_score(p.deviceType) > best_score) {
            best_score = type_score(p.deviceType);
            best = d;
        }
    }
    if (!best) throw Error(ErrorCode::Unsupported, "no Vulkan 1.3 device found; devices:" + list());
    return best;
}

VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    const auto* on_message = static_cast<const MessageCallback*>(user);
    const Severity s = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT     ? Severity::Error
                       : severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT ? Severity::Warning
                                                                                     : Severity::Info;
    const std::string_view text = data && data->pMessage ? data->pMessage : "(no message)";
    (*on_message)(Message{s, "validation", text});
    return VK_FALSE;
}

} // namespace

bool layer_available(const char* name) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> layers(n);
    vkEnumerateInstanceLayerProperties(&n, layers.data());
    return std::any_of(layers.begin(), layers.end(),
                       [&](const auto& l) { return std::strcmp(l.layerName, name) == 0; });
}

bool instance_extension_available(const char* name) {
    uint32_t n = 0;
    vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
    return std::any_of(exts.begin(), exts.end(),
                       [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

struct Device::Impl {
    DeviceDesc desc;
    MessageCallback on_message;
    Device* self = nullptr;
    bool owns_instance = false, owns_device = false;
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice phys = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    Capabilities caps;
    ExtFunctions ext;
    std::vector<std::unique_ptr<QueueState>> queues;
    std::array<QueueState*, queue_role_count> roles{};
    std::vector<uint32_t> families;
    std::function<void(bool)> queue_lock;
    std::unique_ptr<MemoryAllocator> allocator;
    std::unique_ptr<PipelineCache> pipelines;

    QueueState& role(QueueRole r) const { return *roles[size_t(r)]; }

    // --- waiting and lifetimes ---
    double wait_timeout_s = default_wait_timeout_s;
    std::atomic<bool> timed_out{false}; // a wait gave up on this device
    std::atomic<bool> lost{false};      // the driver reported VK_ERROR_DEVICE_LOST
    bool leak = false;                  // teardown could not prove the GPU idle: free nothing
    mutable std::mutex retire_mutex;
    std::deque<Retired> retired;
    std::atomic<size_t> retired_count{0};

    [[noreturn]] void device_lost(const char* queue_name) {
        lost = true;
        throw Error(ErrorCode::DeviceLost,
                    std::string("the Vulkan device was lost (VK_ERROR_DEVICE_LOST: a driver reset or "
                                "crash) while vkml waited for the ") +
                        queue_name + " queue; the work in flight did not finish");
    }

    // The queue's timeline value now (and remembered as completed).
    uint64_t read_completed(QueueState& q) {
        uint64_t v = 0;
        const VkResult r = vkGetSemaphoreCounterValue(device, q.timeline, &v);
        if (r == VK_ERROR_DEVICE_LOST) device_lost(q.name);
        check_vk(r, "vkGetSemaphoreCounterValue");
        uint64_t seen = q.completed.load();
        while (seen < v && !q.completed.compare_exchange_weak(seen, v)) {
        }
        return std::max(seen, v);
    }

    bool reached(QueueState& q, uint64_t value) {
        return value == 0 || q.completed.load() >= value || read_completed(q) >= value;
    }

    bool reached(const QueueValues& values) {
        for (auto& q : queues)
            if (!reached(*q, values[q->index])) return false;
        return true;
    }

    QueueValues frontier() const {
        QueueValues v{};
        for (auto& q : queues) v[q->index] = q->submitted.load();
        return v;
    }

    // Sum of every queue's completed value: it grows whenever the device finishes anything.
    uint64_t progress_mark() {
        uint64_t sum = 0;
        for (auto& q : queues) sum += read_completed(*q);
        return sum;
    }

    // Blocks until `q` reaches `value`; throws Timeout after `limit_s` seconds (0: never) in which no
    // queue completed anything, DeviceLost when the driver says so.
    void wait_queue(QueueState& q, uint64_t value, double limit_s, const char* name = nullptr) {
        if (!name) name = q.name;
        if (reached(q, value)) return;
        using Clock = std::chrono::steady_clock;
        const auto slice = std::chrono::duration<double>(limit_s > 0 ? std::min(limit_s, 0.25) : 0.25);
        uint64_t mark = progress_mark();
        auto last_progress = Clock::now();
        for (;;) {
            VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &q.timeline, &value};
            const VkResult r = vkWaitSemaphores(
                device, &wi, uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(slice).count()));
            if (r == VK_SUCCESS) {
                read_completed(q);
                return;
            }
            if (r == VK_ERROR_DEVICE_LOST) device_lost(name);
            if (r != VK_TIMEOUT) check_vk(r, "vkWaitSemaphores");
            const uint64_t now_mark = progress_mark();
            if (q.completed.load() >= value) return;
            if (now_mark != mark) {
                mark = now_mark;
                last_progress = Clock::now();
                continue;
            }
            const double idle = std::chrono::duration<double>(Clock::now() - last_progress).count();
            if (limit_s > 0 && idle >= limit_s) {
                timed_out = true;
                char secs[32];
                std::snprintf(secs, sizeof secs, "%g", limit_s);
                throw Error(ErrorCode::Timeout,
                            std::string("the GPU completed no work for ") + secs +
                                " s while vkml waited for the " + name + " queue (timeline at " +
                                std::to_string(q.completed.load()) + ", waiting for " +
                                std::to_string(value) +
                                "): the device seems hung. Its work is left running and nothing it uses "
                                "is freed. On a very slow device set VKML_WAIT_TIMEOUT=<seconds> (0: no "
                                "limit)");
            }
        }
    }

    // Moves the retired destructions whose work is complete (all of them with `all`) out of the
    // list; the caller runs them outside the lock (they free memory, which may retire more).
    std::vector<std::function<void()>> take_ready(bool all) {
        std::vector<std::function<void()>> ready;
        // Each timeline is read once, then every entry compared with what it said.
        QueueValues now{};
        try {
            for (auto& q : queues) now[q->index] = read_completed(*q);
        } catch (const Error&) {
            if (!all) return ready; // a lost device: the teardown frees everything
        }
        std::lock_guard lock(retire_mutex);
        for (auto it = retired.begin(); it != retired.end();) {
            bool done = true;
            for (size_t i = 0; i < now.size() && !all; ++i) done = done && it->values[i] <= now[i];
            done = done && (all || !it->at_teardown);
            if (done) {
                ready.push_back(std::move(it->destroy));
                it = retired.erase(it);
            } else {
                ++it;
            }
        }
        retired_count = retired.size();
        return ready;
    }

    void run_ready(bool all) {
        if (!all && retired_count.load() == 0) return;
        for (auto& destroy : take_ready(all)) destroy();
    }

    // One queue state per distinct VkQueue, so roles that share a queue share its timeline.
    void add_queue(QueueRole r, VkQueue q, uint32_t family) {
        for (auto& qs : queues) {
            if (qs->queue == q) {
                roles[size_t(r)] = qs.get();
                return;
            }
        }
        auto qs = std::make_unique<QueueState>();
        qs->queue = q;
        qs->family = family;
        qs->index = queues.size();
        qs->name = queue_role_name(r);
        VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr,
                                       VK_SEMAPHORE_TYPE_TIMELINE, 0};
        VkSemaphoreCreateInfo ci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type, 0};
        check_vk(vkCreateSemaphore(device, &ci, nullptr, &qs->timeline), "vkCreateSemaphore(timeline)");
        roles[size_t(r)] = qs.get();
        if (std::find(families.begin(), families.end(), family) == families.end()) families.push_back(family);
        queues.push_back(std::move(qs));
    }

    void load_functions(bool debug_utils) {
        ext.cmd_push_descriptor_set = caps.push_descriptors
                                          ? reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
                                                vkGetDeviceProcAddr(device, "vkCmdPushDescriptorSetKHR"))
                                          : nullptr;
        if (!ext.cmd_push_descriptor_set) caps.push_descriptors = false;
        if (caps.pipeline_statistics) {
            ext.get_pipeline_executable_properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
                vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
            ext.get_pipeline_executable_statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
                vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
            if (!ext.get_pipeline_executable_properties || !ext.get_pipeline_executable_statistics)
                caps.pipeline_statistics = false;
        }
        if (debug_utils) {
            ext.set_debug_utils_object_name = reinterpret_cast<PFN_vkSetDebugUtilsObjectNameEXT>(
                vkGetInstanceProcAddr(instance, "vkSetDebugUtilsObjectNameEXT"));
            ext.cmd_begin_debug_label = reinterpret_cast<PFN_vkCmdBeginDebugUtilsLabelEXT>(
                vkGetInstanceProcAddr(instance, "vkCmdBeginDebugUtilsLabelEXT"));
            ext.cmd_end_debug_label = reinterpret_cast<PFN_vkCmdEndDebugUtilsLabelEXT>(
                vkGetInstanceProcAddr(instance, "vkCmdEndDebugUtilsLabelEXT"));
        }
    }

    void finish_setup(Device& d) {
        uint64_t limit = desc.memory_limit;
        if (!limit) limit = memory_limit_from_env();
        wait_timeout_s = wait_timeout_from(desc.wait_timeout);
        allocator = std::make_unique<MemoryAllocator>(d, limit);
        std::filesystem::path dir;
        if (desc.cache_dir != "-")
            dir = desc.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(desc.cache_dir);
        pipelines = std::make_unique<PipelineCache>(d, dir);
    }

    void create_instance() {
        const bool validation = desc.validation || env_string("VKML_VALIDATION") == "1";
        std::vector<const char*> layers, exts;
        const bool debug_utils = instance_extension_available(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        if (debug_utils) exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        bool with_layer = false;
        if (validation) {
            if (layer_available(validation_layer)) {
                layers.push_back(validation_layer);
                with_layer = true;
            } else {
                message_raw(Severity::Warning,
                            "VKML_VALIDATION is set but the Khronos validation layer is not installed "
                            "(Debian: vulkan-validationlayers); running without it");
            }
        }
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.pApplicationName = desc.app_name.c_str();
        app.pEngineName = "vkml";
        app.apiVersion = VK_API_VERSION_1_3;
        VkValidationFeatureEnableEXT enables[] = {
            VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
        VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
        features.enabledValidationFeatureCount = 1;
        features.pEnabledValidationFeatures = enables;
        VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        ci.pNext = with_layer ? &features : nullptr;
        ci.pApplicationInfo = &app;
        ci.enabledLayerCount = uint32_t(layers.size());
        ci.ppEnabledLayerNames = layers.data();
        ci.enabledExtensionCount = uint32_t(exts.size());
        ci.ppEnabledExtensionNames = exts.data();
        const VkResult r = vkCreateInstance(&ci, nullptr, &instance);
        if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
            throw Error(ErrorCode::Unsupported,
                        "no Vulkan driver found (install mesa-vulkan-drivers or a GPU driver)");
        check_vk(r, "vkCreateInstance");
        owns_instance = true;
        if (debug_utils && with_layer) {
            VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
            mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
            mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                             VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                             VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
            mi.pfnUserCallback = debug_callback;
            mi.pUserData = &on_message;
            auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
            if (create)
                check_vk(create(instance, &mi, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");
        }
        debug_utils_enabled = debug_utils;
    }

    void message_raw(Severity s, std::string_view text) const {
        Message m{s, "vkml", text};
        on_message(m);
    }

    bool debug_utils_enabled = false;

    ~Impl() {
        if (leak) {
            // The GPU may still run work that uses these: leave them allocated (the process ends
            // soon; freeing them under the driver would crash it). The messenger goes, as its
            // callback's data lives here.
            (void)pipelines.release();
            (void)allocator.release();
            (void)std::make_unique<std::deque<Retired>>(std::move(retired)).release();
        } else {
            pipelines.reset();
            allocator.reset();
            for (auto& q : queues) vkDestroySemaphore(device, q->timeline, nullptr);
            if (owns_device && device) vkDestroyDevice(device, nullptr);
        }
        if (messenger) {
            auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
            if (destroy) destroy(instance, messenger, nullptr);
        }
        if (owns_instance && instance && !leak) vkDestroyInstance(instance, nullptr);
    }
};

Device::Device(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
    impl_->self = this;
}

Device::~Device() {
    // Everything vkml submitted must be finished before what it uses is freed. A device that
    // completes work is waited for; one that already failed a wait gets a short last look.
    Impl& d = *impl_;
    const double limit = d.timed_out            ? teardown_after_timeout_s
                         : d.wait_timeout_s > 0 ? std::max(d.wait_timeout_s, teardown_after_timeout_s)
                                                : 0.0;
    try {
        for (auto& q : d.queues) d.wait_queue(*q, q->submitted.load(), limit);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::DeviceLost) { // after a loss nothing runs any more: free as usual
            d.leak = true;
            d.message_raw(Severity::Error,
                          std::string("destroying the device while the GPU may still run vkml's work (") +
                              e.what() + "); " + std::to_string(d.retired_count.load()) +
                              " retired objects, the device and its memory are left allocated");
        }
    } catch (const std::exception& e) {
        d.leak = true;
        d.message_raw(Severity::Error, std::string("waiting for the device at shutdown: ") + e.what());
    }
    if (!d.leak) d.run_ready(true);
}

std::unique_ptr<Device> Device::create(const DeviceDesc& desc) {
    auto impl = std::make_unique<Impl>();
    impl->desc = desc;
    impl->on_message = desc.on_message ? desc.on_message : default_message;
    // The device object must exist before the messenger so the callback can reach it.
    std::unique_ptr<Device> device(new Device(std::move(impl)));
    Impl& d = *device->impl_;
    d.create_instance();

    std::string select = desc.select.empty() ? env_string("VKML_DEVICE") : desc.select;
    d.phys = pick_physical_device(d.instance, select);
    const FeatureSupport support = detail::query_feature_support(d.phys);
    if (!support.timeline || !support.sync2)
        throw Error(ErrorCode::Unsupported,
                    "the Vulkan device lacks timeline semaphores or synchronization2");

    // Queue families: one that can do graphics and compute (or compute alone on compute-only
    // devices), plus async compute and transfer families when present.
    uint32_t nfam = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d.phys, &nfam, nullptr);
    std::vector<VkQueueFamilyProperties> fams(nfam);
    vkGetPhysicalDeviceQueueFamilyProperties(d.phys, &nfam, fams.data());
    auto find = [&](auto pred) -> uint32_t {
        for (uint32_t i = 0; i < nfam; ++i)
            if (fams[i].queueCount > 0 && pred(fams[i].queueFlags)) return i;
        return VK_QUEUE_FAMILY_IGNORED;
    };
    uint32_t gfx =
        find([](VkQueueFlags f) { return (f & VK_QUEUE_GRAPHICS_BIT) && (f & VK_QUEUE_COMPUTE_BIT); });
    if (gfx == VK_QUEUE_FAMILY_IGNORED) gfx = find([](VkQueueFlags f) { return f & VK_QUEUE_COMPUTE_BIT; });
    if (gfx == VK_QUEUE_FAMILY_IGNORED)
        throw Error(ErrorCode::Unsupported, "the Vulkan device has no compute queue");
    uint32_t comp =
        desc.use_async_compute
            ? find([](VkQueueFlags f) { return (f & VK_QUEUE_COMPUTE_BIT) && !(f & VK_QUEUE_GRAPHICS_BIT); })
            : VK_QUEUE_FAMILY_IGNORED;
    uint32_t xfer = desc.use_transfer_queue ? find([](VkQueueFlags f) {
        return (f & VK_QUEUE_TRANSFER_BIT) && !(f & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT));
    })
                                            : VK_QUEUE_FAMILY_IGNORED;

    float priority = 1.0f;
    std::vector<VkDeviceQueueCreateInfo> qcis;
    for (uint32_t fam : {gfx, comp, xfer}) {
        if (fam == VK_QUEUE_FAMILY_IGNORED) continue;
        qcis.push_back({VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, fam, 1, &priority});
    }

    Capabilities& caps = d.caps;
    std::vector<const char*> exts;
    caps.push_descriptors =
        push_descriptors_wanted(desc) && support.has_extension(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    if (caps.push_descriptors) exts.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    const bool budget = support.has_extension(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (budget) exts.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    // Cooperative matrices: NV's or KHR's (VKML_COOPMAT); the tensor-core shaders also declare the
    // Vulkan memory model.
    std::string coop_note;
    const CoopMatApi coop_api = detail::choose_coopmat_from_env(
        support.coopmat_nv && support.vulkan_memory_model, support.coopmat_khr && support.vulkan_memory_model,
        &coop_note);
    const bool coop = coop_api != CoopMatApi::none;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV fcoop{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    fcoop.cooperativeMatrix = VK_TRUE;
    detail::CoopmatFeaturesKhr fcoop_khr;
    fcoop_khr.cooperativeMatrix = VK_TRUE;
    void* coop_features = nullptr;
    if (coop_api == CoopMatApi::nv) {
        exts.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
        coop_features = &fcoop;
    } else if (coop_api == CoopMatApi::khr) {
        exts.push_back(detail::khr_coopmat_extension);
        coop_features = &fcoop_khr;
    }
    // Compiler statistics (registers, spills, shared memory) for tuning: VKML_PIPELINE_STATS.
    const bool stats = pipeline_statistics_wanted(desc) && support.pipeline_executable_info;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fstats{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR, coop_features};
    fstats.pipelineExecutableInfo = VK_TRUE;
    if (stats) {
        exts.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
        coop_features = &fstats;
    }
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, coop_features};
    f13.synchronization2 = VK_TRUE;
    f13.subgroupSizeControl = support.subgroup_size_control;
    f13.dynamicRendering = support.dynamic_rendering;
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &f13};
    f12.timelineSemaphore = VK_TRUE;
    f12.shaderFloat16 = support.float16;
    f12.shaderInt8 = support.int8;
    f12.storageBuffer8BitAccess = support.storage8;
    f12.vulkanMemoryModel = coop;
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
    f11.storageBuffer16BitAccess = support.storage16;
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
    f2.features.shaderInt16 = support.int16;
    f2.features.shaderInt64 = support.int64;

    VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f2};
    ci.queueCreateInfoCount = uint32_t(qcis.size());
    ci.pQueueCreateInfos = qcis.data();
    ci.enabledExtensionCount = uint32_t(exts.size());
    ci.ppEnabledExtensionNames = exts.data();
    check_vk(vkCreateDevice(d.phys, &ci, nullptr, &d.device), "vkCreateDevice");
    d.owns_device = true;

    caps = detail::query_capabilities(d.instance, d.phys, budget);
    caps.push_descriptors = std::find(exts.begin(), exts.end(),
                                      std::string_view(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME)) != exts.end();
    caps.pipeline_statistics = stats;
    caps.storage16 = support.storage16;
    caps.float16 = support.float16;
    caps.int8 = support.int8 && support.storage8;
    caps.storage8 = support.storage8;
    caps.int64 = support.int64;
    caps.subgroup_size_control = support.subgroup_size_control;
    caps.dynamic_rendering = support.dynamic_rendering;
    caps.coopmat_nv = coop;
    caps.coopmat_api = coop_api;
    if (coop) caps.coopmat_shapes = detail::query_coopmat_shapes(d.instance, d.phys, coop_api);

    auto get_queue = [&](uint32_t fam) {
        VkQueue q;
        vkGetDeviceQueue(d.device, fam, 0, &q);
        return q;
    };
    d.add_queue(QueueRole::Graphics, get_queue(gfx), gfx);
    const uint32_t comp_fam = comp != VK_QUEUE_FAMILY_IGNORED ? comp : gfx;
    d.add_queue(QueueRole::Compute, get_queue(comp_fam), comp_fam);
    const uint32_t xfer_fam = xfer != VK_QUEUE_FAMILY_IGNORED ? xfer : gfx;
    d.add_queue(QueueRole::Transfer, get_queue(xfer_fam), xfer_fam);
    d.load_functions(d.debug_utils_enabled);
    d.finish_setup(*device);
    if (!coop_note.empty()) d.message_raw(Severity::Warning, coop_note);
    return device;
}

namespace {
// Walks the host's VkPhysicalDeviceFeatures2 chain for the features vkml can use.
void read_host_features(const VkPhysicalDeviceFeatures2* chain, Capabilities& caps, bool& timeline,
                        bool& sync2, bool& coop_khr, bool& memory_model) {
    timeline = sync2 = true; // Vulkan 1.3 makes them core; vkml assumes a 1.3 device with them on
    if (!chain) return;
    timeline = sync2 = false;
    for (auto* s = reinterpret_cast<const VkBaseInStructure*>(chain); s; s = s->pNext) {
        switch (s->sType) {
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2:
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
            caps.storage16 |=
                bool(reinterpret_cast<const VkPhysicalDeviceVulkan11Features*>(s)->storageBuffer16BitAccess);
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
            caps.storage16 |= bool(
                reinterpret_cast<const VkPhysicalDevice16BitStorageFeatures*>(s)->storageBuffer16BitAccess);
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
            auto* f = reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s);
            caps.float16 |= bool(f->shaderFloat16);
            caps.int8 |= f->shaderInt8 && f->storageBuffer8BitAccess;
            caps.storage8 |= bool(f->storageBuffer8BitAccess);
            timeline |= bool(f->timelineSemaphore);
            memory_model |= bool(f->vulkanMemoryModel);
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES:
            memory_model |= bool(
                reinterpret_cast<const VkPhysicalDeviceVulkanMemoryModelFeatures*>(s)->vulkanMemoryModel);
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES:
            caps.float16 |=
                bool(reinterpret_cast<const VkPhysicalDeviceShaderFloat16Int8Features*>(s)->shaderFloat16);
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
            timeline |= bool(
                reinterpret_cast<const VkPhysicalDeviceTimelineSemaphoreFeatures*>(s)->timelineSemaphore);
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES: {
            auto* f = reinterpret_cast<const VkPhysicalDeviceVulkan13Features*>(s);
            sync2 |= bool(f->synchronization2);
            caps.subgroup_size_control |= bool(f->subgroupSizeControl);
            caps.dynamic_rendering |= bool(f->dynamicRendering);
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES:
            sync2 |=
                bool(reinterpret_cast<const VkPhysicalDeviceSynchronization2Features*>(s)->synchronization2);
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV:
            caps.coopmat_nv |= bool(
                reinterpret_cast<const VkPhysicalDeviceCooperativeMatrixFeaturesNV*>(s)->cooperativeMatrix);
            break;
        default:
            if (s->sType == detail::stype_coopmat_features_khr)
                coop_khr |= bool(reinterpret_cast<const detail::CoopmatFeaturesKhr*>(s)->cooperativeMatrix);
            break;
        }
    }
}
} // namespace

std::unique_ptr<Device> Device::from_host(const HostHandles& host, const DeviceDesc& desc) {
    if (!host.instance || !host.physical_device || !host.device || !host.graphics.queue ||
        host.graphics.family == VK_QUEUE_FAMILY_IGNORED)
        throw Error(ErrorCode::InvalidArgument, "Device::from_host needs the host's instance, physical "
                                                "device, device and a graphics/compute queue");
    if (host.api_version < VK_API_VERSION_1_3)
        throw Error(ErrorCode::Unsupported,
                    "Device::from_host: vkml needs an instance created for Vulkan 1.3 or newer");
    auto impl = std::make_unique<Impl>();
    impl->desc = desc;
    impl->on_message = desc.on_message ? desc.on_message : default_message;
    impl->instance = host.instance;
    impl->phys = host.physical_device;
    impl->device = host.device;
    impl->queue_lock = host.queue_lock;
    std::unique_ptr<Device> device(new Device(std::move(impl)));
    Impl& d = *device->impl_;
    if (desc.validation)
        d.message_raw(Severity::Info,
                      "validation of a host device is the host's choice (its instance's layers)");

    auto has_ext = [&](const char* name) {
        return std::find(host.enabled_extensions.begin(), host.enabled_extensions.end(), name) !=
               host.enabled_extensions.end();
    };
    const bool budget = has_ext(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    d.caps = detail::query_capabilities(host.instance, host.physical_device, budget);
    if (d.caps.api_version < VK_API_VERSION_1_3)
        throw Error(ErrorCode::Unsupported, "Device::from_host: the host's physical device '" +
                                                d.caps.device_name + "' does not support Vulkan 1.3");
    bool timeline = false, sync2 = false, coop_khr = false, memory_model = false;
    d.caps.coopmat_nv = false; // from here: enabled by the host, not offered by the device
    read_host_features(host.enabled_features, d.caps, timeline, sync2, coop_khr, memory_model);
    if (!timeline || !sync2)
        throw Error(ErrorCode::Unsupported,
                    "Device::from_host: the host device must enable timelineSemaphore and synchronization2");
    // The cooperative-matrix API among those the host enabled, chosen as for vkml's own devices.
    // The tensor-core shaders declare the Vulkan memory model: KHR needs the host to have enabled
    // vulkanMemoryModel; NV is taken without it, as before KHR support (NVIDIA's driver runs them).
    std::string coop_note;
    d.caps.coopmat_api = detail::choose_coopmat_from_env(
        d.caps.coopmat_nv && has_ext(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME),
        coop_khr && memory_model && d.caps.coopmat_khr_offered && has_ext(detail::khr_coopmat_extension),
        &coop_note);
    d.caps.coopmat_nv = d.caps.coopmat_api != CoopMatApi::none;
    if (d.caps.coopmat_nv)
        d.caps.coopmat_shapes =
            detail::query_coopmat_shapes(host.instance, host.physical_device, d.caps.coopmat_api);
    d.caps.push_descriptors = push_descriptors_wanted(desc) && has_ext(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);

    d.add_queue(QueueRole::Graphics, host.graphics.queue, host.graphics.family);
    const HostQueue& c = host.compute.queue ? host.compute : host.graphics;
    d.add_queue(QueueRole::Compute, c.queue, c.family);
    const HostQueue& t = host.transfer.queue ? host.transfer : host.graphics;
    d.add_queue(QueueRole::Transfer, t.queue, t.family);
    d.load_functions(host.debug_utils);
    d.finish_setup(*device);
    if (!coop_note.empty()) d.message_raw(Severity::Warning, coop_note);
    return device;
}

std::vector<Capabilities> Device::enumerate(const DeviceDesc& desc) {
    auto impl = std::make_unique<Impl>();
    impl->desc = desc;
    impl->desc.validation = false;
    impl->on_message = desc.on_message ? desc.on_message : default_message;
    impl->create_instance();
    std::vector<Capabilities> out;
    for (VkPhysicalDevice phys : physical_devices(impl->instance)) {
        const FeatureSupport s = detail::query_feature_support(phys);
        Capabilities c = detail::query_capabilities(impl->instance, phys,
                                                    s.has_extension(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME));
        c.storage16 = s.storage16;
        c.float16 = s.float16;
        c.int8 = s.int8 && s.storage8;
        c.storage8 = s.storage8;
        c.int64 = s.int64;
        c.push_descriptors = s.has_extension(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
        c.subgroup_size_control = s.subgroup_size_control;
        c.dynamic_rendering = s.dynamic_rendering;
        // What a device made with this environment would enable.
        c.coopmat_api = detail::choose_coopmat_from_env(s.coopmat_nv && s.vulkan_memory_model,
                                                        s.coopmat_khr && s.vulkan_memory_model);
        c.coopmat_nv = c.coopmat_api != CoopMatApi::none;
        if (c.coopmat_nv) c.coopmat_shapes = detail::query_coopmat_shapes(impl->instance, phys, c.coopmat_api);
        out.push_back(std::move(c));
    }
    return out;
}

VkInstance Device::instance() const {
    return impl_->instance;
}
VkPhysicalDevice Device::physical_device() const {
    return impl_->phys;
}
VkDevice Device::vk() const {
    return impl_->device;
}
bool Device::owns_device() const {
    return impl_->owns_device;
}
const Capabilities& Device::caps() const {
    return impl_->caps;
}
const ExtFunctions& Device::ext() const {
    return impl_->ext;
}
VkQueue Device::queue(QueueRole role) const {
    return impl_->role(role).queue;
}
uint32_t Device::queue_family(QueueRole role) const {
    return impl_->role(role).family;
}
bool Device::has_dedicated_queue(QueueRole role) const {
    return role == QueueRole::Graphics ||
           impl_->roles[size_t(role)] != impl_->roles[size_t(QueueRole::Graphics)];
}
std::span<const uint32_t> Device::shared_queue_families() const {
    return impl_->families;
}
MemoryAllocator& Device::allocator() {
    return *impl_->allocator;
}
PipelineCache& Device::pipelines() {
    return *impl_->pipelines;
}
const Pipeline& Device::pipeline(const ComputePipelineDesc& desc) {
    return impl_->pipelines->get(desc);
}
const Pipeline& Device::pipeline(const GraphicsPipelineDesc& desc) {
    return impl_->pipelines->get(desc);
}
VkSemaphore Device::timeline(QueueRole role) const {
    return impl_->role(role).timeline;
}

uint64_t Device::submit(QueueRole role, CommandBuffer& cmd, std::span<const SemaphoreWait> waits) {
    CommandBuffer* one[] = {&cmd};
    return submit(role, one, waits);
}

uint64_t Device::submit(QueueRole role, std::span<CommandBuffer* const> cmds,
                        std::span<const SemaphoreWait> waits) {
    QueueState& q = impl_->role(role);
    std::vector<VkCommandBufferSubmitInfo> cbs;
    for (CommandBuffer* c : cmds) {
        if (c->device().vk() != vk() || impl_->roles[size_t(c->role())]->family != q.family)
            throw Error(ErrorCode::InvalidArgument,
                        std::string("Device::submit: a command buffer recorded for the ") +
                            queue_role_name(c->role()) + " queue was submitted to the " +
                            queue_role_name(role) + " queue of another family");
        cbs.push_back({VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, nullptr, c->vk(), 0});
    }
    std::vector<VkSemaphoreSubmitInfo> wait_infos;
    for (const SemaphoreWait& w : waits) {
        QueueState& other = impl_->role(w.role);
        wait_infos.push_back(
            {VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, nullptr, other.timeline, w.value, w.stages, 0});
    }
    std::unique_lock lock(q.mutex);
    const uint64_t value = q.submitted + 1;
    VkSemaphoreSubmitInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, nullptr, q.timeline, value,
                                 VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,    0};
    VkSubmitInfo2 si{VK_STRUCTURE_TYPE_SUBMIT_INFO_2};
    si.waitSemaphoreInfoCount = uint32_t(wait_infos.size());
    si.pWaitSemaphoreInfos = wait_infos.data();
    si.commandBufferInfoCount = uint32_t(cbs.size());
    si.pCommandBufferInfos = cbs.data();
    si.signalSemaphoreInfoCount = 1;
    si.pSignalSemaphoreInfos = &signal;
    if (impl_->queue_lock) impl_->queue_lock(true);
    const VkResult r = vkQueueSubmit2(q.queue, 1, &si, VK_NULL_HANDLE);
    if (impl_->queue_lock) impl_->queue_lock(false);
    if (r == VK_ERROR_DEVICE_LOST) impl_->lost = true;
    check_vk(r, "vkQueueSubmit2");
    q.submitted = value;
    lock.unlock();
    for (CommandBuffer* c : cmds) c->submitted(role, value);
    // Free what earlier work has finished with (cheap when nothing is retired).
    impl_->run_ready(false);
    return value;
}

void Device::wait(QueueRole role, uint64_t value) {
    impl_->wait_queue(impl_->role(role), value, impl_->wait_timeout_s, queue_role_name(role));
    impl_->run_ready(false);
}

bool Device::try_wait(QueueRole role, uint64_t value, uint64_t timeout_ns) {
    QueueState& q = impl_->role(role);
    if (impl_->reached(q, value)) return true;
    VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &q.timeline, &value};
    const VkResult r = vkWaitSemaphores(impl_->device, &wi, timeout_ns);
    if (r == VK_ERROR_DEVICE_LOST) impl_->device_lost(queue_role_name(role));
    if (r == VK_TIMEOUT) return false;
    check_vk(r, "vkWaitSemaphores");
    impl_->read_completed(q);
    impl_->run_ready(false);
    return true;
}

bool Device::is_complete(QueueRole role, uint64_t value) const {
    return impl_->reached(impl_->role(role), value);
}

void Device::wait_idle() {
    // Only vkml's own submissions: on a host device the host's work is not ours to wait for.
    for (auto& q : impl_->queues) impl_->wait_queue(*q, q->submitted.load(), impl_->wait_timeout_s);
    impl_->run_ready(false);
}

double Device::wait_timeout() const {
    return impl_->wait_timeout_s;
}

void Device::retire(std::function<void()> destroy) {
    retire_when(impl_->frontier(), std::move(destroy));
}

void Device::retire(QueueRole role, uint64_t value, std::function<void()> destroy) {
    QueueValues v{};
    v[impl_->role(role).index] = value;
    retire_when(v, std::move(destroy));
}

void Device::retire_when(const std::array<uint64_t, queue_role_count>& values,
                         std::function<void()> destroy) {
    // Called from destructors: it must not throw. A failed check (a lost device) defers the
    // destruction to the teardown.
    bool done = false;
    try {
        done = impl_->reached(values);
    } catch (const std::exception&) {
        done = false;
    }
    if (done) {
        destroy();
        return;
    }
    std::lock_guard lock(impl_->retire_mutex);
    impl_->retired.push_back({values, std::move(destroy)});
    impl_->retired_count = impl_->retired.size();
}

void Device::retire_at_teardown(std::function<void()> destroy) {
    std::lock_guard lock(impl_->retire_mutex);
    impl_->retired.push_back({{}, std::move(destroy), true});
    impl_->retired_count = impl_->retired.size();
}

void Device::collect(bool wait) {
    impl_->run_ready(false);
    if (!wait) return;
    QueueValues need{};
    {
        std::lock_guard lock(impl_->retire_mutex);
        for (const Retired& r : impl_->retired)
            for (size_t i = 0; i < need.size(); ++i) need[i] = std::max(need[i], r.values[i]);
    }
    for (auto& q : impl_->queues)
        if (need[q->index]) impl_->wait_queue(*q, need[q->index], impl_->wait_timeout_s);
    impl_->run_ready(false);
}

size_t Device::retired_pending() const {
    return impl_->retired_count.load();
}

void Device::run_now(QueueRole role, const std::function<void(CommandBuffer&)>& fn) {
    CommandBuffer cmd(*this, role);
    cmd.begin();
    fn(cmd);
    cmd.end();
    // Ordered after everything vkml submitted before, on any queue, so a blocking upload or
    // download never races earlier work on the same buffers.
    std::vector<SemaphoreWait> waits;
    for (size_t r = 0; r < queue_role_count; ++r) {
        const uint64_t value = last_submitted(QueueRole(r));
        if (value) waits.push_back({QueueRole(r), value, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT});
    }
    wait(role, submit(role, cmd, waits));
}

uint64_t Device::last_submitted(QueueRole role) const {
    return impl_->role(role).submitted.load();
}

void Device::set_debug_name(VkObjectType type, uint64_t handle, std::string_view name) const {
    if (!impl_->ext.set_debug_utils_object_name || name.empty() || !handle) return;
    const std::string n(name);
    VkDebugUtilsObjectNameInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT, nullptr, type,
                                       handle, n.c_str()};
    impl_->ext.set_debug_utils_object_name(impl_->device, &info);
}

void Device::message(Severity severity, std::string_view text) const {
    impl_->message_raw(severity, text);
}

} // namespace vkml::gpu
