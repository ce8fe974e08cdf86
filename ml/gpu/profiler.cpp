#include "vkml/gpu/profiler.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

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

Profiler::Profiler(Device& device, uint32_t max_scopes) : device_(device), capacity_(max_scopes * 2) {
    supported_ = device.caps().timestamps && device.caps().timestamp_period_ns > 0;
    if (!supported_) return;
    VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    ci.queryCount = capacity_;
    check_vk(vkCreateQueryPool(device.vk(), &ci, nullptr, &pool_), "vkCreateQueryPool");
}

Profiler::~Profiler() {
    if (pool_) device_.retire([vk = device_.vk(), pool = pool_] { vkDestroyQueryPool(vk, pool, nullptr); });
}

void Profiler::reset(CommandBuffer& cmd) {
    scopes_.clear();
    open_.clear();
    if (pool_) vkCmdResetQueryPool(cmd.vk(), pool_, 0, capacity_);
}

bool Profiler::begin(CommandBuffer& cmd, std::string_view name) {
    const uint32_t query = uint32_t(scopes_.size() * 2);
    if (!supported_ || query + 2 > capacity_) return false;
    const auto& fam = device_.caps().queue_families[device_.queue_family(cmd.role())];
    if (fam.timestamp_valid_bits == 0) return false;
    vkCmdWriteTimestamp2(cmd.vk(), VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, pool_, query);
    scopes_.push_back({std::string(name), cmd.role(), query, false});
    open_.push_back(scopes_.size() - 1);
    return true;
}

void Profiler::end(CommandBuffer& cmd) {
    if (open_.empty()) return;
    Scope& s = scopes_[open_.back()];
    open_.pop_back();
    vkCmdWriteTimestamp2(cmd.vk(), VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, pool_, s.query + 1);
    s.closed = true;
}

std::vector<TimingRecord> Profiler::results() const {
    std::vector<TimingRecord> out;
    if (!supported_ || scopes_.empty()) return out;
    std::vector<uint64_t> ticks(scopes_.size() * 2);
    check_vk(vkGetQueryPoolResults(device_.vk(), pool_, 0, uint32_t(ticks.size()),
                                   ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
             "vkGetQueryPoolResults");
    const double ns_per_tick = device_.caps().timestamp_period_ns;
    uint64_t origin = std::numeric_limits<uint64_t>::max();
    for (const Scope& s : scopes_)
        if (s.closed) origin = std::min(origin, ticks[s.query]);
    for (const Scope& s : scopes_) {
        if (!s.closed) continue;
        const uint32_t bits =
            device_.caps().queue_families[device_.queue_family(s.queue)].timestamp_valid_bits;
        const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
        const uint64_t begin = ticks[s.query] & mask, end = ticks[s.query + 1] & mask;
        TimingRecord r;
        r.name = s.name;
        r.queue = s.queue;
        r.start_us = double((begin - (origin & mask)) & mask) * ns_per_tick / 1000.0;
        r.duration_us = double((end - begin) & mask) * ns_per_tick / 1000.0;
        out.push_back(std::move(r));
    }
    return out;
}

} // namespace vkml::gpu
