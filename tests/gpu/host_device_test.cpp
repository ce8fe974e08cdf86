// A renderer hands vkml its own instance, device and queue: vkml must work on them and destroy
// none of them. The "host" here is written with raw Vulkan calls, as an engine's would be.
#include <cstring>
#include <string>

#include "gpu_test.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::test {
namespace {

struct RawHost {
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice phys = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = 0;
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};

    explicit RawHost(bool with_sync2) {
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.apiVersion = VK_API_VERSION_1_3;
        VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        ici.pApplicationInfo = &app;
        if (vkCreateInstance(&ici, nullptr, &instance) != VK_SUCCESS)
            throw std::runtime_error("host: no instance");
        uint32_t n = 1;
        VkPhysicalDevice devs[1];
        vkEnumeratePhysicalDevices(instance, &n, devs);
        phys = devs[0];
        uint32_t nf = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, nullptr);
        std::vector<VkQueueFamilyProperties> fams(nf);
        vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, fams.data());
        for (uint32_t i = 0; i < nf; ++i)
            if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                family = i;
                break;
            }
        float prio = 1.f;
        VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, family, 1, &prio};
        f13.synchronization2 = with_sync2;
        f12.pNext = &f13;
        f12.timelineSemaphore = VK_TRUE;
        f11.pNext = &f12;
        f2.pNext = &f11;
        VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f2};
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &q;
        if (vkCreateDevice(phys, &dci, nullptr, &device) != VK_SUCCESS)
            throw std::runtime_error("host: no device");
        vkGetDeviceQueue(device, family, 0, &queue);
    }
    ~RawHost() {
        vkDestroyDevice(device, nullptr);
        vkDestroyInstance(instance, nullptr);
    }
    gpu::HostHandles handles() const {
        gpu::HostHandles h;
        h.instance = instance;
        h.physical_device = phys;
        h.device = device;
        h.graphics = {queue, family};
        h.enabled_features = &f2;
        return h;
    }
};

TEST_F(GpuTest, RunsOnTheHostsDeviceAndOwnsNothing) {
    RawHost host(true);
    int locks = 0;
    {
        gpu::HostHandles h = host.handles();
        h.queue_lock = [&](bool lock) { locks += lock ? 1 : 0; };
        auto device = gpu::Device::from_host(h, device_desc());
        EXPECT_FALSE(device->owns_device());
        EXPECT_EQ(device->vk(), host.device);
        EXPECT_EQ(device->queue(gpu::QueueRole::Compute), host.queue);
        EXPECT_FALSE(device->caps().storage16) << "the host did not enable 16-bit storage";

        const uint32_t n = 1001;
        const auto x = random_floats(n, 1), y = random_floats(n, 2);
        gpu::Tensor tx(*device, {n}, gpu::DType::f32), ty(*device, {n}, gpu::DType::f32);
        gpu::upload(*device, tx, x);
        gpu::upload(*device, ty, y);
        const gpu::Pipeline& p =
            device->pipeline({.shader = gpu::ShaderId::axpy_f32, .bindings = 2, .push_constant_bytes = 8});
        struct {
            uint32_t n;
            float a;
        } push{n, -1.5f};
        // Record into a command buffer the host allocated, as a renderer would.
        VkCommandPool pool;
        VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr, 0, host.family};
        ASSERT_EQ(vkCreateCommandPool(host.device, &pci, nullptr, &pool), VK_SUCCESS);
        VkCommandBuffer raw;
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool,
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        ASSERT_EQ(vkAllocateCommandBuffers(host.device, &ai, &raw), VK_SUCCESS);
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vkBeginCommandBuffer(raw, &bi);
        auto cmd = gpu::CommandBuffer::wrap(*device, raw, gpu::QueueRole::Compute);
        const gpu::BufferRange bufs[] = {tx.range(), ty.range()};
        cmd.dispatch(p, bufs, push, cmd.groups_for(p, n));
        vkEndCommandBuffer(raw);
        device->wait(gpu::QueueRole::Compute, device->submit(gpu::QueueRole::Compute, cmd));
        const auto out = gpu::download_floats(*device, ty);
        for (uint32_t i = 0; i < n; ++i) ASSERT_NEAR(out[i], -1.5 * double(x[i]) + y[i], 1e-5) << i;
        vkDestroyCommandPool(host.device, pool, nullptr);
    }
    EXPECT_GT(locks, 0) << "vkml took the host's queue lock around its submissions";
    // vkml is gone; the host's device must still be alive and usable.
    VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    ci.size = 64;
    ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer b;
    EXPECT_EQ(vkCreateBuffer(host.device, &ci, nullptr, &b), VK_SUCCESS);
    vkDestroyBuffer(host.device, b, nullptr);
    EXPECT_EQ(vkDeviceWaitIdle(host.device), VK_SUCCESS);
}

TEST_F(GpuTest, HostDeviceWithoutRequiredFeaturesIsRefused) {
    RawHost host(false);
    try {
        gpu::Device::from_host(host.handles(), device_desc());
        ADD_FAILURE() << "a device without synchronization2 was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_NE(std::string(e.what()).find("synchronization2"), std::string::npos) << e.what();
    }
    gpu::HostHandles empty;
    EXPECT_THROW(gpu::Device::from_host(empty, device_desc()), Error);
}

} // namespace
} // namespace vkml::test
