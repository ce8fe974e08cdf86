#include "vkml/gpu/descriptors.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "vkml/error.hpp"

namespace vkml::gpu {

namespace {
// Enough for 256 dispatches of 4 storage buffers (the common case), and room for the other
// binding kinds a set may hold.
constexpr VkDescriptorPoolSize pool_sizes[] = {
    {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4 * DescriptorArena::sets_per_pool},
    {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, DescriptorArena::sets_per_pool / 4},
    {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, DescriptorArena::sets_per_pool / 2},
    {VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, DescriptorArena::sets_per_pool / 4},
    {VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, DescriptorArena::sets_per_pool / 2},
    {VK_DESCRIPTOR_TYPE_SAMPLER, DescriptorArena::sets_per_pool / 4},
};

auto destroy_pools(VkDevice device, std::vector<VkDescriptorPool> pools) {
    return [device, pools = std::move(pools)] {
        for (VkDescriptorPool p : pools) vkDestroyDescriptorPool(device, p, nullptr); // frees the sets
    };
}
} // namespace

DescriptorArena::DescriptorArena(Device& device, std::string name) : device_(device), name_(std::move(name)) {}

DescriptorArena::~DescriptorArena() {
    const VkDevice vk = device_.vk();
    destroy_pools(vk, std::move(free_))();
    // Open sets were never closed: their recording was not submitted, or by someone who did not
    // say; they go once vkml's work so far is done, as before the arena existed.
    if (!open_.empty()) device_.retire(destroy_pools(vk, std::move(open_)));
    for (Batch& b : closed_) {
        auto destroy = destroy_pools(vk, std::move(b.pools));
        switch (b.kind) {
        case Batch::Kind::Queue:
            device_.retire(b.role, b.value, std::move(destroy));
            break;
        case Batch::Kind::Semaphore:
        case Batch::Kind::Ticket:
            // The host must have finished what it recorded before it destroys the arena's owner
            // (Device::retire's rule for work the host submits itself).
            device_.retire(std::move(destroy));
            break;
        }
    }
}

size_t DescriptorArena::pools() const {
    return created_;
}

bool DescriptorArena::done(const Batch& b) const {
    if (b.released) return true;
    try {
        switch (b.kind) {
        case Batch::Kind::Queue:
            return device_.is_complete(b.role, b.value);
        case Batch::Kind::Semaphore: {
            uint64_t now = 0;
            return vkGetSemaphoreCounterValue(device_.vk(), b.semaphore, &now) == VK_SUCCESS && now >= b.value;
        }
        case Batch::Kind::Ticket:
            return false;
        }
    } catch (const std::exception&) {
        // A lost device: nothing is reused; the teardown frees it.
    }
    return false;
}

void DescriptorArena::reclaim() {
    for (auto it = closed_.begin(); it != closed_.end();) {
        if (!done(*it)) {
            ++it;
            continue;
        }
        for (VkDescriptorPool p : it->pools) {
            vkResetDescriptorPool(device_.vk(), p, 0);
            free_.push_back(p);
        }
        it = closed_.erase(it);
    }
}

VkDescriptorPool DescriptorArena::take_pool() {
    if (free_.empty()) reclaim();
    if (!free_.empty()) {
        const VkDescriptorPool p = free_.back();
        free_.pop_back();
        return p;
    }
    VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pi.maxSets = sets_per_pool;
    pi.poolSizeCount = uint32_t(std::size(pool_sizes));
    pi.pPoolSizes = pool_sizes;
    VkDescriptorPool pool;
    check_vk(vkCreateDescriptorPool(device_.vk(), &pi, nullptr, &pool), "vkCreateDescriptorPool");
    ++created_;
    device_.set_debug_name(VK_OBJECT_TYPE_DESCRIPTOR_POOL, pool, name_);
    return pool;
}

VkDescriptorSet DescriptorArena::allocate(VkDescriptorSetLayout layout) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        // Drivers may let a pool hand out more than it was made for (VK_KHR_maintenance1), so the
        // arena counts its sets itself.
        if (open_.empty() || attempt > 0 || open_sets_ == sets_per_pool) {
            open_.push_back(take_pool());
            open_sets_ = 0;
        }
        VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, nullptr, open_.back(), 1,
                                       &layout};
        VkDescriptorSet set;
        const VkResult r = vkAllocateDescriptorSets(device_.vk(), &ai, &set);
        if (r == VK_SUCCESS) {
            ++open_sets_;
            return set;
        }
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
            check_vk(r, "vkAllocateDescriptorSets");
        // The current pool is full: the next attempt takes a fresh one.
    }
    throw Error(ErrorCode::InvalidArgument,
                name_ + ": a descriptor set layout holds more descriptors than a whole pool (" +
                    std::to_string(sets_per_pool) + " sets, 1024 storage buffers, 128 storage images, ...)");
}

void DescriptorArena::close_as(Batch b) {
    if (open_.empty()) return;
    b.pools = std::move(open_);
    open_.clear();
    open_sets_ = 0;
    closed_.push_back(std::move(b));
}

void DescriptorArena::close(QueueRole role, uint64_t value) {
    close_as({.kind = Batch::Kind::Queue, .role = role, .value = value});
}

void DescriptorArena::close(VkSemaphore host_timeline, uint64_t value) {
    if (!host_timeline)
        throw Error(ErrorCode::InvalidArgument, name_ + ": close() with a null timeline semaphore");
    close_as({.kind = Batch::Kind::Semaphore, .semaphore = host_timeline, .value = value});
}

uint64_t DescriptorArena::close() {
    if (open_.empty()) return 0;
    const uint64_t ticket = next_ticket_++;
    close_as({.kind = Batch::Kind::Ticket, .value = ticket});
    return ticket;
}

void DescriptorArena::finished(uint64_t ticket) {
    for (Batch& b : closed_)
        if (b.kind == Batch::Kind::Ticket && b.value == ticket) b.released = true;
}

void DescriptorArena::finished_all() {
    for (Batch& b : closed_)
        if (b.kind != Batch::Kind::Queue) b.released = true;
}

void DescriptorArena::discard_open() {
    for (VkDescriptorPool p : open_) {
        vkResetDescriptorPool(device_.vk(), p, 0);
        free_.push_back(p);
    }
    open_.clear();
    open_sets_ = 0;
}

void DescriptorArena::abandon_open() {
    if (open_.empty()) return;
    device_.retire_at_teardown(destroy_pools(device_.vk(), std::move(open_)));
    open_.clear();
    open_sets_ = 0;
}

} // namespace vkml::gpu
