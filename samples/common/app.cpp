#include "common/app.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>

#include "common/image_io.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/instance.hpp"

namespace vkml::samples {

// --- command line ------------------------------------------------------------------------------

VkExtent2D parse_size(std::string_view text, std::string_view what) {
    const size_t x = text.find('x');
    auto number = [&](std::string_view s) {
        uint32_t v = 0;
        if (s.empty() || s.size() > 6) return 0u;
        for (char c : s) {
            if (c < '0' || c > '9') return 0u;
            v = v * 10 + uint32_t(c - '0');
        }
        return v;
    };
    const uint32_t w = x == std::string_view::npos ? 0 : number(text.substr(0, x));
    const uint32_t h = x == std::string_view::npos ? 0 : number(text.substr(x + 1));
    if (!w || !h || w > 16384 || h > 16384)
        throw UsageError(std::string(what) + ": expected WIDTHxHEIGHT (e.g. 960x540), got '" +
                         std::string(text) + "'");
    return {w, h};
}

namespace {

int parse_int(const std::string& s, const std::string& what, int lo, int hi) {
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || v < lo || v > hi)
        throw UsageError(what + ": expected a whole number in " + std::to_string(lo) + ".." +
                         std::to_string(hi) + ", got '" + s + "'");
    return int(v);
}

struct Builtin {
    const char* name;
    const char* metavar;
    const char* help;
};
const Builtin builtin_options[] = {
    {"--headless", "", "render without a window (no display needed); write PNG frames and timing.json"},
    {"--frames", "N", "run N frames, then exit (headless default: 1; window default: until closed)"},
    {"--out", "DIR", "headless output directory (default: out)"},
    {"--size", "WxH", "output size (default: the sample's)"},
    {"--device", "NAME", "Vulkan device by index or name substring (default: $VKML_DEVICE, else the best)"},
    {"--async-compute", "", "run the ML passes on the async compute queue (when the device has one)"},
    {"--fps", "F", "headless: frame i shows scene time i / F seconds (default: 30)"},
    {"--write", "WHICH", "headless frames written as PNG: all, last or none (default: all)"},
    {"--validation", "", "Khronos validation with synchronization validation (also VKML_VALIDATION=1)"},
    {"--help", "", "this text"},
};

} // namespace

std::string usage(const AppDesc& desc) {
    std::ostringstream s;
    s << "usage: " << desc.name << " [options]\n";
    if (!desc.summary.empty()) s << desc.summary << "\n";
    auto line = [&](const std::string& name, const std::string& metavar, const std::string& help) {
        std::string left = "  " + name + (metavar.empty() ? "" : " " + metavar);
        if (left.size() < 24)
            left.resize(24, ' ');
        else
            left += "  ";
        s << left << help << "\n";
    };
    if (!desc.options.empty()) {
        s << "\noptions:\n";
        for (const OptionSpec& o : desc.options) line(o.name, o.metavar, o.help);
    }
    s << "\ncommon options:\n";
    for (const Builtin& b : builtin_options) line(b.name, b.metavar, b.help);
    s << "\nkeys (window): Esc or Q quit\n";
    if (!desc.keys_help.empty()) s << desc.keys_help << (desc.keys_help.back() == '\n' ? "" : "\n");
    return s.str();
}

CommonOptions parse_options(int argc, char** argv, const AppDesc& desc) {
    CommonOptions o;
    bool frames_set = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i], value;
        bool has_inline = false;
        if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = a.substr(eq + 1);
            a = a.substr(0, eq);
            has_inline = true;
        }
        auto next = [&]() -> std::string {
            if (has_inline) return value;
            if (i + 1 >= argc) throw UsageError(a + " needs a value");
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            o.help = true;
        } else if (a == "--headless") {
            o.headless = true;
        } else if (a == "--frames") {
            o.frames = parse_int(next(), "--frames", 1, 100000000);
            frames_set = true;
        } else if (a == "--out") {
            o.out_dir = next();
        } else if (a == "--size") {
            const VkExtent2D e = parse_size(next());
            o.width = e.width;
            o.height = e.height;
        } else if (a == "--device") {
            o.device = next();
        } else if (a == "--async-compute") {
            o.async_compute = true;
        } else if (a == "--validation") {
            o.validation = true;
        } else if (a == "--fps") {
            const std::string v = next();
            char* end = nullptr;
            o.fps = std::strtod(v.c_str(), &end);
            if (v.empty() || *end || !(o.fps > 0) || o.fps > 10000)
                throw UsageError("--fps: expected a positive number, got '" + v + "'");
        } else if (a == "--write") {
            const std::string v = next();
            if (v == "all")
                o.write = WriteFrames::All;
            else if (v == "last")
                o.write = WriteFrames::Last;
            else if (v == "none")
                o.write = WriteFrames::None;
            else
                throw UsageError("--write: expected all, last or none, got '" + v + "'");
        } else {
            auto spec = std::find_if(desc.options.begin(), desc.options.end(),
                                     [&](const OptionSpec& s) { return s.name == a; });
            if (spec == desc.options.end()) throw UsageError("unknown option '" + a + "'");
            if (spec->metavar.empty()) {
                if (has_inline) throw UsageError(a + " takes no value");
                spec->apply("");
            } else {
                spec->apply(next());
            }
        }
    }
    if (!o.width) {
        o.width = desc.default_width;
        o.height = desc.default_height;
    }
    if (!frames_set && o.headless) o.frames = 1;
    return o;
}

double FrameTimes::sum_ms(std::string_view prefix) const {
    double us = 0;
    for (const auto& r : passes)
        if (std::string_view(r.name).substr(0, prefix.size()) == prefix) us += r.duration_us;
    return us / 1000.0;
}

// --- the host ----------------------------------------------------------------------------------

namespace {

void vk_check(VkResult r, const char* what) {
    if (r < 0) throw Error(error_code_from(r), std::string(what) + " failed: " + vk_result_name(r));
}

int type_score(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return 2;
    default:
        return 1;
    }
}

std::string glfw_error_text;
void on_glfw_error(int, const char* text) {
    glfw_error_text = text ? text : "unknown GLFW error";
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\', out += c;
        else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else
            out += c;
    }
    return out;
}

} // namespace

struct App::Impl {
    App* app = nullptr;
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice phys = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    uint32_t graphics_family = 0, compute_family = VK_QUEUE_FAMILY_IGNORED;
    VkQueue graphics = VK_NULL_HANDLE, compute = VK_NULL_HANDLE;
    std::string device_name;

    // Enabled features, kept for from_host (it reads the chain).
    VkPhysicalDeviceCooperativeMatrixFeaturesNV fcoop{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    // VkPhysicalDeviceCooperativeMatrixFeaturesKHR: Debian bookworm's Vulkan headers (1.3.239)
    // predate VK_KHR_cooperative_matrix, so its feature struct is spelled out here, as a renderer
    // built against those headers would.
    struct CoopmatFeaturesKhr {
        VkStructureType sType = VkStructureType(1000506000);
        void* pNext = nullptr;
        VkBool32 cooperativeMatrix = VK_FALSE;
        VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
    } fcoop_khr;
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    std::vector<std::string> device_extensions;

    std::mutex messages_mutex;
    std::vector<std::string> messages;
    size_t message_count = 0;

    // Window.
    GLFWwindow* window = nullptr;
    bool glfw = false;
    VkSurfaceKHR surface = VK_NULL_HANDLE;
    VkSwapchainKHR swapchain = VK_NULL_HANDLE;
    VkFormat swap_format = VK_FORMAT_UNDEFINED;
    VkExtent2D swap_extent{};
    std::vector<VkImage> swap_images;
    std::vector<VkImageView> swap_views;
    std::vector<VkSemaphore> present_semaphores; // one per swapchain image
    std::vector<VkSemaphore> acquire_semaphores; // one per frame slot
    std::vector<VkFence> slot_fences;            // the slot's last present-signal submission
    bool resized = false;
    std::deque<int> keys;

    // Headless readback ring.
    std::vector<std::shared_ptr<gpu::Buffer>> readbacks;
    std::vector<int64_t> readback_frame;
    std::vector<fg::FrameSubmission> readback_submission;

    static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user) {
        auto* self = static_cast<Impl*>(user);
        const std::string text = data && data->pMessage ? data->pMessage : "(no message)";
        std::fprintf(stderr, "validation: %s\n", text.c_str());
        std::lock_guard lock(self->messages_mutex);
        self->messages.push_back(text);
        ++self->message_count;
        return VK_FALSE;
    }

    void create_instance(bool want_window, bool validation_wanted) {
        const char* env = std::getenv("VKML_VALIDATION");
        bool validation = validation_wanted || (env && std::string(env) == "1");
        if (validation && !gpu::layer_available("VK_LAYER_KHRONOS_validation")) {
            std::fprintf(stderr, "vkml warning: validation requested but the Khronos validation layer is not "
                                 "installed (Debian: vulkan-validationlayers)\n");
            validation = false;
        }
        std::vector<const char*> exts;
        const bool debug_utils = gpu::instance_extension_available(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        if (debug_utils) exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        if (want_window) {
            uint32_t n = 0;
            const char** glfw_exts = glfwGetRequiredInstanceExtensions(&n);
            if (!glfw_exts)
                throw Error(ErrorCode::Unsupported,
                            "cannot open a window: GLFW finds no Vulkan surface support (" + glfw_error_text +
                                "); run with --headless");
            for (uint32_t i = 0; i < n; ++i) exts.push_back(glfw_exts[i]);
        }
        VkApplicationInfo ai{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        ai.pApplicationName = app->desc_.name.c_str();
        ai.pEngineName = "vkml";
        ai.apiVersion = VK_API_VERSION_1_3;
        const char* layer = "VK_LAYER_KHRONOS_validation";
        VkValidationFeatureEnableEXT enables[] = {
            VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
        VkValidationFeaturesEXT vf{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
        vf.enabledValidationFeatureCount = 1;
        vf.pEnabledValidationFeatures = enables;
        VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, validation ? &vf : nullptr};
        ici.pApplicationInfo = &ai;
        ici.enabledLayerCount = validation ? 1 : 0;
        ici.ppEnabledLayerNames = &layer;
        ici.enabledExtensionCount = uint32_t(exts.size());
        ici.ppEnabledExtensionNames = exts.data();
        const VkResult r = vkCreateInstance(&ici, nullptr, &instance);
        if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED)
            throw Error(ErrorCode::Unsupported,
                        "no Vulkan driver found (install mesa-vulkan-drivers or your GPU's Vulkan driver)");
        vk_check(r, "vkCreateInstance");
        if (validation && debug_utils) {
            VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
            mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
            mi.messageType =
                VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
            mi.pfnUserCallback = on_debug;
            mi.pUserData = this;
            auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
            if (create)
                vk_check(create(instance, &mi, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");
        }
        debug_utils_enabled = debug_utils;
    }
    bool debug_utils_enabled = false;

    void open_window() {
        glfwSetErrorCallback(on_glfw_error);
        if (!glfwInit())
            throw Error(ErrorCode::Unsupported,
                        "cannot open a window (" +
                            (glfw_error_text.empty() ? std::string("no display") : glfw_error_text) +
                            "); run with --headless to render without a display");
        glfw = true;
        if (!glfwVulkanSupported())
            throw Error(ErrorCode::Unsupported,
                        "cannot open a window: GLFW finds no Vulkan loader; run with --headless");
    }

    void create_window_surface() {
        glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
        window = glfwCreateWindow(int(app->options_.width), int(app->options_.height),
                                  app->desc_.name.c_str(), nullptr, nullptr);
        if (!window)
            throw Error(ErrorCode::Unsupported, "cannot create a window (" + glfw_error_text +
                                                    "); run with --headless to render without a display");
        glfwSetWindowUserPointer(window, this);
        glfwSetKeyCallback(window, [](GLFWwindow* w, int key, int, int action, int) {
            if (action == GLFW_PRESS) static_cast<Impl*>(glfwGetWindowUserPointer(w))->keys.push_back(key);
        });
        glfwSetFramebufferSizeCallback(window, [](GLFWwindow* w, int, int) {
            static_cast<Impl*>(glfwGetWindowUserPointer(w))->resized = true;
        });
        vk_check(glfwCreateWindowSurface(instance, window, nullptr, &surface), "glfwCreateWindowSurface");
    }

    void pick_device(const std::string& wanted) {
        uint32_t n = 0;
        vkEnumeratePhysicalDevices(instance, &n, nullptr);
        std::vector<VkPhysicalDevice> devices(n);
        vkEnumeratePhysicalDevices(instance, &n, devices.data());
        const char* env = std::getenv("VKML_DEVICE");
        const std::string select = !wanted.empty() ? wanted : env ? env : "";
        const bool by_index = !select.empty() && std::all_of(select.begin(), select.end(),
                                                             [](char c) { return c >= '0' && c <= '9'; });
        int best = -1;
        std::string seen;
        for (uint32_t i = 0; i < n; ++i) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(devices[i], &p);
            seen += std::string(seen.empty() ? "" : ", ") + p.deviceName;
            if (by_index && std::to_string(i) != select) continue;
            if (!by_index && !select.empty() && std::string(p.deviceName).find(select) == std::string::npos)
                continue;
            if (p.apiVersion < VK_API_VERSION_1_3) continue;
            VkPhysicalDeviceVulkan13Features q13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
            VkPhysicalDeviceVulkan12Features q12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &q13};
            VkPhysicalDeviceFeatures2 q2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &q12};
            vkGetPhysicalDeviceFeatures2(devices[i], &q2);
            if (!q13.dynamicRendering || !q13.synchronization2 || !q12.timelineSemaphore) continue;
            if (surface && find_graphics_family(devices[i]) == VK_QUEUE_FAMILY_IGNORED) continue;
            if (type_score(p.deviceType) > best) {
                best = type_score(p.deviceType);
                phys = devices[i];
                device_name = p.deviceName;
            }
        }
        if (!phys) {
            std::string msg =
                n == 0 ? "no Vulkan device found (install mesa-vulkan-drivers or your GPU's Vulkan driver)"
                       : "no Vulkan 1.3 device with dynamic rendering and synchronization2";
            if (!select.empty()) msg += " matching '" + select + "'";
            if (surface) msg += " that can present to the window";
            if (n) msg += " (devices: " + seen + ")";
            throw Error(ErrorCode::Unsupported, msg);
        }
    }

    uint32_t find_graphics_family(VkPhysicalDevice d) const {
        uint32_t n = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(d, &n, nullptr);
        std::vector<VkQueueFamilyProperties> fams(n);
        vkGetPhysicalDeviceQueueFamilyProperties(d, &n, fams.data());
        for (uint32_t i = 0; i < n; ++i) {
            if (!(fams[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) || !(fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT))
                continue;
            if (surface) {
                VkBool32 present = VK_FALSE;
                vkGetPhysicalDeviceSurfaceSupportKHR(d, i, surface, &present);
                if (!present) continue;
            }
            return i;
        }
        return VK_QUEUE_FAMILY_IGNORED;
    }

    bool device_has_extension(const char* name) const {
        uint32_t n = 0;
        vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, nullptr);
        std::vector<VkExtensionProperties> exts(n);
        vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, exts.data());
        return std::any_of(exts.begin(), exts.end(),
                           [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
    }

    void create_device() {
        graphics_family = find_graphics_family(phys);
        uint32_t n = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, nullptr);
        std::vector<VkQueueFamilyProperties> fams(n);
        vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, fams.data());
        for (uint32_t i = 0; i < n; ++i)
            if ((fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
                !(fams[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) && fams[i].queueCount > 0) {
                compute_family = i;
                break;
            }
        const float priority = 1.f;
        std::vector<VkDeviceQueueCreateInfo> queues{
            {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, graphics_family, 1, &priority}};
        if (compute_family != VK_QUEUE_FAMILY_IGNORED)
            queues.push_back(
                {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, compute_family, 1, &priority});

        // What the device supports, then enable exactly the features vkml's own Device::create would.
        VkPhysicalDeviceVulkan13Features s13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
        VkPhysicalDeviceVulkan12Features s12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &s13};
        VkPhysicalDeviceVulkan11Features s11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &s12};
        VkPhysicalDeviceFeatures2 s2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &s11};
        vkGetPhysicalDeviceFeatures2(phys, &s2);
        f13.synchronization2 = VK_TRUE;
        f13.dynamicRendering = VK_TRUE;
        f13.subgroupSizeControl = s13.subgroupSizeControl;
        f12.timelineSemaphore = VK_TRUE;
        f12.shaderFloat16 = s12.shaderFloat16;
        f12.shaderInt8 = s12.shaderInt8;
        f12.storageBuffer8BitAccess = s12.storageBuffer8BitAccess;
        f11.storageBuffer16BitAccess = s11.storageBuffer16BitAccess;
        f2.features.shaderInt16 = s2.features.shaderInt16;
        f2.features.shaderInt64 = s2.features.shaderInt64;
        f2.pNext = &f11;
        f11.pNext = &f12;
        f12.pNext = &f13;

        for (const char* e : {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME})
            if (device_has_extension(e)) device_extensions.push_back(e);
        // Tensor cores: VK_KHR_cooperative_matrix where offered (vkml's own default; faster on an
        // H100), else VK_NV_cooperative_matrix; either with the Vulkan memory model, which vkml's
        // tensor-core shaders declare. VKML_COOPMAT=nv|khr|off and VKML_DISABLE_COOPMAT=1 choose
        // as they do for vkml's own devices.
        const char* no_coop = std::getenv("VKML_DISABLE_COOPMAT");
        const char* coop_env = std::getenv("VKML_COOPMAT");
        const std::string want = no_coop && std::string(no_coop) == "1" ? "off" : coop_env ? coop_env : "auto";
        const bool memory_model = s12.vulkanMemoryModel;
        const bool khr = memory_model && want != "off" && want != "nv" && device_has_extension("VK_KHR_cooperative_matrix");
        const bool nv = !khr && memory_model && want != "off" && want != "khr" &&
                        device_has_extension(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
        if (khr) {
            device_extensions.push_back("VK_KHR_cooperative_matrix");
            fcoop_khr.cooperativeMatrix = VK_TRUE;
            f13.pNext = &fcoop_khr;
        } else if (nv) {
            device_extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
            fcoop.cooperativeMatrix = VK_TRUE;
            f13.pNext = &fcoop;
        }
        f12.vulkanMemoryModel = khr || nv;
        if (surface) device_extensions.push_back(VK_KHR_SWAPCHAIN_EXTENSION_NAME);
        std::vector<const char*> ext_ptrs;
        for (const auto& e : device_extensions) ext_ptrs.push_back(e.c_str());

        VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f2};
        dci.queueCreateInfoCount = uint32_t(queues.size());
        dci.pQueueCreateInfos = queues.data();
        dci.enabledExtensionCount = uint32_t(ext_ptrs.size());
        dci.ppEnabledExtensionNames = ext_ptrs.data();
        vk_check(vkCreateDevice(phys, &dci, nullptr, &device), "vkCreateDevice");
        vkGetDeviceQueue(device, graphics_family, 0, &graphics);
        if (compute_family != VK_QUEUE_FAMILY_IGNORED) vkGetDeviceQueue(device, compute_family, 0, &compute);
    }

    std::unique_ptr<gpu::Device> wrap() {
        gpu::HostHandles h;
        h.instance = instance;
        h.physical_device = phys;
        h.device = device;
        h.graphics = {graphics, graphics_family};
        if (compute) h.compute = {compute, compute_family};
        h.enabled_features = &f2;
        h.enabled_extensions = device_extensions;
        h.debug_utils = debug_utils_enabled;
        gpu::DeviceDesc dd;
        dd.app_name = app->desc_.name;
        dd.on_message = [](const gpu::Message& m) {
            if (m.severity == gpu::Severity::Info) return;
            std::fprintf(stderr, "vkml %s: %.*s\n", m.severity == gpu::Severity::Error ? "error" : "warning",
                         int(m.text.size()), m.text.data());
        };
        return gpu::Device::from_host(h, dd);
    }

    // --- swapchain ---

    void create_swapchain(uint32_t slots) {
        VkSurfaceCapabilitiesKHR caps;
        vk_check(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(phys, surface, &caps),
                 "vkGetPhysicalDeviceSurfaceCapabilitiesKHR");
        uint32_t n = 0;
        vkGetPhysicalDeviceSurfaceFormatsKHR(phys, surface, &n, nullptr);
        std::vector<VkSurfaceFormatKHR> formats(n);
        vkGetPhysicalDeviceSurfaceFormatsKHR(phys, surface, &n, formats.data());
        if (formats.empty()) throw Error(ErrorCode::Unsupported, "the window surface offers no formats");
        VkSurfaceFormatKHR chosen = formats[0];
        for (const auto& f : formats)
            if (f.format == VK_FORMAT_B8G8R8A8_UNORM || f.format == VK_FORMAT_R8G8B8A8_UNORM) {
                chosen = f; // UNORM: the frame's bytes are already display-encoded, as in the PNGs
                break;
            }
        if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT))
            throw Error(ErrorCode::Unsupported, "the window's swapchain images cannot be blit destinations");
        swap_extent = caps.currentExtent;
        if (swap_extent.width == 0xFFFFFFFFu) {
            int w = 0, h = 0;
            glfwGetFramebufferSize(window, &w, &h);
            swap_extent = {std::clamp(uint32_t(w), caps.minImageExtent.width, caps.maxImageExtent.width),
                           std::clamp(uint32_t(h), caps.minImageExtent.height, caps.maxImageExtent.height)};
        }
        uint32_t count = std::max(caps.minImageCount + 1, 3u);
        if (caps.maxImageCount) count = std::min(count, caps.maxImageCount);
        VkSwapchainCreateInfoKHR ci{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
        ci.surface = surface;
        ci.minImageCount = count;
        ci.imageFormat = chosen.format;
        ci.imageColorSpace = chosen.colorSpace;
        ci.imageExtent = swap_extent;
        ci.imageArrayLayers = 1;
        ci.imageUsage = VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT;
        ci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
        ci.preTransform = caps.currentTransform;
        ci.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
        ci.presentMode = VK_PRESENT_MODE_FIFO_KHR;
        ci.clipped = VK_TRUE;
        ci.oldSwapchain = swapchain;
        VkSwapchainKHR fresh = VK_NULL_HANDLE;
        vk_check(vkCreateSwapchainKHR(device, &ci, nullptr, &fresh), "vkCreateSwapchainKHR");
        destroy_swapchain_objects();
        if (swapchain) vkDestroySwapchainKHR(device, swapchain, nullptr);
        swapchain = fresh;
        swap_format = chosen.format;
        vkGetSwapchainImagesKHR(device, swapchain, &n, nullptr);
        swap_images.resize(n);
        vkGetSwapchainImagesKHR(device, swapchain, &n, swap_images.data());
        const VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
        for (VkImage img : swap_images) {
            VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
            vi.image = img;
            vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
            vi.format = swap_format;
            vi.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
            VkImageView v;
            vk_check(vkCreateImageView(device, &vi, nullptr, &v), "vkCreateImageView");
            swap_views.push_back(v);
            VkSemaphore s;
            vk_check(vkCreateSemaphore(device, &si, nullptr, &s), "vkCreateSemaphore");
            present_semaphores.push_back(s);
        }
        if (acquire_semaphores.empty()) {
            const VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, nullptr,
                                       VK_FENCE_CREATE_SIGNALED_BIT};
            for (uint32_t i = 0; i < slots; ++i) {
                VkSemaphore s;
                vk_check(vkCreateSemaphore(device, &si, nullptr, &s), "vkCreateSemaphore");
                acquire_semaphores.push_back(s);
                VkFence f;
                vk_check(vkCreateFence(device, &fi, nullptr, &f), "vkCreateFence");
                slot_fences.push_back(f);
            }
        }
    }

    void destroy_swapchain_objects() {
        for (VkImageView v : swap_views) vkDestroyImageView(device, v, nullptr);
        for (VkSemaphore s : present_semaphores) vkDestroySemaphore(device, s, nullptr);
        swap_views.clear();
        present_semaphores.clear();
        swap_images.clear();
    }

    ~Impl() {
        if (device) {
            vkDeviceWaitIdle(device);
            destroy_swapchain_objects();
            for (VkSemaphore s : acquire_semaphores) vkDestroySemaphore(device, s, nullptr);
            for (VkFence f : slot_fences) vkDestroyFence(device, f, nullptr);
            if (swapchain) vkDestroySwapchainKHR(device, swapchain, nullptr);
            vkDestroyDevice(device, nullptr);
        }
        if (surface) vkDestroySurfaceKHR(instance, surface, nullptr);
        if (messenger) {
            auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
            if (destroy) destroy(instance, messenger, nullptr);
        }
        if (instance) vkDestroyInstance(instance, nullptr);
        if (window) glfwDestroyWindow(window);
        if (glfw) glfwTerminate();
    }
};

App::App(const AppDesc& desc, const CommonOptions& options)
    : desc_(desc), options_(options), async_compute_(options.async_compute), impl_(std::make_unique<Impl>()) {
    impl_->app = this;
    const bool window = !options.headless;
    if (window) impl_->open_window(); // before the instance: GLFW names the surface extensions
    impl_->create_instance(window, options.validation);
    if (window) impl_->create_window_surface();
    impl_->pick_device(options.device);
    impl_->create_device();
    device_ = impl_->wrap();
    executor_ =
        std::make_unique<fg::Executor>(*device_, fg::ExecutorDesc{.frames_in_flight = 2, .name = desc.name});
    if (window) impl_->create_swapchain(executor_->frames_in_flight());
    std::printf("%s: %s, %ux%u, %s, async compute queue: %s\n", desc.name.c_str(), impl_->device_name.c_str(),
                options.width, options.height, options.headless ? "headless" : "window",
                has_async_compute() ? "yes" : "no (ML passes share the graphics queue)");
}

App::~App() {
    if (executor_) executor_->wait_idle();
    executor_.reset();
    impl_->readbacks.clear(); // vkml buffers: before the vkml device
    device_.reset();
    impl_.reset();
}

bool App::has_async_compute() const {
    return impl_->compute != VK_NULL_HANDLE;
}

void App::set_async_compute(bool on) {
    if (on != async_compute_) rebuild_ = true;
    async_compute_ = on;
}

void App::status(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    if (impl_->window) glfwSetWindowTitle(impl_->window, (desc_.name + " - " + line).c_str());
}

std::vector<std::string> App::take_messages() {
    std::lock_guard lock(impl_->messages_mutex);
    return std::exchange(impl_->messages, {});
}

// One App::run: the frame loop as its steps (window events, declaring the graph, presenting or
// reading back a frame, timings) and the report at the end.
struct App::FrameLoop {
    App& app;
    Impl& w;
    Sample& sample;
    const bool window;
    const uint32_t slots;
    const VkExtent2D extent;
    const uint64_t frame_bytes;
    const int64_t total;  // frames to run; -1: until the window closes
    const int64_t warmup; // frames left out of the timings
    fg::FrameGraph graph;
    fg::ImageHandle target;    // the swapchain image (window)
    fg::BufferHandle readback; // the readback buffer (headless)
    std::map<std::string, std::vector<double>> pass_ms;
    std::map<std::string, std::string> pass_queue;
    std::vector<double> gpu_frame_ms;
    FrameTimes times;
    int written = 0;
    std::chrono::steady_clock::time_point start, steady_start;
    int64_t frame = 0;
    uint32_t image_index = 0;

    FrameLoop(App& a, Sample& s)
        : app(a), w(*a.impl_), sample(s), window(!a.options_.headless), slots(a.executor_->frames_in_flight()),
          extent(a.extent()), frame_bytes(uint64_t(extent.width) * extent.height * 4),
          total(a.options_.frames > 0 ? a.options_.frames : -1),
          warmup(total > 8 ? std::min<int64_t>(total / 4, 20) : 0) {
        if (!window) create_readbacks();
        start = steady_start = std::chrono::steady_clock::now();
    }

    int run() {
        for (; total < 0 || frame < total; ++frame) {
            if (window) handle_window_events();
            if (app.quit_) break;
            if (frame == warmup) steady_start = std::chrono::steady_clock::now();
            FrameState state;
            state.index = uint64_t(frame);
            state.extent = extent;
            state.time = window ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                                : double(frame) / app.options_.fps;
            if (app.rebuild_) declare_graph(state);
            sample.update(state, times);
            const uint32_t slot = uint32_t(frame % slots);
            if (window) {
                if (!present(slot)) continue; // the swapchain is out of date: recreated next frame
            } else {
                read_back(slot);
            }
            collect_times(frame);
        }
        app.executor_->wait_idle();
        const auto end = std::chrono::steady_clock::now();
        if (!window)
            for (uint32_t s = 0; s < slots; ++s)
                if (w.readback_frame[s] >= 0) write_frame(s); // in frame order: ring slots are frame % slots
        collect_times(frame);                                 // the last frame's timings, now complete
        const int64_t steady_frames = frame - warmup;
        const double wall_ms =
            steady_frames > 0
                ? std::chrono::duration<double, std::milli>(end - steady_start).count() / double(steady_frames)
                : 0;
        if (!window) report(wall_ms);
        return finish();
    }

    // Headless: one host-visible buffer per frame slot that the frame's image is copied into.
    void create_readbacks() {
        std::filesystem::create_directories(app.options_.out_dir);
        for (uint32_t i = 0; i < slots; ++i)
            w.readbacks.push_back(std::make_shared<gpu::Buffer>(
                *app.device_, gpu::BufferDesc{.size = frame_bytes,
                                              .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                              .memory = gpu::MemoryUsage::Readback,
                                              .name = "frame readback " + std::to_string(i)}));
        w.readback_frame.assign(slots, -1);
        w.readback_submission.assign(slots, {});
    }

    // Keys to the sample (Escape and Q quit), the window closing, a resize (the swapchain
    // recreated and the graph declared again; a minimized window waits).
    void handle_window_events() {
        glfwPollEvents();
        while (!w.keys.empty()) {
            const int key = w.keys.front();
            w.keys.pop_front();
            if (key == GLFW_KEY_ESCAPE || key == GLFW_KEY_Q)
                app.quit_ = true;
            else
                sample.on_key(key);
        }
        if (glfwWindowShouldClose(w.window)) app.quit_ = true;
        if (!w.resized) return;
        int fw = 0, fh = 0;
        glfwGetFramebufferSize(w.window, &fw, &fh);
        while ((fw == 0 || fh == 0) && !glfwWindowShouldClose(w.window)) { // minimized
            glfwWaitEvents();
            glfwGetFramebufferSize(w.window, &fw, &fh);
        }
        app.executor_->wait_idle();
        vkDeviceWaitIdle(w.device);
        w.create_swapchain(slots);
        w.resized = false;
        app.rebuild_ = true;
    }

    // The sample declares its graph; the App adds the pass that takes its output away (the blit to
    // the swapchain, or the copy into the readback buffer).
    void declare_graph(const FrameState& state) {
        // Old passes may still be in flight with the sample's objects: let them finish first, so
        // build() may replace what the previous graph's callbacks used.
        app.executor_->wait_idle();
        app.rebuild_ = false;
        graph = fg::FrameGraph({.name = app.desc_.name, .output_width = extent.width, .output_height = extent.height});
        const fg::ImageHandle out = sample.build(graph, state);
        if (window)
            add_present_blit(out);
        else
            add_readback_copy(out);
    }

    void add_present_blit(fg::ImageHandle out) {
        target = graph.import_image("swapchain",
                                    {.image = w.swap_images[0],
                                     .view = w.swap_views[0],
                                     .format = w.swap_format,
                                     .width = w.swap_extent.width,
                                     .height = w.swap_extent.height,
                                     .exclusive = true,
                                     .incoming = {.stages = VK_PIPELINE_STAGE_2_TRANSFER_BIT},
                                     .outgoing = fg::ResourceState{.layout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR}});
        fg::PassBuilder blit = graph.add_transfer_pass("present blit");
        blit.side_effect();
        blit.read(out, fg::ImageRead::TransferSrc);
        target = blit.write(target, fg::ImageWrite::TransferDst);
        blit.record([out, t = target, src = extent](fg::PassContext& ctx) {
            const VkExtent2D dst = ctx.extent(t);
            VkImageBlit region{};
            region.srcSubresource = region.dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
            region.srcOffsets[1] = {int32_t(src.width), int32_t(src.height), 1};
            region.dstOffsets[1] = {int32_t(dst.width), int32_t(dst.height), 1};
            vkCmdBlitImage(ctx.vk(), ctx.image(out), ctx.layout(out), ctx.image(t), ctx.layout(t), 1, &region,
                           VK_FILTER_LINEAR);
        });
    }

    void add_readback_copy(fg::ImageHandle out) {
        readback = graph.import_buffer(
            "frame readback", {.vkml_buffer = w.readbacks[0],
                               .incoming = {.stages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
                                            .access = VK_ACCESS_2_TRANSFER_WRITE_BIT},
                               .outgoing = fg::ResourceState{.stages = VK_PIPELINE_STAGE_2_HOST_BIT,
                                                             .access = VK_ACCESS_2_HOST_READ_BIT}});
        fg::PassBuilder copy = graph.add_transfer_pass("readback");
        copy.side_effect();
        copy.read(out, fg::ImageRead::TransferSrc);
        readback = copy.write(readback, fg::BufferWrite::TransferDst);
        copy.record([out, rb = readback](fg::PassContext& ctx) {
            VkBufferImageCopy region{};
            region.bufferOffset = ctx.buffer(rb).offset;
            region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
            region.imageExtent = {ctx.extent(out).width, ctx.extent(out).height, 1};
            vkCmdCopyImageToBuffer(ctx.vk(), ctx.image(out), ctx.layout(out), ctx.buffer(rb).buffer, 1, &region);
        });
    }

    // Window: acquires a swapchain image, runs the graph into it and presents it. False when the
    // swapchain is out of date before anything ran.
    bool present(uint32_t slot) {
        vk_check(vkWaitForFences(w.device, 1, &w.slot_fences[slot], VK_TRUE, UINT64_MAX), "vkWaitForFences");
        const VkResult acquired = vkAcquireNextImageKHR(w.device, w.swapchain, UINT64_MAX,
                                                        w.acquire_semaphores[slot], VK_NULL_HANDLE, &image_index);
        if (acquired == VK_ERROR_OUT_OF_DATE_KHR) {
            w.resized = true;
            return false;
        }
        vk_check(acquired, "vkAcquireNextImageKHR");
        vk_check(vkResetFences(w.device, 1, &w.slot_fences[slot]), "vkResetFences");
        graph.rebind(target, w.swap_images[image_index], w.swap_views[image_index]);
        // The acquire semaphore's wait covers every later submission on this queue, so the graph's
        // first use of the swapchain image (the blit) waits for the presentation engine.
        VkSemaphoreSubmitInfo wait_acquire{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
        wait_acquire.semaphore = w.acquire_semaphores[slot];
        wait_acquire.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
        VkSubmitInfo2 si{VK_STRUCTURE_TYPE_SUBMIT_INFO_2};
        si.waitSemaphoreInfoCount = 1;
        si.pWaitSemaphoreInfos = &wait_acquire;
        vk_check(vkQueueSubmit2(w.graphics, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit2 (acquire wait)");
        const fg::FrameSubmission sub = app.executor_->run(graph);
        VkSemaphoreSubmitInfo wait_frame{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
        wait_frame.semaphore = app.device_->timeline(gpu::QueueRole::Graphics);
        wait_frame.value = sub.values[0];
        wait_frame.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
        VkSemaphoreSubmitInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
        signal.semaphore = w.present_semaphores[image_index];
        signal.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
        VkSubmitInfo2 ps{VK_STRUCTURE_TYPE_SUBMIT_INFO_2};
        ps.waitSemaphoreInfoCount = sub.values[0] ? 1 : 0;
        ps.pWaitSemaphoreInfos = &wait_frame;
        ps.signalSemaphoreInfoCount = 1;
        ps.pSignalSemaphoreInfos = &signal;
        vk_check(vkQueueSubmit2(w.graphics, 1, &ps, w.slot_fences[slot]), "vkQueueSubmit2 (present signal)");
        VkPresentInfoKHR pi{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
        pi.waitSemaphoreCount = 1;
        pi.pWaitSemaphores = &w.present_semaphores[image_index];
        pi.swapchainCount = 1;
        pi.pSwapchains = &w.swapchain;
        pi.pImageIndices = &image_index;
        const VkResult presented = vkQueuePresentKHR(w.graphics, &pi);
        if (presented == VK_ERROR_OUT_OF_DATE_KHR || presented == VK_SUBOPTIMAL_KHR)
            w.resized = true;
        else
            vk_check(presented, "vkQueuePresentKHR");
        return true;
    }

    // Headless: writes the frame that last used this slot's buffer, then runs the graph into it.
    void read_back(uint32_t slot) {
        write_frame(slot);
        graph.rebind(readback, w.readbacks[slot]);
        w.readback_submission[slot] = app.executor_->run(graph);
        w.readback_frame[slot] = frame;
    }

    // The frame read back into the slot's buffer as a PNG (as --write asks), once it is complete.
    void write_frame(uint32_t slot) {
        const int64_t f = w.readback_frame[slot];
        if (f < 0) return;
        const auto& sub = w.readback_submission[slot];
        for (size_t q = 0; q < fg::queue_count; ++q)
            if (sub.values[q])
                app.device_->wait(q == 0 ? gpu::QueueRole::Graphics : gpu::QueueRole::Compute, sub.values[q]);
        w.readback_frame[slot] = -1;
        const bool last = f == total - 1;
        if (app.options_.write == WriteFrames::None || (app.options_.write == WriteFrames::Last && !last)) return;
        Image8 img(int(extent.width), int(extent.height), 4);
        std::memcpy(img.pixels.data(), w.readbacks[slot]->mapped(), frame_bytes);
        char name[64];
        std::snprintf(name, sizeof name, "frame_%04lld.png", static_cast<long long>(f));
        write_image((std::filesystem::path(app.options_.out_dir) / name).string(), img);
        ++written;
    }

    // The executor's pass timings of the frame, for the sample (FrameTimes) and, after the warm-up,
    // for the report.
    void collect_times(int64_t f) {
        times.passes = app.executor_->timings();
        double lo = 1e300, hi = 0;
        for (const auto& r : times.passes) {
            lo = std::min(lo, r.start_us);
            hi = std::max(hi, r.start_us + r.duration_us);
        }
        times.gpu_frame_ms = times.passes.empty() ? 0 : (hi - lo) / 1000.0;
        if (f < warmup || times.passes.empty()) return;
        std::map<std::string, double> sums;
        for (const auto& r : times.passes) {
            sums[r.name] += r.duration_us / 1000.0;
            pass_queue[r.name] = r.queue == gpu::QueueRole::Graphics ? "graphics" : "compute";
        }
        for (const auto& [name, ms] : sums) pass_ms[name].push_back(ms);
        gpu_frame_ms.push_back(times.gpu_frame_ms);
    }

    // Headless: timing.json in the output folder and one line on stdout.
    void report(double wall_ms) {
        std::ostringstream j;
        j.setf(std::ios::fixed);
        j.precision(4);
        j << "{\n  \"sample\": \"" << json_escape(app.desc_.name) << "\",\n  \"device\": \""
          << json_escape(w.device_name) << "\",\n  \"width\": " << extent.width << ",\n  \"height\": " << extent.height
          << ",\n  \"frames\": " << frame << ",\n  \"warmup_frames\": " << warmup
          << ",\n  \"async_compute_requested\": " << (app.async_compute_ ? "true" : "false")
          << ",\n  \"async_compute_used\": "
          << (graph.uses_async_compute() ? "true" : "false")
          << ",\n  \"wall_ms_per_frame\": " << wall_ms << ",\n  \"gpu_frame_ms_median\": " << median(gpu_frame_ms)
          << ",\n  \"info\": {";
        bool first = true;
        for (const auto& [k, v] : sample.info()) {
            j << (first ? "" : ",") << "\n    \"" << json_escape(k) << "\": \"" << json_escape(v) << "\"";
            first = false;
        }
        j << "\n  },\n  \"passes\": {";
        first = true;
        for (const auto& [name, v] : pass_ms) {
            double mean = 0;
            for (double x : v) mean += x;
            mean /= double(v.size());
            j << (first ? "" : ",") << "\n    \"" << json_escape(name) << "\": {\"median_ms\": " << median(v)
              << ", \"mean_ms\": " << mean << ", \"queue\": \"" << pass_queue[name] << "\"}";
            first = false;
        }
        j << "\n  }\n}\n";
        const std::string path = (std::filesystem::path(app.options_.out_dir) / "timing.json").string();
        std::ofstream(path) << j.str();
        std::printf("%s: %lld frames, %.3f ms per frame (wall, steady state), GPU frame %.3f ms (median); "
                    "wrote %d PNG "
                    "frames and %s\n",
                    app.desc_.name.c_str(), static_cast<long long>(frame), wall_ms, median(gpu_frame_ms), written,
                    path.c_str());
    }

    // The sample's finish(), and the exit code (3 when validation complained).
    int finish() {
        int rc = sample.finish();
        app.executor_->wait_idle();
        if (w.message_count) {
            std::fprintf(stderr, "%s: error: %zu validation messages (see above)\n", app.desc_.name.c_str(),
                         w.message_count);
            if (rc == 0) rc = 3;
        }
        return rc;
    }
};

int App::run(Sample& sample) {
    return FrameLoop(*this, sample).run();
}

int run_sample(int argc, char** argv, AppDesc desc,
               const std::function<std::unique_ptr<Sample>(App&)>& make_sample) {
    CommonOptions options;
    try {
        options = parse_options(argc, argv, desc);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s: %s (see %s --help)\n", desc.name.c_str(), e.what(), desc.name.c_str());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", desc.name.c_str(), e.what());
        return 1;
    }
    if (options.help) {
        std::fputs(usage(desc).c_str(), stdout);
        return 0;
    }
    try {
        App app(desc, options);
        std::unique_ptr<Sample> sample = make_sample(app);
        const int rc = app.run(*sample);
        app.executor().wait_idle();
        sample.reset();
        return rc;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s: %s (see %s --help)\n", desc.name.c_str(), e.what(), desc.name.c_str());
        return 2;
    } catch (const std::exception& e) {
        std::string msg = e.what();
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        std::fprintf(stderr, "%s: error: %s\n", desc.name.c_str(), msg.c_str());
        return 1;
    }
}

// --- Readback ------------------------------------------------------------------------------------

Readback::Readback(gpu::Device& device, uint32_t width, uint32_t height)
    : buffer_(std::make_shared<gpu::Buffer>(device, gpu::BufferDesc{.size = uint64_t(width) * height * 4,
                                                                    .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                                                    .memory = gpu::MemoryUsage::Readback,
                                                                    .name = "sample readback"})),
      width_(width), height_(height) {}

Readback::~Readback() = default;

void Readback::add_pass(fg::FrameGraph& graph, fg::ImageHandle image, std::string name) {
    fg::BufferHandle rb = graph.import_buffer(
        name + " buffer", {.vkml_buffer = buffer_,
                           .incoming = {.stages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
                                        .access = VK_ACCESS_2_TRANSFER_WRITE_BIT},
                           .outgoing = fg::ResourceState{.stages = VK_PIPELINE_STAGE_2_HOST_BIT,
                                                         .access = VK_ACCESS_2_HOST_READ_BIT}});
    fg::PassBuilder copy = graph.add_transfer_pass(std::move(name));
    copy.read(image, fg::ImageRead::TransferSrc);
    rb = copy.write(rb, fg::BufferWrite::TransferDst);
    copy.side_effect();
    const uint32_t w = width_, h = height_;
    copy.record([image, rb, w, h](fg::PassContext& ctx) {
        const VkExtent2D e = ctx.extent(image);
        if (e.width != w || e.height != h)
            throw Error(ErrorCode::InvalidArgument, "Readback: image is " + std::to_string(e.width) + "x" +
                                                        std::to_string(e.height) + ", expected " +
                                                        std::to_string(w) + "x" + std::to_string(h));
        VkBufferImageCopy region{};
        region.bufferOffset = ctx.buffer(rb).offset;
        region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        region.imageExtent = {e.width, e.height, 1};
        vkCmdCopyImageToBuffer(ctx.vk(), ctx.image(image), ctx.layout(image), ctx.buffer(rb).buffer, 1,
                               &region);
    });
}

std::vector<uint8_t> Readback::rgba() const {
    const auto* p = reinterpret_cast<const uint8_t*>(buffer_->mapped());
    return {p, p + buffer_->size()};
}

} // namespace vkml::samples
