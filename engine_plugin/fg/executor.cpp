// Executing a plan: physical resources per frame slot, barriers, dynamic rendering around raster
// passes, timestamps, and queue submissions with timeline-semaphore waits.
#include "vkml/fg/executor.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "graph_impl.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/allocator.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/descriptors.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/image.hpp"

namespace vkml::fg {

namespace {

gpu::QueueRole role(Queue q) {
    return q == Queue::Graphics ? gpu::QueueRole::Graphics : gpu::QueueRole::Compute;
}

// Transients are shared by every queue family vkml uses (as gpu::Buffer and gpu::Image are), so
// they never need ownership transfers: the graph hands them between queues with semaphores alone.
VkImageCreateInfo image_info(const PlannedResource& r, std::span<const uint32_t> families) {
    VkImageCreateInfo ci{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ci.imageType = VK_IMAGE_TYPE_2D;
    ci.format = r.format;
    ci.extent = {r.extent.width, r.extent.height, 1};
    ci.mipLevels = 1;
    ci.arrayLayers = 1;
    ci.samples = VK_SAMPLE_COUNT_1_BIT;
    ci.tiling = VK_IMAGE_TILING_OPTIMAL;
    ci.usage = r.image_usage;
    ci.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    if (families.size() > 1) {
        ci.sharingMode = VK_SHARING_MODE_CONCURRENT;
        ci.queueFamilyIndexCount = uint32_t(families.size());
        ci.pQueueFamilyIndices = families.data();
    }
    return ci;
}

// Copies in and out are cheap to allow and handy for debugging and readbacks.
VkBufferUsageFlags buffer_usage(const PlannedResource& r) {
    return r.buffer_usage | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
}

std::string slot_suffix(uint32_t slot) {
    return " #" + std::to_string(slot);
}

} // namespace

// The physical objects behind a frame slot's resources, indexed like the graph's resources.
struct PassContext::Frame {
    struct Image {
        VkImage image = VK_NULL_HANDLE;
        VkImageView view = VK_NULL_HANDLE;
        VkFormat format = VK_FORMAT_UNDEFINED;
        VkExtent2D extent{};
    };
    struct Buffer {
        VkBuffer buffer = VK_NULL_HANDLE;
        uint64_t offset = 0, size = 0;
        std::shared_ptr<gpu::Buffer> vkml;
    };
    gpu::Device* device = nullptr;
    std::vector<Image> images;
    std::vector<Buffer> buffers;
};

struct Executor::Slot {
    // Transients, rebuilt when the plan's resources change shape.
    std::string signature;
    std::vector<gpu::AllocationPtr> heaps;
    std::vector<gpu::Image> images; // created as image_info() describes (compile()'s requirements)
    std::vector<std::shared_ptr<gpu::Buffer>> buffers;
    PassContext::Frame frame;
    // Command buffers, one per batch, reused frame after frame.
    std::vector<std::unique_ptr<gpu::CommandBuffer>> cmds;
    std::unique_ptr<gpu::Profiler> profiler; // per-pass timestamps (ExecutorDesc::timestamps)
    bool timed = false, host_recorded = false;
    // What the GPU must reach before this slot may be reused.
    std::array<uint64_t, queue_count> pending{};
    // Descriptor sets of frames recorded into the host's command buffers (devices without push
    // descriptors): they live until the host's work is done, not until record() returns.
    std::unique_ptr<gpu::DescriptorArena> host_sets;
    uint64_t host_frame = ~0ull; // the frame last recorded here for the host
    // The host's timeline semaphore and the value it reaches when that frame is done, if it said.
    VkSemaphore host_timeline = VK_NULL_HANDLE;
    uint64_t host_value = 0;
};

Executor::Executor(gpu::Device& device, ExecutorDesc desc) : device_(device), desc_(std::move(desc)) {
    if (desc_.frames_in_flight == 0)
        throw Error(ErrorCode::InvalidArgument, "fg::Executor: frames_in_flight must be at least 1");
    for (uint32_t i = 0; i < desc_.frames_in_flight; ++i) slots_.push_back(std::make_unique<Slot>());
}

Executor::~Executor() {
    try {
        wait_idle();
    } catch (const std::exception& e) {
        device_.message(gpu::Severity::Error,
                        std::string("fg::Executor: waiting at destruction: ") + e.what());
    }
}

void Executor::wait_idle() {
    for (auto& slot : slots_)
        for (Queue q : {Queue::Graphics, Queue::AsyncCompute})
            if (slot->pending[size_t(q)]) device_.wait(role(q), slot->pending[size_t(q)]);
}

CompileOptions Executor::compile_options(bool async_compute) const {
    CompileOptions o;
    o.graphics_family = device_.queue_family(gpu::QueueRole::Graphics);
    o.compute_family = device_.queue_family(gpu::QueueRole::Compute);
    o.separate_compute_queue =
        device_.queue(gpu::QueueRole::Compute) != device_.queue(gpu::QueueRole::Graphics);
    o.async_compute = async_compute && desc_.async_compute;
    o.alias_memory = desc_.alias_memory;
    gpu::Device* device = &device_;
    o.memory_requirements = [device](const PlannedResource& r) {
        VkMemoryRequirements2 out{VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
        if (r.kind == ResourceKind::Image) {
            const VkImageCreateInfo ci = image_info(r, device->shared_queue_families());
            VkDeviceImageMemoryRequirements info{VK_STRUCTURE_TYPE_DEVICE_IMAGE_MEMORY_REQUIREMENTS, nullptr,
                                                 &ci};
            vkGetDeviceImageMemoryRequirements(device->vk(), &info, &out);
        } else {
            VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
            ci.size = r.size;
            ci.usage = buffer_usage(r);
            const auto families = device->shared_queue_families();
            if (families.size() > 1) {
                ci.sharingMode = VK_SHARING_MODE_CONCURRENT;
                ci.queueFamilyIndexCount = uint32_t(families.size());
                ci.pQueueFamilyIndices = families.data();
            }
            VkDeviceBufferMemoryRequirements info{VK_STRUCTURE_TYPE_DEVICE_BUFFER_MEMORY_REQUIREMENTS,
                                                  nullptr, &ci};
            vkGetDeviceBufferMemoryRequirements(device->vk(), &info, &out);
        }
        return out.memoryRequirements;
    };
    return o;
}

// --- per frame ------------------------------------------------------------------------------------

Executor::Slot& Executor::begin_frame(FrameGraph& graph, bool host) {
    // Recompile when the declarations changed, or the plan was not made here for this mode.
    const FrameGraph::Impl& g = graph.impl();
    const bool async = !host && desc_.async_compute;
    const bool ours = std::find(serials_.begin(), serials_.end(), g.serial) != serials_.end();
    if (!graph.compiled() || g.compiled_generation != g.generation || !ours ||
        graph.plan().options.async_compute != async) {
        graph.compile(compile_options(!host));
        serials_[serial_next_++ % serials_.size()] = g.serial;
    }

    const uint32_t index = uint32_t(frame_ % slots_.size());
    Slot& slot = *slots_[index];
    // Frames in flight: this slot's resources are free once its previous frame is done.
    for (Queue q : {Queue::Graphics, Queue::AsyncCompute})
        if (slot.pending[size_t(q)]) device_.wait(role(q), slot.pending[size_t(q)]);
    slot.pending = {};
    // The host's frame recorded here frames_in_flight calls ago: its timeline semaphore, when the
    // host gave one, is waited for; otherwise record()'s rule says the frame is complete.
    if (slot.host_timeline) {
        const double limit_s = device_.wait_timeout();
        const uint64_t timeout_ns = limit_s > 0 ? uint64_t(limit_s * 1e9) : UINT64_MAX;
        VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &slot.host_timeline,
                               &slot.host_value};
        const VkResult r = vkWaitSemaphores(device_.vk(), &wi, timeout_ns);
        if (r == VK_TIMEOUT)
            throw Error(ErrorCode::Timeout, "fg::Executor: the host's timeline semaphore did not reach " +
                                                std::to_string(slot.host_value) + " (frame " +
                                                std::to_string(slot.host_frame) + ") within " +
                                                std::to_string(limit_s) + " s");
        check_vk(r, "vkWaitSemaphores(host timeline)");
        slot.host_timeline = VK_NULL_HANDLE;
    }
    if (slot.host_sets) slot.host_sets->finished_all();
    collect_timings(slot, !slot.host_recorded);
    slot.host_recorded = host;
    ensure_resources(slot, index, graph);
    return slot;
}

void Executor::ensure_resources(Slot& slot, uint32_t index, const FrameGraph& graph) {
    const Plan& plan = graph.plan();
    const FrameGraph::Impl& g = graph.impl();
    std::string signature;
    for (const PlannedResource& r : plan.resources)
        if (r.used && !r.imported)
            signature += r.name + ":" + std::to_string(int(r.kind)) + ":" + std::to_string(r.format) + ":" +
                         std::to_string(r.extent.width) + "x" + std::to_string(r.extent.height) + ":" +
                         std::to_string(r.size) + ":" + std::to_string(r.image_usage) + ":" +
                         std::to_string(r.buffer_usage) + ":" + std::to_string(r.heap) + ";";
    for (const AliasHeap& h : plan.heaps) signature += std::to_string(h.size) + ",";

    PassContext::Frame& frame = slot.frame;
    if (signature != slot.signature || frame.images.size() != plan.resources.size()) {
        slot.images.clear();
        slot.buffers.clear();
        slot.heaps.clear();
        frame = {};
        frame.device = &device_;
        frame.images.resize(plan.resources.size());
        frame.buffers.resize(plan.resources.size());
        slot.images.resize(plan.resources.size());
        slot.buffers.resize(plan.resources.size());
        for (const AliasHeap& h : plan.heaps) {
            std::vector<VkMemoryRequirements> reqs;
            for (uint32_t r : h.resources) reqs.push_back(plan.resources[r].memory);
            slot.heaps.push_back(device_.allocator().allocate_aliased(reqs, gpu::MemoryUsage::DeviceLocal));
        }
        for (uint32_t i = 0; i < plan.resources.size(); ++i) {
            const PlannedResource& r = plan.resources[i];
            if (!r.used || r.imported) continue;
            const std::string name = desc_.name + "/" + g.desc.name + "/" + r.name + slot_suffix(index);
            const gpu::AllocationPtr heap = r.heap != no_index ? slot.heaps[r.heap] : nullptr;
            if (r.kind == ResourceKind::Image) {
                slot.images[i] = gpu::Image(device_, {.width = r.extent.width,
                                                      .height = r.extent.height,
                                                      .format = r.format,
                                                      .usage = r.image_usage,
                                                      .name = name,
                                                      .alias = heap});
                frame.images[i] = {slot.images[i].vk(), slot.images[i].view(), r.format, r.extent};
            } else {
                slot.buffers[i] = std::make_shared<gpu::Buffer>(
                    device_,
                    gpu::BufferDesc{.size = r.size, .usage = buffer_usage(r), .name = name, .alias = heap});
                frame.buffers[i] = {slot.buffers[i]->vk(), 0, r.size, slot.buffers[i]};
            }
        }
        slot.signature = std::move(signature);
        ++sets_created_;
    }
    // Imported objects may be rebound between frames (the next swapchain image).
    for (uint32_t i = 0; i < g.resources.size(); ++i) {
        const ResourceDecl& d = g.resources[i];
        if (!d.imported) continue;
        if (d.kind == ResourceKind::Image) {
            const ImportedImageDesc& im = d.imported_image;
            frame.images[i] = {im.image, im.view, im.format, {im.width, im.height}};
        } else {
            const ImportedBufferDesc& b = d.imported_buffer;
            frame.buffers[i] = {b.buffer, b.offset, b.size, b.vkml_buffer};
        }
    }
}

FrameSubmission Executor::run(FrameGraph& graph) {
    Slot& slot = begin_frame(graph, false);
    const uint32_t index = uint32_t(frame_ % slots_.size());
    const Plan& plan = graph.plan();
    const FrameGraph::Impl& g = graph.impl();
    while (slot.cmds.size() < plan.batches.size()) slot.cmds.push_back(nullptr);

    std::array<uint32_t, queue_count> passes_on{};
    for (const PlannedPass& p : plan.passes)
        if (p.pass != no_index) ++passes_on[size_t(p.queue)];
    slot.timed = desc_.timestamps && device_.caps().timestamps;
    std::array<bool, queue_count> timer_reset{};

    FrameSubmission out{.frame = frame_};
    std::vector<uint64_t> values(plan.batches.size(), 0);
    for (uint32_t b = 0; b < plan.batches.size(); ++b) {
        const Batch& batch = plan.batches[b];
        const size_t q = size_t(batch.queue);
        auto& cmd = slot.cmds[b];
        if (!cmd || cmd->role() != role(batch.queue)) {
            cmd = std::make_unique<gpu::CommandBuffer>(device_, role(batch.queue));
            device_.set_debug_name(VK_OBJECT_TYPE_COMMAND_BUFFER, cmd->vk(),
                                   desc_.name + "/" + g.desc.name + " batch " + std::to_string(b) +
                                       slot_suffix(index));
        }
        cmd->begin();
        if (slot.timed && !timer_reset[q]) {
            profiler(slot, index).reset(*cmd, passes_on[q]);
            timer_reset[q] = true;
        }
        record_batch(slot, index, graph, batch, *cmd);
        cmd->end();

        std::vector<gpu::SemaphoreWait> waits;
        for (const BatchWait& w : batch.waits)
            waits.push_back({role(plan.batches[w.batch].queue), values[w.batch], w.stages});
        // Imported objects last used on the other queue in an earlier frame.
        for (uint32_t pos : batch.passes) {
            for (uint32_t r = 0; r < plan.resources.size(); ++r) {
                const PlannedResource& pr = plan.resources[r];
                if (!pr.imported || !pr.used || pr.first != pos) continue;
                const uint64_t handle = pr.kind == ResourceKind::Image
                                            ? uint64_t(slot.frame.images[r].image)
                                            : uint64_t(slot.frame.buffers[r].buffer);
                for (const LastUse& u : imports_)
                    if (u.handle == handle && u.queue != batch.queue)
                        waits.push_back({role(u.queue), u.value, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT});
            }
        }
        values[b] = device_.submit(role(batch.queue), *cmd, waits);
        out.values[q] = values[b];
        slot.pending[q] = values[b];
    }
    // Remember where imported objects were last used, for the next frames; forget what is done.
    std::erase_if(imports_, [&](const LastUse& u) { return device_.is_complete(role(u.queue), u.value); });
    for (uint32_t r = 0; r < plan.resources.size(); ++r) {
        const PlannedResource& pr = plan.resources[r];
        if (!pr.imported || !pr.used) continue;
        const uint32_t b = plan.passes[pr.last].batch;
        const uint64_t handle = pr.kind == ResourceKind::Image ? uint64_t(slot.frame.images[r].image)
                                                               : uint64_t(slot.frame.buffers[r].buffer);
        const auto it = std::find_if(imports_.begin(), imports_.end(),
                                     [&](const LastUse& u) { return u.handle == handle; });
        const LastUse use{handle, plan.batches[b].queue, values[b]};
        if (it == imports_.end())
            imports_.push_back(use);
        else
            *it = use;
    }
    ++frame_;
    return out;
}

uint64_t Executor::record(FrameGraph& graph, VkCommandBuffer host_cmd) {
    return record_host(graph, host_cmd, VK_NULL_HANDLE, 0);
}

uint64_t Executor::record(FrameGraph& graph, VkCommandBuffer host_cmd, VkSemaphore host_timeline,
                          uint64_t value) {
    if (!host_timeline)
        throw Error(ErrorCode::InvalidArgument, "fg::Executor::record: a null host timeline semaphore");
    return record_host(graph, host_cmd, host_timeline, value);
}

uint64_t Executor::record_host(FrameGraph& graph, VkCommandBuffer host_cmd, VkSemaphore host_timeline,
                               uint64_t value) {
    Slot& slot = begin_frame(graph, true);
    const uint32_t index = uint32_t(frame_ % slots_.size());
    const Plan& plan = graph.plan();
    if (!slot.host_sets)
        slot.host_sets = std::make_unique<gpu::DescriptorArena>(
            device_, desc_.name + "/host frame descriptors" + slot_suffix(index));
    // Closed however recording ends: a frame that failed half-way may still be submitted (or its
    // command buffer reset) by the host, and the slot's next turn releases it either way.
    struct Close {
        Slot& slot;
        VkSemaphore semaphore;
        uint64_t value;
        ~Close() {
            if (semaphore)
                slot.host_sets->close(semaphore, value);
            else
                slot.host_sets->close();
        }
    } close{slot, host_timeline, value};
    slot.host_timeline = host_timeline;
    slot.host_value = value;
    gpu::CommandBuffer cmd =
        gpu::CommandBuffer::wrap(device_, host_cmd, gpu::QueueRole::Graphics, slot.host_sets.get());
    slot.timed = desc_.timestamps && device_.caps().timestamps;
    if (slot.timed) profiler(slot, index).reset(cmd, uint32_t(plan.passes.size()));
    for (const Batch& batch : plan.batches) record_batch(slot, index, graph, batch, cmd);
    slot.host_frame = frame_;
    return frame_++;
}

void Executor::frame_finished(uint64_t frame) {
    Slot& slot = *slots_[frame % slots_.size()];
    if (!slot.host_recorded || slot.host_frame != frame) return;
    slot.host_timeline = VK_NULL_HANDLE; // nothing left to wait for
    if (slot.host_sets) slot.host_sets->finished_all();
}

// --- recording ------------------------------------------------------------------------------------

void Executor::record_batch(Slot& slot, uint32_t slot_index, const FrameGraph& graph, const Batch& batch,
                            gpu::CommandBuffer& cmd) {
    const Plan& plan = graph.plan();
    const FrameGraph::Impl& g = graph.impl();
    for (uint32_t pos : batch.passes) {
        const PlannedPass& pp = plan.passes[pos];
        record_barriers(cmd, slot, plan, pp.before);
        if (pp.pass != no_index) {
            const PassDecl& pass = g.passes[pp.pass];
            cmd.begin_label(pass.name);
            if (slot.timed) slot.profiler->begin(cmd, pass.name);
            VkRect2D area{};
            if (pass.kind == PassKind::Raster) {
                std::vector<VkRenderingAttachmentInfo> colors(pass.color_count);
                VkRenderingAttachmentInfo depth{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
                bool has_depth = false;
                for (const Use& u : pass.uses) {
                    if (u.attachment == AttachmentRole::None) continue;
                    const PassContext::Frame::Image& im = slot.frame.images[u.resource];
                    area.extent = im.extent;
                    VkRenderingAttachmentInfo a{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
                    a.imageView = im.view;
                    a.imageLayout = u.layout;
                    if (u.attachment == AttachmentRole::Color) {
                        a.loadOp = u.color.load == LoadOp::Load    ? VK_ATTACHMENT_LOAD_OP_LOAD
                                   : u.color.load == LoadOp::Clear ? VK_ATTACHMENT_LOAD_OP_CLEAR
                                                                   : VK_ATTACHMENT_LOAD_OP_DONT_CARE;
                        a.storeOp =
                            u.color.store ? VK_ATTACHMENT_STORE_OP_STORE : VK_ATTACHMENT_STORE_OP_DONT_CARE;
                        a.clearValue.color = u.color.clear;
                        colors[u.color_slot] = a;
                    } else if (u.version_out == no_index) { // depth test only
                        a.loadOp = VK_ATTACHMENT_LOAD_OP_LOAD;
                        a.storeOp = VK_ATTACHMENT_STORE_OP_NONE;
                        depth = a;
                        has_depth = true;
                    } else {
                        a.loadOp = u.depth.load == LoadOp::Load    ? VK_ATTACHMENT_LOAD_OP_LOAD
                                   : u.depth.load == LoadOp::Clear ? VK_ATTACHMENT_LOAD_OP_CLEAR
                                                                   : VK_ATTACHMENT_LOAD_OP_DONT_CARE;
                        a.storeOp =
                            u.depth.store ? VK_ATTACHMENT_STORE_OP_STORE : VK_ATTACHMENT_STORE_OP_DONT_CARE;
                        a.clearValue.depthStencil = {u.depth.clear_depth, u.depth.clear_stencil};
                        depth = a;
                        has_depth = true;
                    }
                }
                const VkFormat depth_format = [&] {
                    for (const Use& u : pass.uses)
                        if (u.attachment == AttachmentRole::Depth)
                            return slot.frame.images[u.resource].format;
                    return VK_FORMAT_UNDEFINED;
                }();
                VkRenderingInfo ri{VK_STRUCTURE_TYPE_RENDERING_INFO};
                ri.renderArea = area;
                ri.layerCount = 1;
                ri.colorAttachmentCount = uint32_t(colors.size());
                ri.pColorAttachments = colors.data();
                ri.pDepthAttachment = has_depth ? &depth : nullptr;
                ri.pStencilAttachment =
                    has_depth && (format_aspect(depth_format) & VK_IMAGE_ASPECT_STENCIL_BIT) ? &depth
                                                                                             : nullptr;
                vkCmdBeginRendering(cmd.vk(), &ri);
                const VkViewport viewport{0, 0, float(area.extent.width), float(area.extent.height), 0, 1};
                vkCmdSetViewport(cmd.vk(), 0, 1, &viewport);
                vkCmdSetScissor(cmd.vk(), 0, 1, &area);
            }
            PassContext ctx(g, slot.frame, pp.pass, pp.queue, cmd, slot_index, frame_,
                            slot.timed ? slot.profiler.get() : nullptr);
            pass.record(ctx);
            if (pass.kind == PassKind::Raster) vkCmdEndRendering(cmd.vk());
            if (slot.timed) slot.profiler->end(cmd);
            cmd.end_label();
        }
        record_barriers(cmd, slot, plan, pp.after);
    }
}

void Executor::record_barriers(gpu::CommandBuffer& cmd, const Slot& slot, const Plan& plan,
                               const std::vector<Barrier>& barriers) {
    if (barriers.empty()) return;
    std::vector<VkImageMemoryBarrier2> images;
    std::vector<VkBufferMemoryBarrier2> buffers;
    for (const Barrier& b : barriers) {
        const PlannedResource& r = plan.resources[b.resource];
        const bool transfer = b.src_family != b.dst_family;
        const uint32_t src_family = transfer ? b.src_family : VK_QUEUE_FAMILY_IGNORED;
        const uint32_t dst_family = transfer ? b.dst_family : VK_QUEUE_FAMILY_IGNORED;
        if (r.kind == ResourceKind::Image) {
            VkImageMemoryBarrier2 x{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2};
            x.srcStageMask = b.src_stages;
            x.srcAccessMask = b.src_access;
            x.dstStageMask = b.dst_stages;
            x.dstAccessMask = b.dst_access;
            x.oldLayout = b.old_layout;
            x.newLayout = b.new_layout;
            x.srcQueueFamilyIndex = src_family;
            x.dstQueueFamilyIndex = dst_family;
            x.image = slot.frame.images[b.resource].image;
            x.subresourceRange = {format_aspect(r.format), 0, VK_REMAINING_MIP_LEVELS, 0,
                                  VK_REMAINING_ARRAY_LAYERS};
            images.push_back(x);
        } else {
            const PassContext::Frame::Buffer& buf = slot.frame.buffers[b.resource];
            VkBufferMemoryBarrier2 x{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2};
            x.srcStageMask = b.src_stages;
            x.srcAccessMask = b.src_access;
            x.dstStageMask = b.dst_stages;
            x.dstAccessMask = b.dst_access;
            x.srcQueueFamilyIndex = src_family;
            x.dstQueueFamilyIndex = dst_family;
            x.buffer = buf.buffer;
            x.offset = buf.offset;
            x.size = buf.size;
            buffers.push_back(x);
        }
    }
    VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
    dep.imageMemoryBarrierCount = uint32_t(images.size());
    dep.pImageMemoryBarriers = images.data();
    dep.bufferMemoryBarrierCount = uint32_t(buffers.size());
    dep.pBufferMemoryBarriers = buffers.data();
    vkCmdPipelineBarrier2(cmd.vk(), &dep);
}

// --- timings --------------------------------------------------------------------------------------

gpu::Profiler& Executor::profiler(Slot& slot, uint32_t slot_index) {
    if (!slot.profiler)
        slot.profiler =
            // Room for the passes' own nested scopes (PassContext::profiler()) beside theirs.
            std::make_unique<gpu::Profiler>(device_, 64,
                                            desc_.name + " timestamps" + slot_suffix(slot_index));
    return *slot.profiler;
}

void Executor::collect_timings(Slot& slot, bool wait) {
    if (!slot.timed) return;
    slot.timed = false;
    // A frame in the host's command buffer may not have run yet: then its times are skipped.
    std::optional<std::vector<gpu::TimingRecord>> records =
        wait ? slot.profiler->results() : slot.profiler->poll();
    if (!records || records->empty()) return;
    timings_ = std::move(*records);
    std::stable_sort(
        timings_.begin(), timings_.end(),
        [](const gpu::TimingRecord& a, const gpu::TimingRecord& b) { return a.start_us < b.start_us; });
}

const std::vector<gpu::TimingRecord>& Executor::timings() {
    // The newest frame that has completed: the one before the current slot's turn.
    for (uint64_t back = 1; back <= slots_.size() && back <= frame_; ++back) {
        Slot& slot = *slots_[(frame_ - back) % slots_.size()];
        if (!slot.timed) continue;
        bool done = true;
        for (Queue q : {Queue::Graphics, Queue::AsyncCompute})
            done &= !slot.pending[size_t(q)] || device_.is_complete(role(q), slot.pending[size_t(q)]);
        if (done) {
            collect_timings(slot, !slot.host_recorded);
            break;
        }
    }
    return timings_;
}

std::string Executor::timing_table() {
    return gpu::timing_table(timings());
}

std::string Executor::chrome_trace() {
    return gpu::chrome_trace_json(timings());
}

// --- PassContext ----------------------------------------------------------------------------------

uint32_t PassContext::checked(uint32_t resource, ResourceKind kind) const {
    const PassDecl& pass = graph_->passes[pass_];
    if (resource >= graph_->resources.size() || graph_->resources[resource].kind != kind)
        throw Error(ErrorCode::InvalidArgument, "pass '" + pass.name + "' asked for an invalid handle");
    if (!pass.find(resource))
        throw Error(ErrorCode::InvalidArgument, "pass '" + pass.name + "' did not declare '" +
                                                    graph_->resources[resource].name + "' in its setup");
    return resource;
}

VkCommandBuffer PassContext::vk() const {
    return cmd_->vk();
}
gpu::Device& PassContext::device() const {
    return *resources_->device;
}
const std::string& PassContext::name() const {
    return graph_->passes[pass_].name;
}
Queue PassContext::queue() const {
    return queue_;
}
VkImage PassContext::image(ImageHandle h) const {
    return resources_->images[checked(h.index, ResourceKind::Image)].image;
}
VkImageView PassContext::view(ImageHandle h) const {
    return resources_->images[checked(h.index, ResourceKind::Image)].view;
}
VkFormat PassContext::format(ImageHandle h) const {
    return resources_->images[checked(h.index, ResourceKind::Image)].format;
}
VkExtent2D PassContext::extent(ImageHandle h) const {
    return resources_->images[checked(h.index, ResourceKind::Image)].extent;
}
VkImageLayout PassContext::layout(ImageHandle h) const {
    return graph_->passes[pass_].find(checked(h.index, ResourceKind::Image))->layout;
}
gpu::BufferRange PassContext::buffer(BufferHandle h) const {
    const Frame::Buffer& b = resources_->buffers[checked(h.index, ResourceKind::Buffer)];
    return {b.buffer, b.offset, b.size};
}

gpu::Tensor PassContext::tensor(BufferHandle h, const gpu::Shape& shape, gpu::DType dtype,
                                uint64_t offset) const {
    const Frame::Buffer& b = resources_->buffers[checked(h.index, ResourceKind::Buffer)];
    const std::string& name = graph_->resources[h.index].name;
    if (!b.vkml)
        throw Error(ErrorCode::InvalidArgument, "'" + name +
                                                    "' is a raw VkBuffer: import it with "
                                                    "ImportedBufferDesc::vkml_buffer to view it as tensors");
    const uint64_t bytes = uint64_t(shape.elements()) * gpu::dtype_size(dtype);
    if (offset + bytes > b.size)
        throw Error(ErrorCode::InvalidArgument, "a " + std::string(gpu::dtype_name(dtype)) + shape.str() +
                                                    " tensor at byte " + std::to_string(offset) +
                                                    " does not fit '" + name + "' (" +
                                                    std::to_string(b.size) + " bytes)");
    return gpu::Tensor(b.vkml, b.offset + offset, shape, dtype);
}

VkRect2D PassContext::render_area() const {
    for (const Use& u : graph_->passes[pass_].uses)
        if (u.attachment != AttachmentRole::None) return {{0, 0}, resources_->images[u.resource].extent};
    return {};
}

} // namespace vkml::fg
