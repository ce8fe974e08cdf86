#pragma once
// A strict JSON parser for tests that check what vkml writes (Chrome traces, `vkml info --json`).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkml::test {

// A JSON value, as far as these tests need to look into one.
struct Json {
    enum class Kind { Null, Bool, Number, String, Array, Object };
    Kind kind = Kind::Null;
    bool boolean = false;
    double number = 0;
    std::string string;
    std::vector<Json> items;
    // An object's members in order: keys[i] names values[i]. (Two vectors, not pairs: clang with
    // libstdc++ rejects std::pair<std::string, Json> inside Json's own definition.)
    std::vector<std::string> keys;
    std::vector<Json> values;

    const Json* find(std::string_view key) const {
        for (size_t i = 0; i < keys.size(); ++i)
            if (keys[i] == key) return &values[i];
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
            out.keys.push_back(std::move(key));
            out.values.push_back(std::move(v));
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

} // namespace vkml::test
