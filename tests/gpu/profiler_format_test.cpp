#include "vkml/gpu/profiler.hpp"

#include "vkml/error.hpp"

#include <gtest/gtest.h>

#include "json_check.hpp"

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
using vkml::test::Json;
using vkml::test::JsonParser;

namespace {

// Names from a model file (a layer called "\x1b[2J...") are printed escaped, never as terminal
// control sequences: in errors and in the profile table.
TEST(Printable, EscapesTerminalControls) {
    EXPECT_EQ(vkml::printable("plain name/é"), "plain name/é");
    EXPECT_EQ(vkml::printable("a\x1b[2Jb"), "a\\x1b[2Jb");
    EXPECT_EQ(vkml::printable(std::string("x\0y", 3)), "x\\x00y");
    EXPECT_EQ(vkml::printable("del\x7f, csi \xc2\x9b, line\nnext\ttab"), "del\\x7f, csi \\xc2\\x9b, line\nnext\ttab");
    const vkml::Error e(vkml::ErrorCode::InvalidArgument, "node '\x1b]0;owned\x07' is bad");
    EXPECT_EQ(std::string(e.what()), "node '\\x1b]0;owned\\x07' is bad");
    const std::string table = timing_table({TimingRecord{"conv\x1b[31m", QueueRole::Compute, 0.0, 1.0}});
    EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
    EXPECT_NE(table.find("conv\\x1b[31m"), std::string::npos) << table;
}

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
