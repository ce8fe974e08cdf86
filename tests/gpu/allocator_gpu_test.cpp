#include <cstring>
#include <random>

#include "gpu_test.hpp"

namespace vkml::test {
namespace {

TEST_F(GpuTest, AllocatorPacksBuffersIntoBlocksAndGivesEverythingBack) {
    gpu::MemoryAllocator& a = dev().allocator();
    const gpu::MemoryStats before = a.stats();
    std::mt19937 rng(7);
    std::vector<gpu::Buffer> buffers;
    uint64_t requested = 0;
    for (int i = 0; i < 200; ++i) {
        const uint64_t size = 16 + rng() % 65536;
        buffers.emplace_back(dev(), gpu::BufferDesc{.size = size, .name = "alloc test"});
        requested += size;
    }
    const gpu::MemoryStats during = a.stats();
    EXPECT_GE(during.in_use - before.in_use, requested);
    EXPECT_EQ(during.allocations - before.allocations, 200u);
    EXPECT_LE(during.blocks - before.blocks, 2u) << "200 small buffers fit in one or two blocks";
    EXPECT_GE(during.peak_in_use, during.in_use);
    // Sub-allocations never overlap within a block.
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& b : buffers)
        if (b.allocation()->memory() == buffers[0].allocation()->memory())
            ranges.emplace_back(b.allocation()->offset(), b.allocation()->offset() + b.allocation()->size());
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) EXPECT_LE(ranges[i - 1].second, ranges[i].first);
    // Free in random order.
    std::shuffle(buffers.begin(), buffers.end(), rng);
    buffers.clear();
    const gpu::MemoryStats after = a.stats();
    EXPECT_EQ(after.in_use, before.in_use);
    EXPECT_EQ(after.allocations, before.allocations);
    EXPECT_GE(after.peak_in_use, during.in_use);
}

TEST_F(GpuTest, LargeBuffersGetDedicatedMemory) {
    const gpu::MemoryStats before = dev().allocator().stats();
    {
        gpu::Buffer big(dev(), {.size = 48ull << 20, .name = "big"});
        EXPECT_EQ(big.allocation()->offset(), 0u);
        EXPECT_EQ(dev().allocator().stats().reserved - before.reserved, big.allocation()->size());
    }
    EXPECT_EQ(dev().allocator().stats().reserved, before.reserved);
}

TEST_F(GpuTest, HostVisibleBuffersAreMapped) {
    gpu::Buffer up(
        dev(), {.size = 1000, .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT, .memory = gpu::MemoryUsage::Upload});
    gpu::Buffer down(
        dev(),
        {.size = 1000, .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT, .memory = gpu::MemoryUsage::Readback});
    ASSERT_NE(up.mapped(), nullptr);
    ASSERT_NE(down.mapped(), nullptr);
    for (int i = 0; i < 1000; ++i) up.mapped()[i] = std::byte(i * 7);
    dev().run_now(gpu::QueueRole::Transfer, [&](gpu::CommandBuffer& cmd) {
        cmd.copy(up.range(), down.range(), 1000);
        gpu::barrier::to_host(cmd);
    });
    EXPECT_EQ(std::memcmp(up.mapped(), down.mapped(), 1000), 0);
}

TEST_F(GpuTest, OutOfMemoryIsAnErrorTheCallerCanHandle) {
    auto desc = device_desc();
    desc.memory_limit = 24ull << 20;
    auto device = gpu::Device::create(desc);
    gpu::Buffer a(*device, {.size = 8ull << 20, .name = "fits"});
    try {
        gpu::Buffer b(*device, {.size = 32ull << 20, .name = "too big"});
        ADD_FAILURE() << "a 32 MiB buffer under a 24 MiB limit was allocated";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::OutOfDeviceMemory);
        EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
    }
    // Recovers: smaller requests still succeed (the caller would retile), and the data is right.
    gpu::Buffer c(*device, {.size = 4ull << 20, .name = "retry"});
    std::vector<std::byte> in(4096, std::byte{0x5a}), out(4096);
    gpu::upload(*device, c.range(), in);
    gpu::download(*device, c.range(), out);
    EXPECT_EQ(in, out);
    // The limit covers device-local memory; host-visible staging on a discrete GPU is outside it.
    EXPECT_LE(device->allocator().stats().device_local_reserved, 24ull << 20);
    EXPECT_GE(device->allocator().stats().device_local_reserved, 12ull << 20);
}

TEST_F(GpuTest, AliasedBuffersShareMemory) {
    gpu::Buffer probe_a(dev(), {.size = 4096, .name = "probe a"});
    gpu::Buffer probe_b(dev(), {.size = 8192, .name = "probe b"});
    VkMemoryRequirements reqs[2];
    vkGetBufferMemoryRequirements(dev().vk(), probe_a.vk(), &reqs[0]);
    vkGetBufferMemoryRequirements(dev().vk(), probe_b.vk(), &reqs[1]);
    gpu::AllocationPtr shared = dev().allocator().allocate_aliased(reqs, gpu::MemoryUsage::DeviceLocal);
    EXPECT_GE(shared->size(), 8192u);
    const auto in_use = dev().allocator().stats().in_use;
    gpu::Buffer a(dev(), {.size = 4096, .name = "alias a", .alias = shared});
    gpu::Buffer b(dev(), {.size = 8192, .name = "alias b", .alias = shared});
    EXPECT_EQ(dev().allocator().stats().in_use, in_use) << "aliases allocate nothing";
    EXPECT_EQ(a.allocation()->memory(), b.allocation()->memory());
    EXPECT_EQ(a.allocation()->offset(), b.allocation()->offset());
    // Written through one, read through the other (lifetimes disjoint: one blocking step each).
    std::vector<std::byte> in(4096), out(4096);
    for (size_t i = 0; i < in.size(); ++i) in[i] = std::byte(i * 13 + 1);
    gpu::upload(dev(), a.range(), in);
    gpu::download(dev(), b.range(), out);
    EXPECT_EQ(in, out);
    // A resource larger than the shared allocation is refused.
    EXPECT_THROW(gpu::Buffer(dev(), {.size = 1 << 20, .name = "too big", .alias = shared}), Error);
}

} // namespace
} // namespace vkml::test
