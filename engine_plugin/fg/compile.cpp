// FrameGraph::compile(): the declared graph becomes a Plan in named steps, each with its reason.
// Nothing here touches a device, so every step is unit-tested with fake resources.
#include <algorithm>
#include <array>
#include <atomic>
#include <numeric>

#include "graph_impl.hpp"
#include "vkml/error.hpp"
#include "vkml/fg/access.hpp"

namespace vkml::fg {
namespace {

constexpr uint32_t queue_bit(Queue q) {
    return 1u << uint32_t(q);
}

// One use of a resource at a position of the plan.
struct UseRef {
    uint32_t position = no_index;
    Queue queue = Queue::Graphics;
    VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_NONE;
    VkAccessFlags2 access = VK_ACCESS_2_NONE;
    VkImageLayout layout = VK_IMAGE_LAYOUT_UNDEFINED;
    uint32_t family = VK_QUEUE_FAMILY_IGNORED; // the family that must own it afterwards
    bool covered = false; // an earlier barrier on this queue already made it visible to this read
};

// The latest accesses of one kind, on one queue.
struct Frontier {
    VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_NONE;
    VkAccessFlags2 access = VK_ACCESS_2_NONE;
    uint32_t last = no_index; // position of the latest access
    bool any() const { return last != no_index; }
    void add(VkPipelineStageFlags2 s, VkAccessFlags2 a, uint32_t position) {
        stages |= s;
        access |= a;
        last = any() ? std::max(last, position) : position;
    }
};

// What the barrier derivation knows about a resource at the current point of the plan: the last
// write (or layout transition, or the host's hand-over) and the reads since, per queue.
struct Track {
    VkImageLayout layout = VK_IMAGE_LAYOUT_UNDEFINED;
    uint32_t family = VK_QUEUE_FAMILY_IGNORED; // owner of an exclusive resource
    Queue write_queue = Queue::Graphics;
    Frontier write;
    std::array<Frontier, queue_count> reads;
};

struct Dependency {
    uint32_t from = no_index, to = no_index; // positions on different queues
    VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_NONE;
};

uint32_t estimate_texel_bytes(VkFormat format) {
    switch (format) {
    case VK_FORMAT_R8_UNORM:
    case VK_FORMAT_S8_UINT:
        return 1;
    case VK_FORMAT_R8G8_UNORM:
    case VK_FORMAT_R16_SFLOAT:
    case VK_FORMAT_D16_UNORM:
        return 2;
    case VK_FORMAT_R16G16B16A16_SFLOAT:
    case VK_FORMAT_R32G32_SFLOAT:
    case VK_FORMAT_D32_SFLOAT_S8_UINT:
        return 8;
    case VK_FORMAT_R32G32B32A32_SFLOAT:
        return 16;
    default:
        return 4;
    }
}

// Without a device: the bytes the data needs, page-aligned images, 256-byte-aligned buffers.
VkMemoryRequirements estimate_memory(const PlannedResource& r) {
    if (r.kind == ResourceKind::Image) {
        const uint64_t bytes = uint64_t(r.extent.width) * r.extent.height * estimate_texel_bytes(r.format);
        return {(bytes + 4095) & ~uint64_t(4095), 4096, 1};
    }
    return {(r.size + 255) & ~uint64_t(255), 256, 1};
}

class Compiler {
public:
    Compiler(const FrameGraph::Impl& graph, const CompileOptions& options) : g_(graph) {
        plan_.options = options;
    }

    Plan compile() {
        validate();              // every problem found, in one message, before anything is planned
        cull();                  // work whose results nobody reads is work the GPU need not do
        assign_queues();         // async compute only where asked for and where a second queue exists
        order();                 // a stable topological order; async compute work is started early
        lifetimes();             // first and last use of each resource: what creation and aliasing need
        alias_memory();          // transients never live at the same time can share memory
        derive_barriers();       // sync2 barriers, layout transitions, ownership transfers, queue waits
        drop_empty_boundaries(); // host hand-over points that turned out to need nothing
        form_batches();          // one submission per run of a queue, split where it must wait
        return std::move(plan_);
    }

private:
    // --- validate ---------------------------------------------------------------------------
    void validate() {
        std::vector<std::string> errors;
        for (uint32_t p = 0; p < g_.passes.size(); ++p) {
            const PassDecl& pass = g_.passes[p];
            if (!pass.record) errors.push_back(g_.pass_label(p) + " has no record() callback");
            if (pass.kind != PassKind::Raster) continue;
            VkExtent2D area{};
            for (const Use& u : pass.uses) {
                if (u.attachment == AttachmentRole::None) continue;
                const VkExtent2D e = resolve_extent(g_.resources[u.resource], g_.desc);
                if (!e.width) continue; // reported with the resource below
                if (area.width && (e.width != area.width || e.height != area.height))
                    errors.push_back(g_.pass_label(p) + "'s attachments differ in size ('" +
                                     g_.resources[u.resource].name + "' is " + std::to_string(e.width) + "x" +
                                     std::to_string(e.height) + ", an earlier one " +
                                     std::to_string(area.width) + "x" + std::to_string(area.height) + ")");
                area = e;
            }
            if (pass.color_count == 0 && std::none_of(pass.uses.begin(), pass.uses.end(), [](const Use& u) {
                    return u.attachment != AttachmentRole::None;
                }))
                errors.push_back(g_.pass_label(p) + " is a raster pass without attachments");
        }
        for (const ResourceDecl& r : g_.resources) {
            if (r.imported) continue;
            const bool sized = r.kind == ResourceKind::Image ? resolve_extent(r, g_.desc).width != 0
                                                             : resolve_size(r, g_.desc) != 0;
            if (!sized)
                errors.push_back("'" + r.name +
                                 "' is sized relative to the output, but the graph has no output "
                                 "extent (FrameGraphDesc::output_width and output_height)");
        }
        if (errors.empty()) return;
        std::string message = "frame graph '" + g_.desc.name + "' is invalid:";
        for (const std::string& e : errors) message += "\n  - " + e;
        throw Error(ErrorCode::InvalidArgument, message);
    }

    // --- cull -------------------------------------------------------------------------------
    // Roots are passes with side effects and passes that write imported resources (the host sees
    // those); a kept pass keeps the writers of every version whose contents it reads.
    void cull() {
        kept_.assign(g_.passes.size(), false);
        std::vector<uint32_t> stack;
        for (uint32_t p = 0; p < g_.passes.size(); ++p) {
            const PassDecl& pass = g_.passes[p];
            const bool writes_import = std::any_of(pass.uses.begin(), pass.uses.end(), [&](const Use& u) {
                return u.version_out != no_index && g_.resources[u.resource].imported;
            });
            if (pass.side_effect || writes_import) stack.push_back(p);
        }
        while (!stack.empty()) {
            const uint32_t p = stack.back();
            stack.pop_back();
            if (kept_[p]) continue;
            kept_[p] = true;
            for (const Use& u : g_.passes[p].uses) {
                if (!u.reads_contents || u.version_in == 0) continue;
                const uint32_t writer = g_.resources[u.resource].writers[u.version_in];
                if (writer != p) stack.push_back(writer);
            }
        }
        for (uint32_t p = 0; p < g_.passes.size(); ++p)
            if (!kept_[p]) plan_.culled.push_back(g_.passes[p].name);
    }

    // --- assign queues ----------------------------------------------------------------------
    Queue effective(Queue requested) const {
        const CompileOptions& o = plan_.options;
        return requested == Queue::AsyncCompute && o.async_compute && o.separate_compute_queue
                   ? Queue::AsyncCompute
                   : Queue::Graphics;
    }

    uint32_t family(Queue q) const {
        return q == Queue::AsyncCompute ? plan_.options.compute_family : plan_.options.graphics_family;
    }

    void assign_queues() {
        queue_.assign(g_.passes.size(), Queue::Graphics);
        for (uint32_t p = 0; p < g_.passes.size(); ++p) {
            if (!kept_[p]) continue;
            queue_[p] = effective(g_.passes[p].queue);
            if (g_.passes[p].queue == Queue::AsyncCompute && queue_[p] == Queue::Graphics)
                plan_.notes.push_back(
                    g_.pass_label(p) + " asked for async compute and runs on the graphics queue: " +
                    (plan_.options.async_compute ? "the device has no separate compute queue"
                                                 : "async compute is turned off"));
            plan_.uses_async_compute |= queue_[p] == Queue::AsyncCompute;
        }
    }

    // --- order ------------------------------------------------------------------------------
    // Declaration order is already topological (a pass can only use versions that exist), so the
    // order only moves async compute passes forward among the ready ones: the sooner the compute
    // queue gets its work, the more of it overlaps the graphics queue.
    void order() {
        const uint32_t n = uint32_t(g_.passes.size());
        std::vector<std::vector<uint32_t>> next(n);
        std::vector<uint32_t> indegree(n, 0);
        auto edge = [&](uint32_t from, uint32_t to) {
            if (from == no_index || from == to || !kept_[from] || !kept_[to]) return;
            next[from].push_back(to);
            ++indegree[to];
        };
        for (uint32_t p = 0; p < n; ++p) {
            if (!kept_[p]) continue;
            for (const Use& u : g_.passes[p].uses) {
                const ResourceDecl& r = g_.resources[u.resource];
                edge(r.writers[u.version_in], p); // after the version it sees (read after write)
                if (u.version_out == no_index) continue;
                for (uint32_t q = 0; q < n; ++q) { // after every reader of the version it replaces
                    const Use* other = g_.passes[q].find(u.resource);
                    if (q != p && other && other->version_in == u.version_in) edge(q, p);
                }
            }
        }
        std::vector<uint32_t> ready;
        for (uint32_t p = 0; p < n; ++p)
            if (kept_[p] && indegree[p] == 0) ready.push_back(p);
        auto before = [&](uint32_t a, uint32_t b) { // priority: async compute first, then declaration
            const bool aa = queue_[a] == Queue::AsyncCompute, ab = queue_[b] == Queue::AsyncCompute;
            return aa != ab ? aa : a < b;
        };
        std::vector<uint32_t> order;
        while (!ready.empty()) {
            const auto it = std::min_element(ready.begin(), ready.end(), before);
            const uint32_t p = *it;
            ready.erase(it);
            order.push_back(p);
            for (uint32_t q : next[p])
                if (--indegree[q] == 0) ready.push_back(q);
        }

        // Pseudo-passes where imported resources arrive (before everything) and leave (after).
        uint32_t arrive = 0, leave = 0;
        for (uint32_t r = 0; r < g_.resources.size(); ++r) {
            const ResourceDecl& res = g_.resources[r];
            if (!res.imported || !used_by_kept(r)) continue;
            arrive |= queue_bit(effective(res.incoming().queue));
            if (res.outgoing()) leave |= queue_bit(effective(res.outgoing()->queue));
        }
        for (Queue q : {Queue::Graphics, Queue::AsyncCompute})
            if (arrive & queue_bit(q)) {
                arrival_[size_t(q)] = uint32_t(plan_.passes.size());
                plan_.passes.push_back(
                    {.name = std::string("(arrival on ") + queue_name(q) + ")", .queue = q});
            }
        for (uint32_t p : order)
            plan_.passes.push_back({.pass = p, .name = g_.passes[p].name, .queue = queue_[p]});
        for (Queue q : {Queue::Graphics, Queue::AsyncCompute})
            if (leave & queue_bit(q)) {
                departure_[size_t(q)] = uint32_t(plan_.passes.size());
                plan_.passes.push_back(
                    {.name = std::string("(departure on ") + queue_name(q) + ")", .queue = q});
            }
    }

    bool used_by_kept(uint32_t resource) const {
        for (uint32_t p = 0; p < g_.passes.size(); ++p)
            if (kept_[p] && g_.passes[p].find(resource)) return true;
        return false;
    }

    // --- lifetimes --------------------------------------------------------------------------
    void lifetimes() {
        uses_.assign(g_.resources.size(), {});
        plan_.resources.resize(g_.resources.size());
        for (uint32_t r = 0; r < g_.resources.size(); ++r) {
            const ResourceDecl& d = g_.resources[r];
            PlannedResource& pr = plan_.resources[r];
            pr.name = d.name;
            pr.kind = d.kind;
            pr.imported = d.imported;
            pr.exclusive = d.exclusive();
            pr.format = d.kind == ResourceKind::Image ? d.format() : VK_FORMAT_UNDEFINED;
            pr.extent = resolve_extent(d, g_.desc);
            pr.size = resolve_size(d, g_.desc);
            if (d.imported && used_by_kept(r)) touch(pr, arrival_[size_t(effective(d.incoming().queue))]);
        }
        for (uint32_t pos = 0; pos < plan_.passes.size(); ++pos) {
            const PlannedPass& pp = plan_.passes[pos];
            if (pp.pass == no_index) continue;
            for (const Use& u : g_.passes[pp.pass].uses) {
                PlannedResource& pr = plan_.resources[u.resource];
                touch(pr, pos);
                pr.queues |= uint8_t(queue_bit(pp.queue));
                pr.image_usage |= u.image_usage;
                pr.buffer_usage |= u.buffer_usage;
                uses_[u.resource].push_back({.position = pos,
                                             .queue = pp.queue,
                                             .stages = u.stages,
                                             .access = u.access,
                                             .layout = u.layout,
                                             .family = family(pp.queue)});
            }
        }
        // The outgoing state is the last use: what the host does next.
        for (uint32_t r = 0; r < g_.resources.size(); ++r) {
            const ResourceDecl& d = g_.resources[r];
            if (!d.imported || !plan_.resources[r].used || !d.outgoing()) continue;
            const ResourceState& out = *d.outgoing();
            const Queue q = effective(out.queue);
            const uint32_t pos = departure_[size_t(q)];
            touch(plan_.resources[r], pos);
            uses_[r].push_back(
                {.position = pos,
                 .queue = q,
                 .stages = out.stages,
                 .access = out.access,
                 .layout = d.kind == ResourceKind::Image ? out.layout : VK_IMAGE_LAYOUT_UNDEFINED,
                 .family = out.family != VK_QUEUE_FAMILY_IGNORED ? out.family : family(q)});
        }
    }

    static void touch(PlannedResource& r, uint32_t position) {
        r.used = true;
        r.first = std::min(r.first, position);
        r.last = r.last == no_index ? position : std::max(r.last, position);
    }

    // --- alias memory -----------------------------------------------------------------------
    // Greedy, largest first: a transient joins the first heap of its kind and queue whose members
    // all live at other times. Resources used on both queues get memory of their own, because
    // sharing across queues would add a semaphore wait that serialises the overlap async compute
    // is for. Images and buffers never share a heap (no buffer-image granularity questions).
    void alias_memory() {
        std::vector<uint32_t> candidates;
        for (uint32_t r = 0; r < plan_.resources.size(); ++r) {
            PlannedResource& pr = plan_.resources[r];
            if (pr.imported || !pr.used) continue;
            pr.memory = plan_.options.memory_requirements ? plan_.options.memory_requirements(pr)
                                                          : estimate_memory(pr);
            plan_.transient_bytes += pr.memory.size;
            const bool one_queue =
                pr.queues == queue_bit(Queue::Graphics) || pr.queues == queue_bit(Queue::AsyncCompute);
            if (plan_.options.alias_memory && one_queue)
                candidates.push_back(r);
            else
                plan_.allocated_bytes += pr.memory.size;
        }
        std::stable_sort(candidates.begin(), candidates.end(), [&](uint32_t a, uint32_t b) {
            return plan_.resources[a].memory.size > plan_.resources[b].memory.size;
        });
        for (uint32_t r : candidates) {
            PlannedResource& pr = plan_.resources[r];
            const Queue q = pr.queues == queue_bit(Queue::Graphics) ? Queue::Graphics : Queue::AsyncCompute;
            uint32_t chosen = no_index;
            for (uint32_t h = 0; h < plan_.heaps.size() && chosen == no_index; ++h) {
                const AliasHeap& heap = plan_.heaps[h];
                if (heap.kind != pr.kind || heap.queue != q ||
                    !(heap.memory_type_bits & pr.memory.memoryTypeBits))
                    continue;
                const bool disjoint =
                    std::all_of(heap.resources.begin(), heap.resources.end(), [&](uint32_t o) {
                        const PlannedResource& other = plan_.resources[o];
                        return other.last < pr.first || pr.last < other.first;
                    });
                if (disjoint) chosen = h;
            }
            if (chosen == no_index) {
                chosen = uint32_t(plan_.heaps.size());
                plan_.heaps.push_back({.kind = pr.kind, .queue = q});
            }
            AliasHeap& heap = plan_.heaps[chosen];
            heap.size = std::max(heap.size, pr.memory.size);
            heap.alignment = std::max<uint64_t>(heap.alignment, pr.memory.alignment);
            heap.memory_type_bits &= pr.memory.memoryTypeBits;
            heap.resources.push_back(r);
            pr.heap = chosen;
        }
        for (AliasHeap& heap : plan_.heaps) {
            std::sort(heap.resources.begin(), heap.resources.end(), [&](uint32_t a, uint32_t b) {
                return plan_.resources[a].first < plan_.resources[b].first;
            });
            plan_.allocated_bytes += heap.size;
        }
    }

    // --- barriers ---------------------------------------------------------------------------
    // Each resource's uses are walked in plan order against a Track of its last write and the
    // reads since. fg::transition() decides what one queue needs between two accesses; on top of
    // it: consecutive reads share the first one's barrier, work on the other queue becomes a
    // semaphore dependency, and exclusive resources changing family get a release/acquire pair.
    void derive_barriers() {
        tracks_.assign(g_.resources.size(), {});
        std::vector<std::vector<std::pair<uint32_t, uint32_t>>> at(plan_.passes.size()); // (resource, use)
        for (uint32_t r = 0; r < uses_.size(); ++r)
            for (uint32_t k = 0; k < uses_[r].size(); ++k) at[uses_[r][k].position].push_back({r, k});
        for (uint32_t r = 0; r < g_.resources.size(); ++r) {
            const ResourceDecl& d = g_.resources[r];
            if (!d.imported || !plan_.resources[r].used) continue;
            // The host's hand-over counts as a write at the arrival point of its queue.
            const ResourceState& in = d.incoming();
            const Queue q = effective(in.queue);
            Track& t = tracks_[r];
            t.layout = d.kind == ResourceKind::Image ? in.layout : VK_IMAGE_LAYOUT_UNDEFINED;
            t.family = d.exclusive() ? (in.family != VK_QUEUE_FAMILY_IGNORED ? in.family : family(q))
                                     : VK_QUEUE_FAMILY_IGNORED;
            t.write_queue = q;
            t.write = {in.stages, in.access, arrival_[size_t(q)]};
        }
        for (uint32_t pos = 0; pos < plan_.passes.size(); ++pos)
            for (auto [r, k] : at[pos]) {
                if (k == 0) inherit_aliased_memory(r);
                apply_use(r, k);
            }
    }

    // A transient placed in memory another one used before starts from that one's last accesses,
    // with undefined contents: its first barrier then orders it after them.
    void inherit_aliased_memory(uint32_t r) {
        const PlannedResource& pr = plan_.resources[r];
        if (pr.heap == no_index) return;
        const auto& members = plan_.heaps[pr.heap].resources;
        const auto it = std::find(members.begin(), members.end(), r);
        if (it == members.begin()) return;
        tracks_[r] = tracks_[*(it - 1)];
        tracks_[r].layout = VK_IMAGE_LAYOUT_UNDEFINED;
    }

    void apply_use(uint32_t r, uint32_t k) {
        const PlannedResource& pr = plan_.resources[r];
        UseRef& u = uses_[r][k];
        Track& t = tracks_[r];
        const bool image = pr.kind == ResourceKind::Image;
        const bool ownership = pr.exclusive && t.family != VK_QUEUE_FAMILY_IGNORED && t.family != u.family;
        const bool layout_change = image && u.layout != t.layout;
        const bool departure = plan_.passes[u.position].pass == no_index;
        if (departure && image && u.layout == VK_IMAGE_LAYOUT_UNDEFINED) return; // contents not wanted
        if (departure && u.stages == VK_PIPELINE_STAGE_2_NONE && !layout_change && !ownership) return;
        if (!writes(u.access) && !layout_change && !ownership) return read(r, k);
        if (transition_at_writer(r, k)) return read(r, k);

        // A write, a layout transition or an ownership transfer: after everything since the last
        // write (the reads, or the write itself when nothing read it).
        const bool any_reads = t.reads[0].any() || t.reads[1].any();
        // What waits for the other queue: the use's stages, or everything when the host named
        // none (a departure for presentation).
        const VkPipelineStageFlags2 waiting = u.stages ? u.stages : VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
        Access before{VK_PIPELINE_STAGE_2_NONE, VK_ACCESS_2_NONE, t.layout};
        Frontier owner; // the latest accesses, on the queue that releases an exclusive resource
        Queue owner_queue = t.write_queue;
        bool same_queue = false, cross_queue = false;
        auto sync_with = [&](const Frontier& f, Queue q) {
            if (!f.any()) return;
            owner = f;
            owner_queue = q;
            if (f.stages == VK_PIPELINE_STAGE_2_NONE) return; // the host handed it over with nothing pending
            if (q == u.queue) {
                same_queue = true;
                before.stages |= f.stages;
                before.access |= any_reads ? VK_ACCESS_2_NONE : f.access; // write after read: execution only
            } else {
                cross_queue = true;
                depend(f.last, u.position, waiting);
            }
        };
        if (any_reads)
            for (Queue q : {Queue::Graphics, Queue::AsyncCompute}) sync_with(t.reads[size_t(q)], q);
        else
            sync_with(t.write, t.write_queue);
        if (ownership && owner.any() && owner_queue != u.queue) { // the acquire must follow the release
            cross_queue = true;
            depend(owner.last, u.position, waiting);
        }
        if (cross_queue) before.stages |= waiting; // chains with the semaphore wait's stages

        Access after{u.stages, u.access, image ? u.layout : VK_IMAGE_LAYOUT_UNDEFINED};
        if (!writes(u.access)) widen_to_following_reads(r, k, u.queue, after);
        const bool acquire_here = u.family == family(u.queue); // not a hand-back to a foreign family
        if (ownership) {
            // Release on the owner's queue after its last access (unless the owner is a family of
            // the host's, which released it itself), acquire here with the same layouts.
            if (owner.any() && t.family == family(owner_queue)) {
                const Barrier release{r,
                                      owner.stages,
                                      owner.access & write_access(owner.access),
                                      VK_PIPELINE_STAGE_2_NONE,
                                      VK_ACCESS_2_NONE,
                                      t.layout,
                                      after.layout,
                                      t.family,
                                      u.family};
                plan_.passes[owner.last].after.push_back(release);
            }
            if (acquire_here)
                emit(u.position, {r, waiting, VK_ACCESS_2_NONE, after.stages, after.access, t.layout,
                                  after.layout, t.family, u.family});
        } else if (layout_change || same_queue) {
            if (auto tr = transition(before, after))
                emit(u.position, {r, tr->src_stages, tr->src_access, tr->dst_stages, tr->dst_access,
                                  tr->old_layout, tr->new_layout});
        }
        // Otherwise only the other queue came before: the semaphore wait is all it takes.

        t.layout = after.layout;
        t.family = pr.exclusive ? u.family : VK_QUEUE_FAMILY_IGNORED;
        t.write_queue = u.queue;
        t.write = {};
        t.write.add(u.stages, u.access, u.position);
        t.reads = {};
        if (!writes(u.access)) t.reads[size_t(u.queue)].add(after.stages, after.access, u.position);
    }

    void read(uint32_t r, uint32_t k) {
        UseRef& u = uses_[r][k];
        Track& t = tracks_[r];
        if (!u.covered && t.write.any()) {
            if (t.write_queue == u.queue) {
                if (writes(t.write.access)) { // read after write on this queue
                    Access after{u.stages, u.access, u.layout};
                    widen_to_following_reads(r, k, u.queue, after);
                    const Access before{t.write.stages, t.write.access, t.layout};
                    if (auto tr = transition(before, after))
                        emit(u.position, {r, tr->src_stages, tr->src_access, tr->dst_stages, tr->dst_access,
                                          tr->old_layout, tr->new_layout});
                }
            } else if (t.write.stages != VK_PIPELINE_STAGE_2_NONE) {
                // Written (or transitioned) on the other queue: the semaphore makes it visible.
                depend(t.write.last, u.position, u.stages);
            }
        }
        t.reads[size_t(u.queue)].add(u.stages, u.access, u.position);
    }

    // Reads that follow on the same queue in the same layout and family, before anything writes,
    // join this barrier: consecutive reads share one barrier.
    // Reads that follow on `queue` in the same layout and family, before anything writes, join this
    // barrier: consecutive reads share one barrier. Returns how many joined.
    uint32_t widen_to_following_reads(uint32_t r, uint32_t k, Queue queue, Access& after) {
        const UseRef& u = uses_[r][k];
        const bool exclusive = plan_.resources[r].exclusive;
        uint32_t joined = 0;
        for (uint32_t j = k + 1; j < uses_[r].size(); ++j) {
            UseRef& next = uses_[r][j];
            if (writes(next.access) || next.layout != after.layout) break;
            if (exclusive && next.family != u.family) break;
            if (next.queue != queue) continue;
            if (plan_.passes[next.position].pass == no_index) break; // departures are their own step
            after.stages |= next.stages;
            after.access |= next.access;
            next.covered = true;
            ++joined;
        }
        return joined;
    }

    // Readers on both queues, in one layout, after a write: the transition is made on the writer's
    // queue right after the write (with the writer's queue's readers in it), so the other queue's
    // readers wait only for the writer and never for each other's batches.
    bool transition_at_writer(uint32_t r, uint32_t k) {
        const UseRef& u = uses_[r][k];
        Track& t = tracks_[r];
        const bool image = plan_.resources[r].kind == ResourceKind::Image;
        if (!image || plan_.resources[r].exclusive || writes(u.access) || u.layout == t.layout ||
            t.write_queue == u.queue || !writes(t.write.access) || t.reads[0].any() || t.reads[1].any() ||
            plan_.passes[t.write.last].pass == no_index)
            return false;
        Access after{VK_PIPELINE_STAGE_2_NONE, VK_ACCESS_2_NONE, u.layout};
        if (widen_to_following_reads(r, k, t.write_queue, after) == 0)
            return false; // only this queue reads it: the reader transitions it
        const Access before{t.write.stages, t.write.access, t.layout};
        if (auto tr = transition(before, after))
            plan_.passes[t.write.last].after.push_back({r, tr->src_stages, tr->src_access, tr->dst_stages,
                                                        tr->dst_access, tr->old_layout, tr->new_layout});
        t.layout = u.layout;
        return true;
    }

    static VkAccessFlags2 write_access(VkAccessFlags2 access) {
        return writes(access) ? access : VK_ACCESS_2_NONE;
    }

    void emit(uint32_t position, const Barrier& b) { plan_.passes[position].before.push_back(b); }

    void depend(uint32_t from, uint32_t to, VkPipelineStageFlags2 stages) {
        if (from == no_index || plan_.passes[from].queue == plan_.passes[to].queue) return;
        deps_.push_back({from, to, stages});
    }

    // --- drop empty boundaries ----------------------------------------------------------------
    void drop_empty_boundaries() {
        const uint32_t n = uint32_t(plan_.passes.size());
        std::vector<bool> needed(n, true);
        for (uint32_t pos = 0; pos < n; ++pos) {
            const PlannedPass& pp = plan_.passes[pos];
            if (pp.pass != no_index) continue;
            needed[pos] = !pp.before.empty() || !pp.after.empty() ||
                          std::any_of(deps_.begin(), deps_.end(),
                                      [&](const Dependency& d) { return d.from == pos || d.to == pos; });
        }
        std::vector<uint32_t> remap(n, no_index);
        std::vector<PlannedPass> kept;
        for (uint32_t pos = 0; pos < n; ++pos) {
            if (!needed[pos]) continue;
            remap[pos] = uint32_t(kept.size());
            kept.push_back(std::move(plan_.passes[pos]));
        }
        plan_.passes = std::move(kept);
        for (Dependency& d : deps_) {
            d.from = remap[d.from];
            d.to = remap[d.to];
        }
        // Lifetimes that began or ended at a dropped boundary shrink to the passes that remain.
        for (PlannedResource& r : plan_.resources) {
            if (!r.used) continue;
            uint32_t first = no_index, last = no_index;
            for (uint32_t pos = r.first; pos <= r.last; ++pos)
                if (remap[pos] != no_index) {
                    first = std::min(first, remap[pos]);
                    last = remap[pos];
                }
            r.first = first;
            r.last = last;
        }
    }

    // --- batches ----------------------------------------------------------------------------
    // Passes go into the open batch of their queue until one depends on a batch of the other
    // queue: that batch is closed (so it is submitted and can signal), and if the waiting queue's
    // open batch already holds passes it is closed too, so the wait delays only what needs it.
    // Batches are submitted in the order they were closed, which puts every signal before its wait.
    void form_batches() {
        struct Open {
            uint32_t batch = no_index;
        };
        std::vector<Batch> batches;
        std::vector<uint32_t> closed_order;
        std::array<Open, queue_count> open;
        std::vector<uint32_t> batch_of(plan_.passes.size(), no_index);
        auto close = [&](Queue q) {
            if (open[size_t(q)].batch == no_index) return;
            closed_order.push_back(open[size_t(q)].batch);
            open[size_t(q)].batch = no_index;
        };
        for (uint32_t pos = 0; pos < plan_.passes.size(); ++pos) {
            const Queue q = plan_.passes[pos].queue;
            std::vector<BatchWait> waits;
            for (const Dependency& d : deps_) {
                if (d.to != pos) continue;
                const uint32_t b = batch_of[d.from];
                if (open[size_t(batches[b].queue)].batch == b) close(batches[b].queue);
                const auto it = std::find_if(waits.begin(), waits.end(),
                                             [&](const BatchWait& w) { return w.batch == b; });
                if (it == waits.end())
                    waits.push_back({b, d.stages});
                else
                    it->stages |= d.stages;
            }
            uint32_t& current = open[size_t(q)].batch;
            if (current != no_index && !waits.empty()) {
                const auto& have = batches[current].waits;
                const bool all_there = std::all_of(waits.begin(), waits.end(), [&](const BatchWait& w) {
                    return std::any_of(have.begin(), have.end(),
                                       [&](const BatchWait& h) { return h.batch == w.batch; });
                });
                if (!all_there) close(q);
            }
            if (current == no_index) {
                current = uint32_t(batches.size());
                batches.push_back({.queue = q});
            }
            Batch& batch = batches[current];
            for (const BatchWait& w : waits) {
                const auto it = std::find_if(batch.waits.begin(), batch.waits.end(),
                                             [&](const BatchWait& h) { return h.batch == w.batch; });
                if (it == batch.waits.end())
                    batch.waits.push_back(w);
                else
                    it->stages |= w.stages;
            }
            batch.passes.push_back(pos);
            batch_of[pos] = current;
        }
        // The open batches close in the order their work began.
        const uint32_t g = open[size_t(Queue::Graphics)].batch, c = open[size_t(Queue::AsyncCompute)].batch;
        const bool graphics_first =
            c == no_index || (g != no_index && batches[g].passes[0] < batches[c].passes[0]);
        close(graphics_first ? Queue::Graphics : Queue::AsyncCompute);
        close(graphics_first ? Queue::AsyncCompute : Queue::Graphics);

        // Renumber in submission order; of several waits on one queue keep the latest (timeline
        // values only grow, so waiting for it covers the earlier ones).
        std::vector<uint32_t> rank(batches.size());
        for (uint32_t i = 0; i < closed_order.size(); ++i) rank[closed_order[i]] = i;
        for (uint32_t i : closed_order) {
            Batch b = batches[i];
            std::vector<BatchWait> waits;
            for (BatchWait w : b.waits) {
                w.batch = rank[w.batch];
                const Queue wq = batches[closed_order[w.batch]].queue;
                const auto it = std::find_if(waits.begin(), waits.end(), [&](const BatchWait& o) {
                    return batches[closed_order[o.batch]].queue == wq;
                });
                if (it == waits.end())
                    waits.push_back(w);
                else {
                    it->batch = std::max(it->batch, w.batch);
                    it->stages |= w.stages;
                }
            }
            b.waits = std::move(waits);
            for (uint32_t pos : b.passes) plan_.passes[pos].batch = uint32_t(plan_.batches.size());
            plan_.batches.push_back(std::move(b));
        }
    }

    const FrameGraph::Impl& g_;
    Plan plan_;
    std::vector<bool> kept_;
    std::vector<Queue> queue_;
    std::array<uint32_t, queue_count> arrival_{no_index, no_index};
    std::array<uint32_t, queue_count> departure_{no_index, no_index};
    std::vector<std::vector<UseRef>> uses_;
    std::vector<Track> tracks_;
    std::vector<Dependency> deps_;
};

} // namespace

const Plan& FrameGraph::compile(const CompileOptions& options) {
    impl_->plan = Compiler(*impl_, options).compile();
    impl_->compiled_generation = impl_->generation;
    static std::atomic<uint64_t> serials{0};
    impl_->serial = ++serials;
    return *impl_->plan;
}

uint32_t Plan::position(const std::string& pass_name) const {
    for (uint32_t i = 0; i < passes.size(); ++i)
        if (passes[i].name == pass_name) return i;
    return no_index;
}

} // namespace vkml::fg
