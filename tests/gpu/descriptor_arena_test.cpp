// DescriptorArena (issue 15): descriptor sets for recordings without push descriptors live until
// the arena is told their work is done (a vkml timeline value, a host timeline semaphore, or a
// ticket the host releases), then their pools are reused; a wrapped host command buffer that
// nobody closes keeps its sets until the Device goes instead of freeing them under the host.
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::test {
namespace {

using gpu::QueueRole;

std::unique_ptr<gpu::Device> pooled_device(std::vector<std::string>* messages = nullptr) {
    gpu::DeviceDesc desc = device_desc(messages);
    desc.use_push_descriptors = false;
    auto device = gpu::Device::create(desc);
    EXPECT_FALSE(device->caps().push_descriptors);
    return device;
}

const gpu::Pipeline& axpy(gpu::Device& device) {
    return device.pipeline({.shader = gpu::ShaderId::axpy_f32, .bindings = 2, .push_constant_bytes = 8});
}

void fill(gpu::DescriptorArena& arena, VkDescriptorSetLayout layout, uint32_t sets) {
    for (uint32_t i = 0; i < sets; ++i) ASSERT_NE(arena.allocate(layout), VkDescriptorSet(VK_NULL_HANDLE));
}

TEST_F(GpuTest, DescriptorArenaReusesPoolsOnlyOnceTheirRecordingIsDone) {
    auto device = pooled_device();
    const VkDescriptorSetLayout layout = axpy(*device).set_layout();
    gpu::DescriptorArena arena(*device, "test arena");
    const uint32_t per_pool = gpu::DescriptorArena::sets_per_pool;

    // A ticket the host releases.
    fill(arena, layout, per_pool + 1); // spills into a second pool
    EXPECT_EQ(arena.pools(), 2u);
    const uint64_t ticket = arena.close();
    EXPECT_NE(ticket, 0u);
    EXPECT_EQ(arena.close(), 0u) << "nothing open: no ticket";
    fill(arena, layout, 1);
    EXPECT_EQ(arena.pools(), 3u) << "the closed pools are still in use";
    const uint64_t second = arena.close();
    arena.finished(ticket);
    fill(arena, layout, 2 * per_pool);
    EXPECT_EQ(arena.pools(), 3u) << "the released pools are reused";
    arena.finished(second);
    const uint64_t third = arena.close();

    // A host timeline semaphore.
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr,
                                   VK_SEMAPHORE_TYPE_TIMELINE, 0};
    VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type, 0};
    VkSemaphore semaphore;
    ASSERT_EQ(vkCreateSemaphore(device->vk(), &sci, nullptr, &semaphore), VK_SUCCESS);
    arena.finished(third);
    fill(arena, layout, 1);
    arena.close(semaphore, 5);
    const size_t before = arena.pools();
    fill(arena, layout, 2 * per_pool);
    arena.close(semaphore, 6);
    EXPECT_EQ(arena.pools(), before) << "two released pools, one taken by the semaphore's batch";
    fill(arena, layout, 1);
    EXPECT_EQ(arena.pools(), before + 1) << "the semaphore has not reached 5";
    VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, nullptr, semaphore, 6};
    ASSERT_EQ(vkSignalSemaphore(device->vk(), &signal), VK_SUCCESS);
    fill(arena, layout, 3 * per_pool);
    EXPECT_EQ(arena.pools(), before + 1) << "every pool of the finished batches reused";
    arena.discard_open();

    // A vkml submission: the sets of a recording live until its timeline value is reached.
    {
        gpu::Tensor x(*device, {64}, gpu::DType::f32), y(*device, {64}, gpu::DType::f32);
        gpu::CommandBuffer cmd(*device, QueueRole::Compute);
        cmd.begin();
        const gpu::BufferRange bufs[] = {x.range(), y.range()};
        struct {
            uint32_t n;
            float a;
        } push{64, 1.f};
        for (int i = 0; i < 3; ++i) cmd.dispatch(axpy(*device), bufs, push, {1, 1, 1});
        cmd.end();
        const uint64_t value = device->submit(QueueRole::Compute, cmd);
        fill(arena, layout, 1);
        arena.close(QueueRole::Compute, value);
        device->wait(QueueRole::Compute, value);
        const size_t pools = arena.pools();
        fill(arena, layout, 2 * per_pool);
        EXPECT_EQ(arena.pools(), pools);
    }
    vkDestroySemaphore(device->vk(), semaphore, nullptr);
}

TEST_F(GpuTest, WrappedHostBufferWithoutAnArenaKeepsItsSetsUntilTheDeviceGoes) {
    std::vector<std::string> messages;
    auto device = pooled_device(&messages);
    const uint32_t n = 257;
    const auto x = random_floats(n, 3), y = random_floats(n, 4);
    gpu::Tensor tx(*device, {n}, gpu::DType::f32), ty(*device, {n}, gpu::DType::f32);
    gpu::upload(*device, tx, x);
    gpu::upload(*device, ty, y);

    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr, 0,
                                device->queue_family(QueueRole::Compute)};
    VkCommandPool pool;
    ASSERT_EQ(vkCreateCommandPool(device->vk(), &pci, nullptr, &pool), VK_SUCCESS);
    VkCommandBuffer raw;
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool,
                                   VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    ASSERT_EQ(vkAllocateCommandBuffers(device->vk(), &ai, &raw), VK_SUCCESS);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    ASSERT_EQ(vkBeginCommandBuffer(raw, &bi), VK_SUCCESS);
    {
        auto cmd = gpu::CommandBuffer::wrap(*device, raw, QueueRole::Compute);
        const gpu::BufferRange bufs[] = {tx.range(), ty.range()};
        struct {
            uint32_t n;
            float a;
        } push{n, 2.f};
        cmd.dispatch(axpy(*device), bufs, push, cmd.groups_for(axpy(*device), n));
        gpu::barrier::compute_to_transfer(cmd); // the download copies it
    } // the wrapper goes before the host submits
    ASSERT_EQ(vkEndCommandBuffer(raw), VK_SUCCESS);
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_NE(messages[0].find("DescriptorArena"), std::string::npos) << messages[0];
    device->collect(true);
    EXPECT_GE(device->retired_pending(), 1u) << "the sets wait for the Device's end";

    // The host submits it itself, later: the validation layer sees valid descriptor sets.
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &raw;
    ASSERT_EQ(vkQueueSubmit(device->queue(QueueRole::Compute), 1, &si, VK_NULL_HANDLE), VK_SUCCESS);
    ASSERT_EQ(vkQueueWaitIdle(device->queue(QueueRole::Compute)), VK_SUCCESS);
    const auto out = gpu::download_floats(*device, ty);
    for (uint32_t i = 0; i < n; ++i) ASSERT_NEAR(out[i], 2.0 * double(x[i]) + y[i], 1e-5) << i;
    vkDestroyCommandPool(device->vk(), pool, nullptr);
}

} // namespace
} // namespace vkml::test
