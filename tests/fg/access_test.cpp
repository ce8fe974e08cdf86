#include "vkml/fg/access.hpp"

#include <gtest/gtest.h>

#include <optional>

using vkml::fg::Access;
using vkml::fg::Transition;
using vkml::fg::transition;
using vkml::fg::writes;

namespace {

constexpr VkPipelineStageFlags2 kCompute = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT;
constexpr VkPipelineStageFlags2 kFragment = VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT;
constexpr VkPipelineStageFlags2 kColorOut = VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT;
constexpr VkPipelineStageFlags2 kCopy = VK_PIPELINE_STAGE_2_COPY_BIT;

const Access kComputeRead{kCompute, VK_ACCESS_2_SHADER_STORAGE_READ_BIT, VK_IMAGE_LAYOUT_GENERAL};
const Access kComputeWrite{kCompute, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT, VK_IMAGE_LAYOUT_GENERAL};
const Access kSampled{kFragment, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT,
                      VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
const Access kColorWrite{kColorOut, VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT,
                         VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
const Access kCopySrc{kCopy, VK_ACCESS_2_TRANSFER_READ_BIT, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL};

} // namespace

TEST(FgAccess, WritesRecognisesWriteBits) {
    for (VkAccessFlags2 w :
         {VK_ACCESS_2_SHADER_WRITE_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
          VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT, VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
          VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_ACCESS_2_HOST_WRITE_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT}) {
        EXPECT_TRUE(writes(w)) << std::hex << w;
        EXPECT_TRUE(writes(w | VK_ACCESS_2_SHADER_READ_BIT)) << std::hex << w; // read-modify-write
    }
    for (VkAccessFlags2 r :
         {VK_ACCESS_2_NONE, VK_ACCESS_2_SHADER_READ_BIT, VK_ACCESS_2_SHADER_STORAGE_READ_BIT,
          VK_ACCESS_2_SHADER_SAMPLED_READ_BIT, VK_ACCESS_2_COLOR_ATTACHMENT_READ_BIT,
          VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_READ_BIT, VK_ACCESS_2_TRANSFER_READ_BIT,
          VK_ACCESS_2_HOST_READ_BIT, VK_ACCESS_2_MEMORY_READ_BIT, VK_ACCESS_2_UNIFORM_READ_BIT,
          VK_ACCESS_2_INDIRECT_COMMAND_READ_BIT, VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT,
          VK_ACCESS_2_INDEX_READ_BIT, VK_ACCESS_2_INPUT_ATTACHMENT_READ_BIT,
          VK_ACCESS_2_SHADER_READ_BIT | VK_ACCESS_2_TRANSFER_READ_BIT}) {
        EXPECT_FALSE(writes(r)) << std::hex << r;
    }
}

TEST(FgAccess, ReadAfterReadInSameLayoutNeedsNothing) {
    EXPECT_FALSE(transition(kComputeRead, kComputeRead).has_value());
    const Access fragment_read{kFragment, VK_ACCESS_2_SHADER_STORAGE_READ_BIT, VK_IMAGE_LAYOUT_GENERAL};
    EXPECT_FALSE(transition(kComputeRead, fragment_read).has_value());
    // Buffers (layout UNDEFINED on both sides) behave the same.
    const Access buf_read{kCompute, VK_ACCESS_2_UNIFORM_READ_BIT};
    const Access buf_copy{kCopy, VK_ACCESS_2_TRANSFER_READ_BIT};
    EXPECT_FALSE(transition(buf_read, buf_copy).has_value());
}

TEST(FgAccess, ReadAfterWrite) {
    const std::optional<Transition> t = transition(kComputeWrite, kComputeRead);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->src_stages, kCompute);
    EXPECT_EQ(t->src_access, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
    EXPECT_EQ(t->dst_stages, kCompute);
    EXPECT_EQ(t->dst_access, VK_ACCESS_2_SHADER_STORAGE_READ_BIT);
    EXPECT_EQ(t->old_layout, VK_IMAGE_LAYOUT_GENERAL);
    EXPECT_EQ(t->new_layout, VK_IMAGE_LAYOUT_GENERAL);

    // A buffer written by a copy and read by a compute shader.
    const Access copy_write{kCopy, VK_ACCESS_2_TRANSFER_WRITE_BIT};
    const Access shader_read{kCompute, VK_ACCESS_2_SHADER_READ_BIT};
    const auto b = transition(copy_write, shader_read);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->src_stages, kCopy);
    EXPECT_EQ(b->src_access, VK_ACCESS_2_TRANSFER_WRITE_BIT);
    EXPECT_EQ(b->dst_stages, kCompute);
    EXPECT_EQ(b->dst_access, VK_ACCESS_2_SHADER_READ_BIT);
    EXPECT_EQ(b->old_layout, VK_IMAGE_LAYOUT_UNDEFINED);
    EXPECT_EQ(b->new_layout, VK_IMAGE_LAYOUT_UNDEFINED);
}

TEST(FgAccess, WriteAfterReadIsExecutionOnly) {
    const auto t = transition(kComputeRead, kComputeWrite);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->src_stages, kCompute);
    EXPECT_EQ(t->dst_stages, kCompute);
    EXPECT_EQ(t->src_access, VK_ACCESS_2_NONE);
    EXPECT_EQ(t->dst_access, VK_ACCESS_2_NONE);
    EXPECT_EQ(t->old_layout, VK_IMAGE_LAYOUT_GENERAL);
    EXPECT_EQ(t->new_layout, VK_IMAGE_LAYOUT_GENERAL);

    const Access buf_read{kFragment, VK_ACCESS_2_UNIFORM_READ_BIT};
    const Access buf_write{kCopy, VK_ACCESS_2_TRANSFER_WRITE_BIT};
    const auto b = transition(buf_read, buf_write);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->src_stages, kFragment);
    EXPECT_EQ(b->dst_stages, kCopy);
    EXPECT_EQ(b->src_access, VK_ACCESS_2_NONE);
    EXPECT_EQ(b->dst_access, VK_ACCESS_2_NONE);
}

TEST(FgAccess, WriteAfterWrite) {
    const auto t = transition(kComputeWrite, kComputeWrite);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->src_stages, kCompute);
    EXPECT_EQ(t->src_access, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
    EXPECT_EQ(t->dst_stages, kCompute);
    EXPECT_EQ(t->dst_access, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);

    // Render target written by raster, then by a compute pass in GENERAL: layout changes too.
    const auto u = transition(kColorWrite, kComputeWrite);
    ASSERT_TRUE(u.has_value());
    EXPECT_EQ(u->src_stages, kColorOut);
    EXPECT_EQ(u->src_access, VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT);
    EXPECT_EQ(u->dst_stages, kCompute);
    EXPECT_EQ(u->dst_access, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
    EXPECT_EQ(u->old_layout, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
    EXPECT_EQ(u->new_layout, VK_IMAGE_LAYOUT_GENERAL);
}

TEST(FgAccess, LayoutChangeBetweenReads) {
    const auto t = transition(kSampled, kCopySrc);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->old_layout, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
    EXPECT_EQ(t->new_layout, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
    EXPECT_EQ(t->src_stages, kFragment);
    EXPECT_EQ(t->dst_stages, kCopy);
    // Nothing was written, so nothing to make available; the new layout must be visible to the
    // copy's reads.
    EXPECT_EQ(t->src_access, VK_ACCESS_2_NONE);
    EXPECT_EQ(t->dst_access, VK_ACCESS_2_TRANSFER_READ_BIT);

    // Same stage and access, different layout: still a barrier.
    const Access general_read{kFragment, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT, VK_IMAGE_LAYOUT_GENERAL};
    const auto g = transition(kSampled, general_read);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->old_layout, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
    EXPECT_EQ(g->new_layout, VK_IMAGE_LAYOUT_GENERAL);
    EXPECT_EQ(g->dst_access, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT);
}

TEST(FgAccess, WriteAfterReadWithLayoutChangeMakesNewLayoutVisible) {
    const auto t = transition(kSampled, kColorWrite);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->src_stages, kFragment);
    EXPECT_EQ(t->src_access, VK_ACCESS_2_NONE);
    EXPECT_EQ(t->dst_stages, kColorOut);
    EXPECT_EQ(t->dst_access, VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT);
    EXPECT_EQ(t->old_layout, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
    EXPECT_EQ(t->new_layout, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
}

TEST(FgAccess, FirstUseStartsAtTopOfPipe) {
    const Access first{}; // never used yet: no stages, no access, contents undefined
    const auto t = transition(first, kColorWrite);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->src_stages, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT);
    EXPECT_EQ(t->src_access, VK_ACCESS_2_NONE);
    EXPECT_EQ(t->dst_stages, kColorOut);
    EXPECT_EQ(t->dst_access, VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT);
    EXPECT_EQ(t->old_layout, VK_IMAGE_LAYOUT_UNDEFINED);
    EXPECT_EQ(t->new_layout, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);

    // An image's first read also needs its layout set, from TOP_OF_PIPE.
    const auto r = transition(first, kSampled);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->src_stages, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT);
    EXPECT_EQ(r->new_layout, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
    EXPECT_EQ(r->dst_access, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT);

    // A buffer's first write: execution dependency from TOP_OF_PIPE, nothing to make available.
    const auto b = transition(first, Access{kCopy, VK_ACCESS_2_TRANSFER_WRITE_BIT});
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->src_stages, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT);
    EXPECT_EQ(b->src_access, VK_ACCESS_2_NONE);
    EXPECT_EQ(b->dst_stages, kCopy);
}
