#include "vkml/gpu/profiler.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

#include "vkml/error.hpp"
#include "vkml/gpu/command.hpp"

namespace vkml::gpu {

namespace {
std::string json_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += c;
            }
        }
    }
    return out;
}
} // namespace

std::string timing_table(const std::vector<TimingRecord>& records) {
    double total = 0;
    size_t width = 5; // "total"
    for (const auto& r : records) {
        total += r.duration_us;
        width = std::max(width, printable(r.name).size());
    }
    // Names are padded by hand so that no name is too long for the numeric columns' buffer.
    auto row = [&](const std::string& name, const char* numbers) {
        return name + std::string(width - std::min(width, name.size()), ' ') + numbers;
    };
    std::string out;
    char cols[160];
    std::snprintf(cols, sizeof cols, "  %-8s  %10s  %10s  %6s\n", "queue", "start ms", "time ms", "share");
    out += row("pass", cols);
    for (const auto& r : records) {
        std::snprintf(cols, sizeof cols, "  %-8s  %10.3f  %10.3f  %5.1f%%\n", queue_role_name(r.queue),
                      r.start_us / 1000.0, r.duration_us / 1000.0,
                      total > 0 ? 100.0 * r.duration_us / total : 0.0);
        out += row(printable(r.name), cols);
    }
    std::snprintf(cols, sizeof cols, "  %-8s  %10s  %10.3f  %5.1f%%\n", "", "", total / 1000.0, 100.0);
    out += row("total", cols);
    return out;
}

std::string chrome_trace_json(const std::vector<TimingRecord>& records) {
    std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    bool first = true;
    char buf[256];
    for (size_t q = 0; q < queue_role_count; ++q) { // one named track per queue
        std::snprintf(buf, sizeof buf,
                      "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%zu,\"args\":{\"name\":\"%"
                      "s queue\"}}",
                      first ? "" : ",\n", q, queue_role_name(QueueRole(q)));
        out += buf;
        first = false;
    }
    for (const auto& r : records) {
        std::snprintf(
            buf, sizeof buf,
            ",\n{\"ph\":\"X\",\"cat\":\"gpu\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"",
            unsigned(r.queue), r.start_us, r.duration_us);
        out += buf;
        out += json_escape(r.name);
        out += "\"}";
    }
    out += "\n]}\n";
    return out;
}

Profiler::Profiler(Device& device, uint32_t max_scopes, std::string name)
    : device_(device), name_(std::move(name)), min_capacity_(max_scopes * 2) {
    supported_ = device.caps().timestamps && device.caps().timestamp_period_ns > 0;
}

Profiler::~Profiler() {
    for (Pool& p : pools_)
        if (p.pool)
            device_.retire([vk = device_.vk(), pool = p.pool] { vkDestroyQueryPool(vk, pool, nullptr); });
}

void Profiler::reset(CommandBuffer& cmd, uint32_t scopes) {
    const QueueRole role = cmd.role();
    std::erase_if(scopes_, [&](const Scope& s) { return s.queue == role; });
    open_[size_t(role)].clear();
    Pool& p = pools_[size_t(role)];
    p.used = 0;
    if (!supported_) return;
    const uint32_t want = std::max({min_capacity_, scopes * 2, 2u});
    if (p.capacity < want) {
        if (p.pool)
            device_.retire([vk = device_.vk(), pool = p.pool] { vkDestroyQueryPool(vk, pool, nullptr); });
        p = Pool{};
        VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
        ci.queryCount = want;
        check_vk(vkCreateQueryPool(device_.vk(), &ci, nullptr, &p.pool), "vkCreateQueryPool");
        p.capacity = want;
        device_.set_debug_name(VK_OBJECT_TYPE_QUERY_POOL, p.pool,
                               name_ + " (" + queue_role_name(role) + " queue)");
    }
    vkCmdResetQueryPool(cmd.vk(), p.pool, 0, p.capacity);
}

bool Profiler::begin(CommandBuffer& cmd, std::string_view name) {
    const QueueRole role = cmd.role();
    Pool& p = pools_[size_t(role)];
    const auto& fam = device_.caps().queue_families[device_.queue_family(role)];
    if (!supported_ || !p.pool || p.used + 2 > p.capacity || fam.timestamp_valid_bits == 0) {
        open_[size_t(role)].push_back(no_scope);
        return false;
    }
    vkCmdWriteTimestamp2(cmd.vk(), VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, p.pool, p.used);
    scopes_.push_back({std::string(name), role, p.used, false});
    p.used += 2;
    open_[size_t(role)].push_back(scopes_.size() - 1);
    return true;
}

void Profiler::end(CommandBuffer& cmd) {
    const QueueRole role = cmd.role();
    auto& open = open_[size_t(role)];
    if (open.empty()) return;
    const size_t index = open.back();
    open.pop_back();
    if (index == no_scope) return;
    Scope& s = scopes_[index];
    vkCmdWriteTimestamp2(cmd.vk(), VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, pools_[size_t(role)].pool,
                         s.query + 1);
    s.closed = true;
}

std::vector<TimingRecord> Profiler::results() const {
    return *read(true);
}

std::optional<std::vector<TimingRecord>> Profiler::poll() const {
    return read(false);
}

std::optional<std::vector<TimingRecord>> Profiler::read(bool wait) const {
    std::vector<TimingRecord> out;
    if (!supported_) return out;
    // Only closed scopes are read (an open one's end was never written: waiting for it would
    // never return), each as its own pair of queries.
    struct Ticks {
        uint64_t begin, end;
    };
    std::vector<Ticks> ticks(scopes_.size());
    uint64_t origin = std::numeric_limits<uint64_t>::max();
    auto mask_of = [&](QueueRole q) {
        const uint32_t bits = device_.caps().queue_families[device_.queue_family(q)].timestamp_valid_bits;
        return bits >= 64 ? ~0ull : (1ull << bits) - 1;
    };
    for (size_t i = 0; i < scopes_.size(); ++i) {
        const Scope& s = scopes_[i];
        if (!s.closed) continue;
        uint64_t pair[2] = {};
        const VkResult r = vkGetQueryPoolResults(
            device_.vk(), pools_[size_t(s.queue)].pool, s.query, 2, sizeof pair, pair, sizeof(uint64_t),
            VK_QUERY_RESULT_64_BIT | (wait ? VK_QUERY_RESULT_WAIT_BIT : 0));
        if (r == VK_NOT_READY) return std::nullopt;
        check_vk(r, "vkGetQueryPoolResults");
        const uint64_t mask = mask_of(s.queue);
        ticks[i] = {pair[0] & mask, pair[1] & mask};
        origin = std::min(origin, ticks[i].begin);
    }
    const double ns_per_tick = device_.caps().timestamp_period_ns;
    for (size_t i = 0; i < scopes_.size(); ++i) {
        const Scope& s = scopes_[i];
        if (!s.closed) continue;
        const uint64_t mask = mask_of(s.queue);
        TimingRecord r;
        r.name = s.name;
        r.queue = s.queue;
        r.start_us = double((ticks[i].begin - origin) & mask) * ns_per_tick / 1000.0;
        r.duration_us = double((ticks[i].end - ticks[i].begin) & mask) * ns_per_tick / 1000.0;
        out.push_back(std::move(r));
    }
    return out;
}

} // namespace vkml::gpu
