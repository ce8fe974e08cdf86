#include "vkml/gpu/profiler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using vkml::gpu::chrome_trace_json;
using vkml::gpu::QueueRole;
using vkml::gpu::timing_table;
using vkml::gpu::TimingRecord;

namespace {

// A JSON value, as far as these tests need to look into one.
struct Json {
    enum class Kind { Null, Bool, Number, String, Array, Object };
    Kind kind = Kind::Null;
    bool boolean = false;
    double number = 0;
    std::string string;
    std::vector<Json> items;
    std::vector<std::pair<std::string, Json>> members;

    const Json* find(std::string_view key) const {
        for (const auto& [k, v] : members)
            if (k == key) return &v;
        return nullptr;
    }
};

// A strict RFC 8259 recursive-descent parser: anything it accepts is valid JSON, and it rejects
// what lenient parsers let through (trailing commas, raw control characters in strings, leading
// zeros, single quotes, unknown escapes, trailing text).
class JsonParser {
public:
    static std::optional<Json> parse(std::string_view text) {
        JsonParser p(text);
        Json v;
        p.skip_space();
        if (!p.value(v, 0)) return std::nullopt;
        p.skip_space();
        if (p.pos_ != text.size()) return std::nullopt;
        return v;
    }

private:
    explicit JsonParser(std::string_view text) : s_(text) {}

    bool at_end() const { return pos_ >= s_.size(); }
    char peek() const { return at_end() ? '\0' : s_[pos_]; }
    bool eat(char c) {
        if (at_end() || s_[pos_] != c) return false;
        ++pos_;
        return true;
    }
    void skip_space() {
        while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }
    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }
    static bool is_digit(char c) { return c >= '0' && c <= '9'; }

    bool value(Json& out, int depth) {
        if (depth > 64) return false;
        switch (peek()) {
        case '{':
            return object(out, depth);
        case '[':
            return array(out, depth);
        case '"':
            out.kind = Json::Kind::String;
            return string(out.string);
        case 't':
            out.kind = Json::Kind::Bool;
            out.boolean = true;
            return literal("true");
        case 'f':
            out.kind = Json::Kind::Bool;
            return literal("false");
        case 'n':
            return literal("null");
        default:
            out.kind = Json::Kind::Number;
            return number(out.number);
        }
    }

    bool object(Json& out, int depth) {
        out.kind = Json::Kind::Object;
        eat('{');
        skip_space();
        if (eat('}')) return true;
        do {
            skip_space();
            std::string key;
            if (peek() != '"' || !string(key)) return false;
            skip_space();
            if (!eat(':')) return false;
            skip_space();
            Json v;
            if (!value(v, depth + 1)) return false;
            out.members.emplace_back(std::move(key), std::move(v));
            skip_space();
        } while (eat(','));
        return eat('}');
    }

    bool array(Json& out, int depth) {
        out.kind = Json::Kind::Array;
        eat('[');
        skip_space();
        if (eat(']')) return true;
        do {
            skip_space();
            Json v;
            if (!value(v, depth + 1)) return false;
            out.items.push_back(std::move(v));
            skip_space();
        } while (eat(','));
        return eat(']');
    }

    bool string(std::string& out) {
        eat('"');
        while (!at_end()) {
            const char c = s_[pos_++];
            if (c == '"') return true;
            if (static_cast<unsigned char>(c) < 0x20) return false;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (at_end()) return false;
            const char e = s_[pos_++];
            constexpr std::string_view simple = "\"\\/bfnrt", decoded = "\"\\/\b\f\n\r\t";
            if (const size_t i = simple.find(e); i != std::string_view::npos) {
                out += decoded[i];
                continue;
            }
            if (e != 'u' || pos_ + 4 > s_.size()) return false;
            unsigned cp = 0;
            for (int i = 0; i < 4; ++i) {
                const char h = s_[pos_++];
                const int d = is_digit(h)              ? h - '0'
                              : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                              : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                       : -1;
                if (d < 0) return false;
                cp = cp * 16 + unsigned(d);
            }
            // UTF-8 for the basic plane is enough here; surrogates are kept as they come.
            if (cp < 0x80) {
                out += char(cp);
            } else if (cp < 0x800) {
                out += char(0xc0 | (cp >> 6));
                out += char(0x80 | (cp & 0x3f));
            } else {
                out += char(0xe0 | (cp >> 12));
                out += char(0x80 | ((cp >> 6) & 0x3f));
                out += char(0x80 | (cp & 0x3f));
            }
        }
        return false; // unterminated
    }

    bool number(double& out) {
        const size_t start = pos_;
        eat('-');
        if (eat('0')) {
            // a leading zero stands alone
        } else if (is_digit(peek()) && peek() != '0') {
            while (is_digit(peek())) ++pos_;
        } else {
            return false;
        }
        if (eat('.')) {
            if (!is_digit(peek())) return false;
            while (is_digit(peek())) ++pos_;
        }
        if (eat('e') || eat('E')) {
            if (!eat('+')) eat('-');
            if (!is_digit(peek())) return false;
            while (is_digit(peek())) ++pos_;
        }
        out = std::strtod(std::string(s_.substr(start, pos_ - start)).c_str(), nullptr);
        return true;
    }

    std::string_view s_;
    size_t pos_ = 0;
};

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::vector<std::string> split_words(const std::string& line) {
    std::vector<std::string> words;
    std::istringstream in(line);
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

const std::vector<TimingRecord> kRecords = {
    {"upscale", QueueRole::Compute, 0.0, 1500.0},
    {"shadow_map", QueueRole::Graphics, 100.0, 500.0},
    {"copy_out", QueueRole::Transfer, 1600.0, 250.0},
    {"tonemap", QueueRole::Graphics, 2000.0, 750.0},
};

// The "X" (complete) events of a trace, in order, after checking the trace's overall shape.
std::vector<const Json*> complete_events(const Json& trace) {
    std::vector<const Json*> out;
    EXPECT_EQ(trace.kind, Json::Kind::Object);
    const Json* events = trace.find("traceEvents");
    EXPECT_NE(events, nullptr);
    if (!events) return out;
    EXPECT_EQ(events->kind, Json::Kind::Array);
    for (const Json& e : events->items) {
        EXPECT_EQ(e.kind, Json::Kind::Object);
        const Json* ph = e.find("ph");
        EXPECT_NE(ph, nullptr);
        if (ph && ph->string == "X") out.push_back(&e);
    }
    return out;
}

} // namespace

TEST(JsonChecker, AcceptsValidAndRejectsInvalid) {
    // The checker must be strict, or the tests that use it prove nothing.
    for (const char* good :
         {"{}", "[]", " [1, -0.5, 2e10, 1E-3, 0, true, false, null] ", "{\"a\":{\"b\":[\"\"]}}",
          "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"", "-0", "123"}) {
        EXPECT_TRUE(JsonParser::parse(good).has_value()) << good;
    }
    for (const char* bad :
         {"",      "{",     "[1,]",  "{\"a\":1,}", "{'a':1}", "{\"a\" 1}", "{a:1}",     "[01]",
          "[1.]",  "[.5]",  "[-]",   "[+1]",       "[1e]",    "\"\t\"",    "\"\\x41\"", "\"\\u12g4\"",
          "\"abc", "{} {}", "[1] x", "[nul]",      "[True]",  "[NaN]",     "[1,,2]"}) {
        EXPECT_FALSE(JsonParser::parse(bad).has_value()) << bad;
    }
    const auto v = JsonParser::parse("{\"k\":[1.5,\"a\\u00e9\\n\"]}");
    ASSERT_TRUE(v.has_value());
    const Json* k = v->find("k");
    ASSERT_NE(k, nullptr);
    ASSERT_EQ(k->items.size(), 2u);
    EXPECT_EQ(k->items[0].number, 1.5);
    EXPECT_EQ(k->items[1].string, "a\xc3\xa9\n");
}

TEST(ProfilerFormat, TableHasHeaderRowsInOrderAndTotal) {
    const std::string table = timing_table(kRecords);
    ASSERT_FALSE(table.empty());
    EXPECT_EQ(table.back(), '\n');
    const auto lines = split_lines(table);
    ASSERT_EQ(lines.size(), kRecords.size() + 2);

    EXPECT_EQ(split_words(lines[0]),
              (std::vector<std::string>{"pass", "queue", "start", "ms", "time", "ms", "share"}));

    // name, queue, start ms, time ms, share of the total time (3000 us).
    const std::vector<std::vector<std::string>> expected = {
        {"upscale", "compute", "0.000", "1.500", "50.0%"},
        {"shadow_map", "graphics", "0.100", "0.500", "16.7%"},
        {"copy_out", "transfer", "1.600", "0.250", "8.3%"},
        {"tonemap", "graphics", "2.000", "0.750", "25.0%"},
    };
    double share_sum = 0;
    for (size_t i = 0; i < kRecords.size(); ++i) {
        const auto words = split_words(lines[i + 1]);
        EXPECT_EQ(words, expected[i]) << lines[i + 1];
        ASSERT_EQ(words.size(), 5u);
        share_sum += std::strtod(words[4].c_str(), nullptr);
    }
    EXPECT_NEAR(share_sum, 100.0, 0.05 * kRecords.size()); // printed shares are rounded to 0.1

    const auto total = split_words(lines.back());
    EXPECT_EQ(total, (std::vector<std::string>{"total", "3.000", "100.0%"})) << lines.back();

    // Columns line up: every line is as long as the header, and the share column ends at the end.
    for (const auto& line : lines) EXPECT_EQ(line.size(), lines[0].size()) << '"' << line << '"';
}

TEST(ProfilerFormat, TableOfNothing) {
    const auto lines = split_lines(timing_table({}));
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(split_words(lines[0])[0], "pass");
    EXPECT_EQ(split_words(lines[1]), (std::vector<std::string>{"total", "0.000", "100.0%"}));
}

TEST(ProfilerFormat, TableWithZeroTotalHasNoNan) {
    const std::vector<TimingRecord> records = {{"empty_a", QueueRole::Compute, 0, 0},
                                               {"empty_b", QueueRole::Transfer, 5, 0}};
    const std::string table = timing_table(records);
    EXPECT_EQ(table.find("nan"), std::string::npos) << table;
    EXPECT_EQ(table.find("inf"), std::string::npos) << table;
    const auto lines = split_lines(table);
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(split_words(lines[1]).back(), "0.0%");
    EXPECT_EQ(split_words(lines[2]).back(), "0.0%");
}

TEST(ProfilerFormat, TableWidensForLongNames) {
    const std::string long_name(40, 'x');
    const std::vector<TimingRecord> records = {{"short_one", QueueRole::Compute, 0, 10},
                                               {long_name, QueueRole::Graphics, 10, 30}};
    const auto lines = split_lines(timing_table(records));
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(split_words(lines[2]),
              (std::vector<std::string>{long_name, "graphics", "0.010", "0.030", "75.0%"}));
    for (const auto& line : lines) EXPECT_EQ(line.size(), lines[0].size()) << '"' << line << '"';
}

// Known bug (timing_table): when every name is shorter than "total", the name column is only as
// wide as the longest name, so the total row comes out one character wider than the others and its
// columns are shifted right. Enable once fixed (width should start at 5).
TEST(ProfilerFormat, TableAlignedWithShortNames) {
    const std::vector<TimingRecord> records = {{"a", QueueRole::Compute, 0, 10},
                                               {"bb", QueueRole::Graphics, 10, 30}};
    const auto lines = split_lines(timing_table(records));
    ASSERT_EQ(lines.size(), 4u);
    for (const auto& line : lines) EXPECT_EQ(line.size(), lines[0].size()) << '"' << line << '"';
}

// Known bug (timing_table): each line is formatted into a fixed 512-byte buffer, so once a name is
// longer than about 450 characters every line (header and total too, being padded to that width)
// is cut off, losing its numbers and its newline: the table comes out as one line. Enable once
// fixed.
TEST(ProfilerFormat, TableKeepsVeryLongNamesWhole) {
    const std::string long_name(600, 'n');
    const std::vector<TimingRecord> records = {{long_name, QueueRole::Compute, 0, 10},
                                               {"next", QueueRole::Graphics, 10, 30}};
    const auto lines = split_lines(timing_table(records));
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(split_words(lines[1]),
              (std::vector<std::string>{long_name, "compute", "0.000", "0.010", "25.0%"}));
    EXPECT_EQ(split_words(lines[2])[0], "next");
}

TEST(ProfilerFormat, ChromeTraceIsValidJsonWithOneEventPerRecord) {
    const std::string json = chrome_trace_json(kRecords);
    const auto trace = JsonParser::parse(json);
    ASSERT_TRUE(trace.has_value()) << json;
    const auto events = complete_events(*trace);
    ASSERT_EQ(events.size(), kRecords.size()) << json;
    for (size_t i = 0; i < kRecords.size(); ++i) {
        const Json& e = *events[i];
        const TimingRecord& r = kRecords[i];
        ASSERT_NE(e.find("name"), nullptr);
        ASSERT_NE(e.find("ts"), nullptr);
        ASSERT_NE(e.find("dur"), nullptr);
        ASSERT_NE(e.find("tid"), nullptr);
        ASSERT_NE(e.find("pid"), nullptr);
        EXPECT_EQ(e.find("name")->string, r.name);
        EXPECT_EQ(e.find("ts")->kind, Json::Kind::Number);
        EXPECT_NEAR(e.find("ts")->number, r.start_us, 1e-3) << r.name;
        EXPECT_NEAR(e.find("dur")->number, r.duration_us, 1e-3) << r.name;
        EXPECT_EQ(e.find("tid")->number, static_cast<double>(r.queue)) << r.name;
    }
}

TEST(ProfilerFormat, ChromeTraceKeepsFractionalMicroseconds) {
    const std::vector<TimingRecord> records = {{"op", QueueRole::Transfer, 12.345, 0.5}};
    const auto trace = JsonParser::parse(chrome_trace_json(records));
    ASSERT_TRUE(trace.has_value());
    const auto events = complete_events(*trace);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_NEAR(events[0]->find("ts")->number, 12.345, 1e-6);
    EXPECT_NEAR(events[0]->find("dur")->number, 0.5, 1e-6);
    EXPECT_EQ(events[0]->find("tid")->number, 2.0);
}

TEST(ProfilerFormat, ChromeTraceNamesEveryQueueTrack) {
    for (const auto& records : {std::vector<TimingRecord>{}, kRecords}) {
        const std::string json = chrome_trace_json(records);
        const auto trace = JsonParser::parse(json);
        ASSERT_TRUE(trace.has_value()) << json;
        const Json* events = trace->find("traceEvents");
        ASSERT_NE(events, nullptr);
        for (size_t q = 0; q < vkml::gpu::queue_role_count; ++q) {
            const std::string queue = vkml::gpu::queue_role_name(static_cast<QueueRole>(q));
            int found = 0;
            for (const Json& e : events->items) {
                const Json* ph = e.find("ph");
                const Json* name = e.find("name");
                const Json* tid = e.find("tid");
                if (!ph || ph->string != "M" || !name || name->string != "thread_name" || !tid ||
                    tid->number != static_cast<double>(q))
                    continue;
                ++found;
                const Json* args = e.find("args");
                ASSERT_NE(args, nullptr);
                ASSERT_NE(args->find("name"), nullptr);
                EXPECT_NE(args->find("name")->string.find(queue), std::string::npos)
                    << args->find("name")->string;
                // The track belongs to the same process as the events drawn on it.
                for (const Json* x : complete_events(*trace)) {
                    if (x->find("tid")->number == static_cast<double>(q)) {
                        EXPECT_EQ(x->find("pid")->number, e.find("pid")->number);
                    }
                }
            }
            EXPECT_EQ(found, 1) << queue;
        }
    }
}

TEST(ProfilerFormat, ChromeTraceEscapesNames) {
    const std::vector<std::string> names = {
        "say \"hi\"",   "C:\\shaders\\conv.comp",
        "line1\nline2", "tab\there",
        "cr\rbs\bff\f", std::string("nul\0byte", 8),
        "\x01\x1f\x7f", "caf\xc3\xa9 \xe2\x86\x92 ok",
        "\\\"\\\\\"",   "",
    };
    std::vector<TimingRecord> records;
    for (size_t i = 0; i < names.size(); ++i)
        records.push_back({names[i], QueueRole::Compute, double(i), 1.0});
    const std::string json = chrome_trace_json(records);
    const auto trace = JsonParser::parse(json);
    ASSERT_TRUE(trace.has_value()) << json;
    const auto events = complete_events(*trace);
    ASSERT_EQ(events.size(), names.size());
    for (size_t i = 0; i < names.size(); ++i) {
        ASSERT_NE(events[i]->find("name"), nullptr);
        EXPECT_EQ(events[i]->find("name")->string, names[i]) << "event " << i;
    }
}
